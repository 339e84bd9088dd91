"""Run a bundle job's task graph on this machine, the way the Databricks Jobs service would.

``delta-downgrade run-job resources/delta_downgrade.job.yml --param table=PATH …``:
- the whole job is checked before any task runs (:func:`check_job`), as Databricks checks a job
  when it is created: a malformed task, an unknown condition ``op`` or ``run_if``, a negative retry
  setting, an entry point the wheel does not declare, a reference to an unknown parameter or to a
  task that is not upstream all stop the run with exit 2 and nothing started;
- tasks run in dependency order; ``depends_on`` (with ``outcome`` for condition tasks) and
  ``run_if`` decide whether a task runs or is excluded;
- ``condition_task`` compares its resolved operands (``EQUAL_TO``/``NOT_EQUAL`` as strings, the
  others as numbers);
- ``{{job.parameters.X}}``, ``{{tasks.T.values.K}}``, ``{{job.run_id}}``, ``{{task.name}}`` and
  ``${var.X}`` are resolved (task values from the local store under the run directory);
- wheel tasks run only through an entry point the installed wheel declares
  (:mod:`delta_downgrade.app.tasks.wheel_entry`, or ``spark-submit jobs/spark_submit.py TASK``), and
  receive job parameters pushed down plus their ``named_parameters`` as ``--key=value``; their task
  key and values directory travel in the environment, never as parameters;
- ``max_retries`` and ``min_retry_interval_millis`` are honoured as Databricks honours them (every
  failed attempt is retried, whatever its exit code; the repository's bundle uses none, see
  ``bundle_check``);
- ``timeout_seconds`` of a task and of the job are enforced: a task past its timeout is killed
  and FAILED, as on Databricks;
- every other key of a job or task must be one the runner knows (:data:`JOB_KEYS`,
  :data:`TASK_KEYS`): the service-side ones (``schedule``, ``email_notifications``, ``health``,
  ``run_as``, compute) change nothing in a local run but are reported — who would be told of a
  failure, a run longer than its ``RUN_DURATION_SECONDS`` health rule; an unknown key is refused
  before any task runs, so nothing in a job is silently ignored.
"""

from __future__ import annotations

import heapq
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from delta_downgrade.errors import BadInputError, BadJobDefinitionError, DeltaDowngradeError
from delta_downgrade.app.storage_options import masked_command_line
from delta_downgrade.app.tasks.settings import ENV_PREFIX, RUNNER_ONLY, parse_cli_args
from delta_downgrade.app.tasks.task_values import KEY_PATTERN, check_key, read_task_values
from delta_downgrade.app.tasks.wheel_entry import declared_entry_points, resolve_entry_point

_REF = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")
_VAR = re.compile(r"\$\{var\.([A-Za-z0-9_.-]+)\}")

SUCCESS, FAILED, EXCLUDED, UPSTREAM_FAILED = "SUCCESS", "FAILED", "EXCLUDED", "UPSTREAM_FAILED"

# The Jobs API's enums (jobs.RunIf, jobs.ConditionTaskOp).
RUN_IF = ("ALL_SUCCESS", "ALL_DONE", "NONE_FAILED", "AT_LEAST_ONE_SUCCESS", "ALL_FAILED", "AT_LEAST_ONE_FAILED")
CONDITION_OPS = ("EQUAL_TO", "NOT_EQUAL", "GREATER_THAN", "GREATER_THAN_OR_EQUAL", "LESS_THAN",
                 "LESS_THAN_OR_EQUAL")
TASK_TYPES = ("condition_task", "python_wheel_task")
#: Job keys the runner knows: the ones it acts on and the service-side ones it reports or that
#: change nothing locally (compute, schedule, permissions, queueing).
JOB_KEYS = frozenset({
    "name", "description", "parameters", "tasks", "timeout_seconds", "email_notifications",
    "notification_settings", "health", "webhook_notifications", "schedule", "trigger", "run_as",
    "max_concurrent_runs", "queue", "tags", "permissions", "environments", "job_clusters",
    "edit_mode", "performance_target", "budget_policy_id"})
#: Task keys the runner knows (besides the task types).
TASK_KEYS = frozenset({
    "task_key", "description", "depends_on", "run_if", "timeout_seconds", "max_retries",
    "min_retry_interval_millis", "retry_on_timeout", "environment_key", "job_cluster_key",
    "existing_cluster_id", "new_cluster", "libraries", "email_notifications", "notification_settings",
    "webhook_notifications", "health", "disable_auto_optimization"})


