"""``validate-bundle`` enforces the bundle's hygiene: no host written into the bundle,
prod runs as a service principal given by a variable, the table is a run parameter, every task
that runs code has a timeout, no wheel task retries, a scheduled job alerts on failure and has a
duration health rule (that every variable a job uses is declared, the Databricks CLI checks:
tests/integration/test_bundle_deploy.py). Each rule is broken once, on a copy
of the repository's own bundle, and must be reported."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from delta_downgrade_tools.bundle_check import installed_entry_points, validate_bundle

REPO = Path(__file__).resolve().parents[3]


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    root.mkdir()
    shutil.copy(REPO / "databricks.yml", root / "databricks.yml")
    shutil.copytree(REPO / "resources", root / "resources")
    return root


def _edit(path: Path, change: Callable[[Any], None]) -> None:
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def _job(doc: Any, key: str) -> dict:
    return doc["resources"]["jobs"][key]


def _task(doc: Any, job: str, key: str) -> dict:
    return next(t for t in _job(doc, job)["tasks"] if t["task_key"] == key)


def test_the_repository_bundle_follows_every_rule():
    assert validate_bundle(REPO, installed_entry_points()) == []


BUNDLE_BREAKS = {
    "placeholder-host": (lambda d: d["targets"]["dev"].setdefault("workspace", {}).update(
        host="https://example.cloud.databricks.com"), "target dev: workspace.host"),
    "top-level-host": (lambda d: d.update(workspace={"host": "https://adb-1.azuredatabricks.net"}),
                       "databricks.yml: workspace.host"),
    "prod-without-run-as": (lambda d: d["targets"]["prod"].pop("run_as"), "target prod: a production target"),
    "prod-run-as-literal-id": (lambda d: d["targets"]["prod"].update(
        run_as={"service_principal_name": "6f0c-1234"}), "target prod: a production target"),
    "table-variable": (lambda d: d["variables"].update(table={"description": "x"}),
                       "variable 'table' fixes the table at deploy time"),
    "timeout-variable-zero": (lambda d: d["variables"]["drop_timeout_seconds"].update(default=0),
                              "delta_downgrade.drop_feature: timeout_seconds ${var.drop_timeout_seconds} defaults to 0"),
}


@pytest.mark.parametrize("case", sorted(BUNDLE_BREAKS))
def test_a_broken_bundle_rule_is_reported(tmp_path, case):
    change, expected = BUNDLE_BREAKS[case]
    root = _copy(tmp_path)
    _edit(root / "databricks.yml", change)
    problems = validate_bundle(root, installed_entry_points())
    assert any(expected in p for p in problems), problems


JOB_BREAKS = {
    "table-with-a-default": ("delta_downgrade.job.yml", lambda d: _job(d, "delta_downgrade")["parameters"][0].update(
        default="main.sales.events"), "job parameter 'table' has the default 'main.sales.events'"),
    "task-without-timeout": ("delta_downgrade.job.yml", lambda d: _task(d, "delta_downgrade", "verify").pop(
        "timeout_seconds"), "delta_downgrade.verify: no timeout_seconds"),
    "zero-timeout": ("classic/delta_downgrade_classic.job.yml", lambda d: _task(d, "delta_downgrade_classic",
                                                                        "drop_feature").update(timeout_seconds=0),
                     "delta_downgrade_classic.drop_feature: no timeout_seconds"),
    "retries-as-a-wait-loop": ("delta_downgrade.job.yml", lambda d: _task(d, "delta_downgrade", "truncate").update(
        max_retries=10, min_retry_interval_millis=60000), "delta_downgrade.truncate: max_retries 10"),
    "scheduled-without-on-failure": ("truncate_history.job.yml", lambda d: _job(d, "truncate_history").pop(
        "email_notifications"), "truncate_history: a scheduled job needs email_notifications.on_failure"),
    "scheduled-without-health": ("truncate_history.job.yml", lambda d: _job(d, "truncate_history").pop("health"),
                                 "truncate_history: a scheduled job needs a health rule"),
}


@pytest.mark.parametrize("case", sorted(JOB_BREAKS))
def test_a_broken_job_rule_is_reported(tmp_path, case):
    name, change, expected = JOB_BREAKS[case]
    root = _copy(tmp_path)
    _edit(root / "resources" / name, change)
    problems = validate_bundle(root, installed_entry_points())
    assert any(expected in p for p in problems), problems


def test_condition_tasks_need_no_timeout():
    """Condition tasks are evaluated by the Jobs service and run no code: the rule skips them
    (the repository's job has three, none with a timeout, and passes)."""
    doc = yaml.safe_load((REPO / "resources" / "delta_downgrade.job.yml").read_text())
    conditions = [t for t in _job(doc, "delta_downgrade")["tasks"] if "condition_task" in t]
    assert len(conditions) == 3 and not any("timeout_seconds" in t for t in conditions)


def test_the_truncate_step_is_not_a_wait_loop_and_the_dev_target_does_not_truncate_in_the_drop_job():
    bundle = yaml.safe_load((REPO / "databricks.yml").read_text())
    assert "truncate_in_job" not in (bundle["targets"]["dev"].get("variables") or {})
    assert bundle["variables"]["truncate_in_job"]["default"] == "false"
    doc = yaml.safe_load((REPO / "resources" / "delta_downgrade.job.yml").read_text())
    for task in _job(doc, "delta_downgrade")["tasks"]:
        assert "max_retries" not in task
    # the step after a waiting truncate is skipped by a condition on its status
    truncated = _task(doc, "delta_downgrade", "truncated")["condition_task"]
    assert truncated == {"left": "{{tasks.truncate.values.status}}", "op": "NOT_EQUAL", "right": "waiting"}
    assert _task(doc, "delta_downgrade", "verify_truncated")["depends_on"] == [{"task_key": "truncated",
                                                                                 "outcome": "true"}]
