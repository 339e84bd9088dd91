"""The bundle under the real Databricks CLI (built by `make databricks-cli` from its Go module at
the Makefile's pinned version): `bundle validate` for every target and `bundle deploy` with the
direct deployment engine, against a workspace stand-in on loopback (tests/workspace_standin.py)
that answers the REST endpoints the deploy calls and records what it receives. The `databricks
bundle` command lines of the shipped .github/workflows/deploy.yml are the ones run here.

What this cannot show (no workspace runs here): that a real workspace accepts the jobs the stand-in
recorded (the Jobs service's own validation of clusters, environments and run_as), and that the
jobs run. The stand-in stores what it is sent and answers the documented shapes; it checks no
permission."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.workspace_standin import USER_NAME, WorkspaceStandIn

# no Spark: the Connect pass (`pytest --spark-connect`) leaves it out

REPO = Path(__file__).resolve().parents[2]
SERVICE_PRINCIPAL = "6f4c2a0e-1b7d-4e3a-9c55-2d8b0f1e7a90"
ALERT_EMAIL = "oncall@example.com"
# What the workflow's ${{ vars.X }} / ${{ secrets.X }} stand for in these runs.
WORKFLOW_VALUES = {"vars.DATABRICKS_SERVICE_PRINCIPAL": SERVICE_PRINCIPAL, "vars.ALERT_EMAIL": ALERT_EMAIL}


def _cli_version() -> str:
    match = re.search(r"^DATABRICKS_CLI_VERSION := (\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert match, "the Makefile pins DATABRICKS_CLI_VERSION"
    return match.group(1)


@pytest.fixture(scope="module")
def databricks_cli() -> str:
    binary = REPO / ".tools" / "bin" / f"databricks-{_cli_version()}"
    if not binary.is_file():
        pytest.skip(f"the Databricks CLI is not built: run `make databricks-cli` ({binary} is missing)")
    return str(binary)


def _bundle_copy(root: Path, *, include_classic: bool = False) -> Path:
    """A fresh clone's bundle: what `bundle deploy` reads and builds (databricks.yml, resources/,
    the package's sources for the wheel), nothing it left behind (.databricks/, dist/)."""
    root.mkdir(parents=True)
    for name in ("databricks.yml", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / "resources", root / "resources")
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    if include_classic:
        text = (root / "databricks.yml").read_text()
        text = text.replace("include:\n  - resources/*.yml\n", "include:\n  - resources/*.yml\n  - resources/classic/*.yml\n")
        assert "resources/classic/*.yml" in text
        (root / "databricks.yml").write_text(text)
    return root