@dataclass
class TaskRun:
    task_key: str
    status: str = ""
    attempts: int = 0
    exit_code: int | None = None
    outcome: str | None = None  # "true"/"false" for condition tasks
    results: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # why the task failed without its program saying so


@dataclass
class JobRun:
    job_key: str
    run_id: str
    run_dir: Path
    tasks: dict[str, TaskRun] = field(default_factory=dict)
    seconds: float = 0.0
    notices: list[str] = field(default_factory=list)  # what the Jobs service would have done

    @property
    def succeeded(self) -> bool:
        return all(t.status in (SUCCESS, EXCLUDED) for t in self.tasks.values())


#: Bounds of a job file's YAML: nesting depth, and nodes once aliases are expanded (a bundle is
#: hundreds of nodes; an "alias bomb" of nested anchors expands to billions, which every walk of
#: the job, and the tasks' arguments, would then go through).
MAX_YAML_DEPTH = 64
MAX_YAML_NODES = 100_000


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a document nested deeper than :data:`MAX_YAML_DEPTH` (its
    composer recurses per level: 5,000 levels are a RecursionError) or holding more than
    :data:`MAX_YAML_NODES` nodes with aliases expanded."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise BadJobDefinitionError(f"is nested deeper than {MAX_YAML_DEPTH} levels (line {mark.line + 1})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None and _expanded_size(node) > MAX_YAML_NODES:
            raise BadJobDefinitionError(f"holds more than {MAX_YAML_NODES} values once its aliases (*name) "
                                        f"are expanded")
        return node


def _expanded_size(root: Any) -> int:
    """How many nodes ``root`` has with every alias expanded (an alias is the anchored node
    itself, shared): counted once per distinct node, in linear time, iteratively."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes:
            continue
        children = ([child for pair in node.value for child in pair] if isinstance(node, yaml.MappingNode)
                    else list(node.value) if isinstance(node, yaml.SequenceNode) else [])
        if done or not children:
            sizes[id(node)] = min(MAX_YAML_NODES + 1, 1 + sum(sizes.get(id(c), 0) for c in children))
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)]


def load_yaml(path: str | os.PathLike[str], what: str = "job file") -> Any:
    """A YAML document, loaded safely: tags such as ``!!python/object`` are never constructed.
    Any problem (missing file, not UTF-8, bad YAML, unsafe tag) is one BadJobDefinitionError."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BadJobDefinitionError(f"{what} {path} cannot be read: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadJobDefinitionError(f"{what} {path} is not UTF-8 text (byte {exc.start})") from exc
    try:
        return yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader, bounded
    except BadJobDefinitionError as exc:
        raise BadJobDefinitionError(f"{what} {path} is refused: it {exc.message}") from None
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise BadJobDefinitionError(f"{what} {path} is not valid bundle YAML (only plain YAML is "
                                    f"accepted; language-specific tags are refused): {detail}") from exc


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadJobDefinitionError(f"{what} must be a mapping, not {type(value).__name__}")
    return value


def load_job(path: str | os.PathLike[str], job_key: str | None = None) -> tuple[str, dict[str, Any]]:
    doc = _mapping(load_yaml(path), f"{path}")
    jobs = _mapping(_mapping(doc.get("resources"), f"{path}: resources").get("jobs"), f"{path}: resources.jobs")
    if not jobs:
        raise BadJobDefinitionError(f"{path} defines no resources.jobs")
    if job_key is None:
        if len(jobs) != 1:
            raise BadJobDefinitionError(f"{path} defines several jobs ({', '.join(map(str, jobs))}); "
                                        f"pick one with --job")
        job_key = next(iter(jobs))
    if job_key not in jobs:
        raise BadJobDefinitionError(f"{path} has no job {job_key!r}")
    return str(job_key), _mapping(jobs[job_key], f"{path}: job {job_key}")


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
    doc = _mapping(load_yaml(bundle_file, "bundle file"), str(bundle_file))
    values = {k: str(v.get("default")) for k, v in _mapping(doc.get("variables"), "variables").items()
              if isinstance(v, dict) and v.get("default") is not None}
    targets = _mapping(doc.get("targets"), "targets")
    if target is None:
        target = next((k for k, t in targets.items() if isinstance(t, dict) and t.get("default")), None)
    if target is not None:
        if target not in targets:
            raise BadJobDefinitionError(f"{bundle_file} has no target {target!r}")
        overrides = _mapping(_mapping(targets[target], f"target {target}").get("variables"),
                             f"target {target}: variables")
        values.update({k: str(v) for k, v in overrides.items()})
    return values


