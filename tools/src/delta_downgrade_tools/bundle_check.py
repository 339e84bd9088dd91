"""Offline validation of the bundle (the Databricks CLI is not on PyPI, so `bundle validate`
cannot run here): every job passes the strict `databricks-bundles` models, and our own checks
cover what those models do not — the task graph is acyclic and complete, condition outcomes are
used only on condition tasks, every wheel entry point exists in the wheel's metadata, every
``{{tasks.X.values.Y}}`` names a value task X really sets, and every ``{{job.parameters.P}}``
names a job parameter."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from delta_downgrade.errors import BadInputError, BadJobDefinitionError

# What each entry point sets as task values (jobs/entrypoints.py sets every key on every path).
TASK_OUTPUTS: dict[str, frozenset[str]] = {}

_TASK_VALUE = re.compile(r"\{\{\s*tasks\.([A-Za-z0-9_-]+)\.values\.([A-Za-z0-9_-]+)\s*\}\}")
_JOB_PARAM = re.compile(r"\{\{\s*job\.parameters\.([A-Za-z0-9_.-]+)\s*\}\}")


def _outputs() -> dict[str, frozenset[str]]:
    if not TASK_OUTPUTS:
        from delta_downgrade.app.tasks.entrypoints import TASK_VALUE_KEYS

        for name in ("drop_feature_task", "verify_task", "truncate_task"):
            TASK_OUTPUTS[name] = frozenset(TASK_VALUE_KEYS)
    return TASK_OUTPUTS


def load_jobs(root: str | Path) -> dict[str, dict[str, Any]]:
    from delta_downgrade_tools.local_runner import _mapping, load_yaml

    root = Path(root)
    bundle = _mapping(load_yaml(root / "databricks.yml", "bundle file"), "databricks.yml")
    jobs: dict[str, dict[str, Any]] = {}
    include = bundle.get("include") or []
    if not isinstance(include, list) or not all(isinstance(p, str) for p in include):
        raise BadJobDefinitionError("databricks.yml: include must be a list of glob patterns")
    for pattern in include:
        for f in sorted(root.glob(pattern)):
            doc = _mapping(load_yaml(f), str(f))
            found = _mapping(_mapping(doc.get("resources"), f"{f}: resources").get("jobs"), f"{f}: resources.jobs")
            for key, job in found.items():
                if key in jobs:
                    raise BadJobDefinitionError(f"job {key} is defined twice")
                jobs[key] = _mapping(job, f"{f}: job {key}")
    return jobs


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def validate_jobs(jobs: dict[str, dict[str, Any]], entry_points: set[str]) -> list[str]:
    """Every problem found, as one line each; empty when the bundle is valid."""
    from delta_downgrade_tools.local_runner import topological_order

    problems: list[str] = []
    try:
        from databricks.bundles.jobs import Job
    except ImportError:  # pragma: no cover - the dev extra installs it
        Job = None
    outputs = _outputs()
    for job_key, job in jobs.items():
        if Job is not None:
            try:
                Job.from_dict(job)
            except (ValueError, TypeError, KeyError) as exc:
                problems.append(f"{job_key}: databricks-bundles rejects the job: {exc}")
        tasks = job.get("tasks") or []
        try:
            order = topological_order(tasks)  # also checks every task's shape
        except BadInputError as exc:
            problems.append(f"{job_key}: {exc.message}")
            continue
        by_key = {t["task_key"]: t for t in tasks}
        upstream: dict[str, set[str]] = {}
        for task in order:
            key = task["task_key"]
            ups: set[str] = set()
            for dep in task.get("depends_on") or []:
                ups |= {dep["task_key"]} | upstream[dep["task_key"]]
                if "outcome" in dep and "condition_task" not in by_key[dep["task_key"]]:
                    problems.append(f"{job_key}.{key}: 'outcome' on a dependency that is not a condition task")
            upstream[key] = ups
        params = {p["name"] for p in job.get("parameters") or []}
        envs = {e["environment_key"] for e in job.get("environments") or []}
        clusters = {c["job_cluster_key"] for c in job.get("job_clusters") or []}
        for task in tasks:
            key = task["task_key"]
            wheel = task.get("python_wheel_task")
            if wheel:
                if wheel.get("package_name") != "delta_downgrade":
                    problems.append(f"{job_key}.{key}: package_name must be delta_downgrade")
                if wheel.get("entry_point") not in entry_points:
                    problems.append(f"{job_key}.{key}: entry point {wheel.get('entry_point')!r} is not in the "
                                    f"wheel's metadata ({', '.join(sorted(entry_points))})")
                if "parameters" in wheel and "named_parameters" in wheel:
                    problems.append(f"{job_key}.{key}: set parameters or named_parameters, not both")
            if "environment_key" in task and task["environment_key"] not in envs:
                problems.append(f"{job_key}.{key}: unknown environment_key {task['environment_key']!r}")
            if "job_cluster_key" in task and task["job_cluster_key"] not in clusters:
                problems.append(f"{job_key}.{key}: unknown job_cluster_key {task['job_cluster_key']!r}")
            for text in _strings(task):
                for source, value in _TASK_VALUE.findall(text):
                    if source not in upstream.get(key, set()):
                        problems.append(f"{job_key}.{key}: {{{{tasks.{source}.values.{value}}}}} is not from an upstream task")
                        continue
                    producer = (by_key[source].get("python_wheel_task") or {}).get("entry_point")
                    if producer is None or value not in outputs.get(producer, frozenset()):
                        problems.append(f"{job_key}.{key}: task {source} ({producer or 'not a wheel task'}) "
                                        f"never sets the value {value!r}")
                for name in _JOB_PARAM.findall(text):
                    if name not in params:
                        problems.append(f"{job_key}.{key}: unknown job parameter {name!r}")
    return problems


def wheel_entry_points(wheel: str | Path) -> set[str]:
    """Console scripts declared in a built wheel's ``entry_points.txt``."""
    import configparser
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt"))
        parser = configparser.ConfigParser()
        parser.read_string(zf.read(name).decode())
    return set(parser["console_scripts"]) if parser.has_section("console_scripts") else set()


def installed_entry_points() -> set[str]:
    from delta_downgrade.app.tasks.wheel_entry import declared_entry_points

    return set(declared_entry_points())
