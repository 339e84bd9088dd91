"""A rewrite's progress counts (``DropRun.progress(..., step=, done=, total=)``) as the entry points
render them: ``PROGRESS {json}`` events in a task, tqdm bars with rate and ETA at a terminal, the
plain step lines otherwise; the mode follows stderr (a real pty) and DELTA_DOWNGRADE_PROGRESS."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re

import pytest

from delta_downgrade.app.console_logging import CLI_STEP_FORMAT, TASK_STEP_FORMAT, console_logging
from delta_downgrade.app.progress import (
    BARS, JSON, LINES, MODE_ENV, PROGRESS_PREFIX, ProgressTracker, progress_mode,
)
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.drop.run import LOGGER, DropRun
from delta_downgrade.protocol import Protocol
from tests.drop_support import build

VPC = "vacuumProtocolCheck"
STEP = "purge deletion vectors"


@pytest.fixture(autouse=True)
def _unconfigured(monkeypatch):
    monkeypatch.delenv(MODE_ENV, raising=False)
    before = (LOGGER.level, LOGGER.propagate, list(LOGGER.handlers))
    yield
    assert (LOGGER.level, LOGGER.propagate, list(LOGGER.handlers)) == before


@pytest.fixture
def run(tmp_path) -> DropRun:
    path = str(tmp_path / "t")
    build(path, Protocol(3, 7, frozenset({VPC}), frozenset({VPC})))
    return DropRun(DeltaLog(path), VPC, announce=True)


def _purge(run: DropRun, files: int = 4, size: int = 1000) -> None:
    """The counts a purge of ``files`` files of ``size`` bytes tells, batch of one file by batch."""
    run.progress(f"purging deletion vectors of {files} file(s)", step=STEP, done=0, total=files,
                 done_bytes=0, total_bytes=files * size)
    run.progress("an ordinary step in between")
    for done in range(1, files + 1):
        run.progress(f"purged {done}/{files} files", step=STEP, done=done, total=files,
                     done_bytes=done * size, total_bytes=files * size)


def test_tracker_measures_rate_and_eta_from_the_steps_first_record():
    now = [100.0]
    tracker = ProgressTracker(clock=lambda: now[0])
    counts = {"step": STEP, "total": 10, "unit": "files", "total_bytes": 10_000}
    first = tracker.event("t", {**counts, "done": 0, "done_bytes": 0})
    assert (first["elapsed_s"], first["files_per_s"], first["bytes_per_s"], first["eta_s"]) == (0, None, None, None)
    now[0] = 102.0
    # 2 files but 5000 bytes in 2 s: the ETA follows the bytes (files differ in size).
    mid = tracker.event("t", {**counts, "done": 2, "done_bytes": 5000})
    assert (mid["elapsed_s"], mid["files_per_s"], mid["bytes_per_s"], mid["eta_s"]) == (2.0, 1.0, 2500.0, 2.0)
    assert mid["finished"] is False
    now[0] = 104.0
    last = tracker.event("t", {**counts, "done": 10, "done_bytes": 10_000})
    assert (last["finished"], last["eta_s"]) == (True, 0.0)
    # Another table's step of the same name has its own clock.
    assert tracker.event("u", {**counts, "done": 0, "done_bytes": 0})["elapsed_s"] == 0


def test_task_mode_prints_one_json_event_per_progress_record(run):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), console_logging(TASK_STEP_FORMAT, progress=JSON):
        _purge(run)
    lines = err.getvalue().splitlines()
    assert f"[{run.table}] an ordinary step in between" in lines
    events = [json.loads(line[len(PROGRESS_PREFIX):]) for line in lines if line.startswith(PROGRESS_PREFIX)]
    assert [e["done"] for e in events] == [0, 1, 2, 3, 4]
    assert all(e["table"] == run.table and e["step"] == STEP and e["total"] == 4 and e["unit"] == "files"
               for e in events)
    assert [e["done_bytes"] for e in events] == [0, 1000, 2000, 3000, 4000]
    assert [e["finished"] for e in events] == [False] * 4 + [True]
    assert events[-1]["message"] == "purged 4/4 files" and events[-1]["eta_s"] == 0.0
    assert {"elapsed_s", "files_per_s", "bytes_per_s", "eta_s"} <= events[1].keys()
    # No progress line is printed twice as a plain step.
    assert not any("purged" in line for line in lines if not line.startswith(PROGRESS_PREFIX))


def test_json_events_mask_the_storage_options(run):
    secret = "very-secret-key-9"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), console_logging(
            TASK_STEP_FORMAT, secrets={"AWS_SECRET_ACCESS_KEY": secret}, progress=JSON):
        run.progress(f"purged 1/2 files of {secret}", step=STEP, done=1, total=2)
    assert secret not in err.getvalue() and "***" in err.getvalue()


def test_lines_mode_prints_the_steps_as_before(run):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), console_logging(CLI_STEP_FORMAT, progress=LINES):
        _purge(run)
    assert err.getvalue().splitlines() == [
        "  purging deletion vectors of 4 file(s)", "  an ordinary step in between",
        "  purged 1/4 files", "  purged 2/4 files", "  purged 3/4 files", "  purged 4/4 files"]


def test_bars_mode_draws_a_bar_with_rate_and_eta_and_keeps_the_last_line(run):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), console_logging(CLI_STEP_FORMAT, progress=BARS):
        _purge(run)
        run.progress("after the purge")
    text = err.getvalue()
    assert f"{STEP}:" in text                                      # the bar's description
    assert re.search(r"\d+(\.\d+)?[kMG]?B/s|\?B/s", text)           # its rate, in bytes
    assert re.search(r"<\d\d:\d\d", text)                          # its ETA
    assert "3/4 files" in text                                     # the files as a postfix
    ends = [line for line in re.split(r"[\r\n]", text) if line.strip()]
    assert "  purged 4/4 files" in ends and ends[-1] == "  after the purge"
    assert "  purged 2/4 files" not in ends  # the bar replaces the intermediate lines


def test_a_bar_left_open_is_closed_with_the_entry_point(run):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), console_logging(CLI_STEP_FORMAT, progress=BARS):
        run.progress("start", step=STEP, done=0, total=3)
        run.progress("one", step=STEP, done=1, total=3)  # then the rewrite fails
    assert LOGGER.handlers == []


def test_the_mode_follows_stderr_and_the_environment(monkeypatch):
    master, slave = os.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as terminal:
            assert progress_mode(terminal, task=False) == BARS
            assert progress_mode(terminal, task=True) == JSON  # a job's log is never a terminal
    finally:
        os.close(master)
        os.close(slave)
    assert progress_mode(io.StringIO(), task=False) == LINES
    monkeypatch.setenv(MODE_ENV, "json")
    assert progress_mode(io.StringIO(), task=False) == JSON
    monkeypatch.setenv(MODE_ENV, "nonsense")
    assert progress_mode(io.StringIO(), task=False) == LINES


def test_counts_need_a_step_done_and_total(run):
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep()
    LOGGER.addHandler(keep)
    old = LOGGER.level
    LOGGER.setLevel(logging.INFO)
    try:
        run.progress("plain")
        run.progress("counted", step=STEP, done=1, total=2, done_bytes=5, total_bytes=9)
    finally:
        LOGGER.removeHandler(keep)
        LOGGER.setLevel(old)
    assert not hasattr(records[0], "progress")
    assert records[1].progress == {"step": STEP, "done": 1, "total": 2, "unit": "files",
                                   "done_bytes": 5, "total_bytes": 9}
