"""Table properties that drive retention and checkpoints, with Delta's defaults (reference §7).

Durations are Spark calendar intervals (``interval 24 hours``, ``30 days``, ``1 DAY``,
``interval 1 week``); we read them into milliseconds. Months and years are refused: they have no
fixed length and Delta does not accept them for these properties either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from delta_downgrade.errors import BadInputError

SECOND_MS = 1000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS

_UNITS = {
    "microsecond": 0.001, "millisecond": 1, "second": SECOND_MS, "minute": MINUTE_MS,
    "hour": HOUR_MS, "day": DAY_MS, "week": 7 * DAY_MS,
}
_PART = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-zA-Z]+)")

LOG_RETENTION = "delta.logRetentionDuration"
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
TRUNCATE_HISTORY_RETENTION = "delta.dropFeatureTruncateHistory.retentionDuration"
CHECKPOINT_INTERVAL = "delta.checkpointInterval"
ENABLE_EXPIRED_LOG_CLEANUP = "delta.enableExpiredLogCleanup"
ENABLE_ICT = "delta.enableInCommitTimestamps"
CHECKPOINT_POLICY = "delta.checkpointPolicy"


def parse_interval_ms(text: str, *, key: str = "duration") -> int:
    """``interval 24 hours`` → 86_400_000. Several parts add up (``1 day 12 hours``)."""
    body = text.strip()
    if body.lower().startswith("interval"):
        body = body[len("interval"):]
    parts = _PART.findall(body)
    leftover = _PART.sub("", body).strip()
    if not parts or leftover:
        raise BadInputError(f"{key}={text!r} is not a duration such as 'interval 24 hours'",
                            error_class="DELTA_DOWNGRADE_BAD_DURATION")
    total = 0.0
    for number, unit in parts:
        unit_key = unit.lower().rstrip("s")
        if unit_key not in _UNITS:
            raise BadInputError(f"{key}={text!r}: unit {unit!r} has no fixed length; use weeks, days, "
                                f"hours, minutes or seconds", error_class="DELTA_DOWNGRADE_BAD_DURATION")
        total += float(number) * _UNITS[unit_key]
    if total < 0:
        raise BadInputError(f"{key}={text!r} is negative", error_class="DELTA_DOWNGRADE_BAD_DURATION")
    # The one shared upper bound (clock.MAX_DURATION_MS): "99999999999999999999 days" would
    # otherwise overflow the cutoff dates computed from it.
    from delta_downgrade.clock import check_duration_ms

    return check_duration_ms(total, what=key, text=text)


@dataclass(frozen=True)
class TableConfig:
    """Typed view of ``metaData.configuration``."""

    configuration: Mapping[str, str]

    def _duration(self, key: str, default: str) -> int:
        return parse_interval_ms(self.configuration.get(key, default), key=key)

    @property
    def log_retention_ms(self) -> int:
        return self._duration(LOG_RETENTION, "interval 30 days")

    @property
    def deleted_file_retention_ms(self) -> int:
        return self._duration(DELETED_FILE_RETENTION, "interval 1 week")

    @property
    def truncate_history_retention_ms(self) -> int:
        return self._duration(TRUNCATE_HISTORY_RETENTION, "interval 24 hours")

    @property
    def log_retention_display(self) -> str:
        """As delta-spark's messages show it: whole days (``1 DAY`` → ``1 days``)."""
        return f"{self.log_retention_ms // DAY_MS} days"

    @property
    def truncate_history_retention_display(self) -> str:
        """As delta-spark's messages show it: whole hours (minutes when shorter than whole hours,
        so that a one-minute retention does not read "0 hours")."""
        ms = self.truncate_history_retention_ms
        if ms % HOUR_MS == 0:
            return f"{ms // HOUR_MS} hours"
        return f"{ms // MINUTE_MS} minutes"

    @property
    def checkpoint_interval(self) -> int:
        try:
            return max(1, int(self.configuration.get(CHECKPOINT_INTERVAL, "10")))
        except ValueError:
            return 10

    @property
    def expired_log_cleanup_enabled(self) -> bool:
        return self.configuration.get(ENABLE_EXPIRED_LOG_CLEANUP, "true").strip().lower() == "true"

    @property
    def in_commit_timestamps_enabled(self) -> bool:
        return self.configuration.get(ENABLE_ICT, "false").strip().lower() == "true"

    @property
    def checkpoint_policy(self) -> str:
        return self.configuration.get(CHECKPOINT_POLICY, "classic").strip().lower()
