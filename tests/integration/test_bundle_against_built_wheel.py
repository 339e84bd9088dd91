"""The repository's bundle validates against the entry points of a wheel built from this
checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from delta_downgrade_tools.bundle_check import load_jobs, validate_jobs, wheel_entry_points

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {"delta-downgrade", "drop_feature_task", "verify_task", "truncate_task"}


@pytest.fixture(scope="module")
def jobs():
    return load_jobs(REPO)


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return next(out.glob("delta_downgrade-*.whl"))


def test_repository_bundle_is_valid_against_the_built_wheel(jobs, built_wheel):
    entry_points = wheel_entry_points(built_wheel)
    assert entry_points == SCRIPTS
    assert validate_jobs(jobs, entry_points) == []
    assert {"delta_downgrade", "truncate_history", "delta_downgrade_classic"} <= set(jobs)
