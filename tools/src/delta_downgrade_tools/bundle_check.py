"""The bundle rules the Databricks CLI does not check. `databricks bundle validate` (the real CLI,
run by tests/integration/test_bundle_deploy.py) checks the configuration's schema (an unknown
field is a warning, a wrong type an error), that every ``${var.X}`` is declared and every declared
variable has a value for the target, and every ``--var`` is declared. What it does not check is
what this module does:

- the task graph: acyclic and complete, condition outcomes only on condition tasks, every wheel
  entry point in the wheel's metadata, every ``{{tasks.X.values.Y}}`` a value task X really sets
  and X upstream, every ``{{job.parameters.P}}`` a job parameter;
- no storage option (a secret) written into the bundle: not as a task or job parameter (shown on
  the run page) and, as a cluster environment variable, only as a ``{{secrets/scope/key}}``
  reference;
- hygiene: no ``workspace.host`` anywhere (the host comes from the CLI's profile or
  ``DATABRICKS_HOST``); a ``mode: production`` target runs as a service principal given by a
  variable; the table is a run parameter (no variable ``table``/``tables``, job parameters of that
  name default to ""); every task that runs code has a positive ``timeout_seconds``; no wheel task
  has ``max_retries`` (Databricks retries every failed attempt, exit 2 included; a wait is exit 0 in
  task mode; conflicts are retried inside the commit); a scheduled job alerts on failure and has a
  ``RUN_DURATION_SECONDS`` health rule.

The jobs checked are those of ``include`` and of the opt-in files (``OPT_IN_INCLUDES``: the classic
job-cluster jobs a user adds to ``include``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from delta_downgrade.errors import BadInputError, BadJobDefinitionError

# What each entry point sets as task values (jobs/entrypoints.py sets every key on every path).
TASK_OUTPUTS: dict[str, frozenset[str]] = {}

_TASK_VALUE = re.compile(r"\{\{\s*tasks\.([A-Za-z0-9_-]+)\.values\.([A-Za-z0-9_-]+)\s*\}\}")
_JOB_PARAM = re.compile(r"\{\{\s*job\.parameters\.([A-Za-z0-9_.-]+)\s*\}\}")
# A cluster environment variable or Spark conf may take a secret as this reference, whole
# (Databricks resolves it when the cluster starts and masks it in the driver's output).
# A scope or key may be a bundle variable (``${var.storage_secret_scope}``), resolved at deploy.
_SECRET_PART = r"(?:\$\{var\.[A-Za-z0-9_.-]+\}|[^/{}$\s])+"
_SECRET_REFERENCE = re.compile(rf"\{{\{{secrets/{_SECRET_PART}/{_SECRET_PART}\}}\}}")
# Task settings that carry storage options (app/tasks/settings.py): never a parameter.
STORAGE_OPTION_PARAMETERS = frozenset({"storage_options", "storage_option"})
# Environment variables that hold storage credentials: the settings' own, and those of the
# stores' standard credential chains that carry a secret value.
SECRET_ENV_VARS = frozenset({
    "DELTA_DOWNGRADE_STORAGE_OPTIONS", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_KEY", "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_CLIENT_SECRET", "AZURE_STORAGE_CLIENT_SECRET", "GOOGLE_SERVICE_ACCOUNT_KEY",
})


def _outputs() -> dict[str, frozenset[str]]:
    if not TASK_OUTPUTS:
        from delta_downgrade.app.tasks.framework import TASK_VALUE_KEYS

        for name in ("drop_feature_task", "verify_task", "truncate_task"):
            TASK_OUTPUTS[name] = frozenset(TASK_VALUE_KEYS)
    return TASK_OUTPUTS


#: Resource files a user adds to ``include`` (resources/classic/compute.yml says how).
OPT_IN_INCLUDES = ("resources/classic/*.yml",)


def load_jobs(root: str | Path) -> dict[str, dict[str, Any]]:
    from delta_downgrade_tools.local_runner import _mapping, load_yaml

    root = Path(root)
    bundle = _mapping(load_yaml(root / "databricks.yml", "bundle file"), "databricks.yml")
    jobs: dict[str, dict[str, Any]] = {}
    include = bundle.get("include") or []
    if not isinstance(include, list) or not all(isinstance(p, str) for p in include):
        raise BadJobDefinitionError("databricks.yml: include must be a list of glob patterns")
    files = dict.fromkeys(f for pattern in [*include, *OPT_IN_INCLUDES] for f in sorted(root.glob(pattern)))
    for f in files:
        doc = _mapping(load_yaml(f), str(f))
        if "resources" not in doc:
            continue  # a file of variables only (resources/classic/compute.yml)
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
    outputs = _outputs()
    for job_key, job in jobs.items():
        problems.extend(secret_problems(job_key, job))
        problems.extend(hygiene_problems(job_key, job))
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


def _setting_name(name: Any) -> str:
    return str(name).strip().lstrip("-").split("=", 1)[0].replace("-", "_").lower()


def secret_problems(job_key: str, job: dict[str, Any]) -> list[str]:
    """Storage options written into a job: as a job parameter or a wheel task's parameter (both
    show on the run page, and the parameter's text is the secret), or as a cluster environment
    variable whose value is not a ``{{secrets/scope/key}}`` reference."""
    problems = []
    fix = ("pass storage options as the cluster environment variable DELTA_DOWNGRADE_STORAGE_OPTIONS "
           "= \"{{secrets/<scope>/<key>}}\" (README, 'Tables on object storage')")
    for param in job.get("parameters") or []:
        if isinstance(param, dict) and _setting_name(param.get("name", "")) in STORAGE_OPTION_PARAMETERS:
            problems.append(f"{job_key}: job parameter {param['name']!r} would show storage options on "
                            f"the run page; {fix}")
    for task in job.get("tasks") or []:
        wheel = task.get("python_wheel_task") if isinstance(task, dict) else None
        if not isinstance(wheel, dict):
            continue
        named = wheel.get("named_parameters") or {}
        positional = wheel.get("parameters") or []
        names = list(named) if isinstance(named, dict) else []
        names += [a for a in positional if isinstance(a, str) and a.startswith("--")] \
            if isinstance(positional, list) else []
        for name in names:
            if _setting_name(name) in STORAGE_OPTION_PARAMETERS:
                problems.append(f"{job_key}.{task.get('task_key')}: parameter {_setting_name(name)!r} would "
                                f"show storage options on the run page; {fix}")
    clusters = [c.get("new_cluster") for c in job.get("job_clusters") or [] if isinstance(c, dict)]
    for cluster in clusters:
        env = (cluster or {}).get("spark_env_vars") or {}
        for name, value in env.items() if isinstance(env, dict) else ():
            if str(name).upper() in SECRET_ENV_VARS and not _SECRET_REFERENCE.fullmatch(str(value).strip()):
                problems.append(f"{job_key}: spark_env_vars {name} holds its value inline; reference a "
                                f"secret scope instead: {name}: \"{{{{secrets/<scope>/<key>}}}}\"")
    return problems


# Job parameters that name the tables a run handles: run parameters, never deploy-time values.
TABLE_PARAMETERS = frozenset({"table", "tables"})
_WHOLE_VARIABLE = re.compile(r"\$\{var\.[A-Za-z0-9_.-]+\}")
#: Keys under which a task runs code (the Jobs API's task types other than condition_task).
CONDITION_TASK = "condition_task"


def load_bundle(root: str | Path) -> dict[str, Any]:
    """``databricks.yml`` of the bundle at ``root``, as a mapping."""
    from delta_downgrade_tools.local_runner import _mapping, load_yaml

    return _mapping(load_yaml(Path(root) / "databricks.yml", "bundle file"), "databricks.yml")


def validate_bundle(root: str | Path, entry_points: set[str]) -> list[str]:
    """Every problem of the bundle at ``root``: the jobs (:func:`validate_jobs`) and the
    bundle-wide hygiene rules (:func:`bundle_problems`)."""
    jobs = load_jobs(root)
    return validate_jobs(jobs, entry_points) + bundle_problems(load_bundle(root), jobs)


def bundle_problems(bundle: dict[str, Any], jobs: dict[str, dict[str, Any]]) -> list[str]:
    """The hygiene rules of ``databricks.yml`` (hosts, run_as, no table variable, positive
    timeout defaults)."""
    problems: list[str] = []
    targets = bundle.get("targets") or {}
    places = [("databricks.yml", bundle)] + [(f"target {name}", t) for name, t in targets.items()
                                             if isinstance(t, dict)]
    for where, place in places:
        workspace = place.get("workspace") or {}
        if isinstance(workspace, dict) and "host" in workspace:
            problems.append(f"{where}: workspace.host {workspace['host']!r} is written into the bundle; "
                            f"remove it: the host comes from the Databricks CLI profile or DATABRICKS_HOST")
    for name, target in targets.items():
        if not isinstance(target, dict) or target.get("mode") != "production":
            continue
        run_as = target.get("run_as") or {}
        principal = run_as.get("service_principal_name") if isinstance(run_as, dict) else None
        if not isinstance(principal, str) or not _WHOLE_VARIABLE.fullmatch(principal.strip()):
            problems.append(f"target {name}: a production target must run as a service principal given by "
                            f"a variable: run_as: {{service_principal_name: ${{var.service_principal}}}}")
    variables = bundle.get("variables") or {}
    for name in sorted(TABLE_PARAMETERS & set(variables)):
        problems.append(f"databricks.yml: variable {name!r} fixes the table at deploy time; make it a run "
                        f"parameter (job parameter {name} with default \"\")")
    for job_key, job in jobs.items():
        for task in job.get("tasks") or []:
            timeout = task.get("timeout_seconds") if isinstance(task, dict) else None
            name = _WHOLE_VARIABLE.fullmatch(timeout.strip()) if isinstance(timeout, str) else None
            default = (variables.get(timeout.strip()[6:-1]) or {}) if name else {}
            value = default.get("default") if isinstance(default, dict) else None
            if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
                problems.append(f"{job_key}.{task.get('task_key')}: timeout_seconds {timeout} defaults to "
                                f"{value!r}; it must be a positive number of seconds")
    return problems


def hygiene_problems(job_key: str, job: dict[str, Any]) -> list[str]:
    """The rules of one job: the table a run parameter, timeouts, no retries of wheel tasks,
    alerts on a scheduled job."""
    problems = []
    for param in job.get("parameters") or []:
        if isinstance(param, dict) and param.get("name") in TABLE_PARAMETERS and param.get("default") not in ("", None):
            problems.append(f"{job_key}: job parameter {param['name']!r} has the default {param['default']!r}; "
                            f"the table is a run parameter (default \"\", given with --params "
                            f"{param['name']}=...)")
    for task in job.get("tasks") or []:
        if not isinstance(task, dict):
            continue
        key = task.get("task_key")
        if CONDITION_TASK not in task and not _positive(task.get("timeout_seconds")):
            problems.append(f"{job_key}.{key}: no timeout_seconds (a positive number of seconds, or a "
                            f"${{var.…}}): a hung task would hold its compute forever")
        if "python_wheel_task" in task and task.get("max_retries") not in (None, 0):
            problems.append(f"{job_key}.{key}: max_retries {task['max_retries']!r}: Databricks retries every "
                            f"failed attempt, exit 2 (bad input) included; a wait is exit 0 (status waiting) "
                            f"and commit conflicts are retried inside the task; remove it")
    if any(k in job for k in ("schedule", "trigger", "continuous")):
        notify = job.get("email_notifications") or {}
        if not (isinstance(notify, dict) and notify.get("on_failure")):
            problems.append(f"{job_key}: a scheduled job needs email_notifications.on_failure (nobody watches "
                            f"its runs)")
        rules = (job.get("health") or {}).get("rules") or [] if isinstance(job.get("health"), dict) else []
        if not any(isinstance(r, dict) and r.get("metric") == "RUN_DURATION_SECONDS" for r in rules):
            problems.append(f"{job_key}: a scheduled job needs a health rule on RUN_DURATION_SECONDS "
                            f"(a run that hangs alerts before its timeout)")
    return problems


def _positive(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value > 0
    return isinstance(value, str) and bool(_WHOLE_VARIABLE.fullmatch(value.strip()))


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