def _task_problems(task: Any, index: int) -> list[str]:
    """Shape problems of one task that would make the graph itself unreadable."""
    if not isinstance(task, dict):
        return [f"task #{index + 1} must be a mapping, not {type(task).__name__}"]
    key = task.get("task_key")
    if key is None:
        return [f"task #{index + 1} has no task_key"]
    try:
        check_key(key, "task_key")
    except BadInputError as exc:
        return [f"task #{index + 1}: {exc.message}"]
    problems = []
    deps = task.get("depends_on") or []
    if not isinstance(deps, list) or not all(isinstance(d, dict) and isinstance(d.get("task_key"), str)
                                             for d in deps):
        problems.append(f"task {key}: depends_on must be a list of {{task_key: …}} mappings")
    return problems


def topological_order(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tasks in an order where every dependency comes first; a malformed task, a cycle or a
    dangling dependency is an error (Databricks refuses such a job at deploy time)."""
    if not isinstance(tasks, list):
        raise BadJobDefinitionError(f"tasks must be a list, not {type(tasks).__name__}")
    problems = [p for i, t in enumerate(tasks) for p in _task_problems(t, i)]
    if problems:
        raise BadJobDefinitionError("; ".join(problems))
    by_key = {t["task_key"]: t for t in tasks}
    if len(by_key) != len(tasks):
        raise BadJobDefinitionError("duplicate task_key in the job")
    graph: dict[str, list[str]] = {}
    for key, task in by_key.items():
        graph[key] = [dep["task_key"] for dep in task.get("depends_on") or []]
        for dep in graph[key]:
            if dep not in by_key:
                raise BadJobDefinitionError(f"task {key} depends on unknown task {dep!r}")
    sorter = TopologicalSorter(graph)
    try:
        sorter.prepare()
    except CycleError as exc:
        raise BadJobDefinitionError(f"the task graph has a cycle: {' -> '.join(exc.args[1])}") from None
    # Of the tasks whose dependencies are done, the one written first runs first: the local run
    # is sequential and follows the job file where the graph leaves a choice.
    position = {key: i for i, key in enumerate(by_key)}
    ready: list[tuple[int, str]] = []
    order: list[dict[str, Any]] = []
    while sorter.is_active():
        for key in sorter.get_ready():
            heapq.heappush(ready, (position[key], key))
        _, key = heapq.heappop(ready)
        order.append(by_key[key])
        sorter.done(key)
    return order


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _runner_only(name: str) -> bool:
    return name.strip().replace("-", "_").lower() in RUNNER_ONLY


@dataclass
class _Plan:
    """What :func:`check_job` established about a job: the order, each task's retry settings and
    timeout (None: none), the job's timeout."""

    order: list[dict[str, Any]]
    retries: dict[str, tuple[int, float]]
    timeouts: dict[str, int | None] = field(default_factory=dict)
    job_timeout: int | None = None


def check_job(job: dict[str, Any], params: Mapping[str, str], variables: Mapping[str, str],
              entry_points: Mapping[str, Any] | None = None) -> _Plan:
    """Check the whole job before anything runs; every problem is listed in one
    :class:`BadJobDefinitionError`. ``params`` are the job parameters' names and values."""
    order = topological_order(job.get("tasks") or [])
    declared = declared_entry_points() if entry_points is None else entry_points
    problems: list[str] = []
    unknown = sorted(str(k) for k in job if k not in JOB_KEYS)
    if unknown:
        problems.append(f"unknown job key(s) {', '.join(unknown)} (the local runner knows "
                        f"{', '.join(sorted(JOB_KEYS))})")
    upstream: dict[str, set[str]] = {}
    retries: dict[str, tuple[int, float]] = {}
    timeouts: dict[str, int | None] = {}
    job_timeout = _count_setting(job, "timeout_seconds", "(job)", params, variables, problems) or None
    for task in order:
        key = task["task_key"]
        unknown = sorted(str(k) for k in task if k not in TASK_KEYS and not str(k).endswith("_task"))
        if unknown:
            problems.append(f"task {key}: unknown key(s) {', '.join(unknown)}")
        timeouts[key] = _count_setting(task, "timeout_seconds", key, params, variables, problems) or None
        ups: set[str] = set()
        for dep in task.get("depends_on") or []:
            ups |= {dep["task_key"]} | upstream[dep["task_key"]]
            if "outcome" in dep and str(dep["outcome"]).lower() not in ("true", "false"):
                problems.append(f"task {key}: depends_on outcome must be \"true\" or \"false\"")
        upstream[key] = ups
        run_if = task.get("run_if", "ALL_SUCCESS")
        if run_if not in RUN_IF:
            problems.append(f"task {key}: unknown run_if {run_if!r} (one of {', '.join(RUN_IF)})")
        kinds = [k for k in TASK_TYPES if k in task]
        others = [k for k in task if k.endswith("_task") and k not in TASK_TYPES]
        if others or len(kinds) != 1:
            problems.append(f"task {key}: only one python_wheel_task or condition_task runs locally "
                            f"(found {', '.join(others + kinds) or 'none'})")
        elif kinds[0] == "condition_task":
            problems.extend(_condition_problems(key, task["condition_task"]))
        else:
            problems.extend(_wheel_problems(key, task["python_wheel_task"], declared))
        for name in _VAR.findall(" ".join(_strings(task))):
            if name not in variables:
                problems.append(f"task {key}: bundle variable {name!r} has no value; pass --var {name}=…")
        for text in _strings(task):
            for ref in _REF.findall(text):
                problem = _reference_problem(ref, params, ups)
                if problem:
                    problems.append(f"task {key}: {{{{{ref}}}}}: {problem}")
        retries[key] = (_count_setting(task, "max_retries", key, params, variables, problems),
                        _count_setting(task, "min_retry_interval_millis", key, params, variables, problems) / 1000)
    if problems:
        raise BadJobDefinitionError("the job cannot run: " + "; ".join(problems))
    return _Plan(order, retries, timeouts, job_timeout)


def _condition_problems(key: str, spec: Any) -> list[str]:
    if not isinstance(spec, dict):
        return [f"task {key}: condition_task must be a mapping"]
    problems = []
    if spec.get("op") not in CONDITION_OPS:
        problems.append(f"task {key}: unknown condition op {spec.get('op')!r} (one of {', '.join(CONDITION_OPS)})")
    for side in ("left", "right"):
        if side not in spec or not _scalar(spec[side]) or spec[side] is None:
            problems.append(f"task {key}: condition_task needs a scalar {side!r} operand")
    return problems


def _wheel_problems(key: str, wheel: Any, declared: Mapping[str, Any]) -> list[str]:
    if not isinstance(wheel, dict):
        return [f"task {key}: python_wheel_task must be a mapping"]
    problems = []
    try:
        resolve_entry_point(wheel.get("entry_point"), wheel.get("package_name"), declared)
    except BadJobDefinitionError as exc:
        problems.append(f"task {key}: {exc.message}")
    named = wheel.get("named_parameters") or {}
    positional = wheel.get("parameters") or []
    if not isinstance(named, dict) or not all(isinstance(k, str) and _scalar(v) for k, v in named.items()):
        problems.append(f"task {key}: named_parameters must map names to scalar values")
        named = {}
    if not isinstance(positional, list) or not all(_scalar(v) for v in positional):
        problems.append(f"task {key}: parameters must be a list of scalar values")
        positional = []
    if named and positional:
        problems.append(f"task {key}: set parameters or named_parameters, not both")
    passed = list(named) + list(parse_cli_args([str(a) for a in positional]))
    for name in passed:
        if _runner_only(name):
            problems.append(f"task {key}: parameter {name!r} is reserved: the runner sets it for each task")
    return problems


def _reference_problem(ref: str, params: Mapping[str, str], upstream: set[str]) -> str | None:
    parts = ref.split(".")
    if parts[:2] == ["job", "parameters"] and len(parts) == 3:
        return None if parts[2] in params else f"no job parameter {parts[2]!r}"
    if ref in ("job.run_id", "job.id", "task.name"):
        return None
    if parts[0] == "tasks" and len(parts) == 4 and parts[2] == "values":
        if not KEY_PATTERN.fullmatch(parts[1]) or not KEY_PATTERN.fullmatch(parts[3]):
            return "task and value keys are [A-Za-z0-9_-]+"
        if parts[1] not in upstream:
            return f"task {parts[1]!r} is not upstream of this task"
        return None
    return "unsupported reference"


def _count_setting(task: dict[str, Any], name: str, key: str, params: Mapping[str, str],
                   variables: Mapping[str, str], problems: list[str]) -> int:
    """A non-negative integer task setting (``${var.…}`` and job parameters resolved now: these are
    fixed for the whole run)."""
    raw = task.get(name, 0)
    if raw is None:
        return 0
    text = str(raw)
    if not _VAR.search(text) and not _REF.search(text) and isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    else:
        text = _VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), text)
        text = _REF.sub(lambda m: str(params.get(m.group(1).split(".")[-1], m.group(0)))
                        if m.group(1).startswith("job.parameters.") else m.group(0), text)
        try:
            value = int(text.strip())
        except ValueError:
            problems.append(f"task {key}: {name} must be a whole number, got {raw!r}")
            return 0
    if value < 0:
        problems.append(f"task {key}: {name} must be 0 or more, got {value}"
                        + (" (retrying forever is not supported by the local runner)"
                           if name == "max_retries" and value == -1 else ""))
        return 0
    return value


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
    raise BadJobDefinitionError(f"unknown run_if {run_if!r}")  # check_job refuses it first


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
            raise BadJobDefinitionError(f"bundle variable {name!r} has no value; pass --var {name}=…")
        return str(self.variables[name])

    def _ref(self, ref: str, task_key: str) -> str:
        parts = ref.split(".")
        if parts[:2] == ["job", "parameters"] and len(parts) == 3:
            if parts[2] not in self.params:
                raise BadJobDefinitionError(f"{{{{{ref}}}}}: no job parameter {parts[2]!r}")
            return str(self.params[parts[2]])
        if ref in ("job.run_id", "job.id"):
            return self.run.run_id
        if ref == "task.name":
            return task_key
        if parts[0] == "tasks" and len(parts) == 4 and parts[2] == "values":
            # read_task_values checks the task key (a file name) and the value key is only a key.
            values = read_task_values(self.run.run_dir, parts[1])
            check_key(parts[3], "task value key")
            if parts[3] not in values:
                raise BadJobDefinitionError(f"{{{{{ref}}}}}: task {parts[1]!r} set no value {parts[3]!r}")
            value = values[parts[3]]
            return value if isinstance(value, str) else json.dumps(value)
        raise BadJobDefinitionError(f"unsupported reference {{{{{ref}}}}}")


