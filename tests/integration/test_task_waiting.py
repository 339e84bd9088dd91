"""A wait is a successful task outcome (README "Commands", exit codes): in task mode a table
still inside its truncate retention is status ``waiting``, ``needs_truncate=true`` with
``truncate_after``, exit 0, with the same task values; a fleet counts it as a success and lists it
apart. The CLI keeps exit 3. Real tables, real clock: a table whose commits are three days old is
past its 24 h retention and is truncated, one dropped now waits."""

from __future__ import annotations

import json
import os
import time

import pytest

from delta_downgrade.app import cli
from delta_downgrade.app.tasks.entrypoints import truncate_task
from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import EXIT_WAIT
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol import Protocol
from tests.drop_support import PROPERTY, RW_T, build, latest, registered_test_features, run_task

CP = "checkpointProtection"


@pytest.fixture(autouse=True)
def _test_features():
    with registered_test_features():
        yield


def fast_dropped(path: str, days_ago: float = 0) -> str:
    """A table whose RW_T was dropped on the fast path (24 h truncate retention, the default);
    with ``days_ago`` its log files are dated that far back, so the retention has passed."""
    clock = ManualClock()
    build(path, Protocol(1, 2).denormalized().with_feature(RW_T), properties={PROPERTY[RW_T]: "true"},
          clock=clock)
    drop_feature(path, RW_T, clock=clock)
    if days_ago:
        past = time.time() - days_ago * 86400
        for root, _dirs, files in os.walk(os.path.join(path, "_delta_log")):
            for name in files:
                os.utime(os.path.join(root, name), (past, past))
    return path


def test_a_waiting_table_is_exit_0_in_task_mode_with_its_task_values(tmp_path, monkeypatch):
    path = fast_dropped(str(tmp_path / "t"))
    run_dir = tmp_path / "run"
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_KEY", "truncate")
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_VALUES_DIR", str(run_dir))
    code, results, err = run_task(truncate_task, [f"--table={path}"])
    assert code == 0, err
    [result] = results
    assert result["status"] == "waiting" and result["exit_code"] == 0
    assert result["needs_truncate"] is True and result["truncate_after"]
    assert result["error_class"] == "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"
    assert err.startswith("waiting: [DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD]")
    values = json.loads((run_dir / "task_values" / "truncate.json").read_text())
    assert values["status"] == "waiting" and values["exit_code"] == 0
    assert values["needs_truncate"] is True and values["truncate_after"] == result["truncate_after"]
    assert CP in latest(path).protocol.writer_features  # nothing was dropped


def test_the_cli_keeps_exit_3_for_the_same_wait(tmp_path, capsys):
    path = fast_dropped(str(tmp_path / "t"))
    assert cli.main(["truncate-history", path]) == EXIT_WAIT
    assert "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD" in capsys.readouterr().err


def test_a_fleet_truncates_the_due_tables_and_counts_the_waiting_ones_as_success(tmp_path):
    due = fast_dropped(str(tmp_path / "due"), days_ago=3)
    waiting = fast_dropped(str(tmp_path / "waiting"))
    code, results, err = run_task(truncate_task, [f"--tables={due},{waiting}"])
    assert code == 0, err
    by_table = {r["table"]: r for r in results if not r.get("summary")}
    assert by_table[due]["status"] == "dropped" and by_table[due]["needs_truncate"] is False
    assert CP not in (latest(due).protocol.writer_features or ())
    assert by_table[waiting]["status"] == "waiting" and by_table[waiting]["needs_truncate"] is True
    [summary] = [r for r in results if r.get("summary")]
    assert summary["exit_code"] == 0 and summary["failed_tables"] == []
    assert summary["waiting_tables"] == [waiting]
    assert summary["by_status"] == {"dropped": 1, "waiting": 1}


def test_a_fleet_with_a_real_failure_still_fails_and_names_only_that_table(tmp_path):
    waiting = fast_dropped(str(tmp_path / "waiting"))
    missing = str(tmp_path / "missing")
    code, results, _ = run_task(truncate_task, [f"--tables={waiting},{missing}"])
    assert code == 2
    [summary] = [r for r in results if r.get("summary")]
    assert summary["failed_tables"] == [missing] and summary["waiting_tables"] == [waiting]


def test_no_table_is_exit_2_naming_the_job_parameter(capsys):
    assert truncate_task(["--table="]) == 2
    err = capsys.readouterr().err
    assert "was given no table" in err and "--params table=" in err


def test_the_truncate_history_job_is_green_truncating_the_due_table_and_reporting_the_waiting_one(tmp_path):
    """resources/truncate_history.job.yml as its schedule runs it, through run-job: one table past
    its retention is truncated, one inside it is waiting, and the run succeeds (exit 0)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    due = fast_dropped(str(tmp_path / "due"), days_ago=3)
    waiting = fast_dropped(str(tmp_path / "waiting"))
    from delta_downgrade.app.tasks.waiting_records import record_waiting, waiting_tables

    waiting_dir = str(tmp_path / "waiting_records")
    for table in (due, waiting):  # as the drop job records them
        record_waiting(waiting_dir, table)
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy(repo / "databricks.yml", clone / "databricks.yml")
    shutil.copytree(repo / "resources", clone / "resources")
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELTA_DOWNGRADE_TASK")}
    proc = subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", "run-job", "resources/truncate_history.job.yml",
                           "--var", f"waiting_dir={waiting_dir}", "--run-dir", str(run_dir)],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "truncate_history run" in proc.stderr and "truncate=success" in proc.stderr
    assert "Databricks would send" not in proc.stderr  # no alert: nothing failed
    summary = json.loads((run_dir / "task_values" / "truncate.json").read_text())["summary"]
    assert summary["by_status"] == {"dropped": 1, "waiting": 1} and summary["waiting_tables"] == [waiting]
    assert summary["failed_tables"] == [] and summary["exit_code"] == 0
    assert CP not in (latest(due).protocol.writer_features or ())
    assert CP in latest(waiting).protocol.writer_features
    assert f"truncate: waiting: {waiting} needs_truncate=true" in proc.stderr
    assert waiting_tables(waiting_dir) == [waiting]  # the due table is done and forgotten
