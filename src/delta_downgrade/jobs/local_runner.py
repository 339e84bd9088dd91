"""Run a bundle job's task graph on this machine, the way the Databricks Jobs service would.

``delta-downgrade run-job resources/delta_downgrade.job.yml --param table=PATH …``:
- tasks run in dependency order; ``depends_on`` (with ``outcome`` for condition tasks) and
  ``run_if`` decide whether a task runs or is excluded;
- ``condition_task`` compares its resolved operands (``EQUAL_TO``/``NOT_EQUAL`` as strings, the
  others as numbers);
- ``{{job.parameters.X}}``, ``{{tasks.T.values.K}}``, ``{{job.run_id}}``, ``{{task.name}}`` and
  ``${var.X}`` are resolved (task values from the local store under the run directory);
- wheel tasks run through their console script (or ``spark-submit jobs/spark_submit.py TASK``),
  receive job parameters pushed down plus their ``named_parameters`` as ``--key=value``;
- ``max_retries`` and ``min_retry_interval_millis`` are honoured, so a truncate task that exits 3
  while its retention runs is simply retried.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from delta_downgrade.errors import BadInputError
from delta_downgrade.jobs.task_values import read_task_values

_REF = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")
_VAR = re.compile(r"\$\{var\.([A-Za-z0-9_.-]+)\}")

SUCCESS, FAILED, EXCLUDED, UPSTREAM_FAILED = "SUCCESS", "FAILED", "EXCLUDED", "UPSTREAM_FAILED"


@dataclass
class TaskRun:
    task_key: str
    status: str = ""
    attempts: int = 0
    exit_code: int | None = None
    outcome: str | None = None  # "true"/"false" for condition tasks
    results: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class JobRun:
    job_key: str
    run_id: str
    run_dir: Path
    tasks: dict[str, TaskRun] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return all(t.status in (SUCCESS, EXCLUDED) for t in self.tasks.values())


def load_job(path: str | os.PathLike[str], job_key: str | None = None) -> tuple[str, dict[str, Any]]:
    doc = yaml.safe_load(Path(path).read_text())
    jobs = ((doc or {}).get("resources") or {}).get("jobs") or {}
    if not jobs:
        raise BadInputError(f"{path} defines no resources.jobs", error_class="DELTA_DOWNGRADE_BAD_JOB")
    if job_key is None:
        if len(jobs) != 1:
            raise BadInputError(f"{path} defines several jobs ({', '.join(jobs)}); pick one with --job",
                                error_class="DELTA_DOWNGRADE_BAD_JOB")
        job_key = next(iter(jobs))
    if job_key not in jobs:
        raise BadInputError(f"{path} has no job {job_key!r}", error_class="DELTA_DOWNGRADE_BAD_JOB")
    return job_key, jobs[job_key]


def bundle_variables(job_file: str | os.PathLike[str], target: str | None = None) -> dict[str, str]:
    """Variable values as the bundle CLI would resolve them: ``databricks.yml`` defaults, then the
    target's overrides (the default target when none is named)."""
    root = Path(job_file).resolve().parent
    for candidate in (root, root.parent):
        bundle_file = candidate / "databricks.yml"
        if bundle_file.is_file():
            break
    else:
        return {}
    doc = yaml.safe_load(bundle_file.read_text()) or {}
    values = {k: str(v.get("default")) for k, v in (doc.get("variables") or {}).items()
              if isinstance(v, dict) and v.get("default") is not None}
    targets = doc.get("targets") or {}
    if target is None:
        target = next((k for k, t in targets.items() if (t or {}).get("default")), None)
    if target is not None:
        if target not in targets:
            raise BadInputError(f"{bundle_file} has no target {target!r}", error_class="DELTA_DOWNGRADE_BAD_JOB")
        values.update({k: str(v) for k, v in ((targets[target] or {}).get("variables") or {}).items()})
    return values