def _env(ws: WorkspaceStandIn, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DATABRICKS_", "BUNDLE_VAR_", "DELTA_DOWNGRADE_TASK"))}
    home.mkdir(exist_ok=True)
    env.update(DATABRICKS_HOST=ws.url, DATABRICKS_TOKEN="dapi-standin-token", HOME=str(home),
               DATABRICKS_BUNDLE_ENGINE="direct",
               # the artifact's `python -m build` runs with this interpreter (it has `build`)
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    return env


def _run(cli: str, args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([cli, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def workflow_bundle_commands() -> dict[str, list[str]]:
    """The `databricks bundle …` lines of .github/workflows/deploy.yml, by verb (validate,
    deploy), as argv with the workflow's expressions replaced by this test's values."""
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "deploy.yml").read_text())
    found: dict[str, list[str]] = {}
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            line = step.get("run", "")
            if not line.strip().startswith("databricks bundle "):
                continue
            unknown = set(re.findall(r"\$\{\{\s*([\w.]+)\s*\}\}", line)) - set(WORKFLOW_VALUES)
            assert not unknown, f"the workflow line {line!r} uses {unknown}, which this test does not give"
            line = re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: WORKFLOW_VALUES[m.group(1)], line)
            argv = shlex.split(line)
            assert argv[2] not in found, f"two workflow lines run `databricks bundle {argv[2]}`"
            found[argv[2]] = argv[1:]
    assert set(found) == {"validate", "deploy"}, found
    return found


def readme_prod_variables() -> set[str]:
    """The variables the README's prod deploy command names (`--var NAME=…`)."""
    text = (REPO / "README.md").read_text()
    section = text.split("## The job", 1)[1].split("\n## ", 1)[0]
    (line,) = re.findall(r"`databricks bundle deploy -t prod [^`]*`", section)
    return set(re.findall(r"--var (\w+)=", line))


def _declared_variables(root: Path, target: str) -> tuple[set[str], set[str]]:
    """(every variable databricks.yml declares, those with no value for ``target``)."""
    bundle = yaml.safe_load((root / "databricks.yml").read_text())
    declared = bundle["variables"]
    target_values = (bundle["targets"][target].get("variables") or {})
    return set(declared), {n for n, v in declared.items() if "default" not in v and n not in target_values}


# --- validate -------------------------------------------------------------------------------------

def test_every_target_validates_dev_with_no_variable_prod_as_the_workflow_runs_it(databricks_cli, tmp_path):
    root = _bundle_copy(tmp_path / "bundle")
    commands = workflow_bundle_commands()
    with WorkspaceStandIn() as ws:
        env = _env(ws, tmp_path / "home")
        dev = _run(databricks_cli, ["bundle", "validate", "-t", "dev"], root, env)
        assert dev.returncode == 0, dev.stdout + dev.stderr
        assert "Validation OK!" in dev.stdout and "Warning" not in dev.stdout + dev.stderr
        prod = _run(databricks_cli, commands["validate"], root, env)
        assert prod.returncode == 0, prod.stdout + prod.stderr
        resolved = _run(databricks_cli, commands["validate"] + ["-o", "json"], root, env)
        assert resolved.returncode == 0, resolved.stderr
        assert ws.unknown == []
    config = json.loads(resolved.stdout)
    assert config["run_as"] == {"service_principal_name": SERVICE_PRINCIPAL}
    assert config["bundle"]["engine"] == "direct"
    targets = yaml.safe_load((REPO / "databricks.yml").read_text())["targets"]
    assert set(targets) == {"dev", "prod"}  # the two validated here


def test_prod_needs_exactly_the_variables_the_readme_names_and_the_workflow_passes(databricks_cli, tmp_path):
    root = _bundle_copy(tmp_path / "bundle")
    named = readme_prod_variables()
    declared, required = _declared_variables(root, "prod")
    assert named == required == {"service_principal", "alert_email"}
    validate = workflow_bundle_commands()["validate"]
    passed = {a.split("=", 1)[1].split("=", 1)[0] for a in validate if a.startswith("--var=")}
    assert passed == named and passed <= declared
    with WorkspaceStandIn() as ws:
        env = _env(ws, tmp_path / "home")
        for left_out in sorted(named):
            argv = [a for a in validate if not a.startswith(f"--var={left_out}=")]
            proc = _run(databricks_cli, argv, root, env)
            assert proc.returncode != 0, f"prod validated without {left_out}"
            assert f"no value assigned to required variable {left_out}" in proc.stderr, proc.stderr


def test_an_undeclared_var_fails_as_on_a_workspace(databricks_cli, tmp_path):
    root = _bundle_copy(tmp_path / "bundle")
    with WorkspaceStandIn() as ws:
        env = _env(ws, tmp_path / "home")
        proc = _run(databricks_cli, ["bundle", "validate", "-t", "dev", "--var=table=main.sales.events"], root, env)
    assert proc.returncode != 0
    assert "variable table has not been defined" in proc.stderr, proc.stderr


def test_a_misspelt_field_warns_and_an_undeclared_variable_fails(databricks_cli, tmp_path):
    """What the offline validate-bundle left to the CLI: the schema (an unknown field is a warning)
    and the variables (a reference to an undeclared one is an error)."""
    root = _bundle_copy(tmp_path / "bundle")
    job_file = root / "resources" / "delta_downgrade.job.yml"
    text = job_file.read_text()
    job_file.write_text(text.replace("      max_concurrent_runs: 1", "      max_concurent_runs: 1", 1)
                        .replace("${var.check_timeout_seconds}", "${var.check_timeout_secondz}", 1))
    with WorkspaceStandIn() as ws:
        proc = _run(databricks_cli, ["bundle", "validate", "-t", "dev"], root, _env(ws, tmp_path / "home"))
    assert proc.returncode != 0
    assert "unknown field: max_concurent_runs" in proc.stdout + proc.stderr
    assert "reference does not exist: ${var.check_timeout_secondz}" in proc.stderr


def test_classic_jobs_are_opted_into_with_the_node_type_of_the_cloud(databricks_cli, tmp_path):
    root = _bundle_copy(tmp_path / "bundle", include_classic=True)
    with WorkspaceStandIn() as ws:
        env = _env(ws, tmp_path / "home")
        missing = _run(databricks_cli, ["bundle", "validate", "-t", "dev"], root, env)
        azure = _run(databricks_cli, ["bundle", "validate", "-t", "dev", "--var=node_type_id=Standard_D4ds_v5",
                                      "-o", "json"], root, env)
    assert missing.returncode != 0
    assert "no value assigned to required variable node_type_id" in missing.stderr, missing.stderr
    assert azure.returncode == 0, azure.stderr
    jobs = json.loads(azure.stdout)["resources"]["jobs"]
    for key in ("delta_downgrade_classic", "delta_downgrade_bucket"):
        cluster = jobs[key]["job_clusters"][0]["new_cluster"]
        assert cluster["node_type_id"] == "Standard_D4ds_v5"
        assert "policy_id" not in cluster  # "" (no policy) is left out, not sent
        for task in jobs[key]["tasks"]:
            # the bundle root's dist/ (the path relative to resources/classic/ resolved), which
            # the deploy replaces with the uploaded wheel
            assert task["libraries"] == [{"whl": "dist/*.whl"}]


# --- deploy ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def deployed(databricks_cli, tmp_path_factory) -> dict[str, WorkspaceStandIn]:
    """`bundle deploy -t dev` (no variable) and the workflow's prod deploy, each into a workspace
    stand-in of its own; what each received."""
    tmp = tmp_path_factory.mktemp("deploy")
    out = {}
    for target, argv in (("dev", ["bundle", "deploy", "-t", "dev"]), ("prod", workflow_bundle_commands()["deploy"])):
        root = _bundle_copy(tmp / target)
        with WorkspaceStandIn() as ws:
            proc = _run(databricks_cli, argv, root, _env(ws, tmp / f"home-{target}"))
            assert proc.returncode == 0, proc.stdout + proc.stderr
            assert "Deployment complete!" in proc.stderr + proc.stdout
            if target == "dev":
                # A second deploy updates the same jobs (each deploy builds a new wheel version in
                # dev): jobs/reset, never a second create.
                ws.first_jobs = {job_id: json.loads(json.dumps(job)) for job_id, job in ws.state.jobs.items()}
                again = _run(databricks_cli, argv, root, _env(ws, tmp / f"home-{target}"))
                assert again.returncode == 0, again.stdout + again.stderr
        out[target] = ws
    return out


def _by_key(tasks: list[dict]) -> dict[str, dict]:
    return {t["task_key"]: t for t in tasks}


def _deps(task: dict) -> list[tuple[str, str | None]]:
    return [(d["task_key"], d.get("outcome")) for d in task.get("depends_on") or []]


@pytest.mark.parametrize("target", ["dev", "prod"])
def test_deploy_reaches_the_workspace_with_the_jobs_as_designed(deployed, target):
    ws = deployed[target]
    assert ws.unknown == [], ws.unknown
    root = f"/Workspace/Users/{USER_NAME}/.bundle/delta_downgrade/{target}"
    prefix = f"[dev {USER_NAME.split('@')[0]}] " if target == "dev" else ""
    jobs = ws.jobs_by_name()
    assert set(jobs) == {f"{prefix}delta_downgrade", f"{prefix}truncate_history"}
    assert len(ws.calls("POST", "/api/2.2/jobs/create")) == 2
    if target == "dev":
        resets = ws.calls("POST", "/api/2.2/jobs/reset")
        assert sorted(int(r.body["job_id"]) for r in resets) == sorted(ws.first_jobs)
        for job_id, first in ws.first_jobs.items():  # the same jobs, with the new wheel
            wheel = lambda job: job["settings"]["environments"][0]["spec"]["dependencies"]  # noqa: E731
            assert wheel(ws.state.jobs[job_id]) != wheel(first)
            assert {k: v for k, v in ws.state.jobs[job_id]["settings"].items() if k != "environments"} == \
                {k: v for k, v in first["settings"].items() if k != "environments"}
    else:
        # prod: the deploying user keeps managing every job (the target's CAN_MANAGE, which the
        # CLI sends as ownership for the deploying user)
        for job_id in ws.state.jobs:
            acl = ws.state.permissions[f"jobs/{job_id}"]["access_control_list"]
            assert any(e.get("user_name") == USER_NAME and e["permission_level"] in ("CAN_MANAGE", "IS_OWNER")
                       for e in acl), acl
    email = USER_NAME if target == "dev" else ALERT_EMAIL

    drop = jobs[f"{prefix}delta_downgrade"]["settings"]
    assert {p["name"]: p["default"] for p in drop["parameters"]} == {
        "table": "", "feature": "deletionVectors", "for_client": "", "truncate_in_job": "false"}
    tasks = _by_key(drop["tasks"])
    assert {k: _deps(t) for k, t in tasks.items()} == {
        "drop_feature": [], "verify": [("drop_feature", None)], "needs_truncate": [("verify", None)],
        "truncate_in_job": [("needs_truncate", "true")], "truncate": [("truncate_in_job", "true")],
        "truncated": [("truncate", None)], "verify_truncated": [("truncated", "true")]}
    waiting_dir = "/Volumes/main/default/delta_downgrade/waiting"
    assert tasks["drop_feature"]["python_wheel_task"] == {
        "package_name": "delta_downgrade", "entry_point": "drop_feature_task",
        "named_parameters": {"table": "{{job.parameters.table}}", "feature": "{{job.parameters.feature}}",
                             "for_client": "{{job.parameters.for_client}}", "waiting_dir": waiting_dir}}
    assert tasks["verify"]["python_wheel_task"]["named_parameters"]["expect_boundary_version"] == \
        "{{tasks.drop_feature.values.boundary_version}}"
    assert tasks["needs_truncate"]["condition_task"] == {
        "left": "{{tasks.verify.values.needs_truncate}}", "op": "EQUAL_TO", "right": "true"}
    assert tasks["truncate"]["python_wheel_task"]["named_parameters"]["waiting_dir"] == waiting_dir
    assert tasks["drop_feature"]["timeout_seconds"] == 28800 and tasks["verify"]["timeout_seconds"] == 3600
    assert all("max_retries" not in t for t in tasks.values())
    assert drop["email_notifications"] == {"on_failure": [email], "on_duration_warning_threshold_exceeded": [email]}
    assert drop["health"] == {"rules": [{"metric": "RUN_DURATION_SECONDS", "op": "GREATER_THAN", "value": 14400}]}
    assert drop["max_concurrent_runs"] == (1 if target == "prod" else drop["max_concurrent_runs"])

    daily = jobs[f"{prefix}truncate_history"]["settings"]
    # prod runs the schedule; a developer's copy has it paused (development mode)
    expected_pause = {"prod": "UNPAUSED", "dev": "PAUSED"}[target]
    assert daily["schedule"].get("pause_status") == expected_pause
    assert {k: v for k, v in daily["schedule"].items() if k != "pause_status"} == {
        "quartz_cron_expression": "0 30 3 * * ?", "timezone_id": "UTC"}
    (truncate,) = daily["tasks"]
    assert truncate["python_wheel_task"]["named_parameters"] == {"waiting_dir": waiting_dir, "parallelism": "4"}
    assert daily["email_notifications"]["on_failure"] == [email]

    # Every wheel task's environment installs the wheel the deploy uploaded, at its workspace path.
    for job in (drop, daily):
        (environment,) = job["environments"]
        assert environment["spec"]["environment_version"] == "4"
        (wheel,) = environment["spec"]["dependencies"]
        assert re.fullmatch(rf"{re.escape(root)}/artifacts/\.internal/delta_downgrade-[^/]+\.whl", wheel), wheel
        uploaded = ws.state.files[wheel.removeprefix("/Workspace")] if wheel.removeprefix("/Workspace") in \
            ws.state.files else ws.state.files[wheel]
        _assert_wheel_has_the_entry_points(uploaded, tmp_name=wheel.rsplit("/", 1)[1])
    if target == "prod":
        assert all(j["settings"]["run_as"] == {"service_principal_name": SERVICE_PRINCIPAL} for j in jobs.values())
        assert "+" not in wheel.rsplit("/", 1)[1]  # the version as built (dev adds a deploy stamp)
    else:
        assert all("run_as" not in j["settings"] for j in jobs.values())
        assert all(j["settings"]["tags"].get("dev") for j in jobs.values())


def _assert_wheel_has_the_entry_points(data: bytes, tmp_name: str) -> None:
    import io

    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        entry_points = next(n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt"))
        text = zf.read(entry_points).decode()
        assert "delta_downgrade/log4j2.properties" in zf.namelist()  # the quiet local Spark start
    for name in ("drop_feature_task", "verify_task", "truncate_task"):
        assert re.search(rf"^{name} = ", text, re.M), f"{tmp_name} does not declare {name}"
