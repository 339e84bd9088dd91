"""A job file whose YAML would take the runner down is refused as bad input (exit 2,
``DELTA_DOWNGRADE_BAD_JOB``) in bounded time: an alias bomb (nested anchors expanding to a
billion values) and a document nested 5,000 levels deep. A bundle's own anchors still load."""

from __future__ import annotations

import time

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.app.render.result import parse_result_lines
from delta_downgrade.errors import BadJobDefinitionError
from delta_downgrade_tools.local_runner import load_yaml


def _alias_bomb() -> str:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, 9):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


DOCUMENTS = {
    "alias bomb": _alias_bomb(),
    "5,000-deep flow sequence": "resources: " + "[" * 5000 + "]" * 5000 + "\n",
    "5,000-deep block mapping": "".join("  " * i + f"k{i}:\n" for i in range(5000)) + "  " * 5000 + "v: 1\n",
}


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_a_job_file_that_would_hang_or_crash_the_runner_is_refused(tmp_path, name):
    job = tmp_path / "job.yml"
    job.write_text(DOCUMENTS[name])
    started = time.monotonic()
    with pytest.raises(BadJobDefinitionError) as info:
        load_yaml(job)
    assert info.value.exit_code == 2
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_run_job_refuses_it_with_exit_2_and_a_result(tmp_path, capsys, name):
    job = tmp_path / "job.yml"
    job.write_text(DOCUMENTS[name])
    code = main(["run-job", str(job), "--param", "table=/nowhere", "--run-dir", str(tmp_path / "run")])
    out, err = capsys.readouterr()
    assert code == 2, err[-2000:]
    assert "Traceback" not in err
    assert [r["error_class"] for r in parse_result_lines(out)] == ["DELTA_DOWNGRADE_BAD_JOB"]
    assert not (tmp_path / "run").exists()


def test_anchors_and_aliases_of_a_real_bundle_still_load(tmp_path):
    job = tmp_path / "job.yml"
    job.write_text("defaults: &defaults\n  timeout_seconds: 600\n  max_retries: 0\n"
                   "tasks:\n  - task_key: a\n    <<: *defaults\n  - task_key: b\n    <<: *defaults\n")
    assert load_yaml(job)["tasks"][1] == {"task_key": "b", "timeout_seconds": 600, "max_retries": 0}