def _condition(spec: Mapping[str, Any], left: str, right: str) -> bool:
    op = spec["op"]
    if op == "EQUAL_TO":
        return left == right
    if op == "NOT_EQUAL":
        return left != right
    try:
        a, b = float(left), float(right)
    except ValueError:
        raise BadJobDefinitionError(f"{op} compares numbers, got {left!r} and {right!r}") from None
    return {"GREATER_THAN": a > b, "GREATER_THAN_OR_EQUAL": a >= b,
            "LESS_THAN": a < b, "LESS_THAN_OR_EQUAL": a <= b}[op]


def _command(entry_point: str, args: list[str], runner: str) -> list[str]:
    """The argv that runs a declared entry point (``check_job`` has resolved ``entry_point``
    against the wheel's metadata). Fixed programs only: the entry point is an argument, looked up
    again in the metadata by the program that runs it, never a path or a piece of source."""
    if runner == "spark-submit":
        # The repository root: this file is tools/src/delta_downgrade_tools/local_runner.py.
        launcher = Path(__file__).resolve().parents[3] / "jobs" / "spark_submit.py"
        submit = shutil.which("spark-submit") or str(Path(sys.prefix) / "bin" / "spark-submit")
        # Under SPARK_REMOTE spark-submit runs the driver against that Spark Connect server and
        # refuses a --master next to it.
        master = ([] if os.environ.get("SPARK_REMOTE")
                  else ["--master", os.environ.get("DELTA_DOWNGRADE_SPARK_MASTER", "local[2]")])
        return [submit, *master, str(launcher), entry_point, *args]
    return [sys.executable, "-m", "delta_downgrade.app.tasks.wheel_entry", entry_point, *args]


