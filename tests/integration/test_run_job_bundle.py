"""The bundle's jobs run locally end to end: the README's ``run-job`` line exits 0 on a
fresh clone with the truncate reported as waiting; a run without the table is exit 2 naming the
parameter; with ``truncate_in_job=true`` a truncate inside its retention is ``waiting`` (exit 0)
and the step after it is skipped by its condition; the runner enforces ``timeout_seconds``
(the task and what it started are killed), reports what the Jobs service would send, and refuses
a job key it does not know before anything runs."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.app.render.result import parse_result_lines
from tests.process_support import tree_hashes
from tests.spark_connect_server import classic_environment

REPO = Path(__file__).resolve().parents[2]


def _clone(tmp_path: Path) -> Path:
    """The bundle files of a fresh clone (databricks.yml and resources/), nothing else: no
    .runs/, no dist/, no deployment."""
    root = tmp_path / "clone"
    root.mkdir()
    shutil.copy(REPO / "databricks.yml", root / "databricks.yml")
    shutil.copytree(REPO / "resources", root / "resources")
    return root


def _cli(args: list[str], cwd: Path, timeout: float = 600, *, classic_spark: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELTA_DOWNGRADE_TASK")}
    if classic_spark:  # the tasks start their own Spark JVM, under the Spark Connect switch too
        env = classic_environment(env)
    return subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def readme_run_job_line() -> str:
    """The one ``delta-downgrade run-job`` command line of the README's "The job" section."""
    text = (REPO / "README.md").read_text()
    section = text.split("## The job", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip() for line in section.splitlines() if line.strip().startswith("delta-downgrade run-job ")]
    assert len(lines) == 1, lines
    return lines[0]


def test_the_readme_run_job_line_exits_0_with_the_truncate_waiting(tmp_path):
    from delta_downgrade_tools.demo import build_sample_table, visible_rows

    line = readme_run_job_line()
    assert line == "delta-downgrade run-job resources/delta_downgrade.job.yml --param table=PATH"
    table = str(tmp_path / "table")
    build_sample_table(table, truncate_retention=None)  # the default 24 h retention
    before = visible_rows(table)
    clone = _clone(tmp_path)
    proc = _cli(shlex.split(line.replace("PATH", shlex.quote(table)))[1:], clone)
    assert proc.returncode == 0, proc.stderr[-4000:]
    # no retry loop: every task that ran, ran once
    assert re.findall(r"\] attempt (\d+)/(\d+):", proc.stderr) == [("1", "1"), ("1", "1")], proc.stderr[-3000:]
    results = parse_result_lines(proc.stdout)
    drop = results[0]
    assert drop["status"] == "dropped" and drop["needs_truncate"] is True and drop["truncate_after"]
    assert re.search(r"drop_feature=success, verify=success, needs_truncate=success, truncate_in_job=success, "
                     r"truncate=excluded, truncated=excluded, verify_truncated=excluded", proc.stderr)
    assert f"truncate: waiting: {table} needs_truncate=true, truncate_after={drop['truncate_after']}" in proc.stderr
    snapshot = DeltaLog(table).snapshot()
    assert "deletionVectors" not in snapshot.protocol.features
    assert "checkpointProtection" in snapshot.protocol.features
    assert visible_rows(table) == before


