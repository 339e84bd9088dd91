"""Progress of long rewrites on an entry point's stderr: a bar with rate and ETA for a person at a
terminal, one ``PROGRESS {json}`` line per update for a job, the plain step lines otherwise.

The rewrites (the deletion-vector purge's batches, the column-mapping and type-widening
rewrites) tell their progress as records of the drop logger whose ``progress`` attribute holds
the counts (``drop.run.DropRun.progress``): ``step`` (what is counted, the same name
on every record of it), ``done`` of ``total`` ``unit`` (files), ``done_bytes`` of ``total_bytes``.
The first record of a step (``done`` 0) starts its clock. This module turns those records into
one of three renderings, chosen once per entry point by :func:`progress_mode`:

``bars`` (the CLI, stderr a terminal)
    one tqdm bar per running step, in bytes when the step counts them (rate in B/s, ETA), the
    files as a postfix. Every other line goes through ``tqdm.write`` so that the bars stay whole;
    a finished step leaves its last line, as the ``lines`` mode would have printed it.
``json`` (the task entry points)
    every progress record is one line ``PROGRESS {json}`` on stderr, keys sorted::

        PROGRESS {"done":3,"done_bytes":3072,"elapsed_s":1.5,"eta_s":3.5,"files_per_s":2.0,
                  "bytes_per_s":2048.0,"finished":false,"message":"purged 3/10 files, ...",
                  "step":"purge deletion vectors","table":"s3://b/t","total":10,
                  "total_bytes":10240,"unit":"files"}

    ``elapsed_s`` counts from the step's first record; ``files_per_s`` (named after ``unit``),
    ``bytes_per_s`` and ``eta_s`` are null until something is done. A Databricks run's log is
    a file, not a terminal: bars there would be carriage-return noise, events can be parsed.
``lines`` (the CLI, stderr not a terminal)
    the records print as the steps they also are (``"  purged 3/10 files, ..."``), as before.

``DELTA_DOWNGRADE_PROGRESS=bars|json|lines`` overrides the choice (for instance ``lines`` on a
terminal that should keep every line, ``json`` for a script that drives the CLI).

tqdm rather than rich: tqdm is one pure-Python package without dependencies, already installed on
Databricks runtimes, imported only when a bar is drawn, and writes to any file object (the
stderr of the call); rich would bring pygments and markdown-it for one bar.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import IO, TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from delta_downgrade.protocol.json_values import JsonObject

PROGRESS_PREFIX = "PROGRESS "
MODE_ENV = "DELTA_DOWNGRADE_PROGRESS"
BARS, JSON, LINES = "bars", "json", "lines"
MODES = (BARS, JSON, LINES)

#: What every line a handler prints passes through: the storage options' values masked.
Mask = Callable[[object], object]


def progress_mode(stream: IO[str], *, task: bool) -> str:
    """The rendering for an entry point writing to ``stream``: ``json`` for a task, ``bars``
    when ``stream`` is a terminal, ``lines`` otherwise; :data:`MODE_ENV` overrides it."""
    forced = os.environ.get(MODE_ENV, "").strip().lower()
    if forced in MODES:
        return forced
    if task:
        return JSON
    isatty = getattr(stream, "isatty", None)
    try:
        return BARS if isatty is not None and isatty() else LINES
    except ValueError:  # a closed stream
        return LINES


def counts_of(record: logging.LogRecord) -> Mapping[str, Any] | None:
    """The progress counts a record carries, or None for an ordinary step."""
    counts = getattr(record, "progress", None)
    return counts if isinstance(counts, Mapping) else None


class ProgressTracker:
    """Rate and ETA of each (table, step) from its records' counts: the rates are measured from
    the step's first record, so the first batch's time counts when the step starts at 0."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._start: dict[tuple[str, str], tuple[float, int, int]] = {}
        self._lock = threading.Lock()

    def event(self, table: str, counts: Mapping[str, Any]) -> JsonObject:
        """The progress event of one record: its counts, the elapsed time, rates and ETA."""
        step, done, total = str(counts["step"]), int(counts["done"]), int(counts["total"])
        unit = str(counts.get("unit") or "files")
        done_bytes, total_bytes = counts.get("done_bytes"), counts.get("total_bytes")
        now = self.clock()
        key = (table, step)
        with self._lock:
            start = self._start.setdefault(key, (now, done, int(done_bytes or 0)))
            finished = done >= total
            if finished:
                del self._start[key]
        elapsed = now - start[0]
        rate = (done - start[1]) / elapsed if elapsed > 0 and done > start[1] else None
        byte_rate = ((done_bytes - start[2]) / elapsed
                     if done_bytes is not None and elapsed > 0 and done_bytes > start[2] else None)
        if finished:
            eta: float | None = 0.0
        elif byte_rate and total_bytes is not None and done_bytes is not None:
            eta = (total_bytes - done_bytes) / byte_rate  # bytes first: files differ in size
        elif rate:
            eta = (total - done) / rate
        else:
            eta = None
        return {"table": table, "step": step, "done": done, "total": total, "unit": unit,
                "done_bytes": done_bytes, "total_bytes": total_bytes, "elapsed_s": round(elapsed, 3),
                f"{unit}_per_s": _rounded(rate), "bytes_per_s": _rounded(byte_rate),
                "eta_s": _rounded(eta), "finished": finished}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class JsonProgressHandler(logging.StreamHandler):
    """Progress records as ``PROGRESS {json}`` lines; every other record formatted as usual."""

    def __init__(self, stream: IO[str], mask: Mask, tracker: ProgressTracker | None = None) -> None:
        super().__init__(stream)
        self.mask, self.tracker = mask, tracker or ProgressTracker()

    def format(self, record: logging.LogRecord) -> str:
        counts = counts_of(record)
        if counts is None:
            return super().format(record)
        event = self.tracker.event(str(getattr(record, "table", "-")), counts)
        event["message"] = record.getMessage()
        # Masked value by value before the encoding, so that a secret is found as it is.
        return PROGRESS_PREFIX + json.dumps(self.mask(event), sort_keys=True, separators=(",", ":"))