#: Bundle variables whose workspace default (a Unity Catalog volume path) does not exist off
#: Databricks: locally they default to a directory beside the runs, shared by every run in this
#: folder (the drop job records a waiting table there, the truncate_history job reads it).
LOCAL_VARIABLE_DIRS = {"waiting_dir": Path(".runs") / "waiting"}


def local_variable_defaults() -> dict[str, str]:
    return {name: str(path.resolve()) for name, path in LOCAL_VARIABLE_DIRS.items()}


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
    given = dict(params or {})
    all_variables = {**bundle_variables(job_file, target), **local_variable_defaults(), **dict(variables or {})}
    resolver = Resolver(run, {}, all_variables)
    declared = job.get("parameters") or []
    if not isinstance(declared, list) or not all(isinstance(p, dict) and isinstance(p.get("name"), str)
                                                 for p in declared):
        raise BadJobDefinitionError("job parameters must be a list of {name: …, default: …} mappings")
    job_params = {p["name"]: given[p["name"]] if p["name"] in given else resolver(p.get("default", ""), "")
                  for p in declared}
    job_params.update(given)
    # Job parameters reach every wheel task as --key=value: none may pose as the runner's own
    # task_key / task_values_dir, which say where a task's values are written.
    reserved = sorted(name for name in job_params if _runner_only(name))
    if reserved:
        raise BadJobDefinitionError(f"job parameter(s) {', '.join(reserved)} are reserved: the runner sets "
                                    f"them for each task ({', '.join(ENV_PREFIX + k.upper() for k in sorted(RUNNER_ONLY))})")
    resolver.params = job_params
    plan = check_job(job, job_params, all_variables)
    run.run_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    for task in plan.order:
        key = task["task_key"]
        state = TaskRun(key)
        run.tasks[key] = state
        if not _should_run(task, run):
            state.status = _skip_status(task, run)
            say(f"[{key}] {state.status.lower()}")
            continue
        if "condition_task" in task:
            spec = task["condition_task"]
            try:
                outcome = _condition(spec, resolver(spec["left"], key), resolver(spec["right"], key))
            except DeltaDowngradeError as exc:
                _fail(state, exc, say)
            else:
                state.status, state.outcome = SUCCESS, "true" if outcome else "false"
                say(f"[{key}] condition {spec['left']} {spec['op']} {spec['right']} -> {state.outcome}")
        else:
            timeout = _remaining(plan.timeouts[key], plan.job_timeout, started)
            _run_wheel_task(task, state, run, resolver, job_params, runner, plan.retries[key], say, sleep,
                            timeout)
        if after_task:
            after_task(state, run)
    run.seconds = time.monotonic() - started
    run.notices = service_notices(job, run, resolver)
    for notice in run.notices:
        say(notice)
    return run


