"""Bad input to the task processes: the task entry points and ``delta-downgrade run-job`` on
real tables. Every bad input exits 2 with its error class and no traceback, and nothing on disk
changes (every file under the table hashed before and after); for the runner also: no task ran,
no run directory was made, no program named by the job ran."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.process_support import assert_bad_input, tree_hashes

REPO = Path(__file__).resolve().parents[2]
TASK_SOURCE = "import sys; from delta_downgrade.app.tasks.entrypoints import {0} as f; sys.exit(f())"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELTA_DOWNGRADE_")}
    env.update(extra)
    return env


def run_task(task: str, args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", TASK_SOURCE.format(task), *args], cwd=cwd, env=_env(**env),
                          capture_output=True, text=True, timeout=300)


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=600)


# --- settings files, through the task process ------------------------------------------------

def test_7_tables_file_not_utf8_exits_2_and_writes_nothing(golden_table, tmp_path):
    table = golden_table("vacuum_protocol_check")
    listing = tmp_path / "tables.txt"
    listing.write_bytes(table.encode() + b"\n/data/caf\xe9\n")
    before = tree_hashes(table)
    proc = run_task("drop_feature_task", [f"--table={table}", f"--tables_file={listing}",
                                          "--feature=vacuumProtocolCheck"], tmp_path)
    assert_bad_input(proc, "DELTA_DOWNGRADE_BAD_CONFIG")
    assert tree_hashes(table) == before


@pytest.mark.parametrize("section", ["drop_feature_task = 3", 'drop_feature_task = "x"', "drop_feature_task = []"])
def test_7_toml_section_not_a_table_exits_2_and_writes_nothing(golden_table, tmp_path, section):
    table = golden_table("vacuum_protocol_check")
    config = tmp_path / "drop.toml"
    config.write_text(f'table = "{table}"\nfeature = "vacuumProtocolCheck"\n{section}\n')
    before = tree_hashes(table)
    proc = run_task("drop_feature_task", [f"--config={config}"], tmp_path)
    assert_bad_input(proc, "DELTA_DOWNGRADE_BAD_CONFIG")
    assert tree_hashes(table) == before


# --- '#' in a tables file -----------------------------------------------------------------

def test_10_table_whose_path_contains_hash_is_the_one_dropped(golden_table, tmp_path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    hashed, plain = fleet / "t#1", fleet / "t"
    shutil.move(golden_table("vacuum_protocol_check"), hashed)
    shutil.move(golden_table("vacuum_protocol_check"), plain)
    listing = tmp_path / "tables.txt"
    listing.write_text(f"# the fleet\n{hashed}\n")
    plain_before, hashed_before = tree_hashes(plain), tree_hashes(hashed)
    proc = run_task("drop_feature_task", [f"--tables_file={listing}", "--feature=vacuumProtocolCheck"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert [(r["table"], r["status"]) for r in results] == [(str(hashed), "dropped")]
    assert tree_hashes(plain) == plain_before  # the sibling without '#' is untouched
    assert tree_hashes(hashed) != hashed_before


# --- the runner: items 7, 11 and 12 ----------------------------------------------------------------

def _job(second_task: dict | None, *, params: tuple[str, ...] = ("table",)) -> dict:
    """A job whose first task drops vacuumProtocolCheck from the table (so any task that runs
    shows in the table's bytes), then ``second_task``."""
    tasks = [{"task_key": "drop", "python_wheel_task": {
        "package_name": "delta_downgrade", "entry_point": "drop_feature_task",
        "named_parameters": {"table": "{{job.parameters.table}}", "feature": "vacuumProtocolCheck"}}}]
    if second_task is not None:
        tasks.append({"depends_on": [{"task_key": "drop"}], **second_task})
    return {"resources": {"jobs": {"j": {"name": "j", "parameters": [{"name": p, "default": ""} for p in params],
                                          "tasks": tasks}}}}


def _wheel(entry_point: str, **extra) -> dict:
    return {"task_key": "second", "python_wheel_task": {"package_name": "delta_downgrade",
                                                        "entry_point": entry_point, **extra}}


def _run_job(tmp_path: Path, job_text: str, *extra: str, runner: str = "console"):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    job_file = tmp_path / "job.yml"
    job_file.write_text(job_text)
    run_dir = tmp_path / "run"
    table = str(tmp_path / "table")
    proc = run_cli(["run-job", str(job_file), "--param", f"table={table}", "--run-dir", str(run_dir),
                    "--runner", runner, *extra], cwd)
    return proc, cwd, run_dir


@pytest.fixture
def table(golden_table, tmp_path):
    path = tmp_path / "table"
    shutil.move(golden_table("vacuum_protocol_check"), path)
    return path


def test_runner_control_a_good_job_runs_and_changes_the_table(table, tmp_path):
    """The control for the refusals below: without the bad task the same job runs, through the
    wheel's declared entry points, and the table's bytes change."""
    before = tree_hashes(table)
    verify = {"task_key": "second", "python_wheel_task": {
        "package_name": "delta_downgrade", "entry_point": "verify_task",
        "named_parameters": {"table": "{{job.parameters.table}}", "expect_absent_feature": "vacuumProtocolCheck",
                             "expect_min_reader_version": "{{tasks.drop.values.min_reader_version}}"}}}
    proc, _, run_dir = _run_job(tmp_path, yaml.safe_dump(_job(verify)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert tree_hashes(table) != before
    assert sorted(p.name for p in (run_dir / "task_values").iterdir()) == ["drop.json", "second.json"]


MALICIOUS_ENTRY_POINTS = {
    "injection-literal": _wheel("x; import os; os.system('touch PWNED')"),
    # Valid Python once spliced into the old `python -c` source: it really ran `touch PWNED`.
    "injection-working": _wheel("drop_feature_task as f; import os; os.system('touch PWNED') #"),
    "absolute-program": _wheel("/bin/touch", parameters=["PWNED"]),
    "relative-escape": _wheel("../../bin/x"),
    "relative-escape-to-touch": _wheel(os.path.relpath(shutil.which("touch") or "/usr/bin/touch",
                                                       Path(sys.prefix) / "bin"), parameters=["PWNED"]),
    "other-package": {"task_key": "second", "python_wheel_task": {"package_name": "pip", "entry_point": "pip"}},
}


def _assert_nothing_ran(proc, table: Path, before: dict, cwd: Path, run_dir: Path, tmp_path: Path) -> None:
    assert_bad_input(proc, "DELTA_DOWNGRADE_BAD_JOB")
    assert tree_hashes(table) == before, "a task ran"
    assert not run_dir.exists()
    assert not list(tmp_path.rglob("PWNED")) and not (cwd / "PWNED").exists()


@pytest.mark.parametrize("case", sorted(MALICIOUS_ENTRY_POINTS))
def test_11_entry_point_not_declared_by_the_wheel_is_refused_before_any_task(table, tmp_path, case):
    before = tree_hashes(table)
    proc, cwd, run_dir = _run_job(tmp_path, yaml.safe_dump(_job(MALICIOUS_ENTRY_POINTS[case])))
    _assert_nothing_ran(proc, table, before, cwd, run_dir, tmp_path)
    assert "entry_point" in proc.stderr or "package_name" in proc.stderr


def test_11_spark_submit_runner_gets_the_same_check(table, tmp_path):
    submit = shutil.which("spark-submit") or str(Path(sys.prefix) / "bin" / "spark-submit")
    if not os.path.exists(submit):
        pytest.skip("spark-submit is not installed (install delta-downgrade[local])")
    before = tree_hashes(table)
    proc, cwd, run_dir = _run_job(tmp_path, yaml.safe_dump(_job(MALICIOUS_ENTRY_POINTS["absolute-program"])),
                                  runner="spark-submit")
    _assert_nothing_ran(proc, table, before, cwd, run_dir, tmp_path)


def test_11_spark_submit_launcher_resolves_declared_entry_points_only(table, tmp_path):
    launcher = str(REPO / "jobs" / "spark_submit.py")
    for name in ("x; import os; os.system('touch PWNED')", "/bin/touch", "entrypoints"):
        proc = subprocess.run([sys.executable, launcher, name, "PWNED"], cwd=tmp_path, env=_env(),
                              capture_output=True, text=True, timeout=120)
        assert_bad_input(proc, "DELTA_DOWNGRADE_BAD_JOB")
        assert not (tmp_path / "PWNED").exists()
    proc = subprocess.run([sys.executable, launcher, "verify_task", f"--table={table}", "--expect_min_reader_version=3"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


BAD_JOBS = {
    "no-task-key": {"python_wheel_task": {"package_name": "delta_downgrade", "entry_point": "verify_task"}},
    "unknown-condition-op": {"task_key": "second", "condition_task": {"left": "1", "op": "LIKE", "right": "1"}},
    "negative-retry-interval": {"task_key": "second", "max_retries": 1, "min_retry_interval_millis": -5,
                                "python_wheel_task": {"package_name": "delta_downgrade", "entry_point": "verify_task",
                                                      "named_parameters": {"table": "/nonexistent"}}},
    "task-values-dir-as-named-parameter": _wheel("verify_task", named_parameters={"task_values_dir": "/tmp/x"}),
}


@pytest.mark.parametrize("case", sorted(BAD_JOBS))
def test_7_bad_task_is_refused_before_any_task_runs(table, tmp_path, case):
    before = tree_hashes(table)
    proc, cwd, run_dir = _run_job(tmp_path, yaml.safe_dump(_job(BAD_JOBS[case])))
    _assert_nothing_ran(proc, table, before, cwd, run_dir, tmp_path)


def test_7_yaml_python_tag_is_never_constructed(table, tmp_path):
    job = yaml.safe_dump(_job(_wheel("verify_task", named_parameters={"table": ""})))
    job = job.replace("table: ''", "table: !!python/object/apply:os.system ['touch PWNED']", 1)
    assert "!!python/object/apply" in job
    before = tree_hashes(table)
    proc, cwd, run_dir = _run_job(tmp_path, job)
    _assert_nothing_ran(proc, table, before, cwd, run_dir, tmp_path)


def test_12_job_parameter_named_task_key_is_refused(table, tmp_path):
    before = tree_hashes(table)
    proc, cwd, run_dir = _run_job(tmp_path, yaml.safe_dump(_job(None)), "--param", "task_key=../../escape")
    _assert_nothing_ran(proc, table, before, cwd, run_dir, tmp_path)
    assert "task_key" in proc.stderr
    assert not list(tmp_path.rglob("escape.json"))


def test_12_task_value_reference_with_an_absolute_task_name_is_refused(table, tmp_path):
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir()
    assert "." not in str(secret_dir)  # so that the reference splits as tasks.<name>.values.<key>
    (secret_dir / "secret.json").write_text(json.dumps({"k": "stolen"}))
    second = _wheel("verify_task", named_parameters={"table": "{{job.parameters.table}}",
                                                     "expect_absent_feature": f"{{{{tasks.{secret_dir}/secret.values.k}}}}"})
    before = tree_hashes(table)
    proc, cwd, run_dir = _run_job(tmp_path, yaml.safe_dump(_job(second)))
    _assert_nothing_ran(proc, table, before, cwd, run_dir, tmp_path)
    assert "stolen" not in proc.stdout + proc.stderr


# --- the delta-sql engine ----------------------------------------------------------------

@pytest.mark.parametrize("args, error_class", [
    (["--feature=x` TRUNCATE HISTORY --"], "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"),
    (["--feature=vacuumProtocolCheck", "--table=main.ops.t; DROP TABLE main.ops.t"], "INVALID_IDENTIFIER"),
])
def test_13_delta_sql_bad_names_exit_2_before_any_sql(table, tmp_path, args, error_class):
    before = tree_hashes(table)
    argv = [f"--table={table}", "--engine=delta-sql", *args]
    proc = run_task("drop_feature_task", argv, tmp_path)
    assert_bad_input(proc, error_class)
    assert tree_hashes(table) == before


NAMES = {
    "main.ops.events": ["main", "ops", "events"],
    "main.`we.ird`.t": ["main", "we.ird", "t"],
    "a.`b``c`.d": ["a", "b`c", "d"],
    "`x; DROP TABLE y`": ["x; DROP TABLE y"],
    "cat.`sch ema`.`t DROP FEATURE x --`": ["cat", "sch ema", "t DROP FEATURE x --"],
    "delta.`/data/p`": ["delta", "/data/p"],
    "/data/p`q": ["delta", "/data/p`q"],
    "s3://bucket/x` y": ["delta", "s3://bucket/x` y"],
    "./rel/t": ["delta", "./rel/t"],
}


def _parts(spark, identifier: str) -> list[str]:
    from tests.spark_parser import identifier_parts

    return identifier_parts(spark, identifier)


def test_13_identifiers_round_trip_through_sparks_parser(spark):
    """Plain Spark has no DROP FEATURE grammar (that is Delta's extension), so its parser checks
    the two identifiers of the statement: every table name and every feature name comes back
    as exactly the parts it stands for."""
    from delta_downgrade.app.engines.delta_sql import drop_feature_sql, quote_identifier, feature_name, table_identifier
    from delta_downgrade.protocol.features import FEATURES

    for name, parts in NAMES.items():
        identifier = table_identifier(name)
        assert _parts(spark, identifier) == parts, (name, identifier)
        sql = drop_feature_sql(name, "deletionVectors", False)
        assert sql == f"ALTER TABLE {identifier} DROP FEATURE `deletionVectors`"
    for feature in [*FEATURES, "futureFeature-x_1"]:
        assert _parts(spark, quote_identifier(feature_name(feature.upper()))) == \
            [FEATURES[feature].name if feature in FEATURES else feature.upper()]


@pytest.mark.parametrize("name", ["main.ops.t; DROP TABLE x", "a..b", "main.`ops", "a.`b`c"])
def test_13_names_refused_are_names_spark_refuses(spark, name):
    from delta_downgrade.app.engines.delta_sql import table_identifier
    from delta_downgrade.errors import BadInputError

    with pytest.raises(Exception) as spark_error:
        _parts(spark, name)
    assert "PARSE_SYNTAX_ERROR" in str(spark_error.value) or "INVALID_IDENTIFIER" in str(spark_error.value)
    with pytest.raises(BadInputError) as ours:
        table_identifier(name)
    assert ours.value.error_class == "INVALID_IDENTIFIER" and ours.value.exit_code == 2
