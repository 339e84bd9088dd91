"""A real deletion-vector purge on Spark tells its progress as the entry point asks: the
task prints ``PROGRESS {json}`` events counting the files with DVs from 0 to all of them, with rate
and ETA; the CLI at a terminal draws a bar and keeps the final line; the rows stay the same."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.app.progress import MODE_ENV, PROGRESS_PREFIX
from delta_downgrade.app.tasks.entrypoints import drop_feature_task
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.rewrite.dv_purge import PURGE_STEP
from tests.drop_support import run_task
from tests.oracle import same_rows

pytestmark = [pytest.mark.spark, pytest.mark.golden]

TABLE = "dv_partitioned_checkpoint"


def _dv_files(path: str) -> tuple[int, int]:
    files = [a for a in DeltaLog(path).snapshot().state().files.values() if a.deletionVector is not None]
    return len(files), sum(a.size for a in files)


def test_the_task_prints_progress_events_of_the_purge(golden_table, spark, oracle, monkeypatch):
    monkeypatch.delenv(MODE_ENV, raising=False)
    path = golden_table(TABLE)
    rows = oracle.scan_rows(path)
    files, size = _dv_files(path)
    assert files > 1
    code, results, err = run_task(drop_feature_task, [f"--table={path}", "--feature=deletionVectors"])
    assert code == 0 and results[0]["status"] == "dropped", err[-3000:]
    events = [json.loads(line[len(PROGRESS_PREFIX):]) for line in err.splitlines()
              if line.startswith(PROGRESS_PREFIX)]
    purge = [e for e in events if e["step"] == PURGE_STEP]
    assert purge, err[-3000:]
    assert (purge[0]["done"], purge[0]["done_bytes"]) == (0, 0)
    assert all(e["total"] == files and e["total_bytes"] == size and e["table"] == path for e in purge)
    assert [e["done"] for e in purge] == sorted(e["done"] for e in purge)
    last = purge[-1]
    assert (last["done"], last["done_bytes"], last["finished"], last["eta_s"]) == (files, size, True, 0.0)
    assert last["elapsed_s"] > 0 and last["files_per_s"] > 0 and last["bytes_per_s"] > 0
    assert same_rows(oracle.scan_rows(path), rows)


def test_the_cli_draws_a_bar_at_a_terminal(golden_table, spark, monkeypatch):
    """stderr is no terminal under pytest: DELTA_DOWNGRADE_PROGRESS=bars asks for what a terminal
    gets (the choice itself is tested against a real pty in tests/unit/app/test_progress.py)."""
    monkeypatch.setenv(MODE_ENV, "bars")
    path = golden_table("dv_basic_no_checkpoint")
    files, _ = _dv_files(path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["drop-feature", path, "deletionVectors"])
    text = err.getvalue()
    assert code == 0, text[-3000:]
    assert f"\r{PURGE_STEP}:" in text and "B/s" in text
    assert f"  purged {files}/{files} files" in text
    assert PROGRESS_PREFIX not in text
