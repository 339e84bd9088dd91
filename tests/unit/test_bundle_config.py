"""databricks.yml and resources/*.yml stay loadable by the strict databricks-bundles models."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _jobs():
    jobs = {}
    for f in sorted((REPO / "resources").glob("*.yml")):
        jobs.update((yaml.safe_load(f.read_text()).get("resources") or {}).get("jobs") or {})
    return jobs


def _scripts() -> set[str]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"])


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


def test_job_graph_is_consistent():
    scripts = _scripts()
    for key, job in _jobs().items():
        tasks = job["tasks"]
        keys = [t["task_key"] for t in tasks]
        assert len(keys) == len(set(keys)), f"{key}: duplicate task keys"
        envs = {e["environment_key"] for e in job.get("environments", [])}
        clusters = {c["job_cluster_key"] for c in job.get("job_clusters", [])}
        params = {p["name"] for p in job.get("parameters", [])}
        seen: set[str] = set()
        for t in tasks:  # dependencies must point upstream (declared earlier)
            for dep in t.get("depends_on", []):
                assert dep["task_key"] in seen, f"{key}.{t['task_key']}: unknown/later dependency"
            if "environment_key" in t:
                assert t["environment_key"] in envs
            if "job_cluster_key" in t:
                assert t["job_cluster_key"] in clusters
            wheel = t.get("python_wheel_task")
            if wheel:
                assert wheel["package_name"] == "delta_downgrade"
                assert wheel["entry_point"] in scripts
                assert not ("parameters" in wheel and "named_parameters" in wheel)
                for value in (wheel.get("named_parameters") or {}).values():
                    for ref in re.findall(r"\{\{tasks\.([^.}]+)\.values\.", value):
                        assert ref in seen, f"{key}.{t['task_key']}: task value from non-upstream {ref}"
                    for ref in re.findall(r"\{\{job\.parameters\.([^}]+)\}\}", value):
                        assert ref in params, f"{key}.{t['task_key']}: unknown job parameter {ref}"
            seen.add(t["task_key"])