class BarProgressHandler(logging.StreamHandler):
    """Progress records as tqdm bars (one per running step), other records printed above them."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__(stream)
        from tqdm import tqdm  # only where a bar is drawn: the CLI's start-up stays light

        self._tqdm = tqdm
        self._bars: dict[tuple[str, str], Any] = {}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            counts = counts_of(record)
            if counts is None:
                self._write(self.format(record))
            else:
                self._advance(record, counts)
        except Exception:  # noqa: BLE001 - logging's contract: a handler never raises
            self.handleError(record)

    def _write(self, text: str) -> None:
        if self._bars:
            self._tqdm.write(text, file=self.stream)
        else:
            self.stream.write(text + self.terminator)
            self.flush()

    def _advance(self, record: logging.LogRecord, counts: Mapping[str, Any]) -> None:
        key = (str(getattr(record, "table", "-")), str(counts["step"]))
        done, total = int(counts["done"]), int(counts["total"])
        in_bytes = counts.get("total_bytes") is not None and counts.get("done_bytes") is not None
        bar = self._bars.get(key)
        if bar is None:
            bar = self._tqdm(
                total=int(counts["total_bytes"]) if in_bytes else total, desc=key[1],
                unit="B" if in_bytes else str(counts.get("unit") or "files"), unit_scale=in_bytes,
                unit_divisor=1024, file=self.stream, leave=False, dynamic_ncols=True,
                position=len(self._bars))
            self._bars[key] = bar
        target = int(counts["done_bytes"]) if in_bytes else done
        bar.update(max(0, target - bar.n))  # update(): tqdm measures the rate from the increments
        if in_bytes:
            bar.set_postfix_str(f"{done}/{total} {counts.get('unit') or 'files'}", refresh=True)
        if done >= total:
            bar.close()
            del self._bars[key]
            self._write(self.format(record))  # the step's last line stays, as in the lines mode

    def close(self) -> None:
        """Every bar still open (a rewrite that failed half-way) is closed with the handler."""
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()
        super().close()


def progress_handler(mode: str, stream: IO[str], mask: Mask) -> logging.StreamHandler:
    """The handler of the drop's records on ``stream`` for ``mode`` (:data:`MODES`)."""
    if mode == JSON:
        return JsonProgressHandler(stream, mask)
    if mode == BARS:
        return BarProgressHandler(stream)
    return logging.StreamHandler(stream)
