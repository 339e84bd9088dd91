"""Table properties that drive retention and checkpoints, with Delta's defaults (delta-spark's
``DeltaConfigs``).

Durations are Spark calendar intervals (``interval 24 hours``, ``30 days``, ``1 DAY``,
``interval 1 week``); we read them into milliseconds. Months and years are refused: they have no
fixed length and Delta does not accept them for these properties either.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Mapping, TypeVar

from msgspec import Struct
from delta_downgrade.errors import (
    BadDurationError, DeltaDowngradeError, InvalidTablePropertyError, RowTrackingPropertiesError,
)

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
# PROTOCOL.md "Row Tracking": enablement, suspension, and the names of the hidden columns that
# hold materialised row IDs and row commit versions (strings, read as they are).
ENABLE_ROW_TRACKING = "delta.enableRowTracking"
ROW_TRACKING_SUSPENDED = "delta.rowTrackingSuspended"
MATERIALIZED_ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
MATERIALIZED_ROW_COMMIT_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"


def parse_interval_ms(text: str, *, key: str = "duration") -> int:
    """``interval 24 hours`` → 86_400_000. Several parts add up (``1 day 12 hours``)."""
    body = text.strip()
    if body.lower().startswith("interval"):
        body = body[len("interval"):]
    parts = _PART.findall(body)
    leftover = _PART.sub("", body).strip()
    if not parts or leftover:
        raise BadDurationError(f"{key}={text!r} is not a duration such as 'interval 24 hours'")
    total = 0.0
    for number, unit in parts:
        unit_key = unit.lower().rstrip("s")
        if unit_key not in _UNITS:
            raise BadDurationError(f"{key}={text!r}: unit {unit!r} has no fixed length; use weeks, days, "
                                   f"hours, minutes or seconds")
        total += float(number) * _UNITS[unit_key]
    if total < 0:
        raise BadDurationError(f"{key}={text!r} is negative")
    # The one shared upper bound (clock.MAX_DURATION_MS): "99999999999999999999 days" would
    # otherwise overflow the cutoff dates computed from it.
    from delta_downgrade.clock import check_duration_ms

    return check_duration_ms(total, what=key, text=text)


def _interval(text: str, key: str) -> int:
    return parse_interval_ms(text, key=key)


def _bool(text: str, key: str) -> bool:
    # Delta reads boolean properties with Scala's String.toBoolean: "true"/"false", any case.
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError("must be true or false")
    return value == "true"


def _positive_int(text: str, key: str) -> int:
    # delta.checkpointInterval: "needs to be a positive integer" (Delta's table property check).
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError("must be a positive integer") from None
    if value <= 0:
        raise ValueError("must be a positive integer")
    return value


CHECKPOINT_POLICIES = ("classic", "v2")


def _policy(text: str, key: str) -> str:
    value = text.strip().lower()
    if value not in CHECKPOINT_POLICIES:
        raise ValueError(f"must be one of {', '.join(CHECKPOINT_POLICIES)}")
    return value


_V = TypeVar("_V")


# Every property this package reads, with Delta's default and its parser: the one place a value
# is interpreted, so that :meth:`TableConfig.validate` and the properties below cannot disagree.
PROPERTIES: dict[str, tuple[str, Callable[[str, str], object]]] = {
    LOG_RETENTION: ("interval 30 days", _interval),
    DELETED_FILE_RETENTION: ("interval 1 week", _interval),
    TRUNCATE_HISTORY_RETENTION: ("interval 24 hours", _interval),
    CHECKPOINT_INTERVAL: ("10", _positive_int),
    CHECKPOINT_POLICY: ("classic", _policy),
    ENABLE_ICT: ("false", _bool),
    ENABLE_EXPIRED_LOG_CLEANUP: ("true", _bool),
    ENABLE_ROW_TRACKING: ("false", _bool),
    ROW_TRACKING_SUSPENDED: ("false", _bool),
}


class TableConfig(Struct, frozen=True):
    """Typed view of ``metaData.configuration``. Its errors name no table: the operation that
    reads the configuration adds it (:func:`~delta_downgrade.errors.naming_table`)."""

    configuration: Mapping[str, str]

    def _parse(self, key: str) -> tuple[object, tuple[str, str] | None]:
        """``(value, None)``, or ``(None, (raw value, reason))`` when the parser refuses it."""
        default, parse = PROPERTIES[key]
        raw = self.configuration.get(key, default)
        try:
            return parse(raw, key), None
        except DeltaDowngradeError as exc:
            return None, (raw, exc.message)
        except (ValueError, OverflowError) as exc:
            return None, (raw, str(exc))

    def _error(self, problems: dict[str, tuple[str, str]], written: str) -> InvalidTablePropertyError:
        listed = "; ".join(why if why.startswith(k) else f"{k}={v!r}: {why}"
                           for k, (v, why) in problems.items())
        example = next(iter(problems))
        return InvalidTablePropertyError(
            f"invalid table propert{'y' if len(problems) == 1 else 'ies'}: {listed}. {written}Set a "
            f"valid value (ALTER TABLE … SET TBLPROPERTIES ('{example}' = '{PROPERTIES[example][0]}')) "
            f"or unset it, then rerun",
            params={"properties": {k: v for k, (v, _) in problems.items()}})

    def _get(self, key: str, kind: type[_V]) -> _V:
        value, problem = self._parse(key)
        if problem is not None:
            raise self._error({key: problem}, "")
        # Each key's parser in PROPERTIES returns one type: the one its property asks for.
        if not isinstance(value, kind):
            raise TypeError(f"the parser of {key} returned {type(value).__name__}, not {kind.__name__}")
        return value

    def _int(self, key: str) -> int:
        return self._get(key, int)

    def _bool(self, key: str) -> bool:
        return self._get(key, bool)

    def _str(self, key: str) -> str:
        return self._get(key, str)

    def validate(self, keys: Iterable[str] | None = None) -> "TableConfig":
        """Parse every property in ``keys`` (all of :data:`PROPERTIES` by default) and raise one
        :class:`InvalidTablePropertyError` naming every bad one. Operations call this before their
        first write, so that a bad value is exit 2 with nothing written instead of a failure
        half-way through."""
        problems = {}
        for key in (PROPERTIES if keys is None else keys):
            _value, problem = self._parse(key)
            if problem is not None:
                problems[key] = problem
        if problems:
            raise self._error(problems, "They are checked before anything is written; nothing "
                                        "was written. ")
        return self

    def validate_row_tracking(self) -> "TableConfig":
        """Raise :class:`RowTrackingPropertiesError` when ``delta.enableRowTracking`` and
        ``delta.rowTrackingSuspended`` are both true. Only for tables that support
        ``rowTracking``: without the feature the two properties mean nothing (delta-spark checks
        them only then). Operations call this before their first write."""
        self._check_row_tracking_combination(" It is checked before anything is written; nothing was written.")
        return self

    def _check_row_tracking_combination(self, written: str = "") -> None:
        # PROTOCOL.md "Row Tracking": rowTrackingSuspended "should not be enabled together with"
        # enableRowTracking; delta-spark refuses to write such a table (RowTracking.isSuspended).
        if self._bool(ENABLE_ROW_TRACKING) and self._bool(ROW_TRACKING_SUSPENDED):
            raise RowTrackingPropertiesError(
                f"table properties {ENABLE_ROW_TRACKING} and {ROW_TRACKING_SUSPENDED} are both set "
                f"to true, which no writer may leave it in.{written} Set one of them to false "
                f"(ALTER TABLE … SET TBLPROPERTIES ('{ROW_TRACKING_SUSPENDED}' = 'false')), then rerun",
                params={"property1": ENABLE_ROW_TRACKING, "property2": ROW_TRACKING_SUSPENDED})

    @property
    def log_retention_ms(self) -> int:
        return self._int(LOG_RETENTION)

    @property
    def deleted_file_retention_ms(self) -> int:
        return self._int(DELETED_FILE_RETENTION)

    def tombstone_cutoff_ms(self, now_ms: int) -> int:
        """The ``deletionTimestamp`` a ``remove`` must be later than to be kept at ``now_ms``
        (PROTOCOL.md "Checkpoints": tombstones are kept for
        ``delta.deletedFileRetentionDuration`` so that VACUUM does not delete a file a reader of a
        retained version still needs). Every checkpoint writer and the DV purge use this one rule,
        so that two of them asked at the same instant keep the same tombstones."""
        return now_ms - self.deleted_file_retention_ms

    @property
    def truncate_history_retention_ms(self) -> int:
        return self._int(TRUNCATE_HISTORY_RETENTION)

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
        return self._int(CHECKPOINT_INTERVAL)

    @property
    def expired_log_cleanup_enabled(self) -> bool:
        return self._bool(ENABLE_EXPIRED_LOG_CLEANUP)

    @property
    def in_commit_timestamps_enabled(self) -> bool:
        return self._bool(ENABLE_ICT)

    @property
    def checkpoint_policy(self) -> str:
        return self._str(CHECKPOINT_POLICY)

    @property
    def row_tracking_enabled(self) -> bool:
        """``delta.enableRowTracking`` (PROTOCOL.md "Row Tracking": enabled when also supported)."""
        return self._bool(ENABLE_ROW_TRACKING)

    @property
    def row_tracking_suspended(self) -> bool:
        """``delta.rowTrackingSuspended``; raises when it is true together with
        ``delta.enableRowTracking`` (an illegal combination)."""
        self._check_row_tracking_combination()
        return self._bool(ROW_TRACKING_SUSPENDED)

    @property
    def materialized_row_id_column(self) -> str | None:
        return self.configuration.get(MATERIALIZED_ROW_ID_COLUMN) or None

    @property
    def materialized_row_commit_version_column(self) -> str | None:
        return self.configuration.get(MATERIALIZED_ROW_COMMIT_VERSION_COLUMN) or None