def test_a_run_without_the_table_is_exit_2_naming_the_parameter(tmp_path):
    proc = _cli(["run-job", "resources/delta_downgrade.job.yml", "--run-dir", str(tmp_path / "run")],
                _clone(tmp_path))
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "drop_feature_task was given no table" in proc.stderr and "--params table=" in proc.stderr
    assert "drop_feature=failed, verify=upstream_failed" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_truncate_in_job_waits_as_a_success_and_skips_the_step_after_it(golden_table, tmp_path):
    table = golden_table("vacuum_protocol_check")  # a log-only drop: no Spark
    run_dir = tmp_path / "run"
    proc = _cli(["run-job", "resources/delta_downgrade.job.yml", "--param", f"table={table}",
                 "--param", "feature=vacuumProtocolCheck", "--param", "truncate_in_job=true",
                 "--run-dir", str(run_dir)], _clone(tmp_path))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert ("truncate_in_job=success, truncate=success, truncated=success, verify_truncated=excluded"
            in proc.stderr), proc.stderr[-2000:]
    values = json.loads((run_dir / "task_values" / "truncate.json").read_text())
    assert values["status"] == "waiting" and values["exit_code"] == 0
    assert values["needs_truncate"] is True and values["truncate_after"]
    assert f"truncate: waiting: {table} needs_truncate=true, truncate_after={values['truncate_after']}" in proc.stderr
    assert "[truncate] attempt 1/1" in proc.stderr and "attempt 2" not in proc.stderr


def _job_file(tmp_path: Path, job: dict) -> Path:
    path = tmp_path / "job.yml"
    path.write_text(yaml.safe_dump({"resources": {"jobs": {"j": job}}}))
    return path


def _wheel_task(key: str, entry_point: str, **named: str) -> dict:
    return {"task_key": key, "python_wheel_task": {"package_name": "delta_downgrade", "entry_point": entry_point,
                                                   "named_parameters": named}}


def test_a_task_past_its_timeout_is_killed_with_what_it_started_and_the_job_fails(golden_table, tmp_path):
    """A deletion-vector purge starts a Spark JVM: a 3 s timeout kills the task's whole process
    group, the job fails (exit 1: the task never exited), the next task is upstream_failed, and
    the run says whom Databricks would email. (Classic Spark in both modes: a JVM the task starts
    is what must die with it, and a Connect server already running would finish the drop in 3 s.)"""
    table = golden_table("dv_basic_no_checkpoint")
    drop = {**_wheel_task("drop", "drop_feature_task", table=table, feature="deletionVectors"),
            "timeout_seconds": 3}
    verify = {**_wheel_task("verify", "verify_task", table=table), "depends_on": [{"task_key": "drop"}],
              "timeout_seconds": 60}
    job = {"name": "j", "tasks": [drop, verify], "email_notifications": {"on_failure": ["ops@example.com"]},
           "health": {"rules": [{"metric": "RUN_DURATION_SECONDS", "op": "GREATER_THAN", "value": 1}]}}
    proc = _cli(["run-job", str(_job_file(tmp_path, job)), "--run-dir", str(tmp_path / "run")], tmp_path,
                timeout=120, classic_spark=True)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "[drop] timed out after 3 s (timeout_seconds)" in proc.stderr
    assert "drop=failed, verify=upstream_failed" in proc.stderr
    assert "failed; Databricks would send email on_failure -> ops@example.com" in proc.stderr
    assert "over its RUN_DURATION_SECONDS health rule (1 s)" in proc.stderr
    # nothing of the killed task keeps running: no process has the table's path in its command line
    time.sleep(1)
    survivors = subprocess.run(["pgrep", "-f", table], capture_output=True, text=True).stdout.split()
    assert survivors == [], survivors


def test_a_key_the_runner_does_not_know_is_refused_before_anything_runs(golden_table, tmp_path):
    table = golden_table("vacuum_protocol_check")
    before = tree_hashes(table)
    task = {**_wheel_task("drop", "drop_feature_task", table=table, feature="vacuumProtocolCheck"),
            "sql_warehouse_id": "abc"}
    job = {"name": "j", "tasks": [task], "git_source": {"git_url": "https://example.com/x.git"}}
    proc = _cli(["run-job", str(_job_file(tmp_path, job)), "--run-dir", str(tmp_path / "run")], tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "unknown job key(s) git_source" in proc.stderr and "task drop: unknown key(s) sql_warehouse_id" in proc.stderr
    assert tree_hashes(table) == before and not (tmp_path / "run").exists()