def _remaining(task_timeout: int | None, job_timeout: int | None, started: float) -> float | None:
    """Seconds a task may run: its own timeout, cut to what is left of the job's."""
    left = None if job_timeout is None else max(0.0, job_timeout - (time.monotonic() - started))
    if task_timeout is None:
        return left
    return task_timeout if left is None else min(task_timeout, left)


def service_notices(job: dict[str, Any], run: JobRun, resolver: Resolver) -> list[str]:
    """What the Jobs service would do after this run that a local run does not: the emails of
    ``email_notifications`` (on failure; on a run longer than a ``RUN_DURATION_SECONDS`` health
    rule)."""
    notices = []
    notify = job.get("email_notifications") if isinstance(job.get("email_notifications"), dict) else {}

    def resolved(value: Any) -> str:
        try:
            return resolver(value, "")
        except DeltaDowngradeError:  # a variable only a deployment sets (prod's alert_email)
            return str(value)

    def to(event: str) -> str:
        addresses = [resolved(a) for a in notify.get(event) or []]
        return f"email {event} -> {', '.join(addresses)}" if addresses else f"no {event} address"

    if not run.succeeded:
        notices.append(f"job {run.job_key}: failed; Databricks would send {to('on_failure')}")
    health = job.get("health") if isinstance(job.get("health"), dict) else {}
    for rule in health.get("rules") or []:
        if isinstance(rule, dict) and rule.get("metric") == "RUN_DURATION_SECONDS":
            try:
                limit = float(resolved(rule.get("value")))
            except ValueError:
                continue
            if rule.get("op") == "GREATER_THAN" and run.seconds > limit:
                notices.append(f"job {run.job_key}: ran {run.seconds:.0f} s, over its RUN_DURATION_SECONDS "
                               f"health rule ({limit:.0f} s); Databricks would send "
                               f"{to('on_duration_warning_threshold_exceeded')}")
    return notices


