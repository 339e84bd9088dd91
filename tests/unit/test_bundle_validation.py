"""The offline bundle validation: passes on the repository's bundle and fails, naming the problem,
when an entry point or a task-value reference is broken."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from delta_downgrade.errors import BadJobDefinitionError
from delta_downgrade_tools.bundle_check import load_jobs, validate_jobs

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {"delta-downgrade", "drop_feature_task", "verify_task", "truncate_task"}


@pytest.fixture(scope="module")
def jobs():
    return load_jobs(REPO)


def _task(jobs, job, key):
    return next(t for t in jobs[job]["tasks"] if t["task_key"] == key)


def test_broken_entry_point_is_reported(jobs):
    broken = copy.deepcopy(jobs)
    _task(broken, "delta_downgrade", "drop_feature")["python_wheel_task"]["entry_point"] = "drop_featur_task"
    problems = validate_jobs(broken, SCRIPTS)
    assert any("drop_featur_task" in p and "not in the wheel's metadata" in p for p in problems), problems


def test_broken_task_value_reference_is_reported(jobs):
    broken = copy.deepcopy(jobs)
    named = _task(broken, "delta_downgrade", "verify")["python_wheel_task"]["named_parameters"]
    named["expect_min_reader_version"] = "{{tasks.drop_feature.values.min_reader_versoin}}"
    problems = validate_jobs(broken, SCRIPTS)
    assert any("never sets the value 'min_reader_versoin'" in p for p in problems), problems


def test_reference_to_a_task_that_is_not_upstream(jobs):
    broken = copy.deepcopy(jobs)
    named = _task(broken, "delta_downgrade", "drop_feature")["python_wheel_task"]["named_parameters"]
    named["feature"] = "{{tasks.verify.values.status}}"
    assert any("not from an upstream task" in p for p in validate_jobs(broken, SCRIPTS))


def test_cycle_and_dangling_dependency(jobs):
    broken = copy.deepcopy(jobs)
    _task(broken, "delta_downgrade", "drop_feature")["depends_on"] = [{"task_key": "verify"}]
    assert any("cycle" in p for p in validate_jobs(broken, SCRIPTS))
    broken = copy.deepcopy(jobs)
    _task(broken, "delta_downgrade", "verify")["depends_on"] = [{"task_key": "nope"}]
    assert any("unknown task 'nope'" in p for p in validate_jobs(broken, SCRIPTS))


def test_strict_models_reject_unknown_fields_and_bad_enums(jobs):
    broken = copy.deepcopy(jobs)
    _task(broken, "delta_downgrade", "verify")["run_if"] = "SOMETIMES"
    assert any("databricks-bundles rejects" in p for p in validate_jobs(broken, SCRIPTS))
    broken = copy.deepcopy(jobs)
    broken["delta_downgrade"]["bogus"] = 1
    assert any("bogus" in p for p in validate_jobs(broken, SCRIPTS))


def test_outcome_only_on_condition_dependencies(jobs):
    broken = copy.deepcopy(jobs)
    _task(broken, "delta_downgrade", "verify")["depends_on"] = [{"task_key": "drop_feature", "outcome": "true"}]
    assert any("not a condition task" in p for p in validate_jobs(broken, SCRIPTS))


def test_unknown_job_parameter(jobs):
    broken = copy.deepcopy(jobs)
    _task(broken, "delta_downgrade", "drop_feature")["python_wheel_task"]["named_parameters"]["table"] = "{{job.parameters.tabel}}"
    assert any("unknown job parameter 'tabel'" in p for p in validate_jobs(broken, SCRIPTS))


def test_task_order_puts_dependencies_first_then_follows_the_file():
    from delta_downgrade_tools.local_runner import topological_order

    def task(key, *deps):
        return {"task_key": key, "notebook_task": {"notebook_path": "x"},
                **({"depends_on": [{"task_key": d} for d in deps]} if deps else {})}

    keys = [t["task_key"] for t in topological_order([task("x", "z"), task("y"), task("z"), task("w", "x", "y")])]
    assert keys == ["y", "z", "x", "w"]
    with pytest.raises(BadJobDefinitionError, match=r"cycle: (a -> b -> a|b -> a -> b)"):
        topological_order([task("a", "b"), task("b", "a")])
