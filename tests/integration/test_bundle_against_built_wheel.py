"""The repository's bundle validates against the entry points of a wheel built from this
checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_downgrade_tools.bundle_check import load_jobs, validate_jobs, wheel_entry_points

from tests.built_wheel import built_wheel  # noqa: F401 - fixture

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {"delta-downgrade", "drop_feature_task", "verify_task", "truncate_task"}


@pytest.fixture(scope="module")
def jobs():
    return load_jobs(REPO)




def test_repository_bundle_is_valid_against_the_built_wheel(jobs, built_wheel):
    entry_points = wheel_entry_points(built_wheel)
    assert entry_points == SCRIPTS
    assert validate_jobs(jobs, entry_points) == []
    assert {"delta_downgrade", "truncate_history", "delta_downgrade_classic"} <= set(jobs)
