"""validate-bundle refuses storage options written into the bundle: as job or task parameters
(shown on the run page) or as an inline cluster environment variable; a ``{{secrets/scope/key}}``
reference passes. The repository's bucket job passes them that way. run-job's echo of a task's
arguments masks storage options passed as parameters."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from delta_downgrade_tools.bundle_check import load_jobs, secret_problems, validate_jobs
from delta_downgrade.app.storage_options import masked_command_line

REPO = Path(__file__).resolve().parents[3]
SCRIPTS = {"delta-downgrade", "drop_feature_task", "verify_task", "truncate_task"}
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture(scope="module")
def jobs():
    return load_jobs(REPO)


def _env(job):
    return job["job_clusters"][0]["new_cluster"]["spark_env_vars"]


def test_the_bucket_job_takes_storage_options_from_a_secret_scope(jobs):
    job = jobs["delta_downgrade_bucket"]
    assert _env(job)["DELTA_DOWNGRADE_STORAGE_OPTIONS"].startswith("{{secrets/")
    assert all(t["python_wheel_task"]["named_parameters"]["engine"] == "native" for t in job["tasks"])
    assert secret_problems("delta_downgrade_bucket", job) == []
    assert validate_jobs(jobs, SCRIPTS) == []


@pytest.mark.parametrize("name", ["DELTA_DOWNGRADE_STORAGE_OPTIONS", "AWS_SECRET_ACCESS_KEY",
                                  "AZURE_STORAGE_ACCOUNT_KEY", "GOOGLE_SERVICE_ACCOUNT_KEY"])
def test_an_inline_credential_in_the_cluster_environment_is_refused(jobs, name):
    broken = copy.deepcopy(jobs)
    _env(broken["delta_downgrade_bucket"])[name] = SECRET
    problems = validate_jobs(broken, SCRIPTS)
    assert any(name in p and "inline" in p and "{{secrets/<scope>/<key>}}" in p for p in problems), problems


def test_a_non_secret_environment_variable_may_be_inline(jobs):
    fine = copy.deepcopy(jobs)
    _env(fine["delta_downgrade_bucket"])["AWS_REGION"] = "eu-west-1"
    assert validate_jobs(fine, SCRIPTS) == []


@pytest.mark.parametrize("where", ["named", "positional", "job"])
def test_storage_options_as_parameters_are_refused(jobs, where):
    broken = copy.deepcopy(jobs)
    job = broken["delta_downgrade"]
    wheel = job["tasks"][0]["python_wheel_task"]
    if where == "named":
        wheel["named_parameters"]["storage_options"] = "{{secrets/scope/key}}"
    elif where == "positional":
        del wheel["named_parameters"]
        wheel["parameters"] = ["--table=x", "--storage-option=AWS_SECRET_ACCESS_KEY=x"]
    else:
        job["parameters"].append({"name": "storage_options", "default": "{}"})
    problems = validate_jobs(broken, SCRIPTS)
    assert any("would show storage options on the run page" in p for p in problems), problems


def test_run_job_masks_storage_options_in_its_echo_of_a_tasks_arguments():
    shown = masked_command_line([f'--storage_options={{"AWS_SECRET_ACCESS_KEY": "{SECRET}"}}',
                                 f"--storage-option=AWS_SECRET_ACCESS_KEY={SECRET}x",
                                 "--storage_option", f"AWS_SESSION_TOKEN={SECRET}y",
                                 "--storage_option", f"{SECRET}z==",
                                 "--table=s3://b/t"])
    assert SECRET not in shown, shown
    assert shown.endswith("--table=s3://b/t")
    assert "AWS_SESSION_TOKEN=***" in shown
