"""Time, injectable: retention periods are days long, tests must take seconds.

Every operation that compares against "now" takes a :class:`Clock`; production uses
:class:`SystemClock`, tests a :class:`ManualClock` they advance.
"""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone
from typing import Protocol

#: The longest duration any retention or interval may have: 1,000 years of 366 days. Durations are
#: added to and subtracted from "now" (cutoffs, ``truncate_after``), and both results must stay
#: dates (years 1..9999) that Python and the JSON/RESULT documents can show; a retention this long
#: already means "never". Longer ones (``99999999999999999999 days``, ``1e308`` hours) are refused
#: where they are parsed, by :func:`check_duration_ms`, instead of overflowing later.
MAX_DURATION_MS = 366_000 * 86_400_000


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return int(time.time() * 1000)


class ManualClock:
    def __init__(self, start_ms: int | None = None) -> None:
        self._now = int(time.time() * 1000) if start_ms is None else int(start_ms)

    def now_ms(self) -> int:
        return self._now

    def advance(self, *, days: float = 0, hours: float = 0, minutes: float = 0, seconds: float = 0) -> "ManualClock":
        self._now += int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)
        return self

    def set(self, epoch_ms: int) -> None:
        self._now = int(epoch_ms)


SYSTEM_CLOCK = SystemClock()


def check_duration_ms(value_ms: float, *, what: str, text: object = None) -> int:
    """``value_ms`` as whole milliseconds, or :class:`BadDurationError` when it is not a number,
    negative, or longer than :data:`MAX_DURATION_MS`. The one bound every parsed duration goes
    through (``table_config.parse_interval_ms``, VACUUM's ``--retention-hours``)."""
    from delta_downgrade.errors import BadDurationError

    shown = value_ms if text is None else text
    if not isinstance(value_ms, (int, float)) or isinstance(value_ms, bool) or math.isnan(value_ms):
        raise BadDurationError(f"{what}={shown!r} is not a duration")
    if value_ms < 0:
        raise BadDurationError(f"{what}={shown!r} is negative")
    if value_ms > MAX_DURATION_MS:
        raise BadDurationError(
            f"{what}={shown!r} is longer than the longest supported duration, "
            f"{MAX_DURATION_MS // 86_400_000} days (about 1,000 years); use a shorter one",
            params={"maxDays": MAX_DURATION_MS // 86_400_000})
    return int(value_ms)


def to_utc_iso(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
