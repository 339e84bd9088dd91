"""Time, injectable: retention periods are days long, tests must take seconds.

Every operation that compares against "now" takes a :class:`Clock`; production uses
:class:`SystemClock`, tests a :class:`ManualClock` they advance.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Protocol


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


def to_utc_iso(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
