"""The daily truncate job's list of tables: the drop records each table that waits for its history
truncation, the truncate task handles those and forgets each one done; with nothing recorded (a
new deployment's first run) it is a green run that says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from delta_downgrade.app.render.result import parse_result_lines
from delta_downgrade.app.tasks.entrypoints import truncate_task
from delta_downgrade.app.tasks.task_values import read_task_values
from delta_downgrade.app.tasks.waiting_records import record_waiting, remove_record, waiting_tables
from delta_downgrade.errors import BadConfigError

REPO = Path(__file__).resolve().parents[4]


def _daily_truncate_argv(waiting_dir: Path) -> list[str]:
    """The truncate_history job's task as Databricks calls it: its named_parameters as
    ``--key=value``, the bundle variable resolved to ``waiting_dir``."""
    job = yaml.safe_load((REPO / "resources" / "truncate_history.job.yml").read_text())
    task = job["resources"]["jobs"]["truncate_history"]["tasks"][0]
    named = task["python_wheel_task"]["named_parameters"]
    assert named["waiting_dir"] == "${var.waiting_dir}"
    return [f"--{k}={str(waiting_dir) if v == '${var.waiting_dir}' else v}" for k, v in named.items()]


def test_a_new_deployments_first_daily_run_is_green_and_says_nothing_waits(tmp_path, capsys, monkeypatch):
    waiting_dir = tmp_path / "volume" / "waiting"  # a new deployment: not created yet
    run_dir = tmp_path / "run"
    argv = _daily_truncate_argv(waiting_dir)
    # what the local runner sets for a task (never a parameter)
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_VALUES_DIR", str(run_dir))
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_KEY", "truncate")
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    code = truncate_task(argv)
    out, err = capsys.readouterr()
    assert code == 0
    assert "no table waits for its history truncation" in err
    (summary,) = parse_result_lines(out)
    assert summary["tables"] == 0 and summary["exit_code"] == 0 and summary["waiting_tables"] == []
    values = read_task_values(run_dir, "truncate")
    assert values["status"] == "nothing_waiting" and values["needs_truncate"] is False
    assert not waiting_dir.exists()  # a run with nothing to do writes nothing


def test_records_list_in_order_replace_and_forget(tmp_path):
    directory = str(tmp_path / "waiting")
    assert waiting_tables(directory) == []
    record_waiting(directory, "main.sales.events", "2026-11-28T04:00:00Z")
    record_waiting(directory, "s3://bucket/t", None)
    record_waiting(directory, "main.sales.events", "2026-11-29T04:00:00Z")  # again: one record
    assert sorted(waiting_tables(directory)) == ["main.sales.events", "s3://bucket/t"]
    files = sorted(Path(directory).iterdir())
    assert len(files) == 2 and not any(f.name.startswith(".") for f in files)
    again = next(json.loads(f.read_text()) for f in files if "events" in f.read_text())
    assert again["truncate_after"] == "2026-11-29T04:00:00Z"
    assert remove_record(directory, "main.sales.events") is True
    assert remove_record(directory, "main.sales.events") is False
    assert waiting_tables(directory) == ["s3://bucket/t"]


def test_a_directory_that_cannot_be_written_names_itself_and_the_fix(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(BadConfigError) as caught:
        record_waiting(str(blocker / "waiting"), "main.s.t")
    assert caught.value.exit_code == 2
    assert "CREATE VOLUME" in caught.value.message and "truncate_task --table=main.s.t" in caught.value.message


def test_a_broken_record_is_named(tmp_path):
    (tmp_path / "abc.waiting.json").write_text("{not json")
    with pytest.raises(BadConfigError, match="abc.waiting.json"):
        waiting_tables(str(tmp_path))