def pending_truncates(run: JobRun) -> list[dict[str, Any]]:
    """The tables whose last RESULT in this run says ``needs_truncate``: checkpointProtection is
    still to be dropped (status ``waiting`` when a truncate was tried, else the drop's status),
    with ``truncate_after``."""
    last: dict[str, dict[str, Any]] = {}
    for state in run.tasks.values():
        for result in state.results:
            if not result.get("summary") and isinstance(result.get("table"), str) and "needs_truncate" in result:
                # verify re-reads the protocol but does not compute truncate_after: keep the
                # newest time any task gave for the table.
                after = result.get("truncate_after") or last.get(result["table"], {}).get("truncate_after")
                last[result["table"]] = {**result, "truncate_after": after}
    return [r for r in last.values() if r.get("needs_truncate") is True]


def job_exit_code(run: JobRun) -> int:
    """The run's exit code for ``run-job``: 0 when every task succeeded or was excluded, else the
    worst code of the failed tasks (2 when one said bad input), 1 for a task that never exited
    (timed out, could not start)."""
    from delta_downgrade.app.tasks.framework import worst

    if run.succeeded:
        return 0
    # A task killed by a signal (a negative return code) or one outside the contract counts as 1.
    known = (0, 1, 2, 3, 4)
    return worst([t.exit_code if t.exit_code in known and t.exit_code else 1
                  for t in run.tasks.values() if t.status == FAILED] or [1])


def _run_process(argv: list[str], env: Mapping[str, str], timeout: float | None) -> subprocess.CompletedProcess:
    """Run one task attempt in its own process group; past ``timeout`` the whole group is killed
    (the task and what it started: a Spark JVM, spark-submit's children), as a timed-out task's
    compute is on Databricks, and ``TimeoutExpired`` carries what it printed."""
    proc = subprocess.Popen(argv, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(argv, timeout or 0, output=out, stderr=err) from None
    except BaseException:  # Ctrl-C: the group no longer gets the terminal's signal itself
        _kill_group(proc)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _text(data: str | bytes | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _fail(state: TaskRun, exc: DeltaDowngradeError, say: Callable[[str], None]) -> None:
    """A task that cannot start (e.g. an upstream value it needs was never set) fails, as on
    Databricks; its dependants are then UPSTREAM_FAILED."""
    state.status, state.error = FAILED, str(exc)
    say(f"[{state.task_key}] failed: {exc}")




def _run_wheel_task(task: dict[str, Any], state: TaskRun, run: JobRun, resolver: Resolver,
                    job_params: Mapping[str, str], runner: str, retry: tuple[int, float],
                    say: Callable[[str], None], sleep: Callable[[float], None],
                    timeout: float | None = None) -> None:
    from delta_downgrade.app.render.result import parse_result_lines

    key = task["task_key"]
    wheel = task["python_wheel_task"]
    retries, interval = retry
    env = dict(os.environ, DELTA_DOWNGRADE_TASK_KEY=key, DELTA_DOWNGRADE_TASK_VALUES_DIR=str(run.run_dir))
    for attempt in range(retries + 1):
        try:
            # Job parameters are pushed down to key-value wheel tasks; the task's own win.
            named = {**job_params, **{k: resolver(v, key) for k, v in (wheel.get("named_parameters") or {}).items()}}
            args = [f"--{k}={v}" for k, v in named.items()]
            args += [resolver(a, key) for a in wheel.get("parameters") or []]
        except DeltaDowngradeError as exc:
            _fail(state, exc, say)
            return
        state.attempts = attempt + 1
        # A storage option's value is a secret: masked by its flag (``--storage_option=K=V`` and
        # the two-word ``--storage_option K=V``) and by its key's shape.
        say(f"[{key}] attempt {attempt + 1}/{retries + 1}: {wheel['entry_point']} {masked_command_line(args)}")
        try:
            proc = _run_process(_command(wheel["entry_point"], args, runner), env, timeout)
        except subprocess.TimeoutExpired as exc:
            # As on Databricks: the task is killed and failed (retried only with retry_on_timeout).
            for line in _text(exc.stderr).splitlines():
                say(f"[{key}]   {line}")
            state.exit_code, state.error = None, f"timed out after {timeout:.0f} s (timeout_seconds)"
            say(f"[{key}] {state.error}")
            if task.get("retry_on_timeout") and attempt < retries:
                sleep(interval)
                continue
            break
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