def topological_order(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tasks in an order where every dependency comes first; a cycle or a dangling dependency is
    an error (Databricks refuses such a job at deploy time)."""
    by_key = {t["task_key"]: t for t in tasks}
    if len(by_key) != len(tasks):
        raise BadInputError("duplicate task_key in the job", error_class="DELTA_DOWNGRADE_BAD_JOB")
    order: list[dict[str, Any]] = []
    state: dict[str, int] = {}

    def visit(key: str, chain: tuple[str, ...]) -> None:
        if state.get(key) == 2:
            return
        if state.get(key) == 1:
            raise BadInputError(f"the task graph has a cycle: {' -> '.join(chain + (key,))}",
                                error_class="DELTA_DOWNGRADE_BAD_JOB")
        if key not in by_key:
            raise BadInputError(f"task {chain[-1] if chain else '?'} depends on unknown task {key!r}",
                                error_class="DELTA_DOWNGRADE_BAD_JOB")
        state[key] = 1
        for dep in by_key[key].get("depends_on") or []:
            visit(dep["task_key"], chain + (key,))
        state[key] = 2
        order.append(by_key[key])

    for task in tasks:
        visit(task["task_key"], ())
    return order


def _should_run(task: dict[str, Any], run: JobRun) -> bool:
    deps = task.get("depends_on") or []
    if not deps:
        return True
    states = []
    for dep in deps:
        upstream = run.tasks[dep["task_key"]]
        if "outcome" in dep:
            # A dependency on a condition outcome is met only by that outcome.
            met = upstream.status == SUCCESS and upstream.outcome == str(dep["outcome"]).lower()
            states.append(SUCCESS if met else EXCLUDED)
        else:
            states.append(upstream.status)
    run_if = task.get("run_if", "ALL_SUCCESS")
    succeeded = [s == SUCCESS for s in states]
    failed = [s in (FAILED, UPSTREAM_FAILED) for s in states]
    if run_if == "ALL_SUCCESS":
        return all(succeeded)
    if run_if == "ALL_DONE":
        return True
    if run_if == "NONE_FAILED":
        return not any(failed) and any(succeeded)
    if run_if == "AT_LEAST_ONE_SUCCESS":
        return any(succeeded)
    if run_if == "ALL_FAILED":
        return all(failed)
    if run_if == "AT_LEAST_ONE_FAILED":
        return any(failed)
    raise BadInputError(f"unknown run_if {run_if!r}", error_class="DELTA_DOWNGRADE_BAD_JOB")


def _skip_status(task: dict[str, Any], run: JobRun) -> str:
    deps = [run.tasks[d["task_key"]].status for d in task.get("depends_on") or []]
    return UPSTREAM_FAILED if any(s in (FAILED, UPSTREAM_FAILED) for s in deps) else EXCLUDED


class Resolver:
    """Resolves ``{{…}}`` references and ``${var.…}`` against the run."""

    def __init__(self, run: JobRun, params: Mapping[str, str], variables: Mapping[str, str]) -> None:
        self.run, self.params, self.variables = run, params, variables

    def __call__(self, text: Any, task_key: str) -> str:
        text = str(text)
        text = _VAR.sub(lambda m: self._var(m.group(1)), text)
        return _REF.sub(lambda m: self._ref(m.group(1), task_key), text)

    def _var(self, name: str) -> str:
        if name not in self.variables:
            raise BadInputError(f"bundle variable {name!r} has no value; pass --var {name}=…",
                                error_class="DELTA_DOWNGRADE_BAD_JOB")
        return str(self.variables[name])

    def _ref(self, ref: str, task_key: str) -> str:
        parts = ref.split(".")
        if parts[:2] == ["job", "parameters"] and len(parts) == 3:
            if parts[2] not in self.params:
                raise BadInputError(f"{{{{{ref}}}}}: no job parameter {parts[2]!r}",
                                    error_class="DELTA_DOWNGRADE_BAD_JOB")
            return str(self.params[parts[2]])
        if ref in ("job.run_id", "job.id"):
            return self.run.run_id
        if ref == "task.name":
            return task_key
        if parts[0] == "tasks" and len(parts) == 4 and parts[2] == "values":
            values = read_task_values(self.run.run_dir, parts[1])
            if parts[3] not in values:
                raise BadInputError(f"{{{{{ref}}}}}: task {parts[1]!r} set no value {parts[3]!r}",
                                    error_class="DELTA_DOWNGRADE_BAD_JOB")
            value = values[parts[3]]
            return value if isinstance(value, str) else json.dumps(value)
        raise BadInputError(f"unsupported reference {{{{{ref}}}}}", error_class="DELTA_DOWNGRADE_BAD_JOB")


def _condition(spec: Mapping[str, Any], left: str, right: str) -> bool:
    op = spec["op"]
    if op == "EQUAL_TO":
        return left == right
    if op == "NOT_EQUAL":
        return left != right
    a, b = float(left), float(right)
    return {"GREATER_THAN": a > b, "GREATER_THAN_OR_EQUAL": a >= b,
            "LESS_THAN": a < b, "LESS_THAN_OR_EQUAL": a <= b}[op]


def _command(entry_point: str, args: list[str], runner: str) -> list[str]:
    if runner == "spark-submit":
        launcher = Path(__file__).resolve().parents[3] / "jobs" / "spark_submit.py"
        submit = shutil.which("spark-submit") or str(Path(sys.prefix) / "bin" / "spark-submit")
        return [submit, "--master", os.environ.get("DELTA_DOWNGRADE_SPARK_MASTER", "local[2]"),
                str(launcher), entry_point, *args]
    script = Path(sys.prefix) / "bin" / entry_point
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-c",
            f"import sys; from delta_downgrade.jobs.entrypoints import {entry_point} as f; sys.exit(f())", *args]


def run_job(job_file: str | os.PathLike[str], *, params: Mapping[str, str] | None = None,
            variables: Mapping[str, str] | None = None, job_key: str | None = None,
            target: str | None = None,
            run_dir: str | os.PathLike[str] | None = None, runner: str = "console",
            say: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
            sleep: Callable[[float], None] = time.sleep,
            after_task: Callable[[TaskRun, JobRun], None] | None = None) -> JobRun:
    job_key, job = load_job(job_file, job_key)
    run_id = uuid.uuid4().hex[:12]
    run = JobRun(job_key, run_id, Path(run_dir or Path(".runs") / f"{job_key}-{run_id}").resolve())
    run.run_dir.mkdir(parents=True, exist_ok=True)
    given = dict(params or {})
    resolver = Resolver(run, {}, {**bundle_variables(job_file, target), **dict(variables or {})})
    job_params = {p["name"]: given[p["name"]] if p["name"] in given else resolver(p.get("default", ""), "")
                  for p in job.get("parameters") or []}
    job_params.update(given)
    resolver.params = job_params

    for task in topological_order(job.get("tasks") or []):
        key = task["task_key"]
        state = TaskRun(key)
        run.tasks[key] = state
        if not _should_run(task, run):
            state.status = _skip_status(task, run)
            say(f"[{key}] {state.status.lower()}")
            continue
        if "condition_task" in task:
            spec = task["condition_task"]
            outcome = _condition(spec, resolver(spec["left"], key), resolver(spec["right"], key))
            state.status, state.outcome = SUCCESS, "true" if outcome else "false"
            say(f"[{key}] condition {spec['left']} {spec['op']} {spec['right']} -> {state.outcome}")
        elif "python_wheel_task" in task:
            _run_wheel_task(task, state, run, resolver, job_params, runner, say, sleep)
        else:
            raise BadInputError(f"task {key}: only python_wheel_task and condition_task run locally",
                                error_class="DELTA_DOWNGRADE_BAD_JOB")
        if after_task:
            after_task(state, run)
    return run


def _run_wheel_task(task: dict[str, Any], state: TaskRun, run: JobRun, resolver: Resolver,
                    job_params: Mapping[str, str], runner: str, say: Callable[[str], None],
                    sleep: Callable[[float], None]) -> None:
    from delta_downgrade.jobs.result import parse_result_lines

    key = task["task_key"]
    wheel = task["python_wheel_task"]
    retries = int(resolver(task.get("max_retries", 0) or 0, key))
    interval = int(resolver(task.get("min_retry_interval_millis", 0) or 0, key)) / 1000
    env = dict(os.environ, DELTA_DOWNGRADE_TASK_KEY=key, DELTA_DOWNGRADE_TASK_VALUES_DIR=str(run.run_dir))
    for attempt in range(retries + 1):
        # Job parameters are pushed down to key-value wheel tasks; the task's own win.
        named = {**job_params, **{k: resolver(v, key) for k, v in (wheel.get("named_parameters") or {}).items()}}
        args = [f"--{k}={v}" for k, v in named.items()]
        args += [resolver(a, key) for a in wheel.get("parameters") or []]
        state.attempts = attempt + 1
        say(f"[{key}] attempt {attempt + 1}/{retries + 1}: {wheel['entry_point']} {' '.join(args)}")
        proc = subprocess.run(_command(wheel["entry_point"], args, runner), env=env, capture_output=True, text=True)
        for line in proc.stderr.splitlines():
            say(f"[{key}]   {line}")
        for line in proc.stdout.splitlines():
            print(line, flush=True)
        state.exit_code = proc.returncode
        state.results = parse_result_lines(proc.stdout)
        if proc.returncode == 0:
            state.status = SUCCESS
            return
        if attempt < retries:
            say(f"[{key}] exit {proc.returncode}; retrying in {interval:.0f} s")
            sleep(interval)
    state.status = FAILED
