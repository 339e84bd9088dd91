"""databricks.yml and resources/*.yml stay loadable by the strict databricks-bundles models."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _jobs():
    jobs = {}
    for f in sorted((REPO / "resources").glob("*.yml")):
        jobs.update((yaml.safe_load(f.read_text()).get("resources") or {}).get("jobs") or {})
    return jobs


def test_bundle_root():
    root = yaml.safe_load((REPO / "databricks.yml").read_text())
    assert root["bundle"]["name"] == "delta_downgrade"
    assert root["include"] == ["resources/*.yml"]
    assert root["artifacts"]["delta_downgrade_wheel"]["type"] == "whl"
    assert root["targets"]["dev"]["default"] is True
    assert root["targets"]["prod"]["workspace"]["root_path"]


def test_jobs_validate_with_databricks_bundles():
    jobs_mod = pytest.importorskip("databricks.bundles.jobs")
    jobs = _jobs()
    assert "delta_downgrade" in jobs
    for key, spec in jobs.items():
        jobs_mod.Job.from_dict(spec)  # raises on unknown fields, bad enums, missing fields
