"""Catalog names end to end: every task and ``inspect`` on ``catalog.schema.table`` through SQL on
the session, never through the table's storage path.

Against real Delta SQL (delta-spark's jars, the test session): golden tables registered in Spark's
session catalog (``CREATE TABLE … USING delta LOCATION``) in a schema of their own, the session
wrapped only to remember the statements the package ran (tests/recording_session.py). Spark
parses them, Delta answers DESCRIBE DETAIL / HISTORY and refuses as it does.

Still a stand-in (tests/delta_sql_session.py), for what neither OSS Delta nor Spark's session
catalog can show: a missing MODIFY privilege, and a managed Unity Catalog table whose storage
location the package may not read (the stand-in's DETAIL gives one no storage answers). A real
Unity Catalog server cannot run here: its server and Spark connector jars are not served by the
Maven registry these machines reach (only the client jars delta-spark depends on are).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from delta_downgrade.app.cli import main as cli_main
from delta_downgrade.app.render.result import parse_result_lines
from delta_downgrade.app.tasks.entrypoints import drop_feature_task, truncate_task, verify_task
from delta_downgrade.clock import ManualClock
from tests.delta_sql_session import DeltaSqlStandIn
from tests.drop_support import log_snapshot_files, run_task
from tests.recording_session import activate

#: The stand-in's Unity Catalog name (a managed table there).
NAME = "main.default.events"


@pytest.fixture
def names(delta_spark, golden_table, monkeypatch):
    """Real Delta SQL with names: ``spark_catalog.<schema>.events`` on a copy of the golden
    ``vacuum_protocol_check`` table and ``….ntz`` on ``timestamp_ntz``, in a schema of this test's
    own; the recording session is the active one. Yields it with ``schema`` and ``paths``."""
    schema = f"names_{uuid.uuid4().hex[:12]}"
    paths = {"events": golden_table("vacuum_protocol_check"), "ntz": golden_table("timestamp_ntz")}
    delta_spark.sql(f"CREATE SCHEMA spark_catalog.{schema}")
    for table, path in paths.items():
        delta_spark.sql(f"CREATE TABLE spark_catalog.{schema}.{table} USING delta LOCATION '{path}'")
    session = activate(delta_spark, monkeypatch)
    session.schema = schema
    session.paths = {f"spark_catalog.{schema}.{t}": p for t, p in paths.items()}
    yield session
    delta_spark.sql(f"DROP SCHEMA IF EXISTS spark_catalog.{schema} CASCADE")  # external: files stay


@pytest.fixture
def catalog(golden_table, oracle, monkeypatch, tmp_path):
    """The stand-in as the active session (what only a Unity Catalog shows): ``main.default.events``
    (a managed table: its DETAIL location answers no storage) and ``main.ops.readonly`` (no
    MODIFY), copies of the golden ``vacuum_protocol_check`` table."""
    from pyspark.sql import SparkSession

    events, readonly = golden_table("vacuum_protocol_check"), golden_table("vacuum_protocol_check")
    session = DeltaSqlStandIn({NAME: events, "main.ops.readonly": readonly},
                              no_modify={"main.ops.readonly"}, reader=oracle)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: session))
    session.paths = {NAME: events, "main.ops.readonly": readonly}
    session.values_dir = str(tmp_path / "values")
    return session


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(argv)
    return code, out.getvalue(), err.getvalue()


def _no_path_access(session: DeltaSqlStandIn) -> None:
    """Every statement names the table by its catalog name; none names a location."""
    for statement in session.statements:
        assert "delta.`" not in statement and "/" not in statement, statement


def test_drop_verify_and_truncate_never_read_a_managed_tables_location(catalog, oracle):
    """Stand-in: a managed Unity Catalog table, whose DETAIL location the package may not read
    (the stand-in's answers no storage); Spark's session catalog cannot forbid path access. The
    same flow on real Delta SQL: tests/integration/test_session_catalog_names_with_delta.py."""
    path = catalog.paths[NAME]
    before_files = log_snapshot_files(path)

    # Dry run: the statement it would run and the current DETAIL; nothing changes.
    code, results, err = run_task(drop_feature_task, [f"--table={NAME}", "--feature=VACUUMPROTOCOLCHECK",
                                                     "--dry_run=true"])
    assert code == 0, err
    (plan,) = results
    assert plan["status"] == "planned"
    assert plan["plan"][0] == "run: ALTER TABLE `main`.`default`.`events` DROP FEATURE `vacuumProtocolCheck`"
    assert "tableFeatures [appendOnly, invariants, vacuumProtocolCheck]" in plan["plan"][1]
    assert log_snapshot_files(path) == before_files
    assert not any(s.startswith("ALTER") for s in catalog.statements)
    start = oracle.version(path).unwrap()

    # The drop: RESULT read back through DETAIL and HISTORY, equal to what an outside reader sees.
    code, results, err = run_task(drop_feature_task, [f"--table={NAME}", "--feature=vacuumProtocolCheck",
                                                     f"--task_values_dir={catalog.values_dir}"])
    assert code == 0, err
    (drop,) = results
    seen = oracle.describe(path).unwrap()
    history = oracle.catalog_answers(path).unwrap()["history"]
    assert drop["status"] == "dropped" and drop["table"] == NAME
    assert drop["min_reader_version"] == seen["protocol"]["minReaderVersion"] == 1
    assert drop["min_writer_version"] == seen["protocol"]["minWriterVersion"] == 7
    assert drop["writer_features"] == seen["protocol"]["writerFeatures"] == \
        ["appendOnly", "checkpointProtection", "invariants"]
    assert drop["boundary_version"] == int(seen["configuration"]["delta.requireCheckpointProtectionBeforeVersion"])
    assert drop["needs_truncate"] is True and drop["truncate_after"]
    assert drop["commits"] == sorted(c["version"] for c in history if c["version"] > start)
    assert drop["protected_checkpoints"] == [] and drop["unavailable"] == ["protected_checkpoints", "checkpoints_written"]
    boundary_commit = next(c for c in history if c["version"] == drop["boundary_version"])
    assert boundary_commit["operation"] == "DROP FEATURE"
    assert boundary_commit["operationParameters"]["featureName"] == "vacuumProtocolCheck"

    # A rerun: already absent, exit 0 (the runtime's DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT).
    code, (again,), err = run_task(drop_feature_task, [f"--table={NAME}", "--feature=vacuumProtocolCheck"])
    assert code == 0, err
    assert again["status"] == "already_absent" and again["commits"] == []
    assert again["error_class"] == "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"
    assert again["boundary_version"] == drop["boundary_version"]

    # Verify through DETAIL, HISTORY and a read by the runtime.
    code, (verified,), err = run_task(verify_task, [f"--table={NAME}", "--expect_absent_feature=vacuumProtocolCheck",
                                                   "--expect_min_reader_version=1",
                                                   f"--expect_boundary_version={drop['boundary_version']}"])
    assert code == 0, err
    assert verified["status"] == "verified", verified["checks"]
    checks = {c["check"]: c["ok"] for c in verified["checks"]}
    assert checks == {"readable": True, "feature_absent_from_protocol": True, "min_reader_version": True,
                      "boundary_version": True, "boundary_commit_in_history": True,
                      "latest_version_readable_by_package": True}
    assert [c["version"] for c in verified["drop_commits"]] == [drop["boundary_version"]]
    assert verified["unavailable"] == ["feature_traces_removed", "protected_checkpoints_exist"]
    assert any(s.startswith("SELECT * FROM `main`.`default`.`events` LIMIT 1") for s in catalog.statements)

    # Truncate before the retention: the runtime's wait is ours, with when to retry: status
    # waiting, exit 0 in task mode (a wait is a successful task outcome; the CLI keeps exit 3).
    code, (wait,), err = run_task(truncate_task, [f"--table={NAME}"])
    assert code == 0, err
    assert wait["needs_truncate"] is True
    assert wait["status"] == "waiting"
    assert wait["error_class"] == "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"
    assert wait["truncate_after"] == drop["truncate_after"]
    assert oracle.protocol(path).unwrap()["writerFeatures"] == ["appendOnly", "checkpointProtection", "invariants"]

    # Once the runtime's clock is past the retention: checkpointProtection goes.
    catalog.clock = ManualClock().advance(days=2)
    code, (truncated,), err = run_task(truncate_task, [f"--table={NAME}"])
    assert code == 0, err
    assert truncated["status"] == "dropped" and truncated["needs_truncate"] is False
    assert truncated["boundary_version"] is None and truncated["truncate_after"] is None
    final = oracle.protocol(path).unwrap()
    assert (truncated["min_reader_version"], truncated["min_writer_version"]) == \
        (final["minReaderVersion"], final["minWriterVersion"])
    assert "checkpointProtection" not in (final["writerFeatures"] or [])
    _no_path_access(catalog)


#: Tests on real Delta SQL register tables in the classic session's catalog.
classic = pytest.mark.classic_spark("registers tables in the classic session's catalog")


@classic
def test_names_resolve_as_the_catalog_does_and_quoted_parts_reach_it(names):
    # Spark's session catalog resolves names case-insensitively; quoted parts reach it as given.
    table = f"SPARK_CATALOG.`{names.schema}`.Events"
    code, (result,), err = run_task(drop_feature_task, [f"--table={table}", "--feature=vacuumProtocolCheck",
                                                       "--dry_run=true"])
    assert code == 0, err
    assert result["status"] == "planned"
    assert names.statements == [f"DESCRIBE DETAIL `SPARK_CATALOG`.`{names.schema}`.`Events`"]
    assert "tableFeatures [appendOnly, invariants, vacuumProtocolCheck]" in result["plan"][1]


@classic
def test_verify_fails_when_the_feature_is_still_there(names):
    code, (result,), err = run_task(verify_task, [f"--table=spark_catalog.{names.schema}.ntz",
                                                  "--expect_absent_feature=timestampNtz"])
    assert code == 1
    assert result["status"] == "failed" and result["failed_checks"] == ["feature_absent_from_protocol"]
    assert "FAILED feature_absent_from_protocol" in err


@classic
def test_verify_refuses_checkpoint_file_expectations_for_a_name(names):
    code, (result,), err = run_task(verify_task, [f"--table=spark_catalog.{names.schema}.events",
                                                  "--expect_protected_checkpoints=_delta_log/x.parquet"])
    assert code == 2 and result["error_class"] == "DELTA_DOWNGRADE_BAD_SETTINGS", err
    assert names.statements == []


@classic
@pytest.mark.parametrize("task, extra", [(drop_feature_task, ["--feature=vacuumProtocolCheck"]),
                                         (truncate_task, []), (verify_task, [])])
def test_an_unknown_table_is_exit_2_with_the_runtimes_class(names, task, extra):
    table = f"spark_catalog.{names.schema}.nope"
    code, (result,), err = run_task(task, [f"--table={table}", *extra])
    assert code == 2, err
    assert result["error_class"] == "TABLE_OR_VIEW_NOT_FOUND" and result["table"] == table
    assert "cannot be found" in result["message"] and "Next: check the name as catalog.schema.table" in result["message"]
    assert not result["message"].startswith("[TABLE_OR_VIEW_NOT_FOUND]")  # the class is printed once
    assert not any(s.startswith("ALTER") for s in names.statements)


@classic
@pytest.mark.parametrize("task, extra", [(drop_feature_task, ["--feature=vacuumProtocolCheck"]),
                                         (verify_task, [])])
def test_an_unknown_catalog_is_exit_2_with_the_runtimes_class(names, task, extra):
    """Spark takes an unknown first part as a namespace of its session catalog and refuses the
    name (REQUIRES_SINGLE_PART_NAMESPACE): a wrong name, exit 2, like an unknown table."""
    table = f"no_such_catalog.{names.schema}.events"
    code, (result,), err = run_task(task, [f"--table={table}", *extra])
    assert code == 2, err
    assert (result["error_class"], result["sqlstate"]) == ("REQUIRES_SINGLE_PART_NAMESPACE", "42K05"), result
    assert "Next: check the name as catalog.schema.table (SHOW CATALOGS" in result["message"]
    assert not any(s.startswith("ALTER") for s in names.statements)


def test_missing_modify_is_exit_2_and_nothing_changes(catalog):
    """Stand-in: Spark's session catalog has no privileges, and no Unity Catalog server runs here."""
    path = catalog.paths["main.ops.readonly"]
    before = log_snapshot_files(path)
    code, (result,), err = run_task(drop_feature_task, ["--table=main.ops.readonly", "--feature=vacuumProtocolCheck"])
    assert code == 2, err
    assert result["error_class"] == "INSUFFICIENT_PERMISSIONS"
    assert "does not have MODIFY" in result["message"] and "GRANT MODIFY ON TABLE main.ops.readonly" in result["message"]
    assert "error: [INSUFFICIENT_PERMISSIONS]" in err
    assert log_snapshot_files(path) == before


@classic
@pytest.mark.parametrize("task, extra", [(drop_feature_task, ["--feature=vacuumProtocolCheck"]),
                                         (truncate_task, []), (verify_task, [])])
def test_native_engine_with_a_name_is_exit_2_before_any_sql(names, task, extra):
    code, (result,), err = run_task(task, [f"--table=spark_catalog.{names.schema}.events", "--engine=native", *extra])
    assert code == 2, err
    assert result["error_class"] == "DELTA_DOWNGRADE_CATALOG_NAME_NEEDS_SQL"
    assert "pass the table's path to use native" in result["message"]
    assert names.statements == []


@classic
def test_inspect_a_name_through_detail_and_history(names):
    name = f"spark_catalog.{names.schema}.events"
    path = names.paths[name]
    code, out, err = _cli(["inspect", name, "--json"])
    assert code == 0, err
    doc = json.loads(out)
    code, out_path, err = _cli(["inspect", path, "--json"])
    assert code == 0, err
    by_path = json.loads(out_path)
    # The same JSON keys where SQL has the field, and the same values.
    for key in ("version", "latest_version", "protocol", "implicit_features", "unsupported_features",
                "table_id", "partition_columns", "properties", "droppable_features"):
        assert doc[key] == by_path[key], key
    assert doc["features"] == [{k: v for k, v in f.items() if k not in ("in_use", "traces")}
                               for f in by_path["features"]]
    assert doc["files"]["live_files"] == by_path["files"]["live_files"]
    assert doc["files"]["live_bytes"] == by_path["files"]["live_bytes"]
    assert doc["checkpoint_protection"]["feature_present"] is False
    assert "checkpoints" in doc["unavailable"] and "checkpoints" not in doc
    quoted = f"`spark_catalog`.`{names.schema}`.`events`"
    assert names.statements == [f"DESCRIBE DETAIL {quoted}", f"DESCRIBE HISTORY {quoted}"]
    code, text, err = _cli(["inspect", name])
    assert code == 0 and "through DESCRIBE DETAIL, DESCRIBE HISTORY" in text and "not shown through SQL" in text


@classic
def test_inspect_an_unknown_name_is_exit_2(names):
    code, out, err = _cli(["inspect", f"spark_catalog.{names.schema}.nope"])
    assert code == 2
    (result,) = parse_result_lines(out)
    assert (result["status"], result["error_class"], result["exit_code"]) == ("error", "TABLE_OR_VIEW_NOT_FOUND", 2)
    assert err.startswith("error: [TABLE_OR_VIEW_NOT_FOUND]") and len(err.strip().splitlines()) == 1


def test_delta_path_identifier_is_the_path_for_native(golden_table, oracle):
    path = golden_table("vacuum_protocol_check")
    code, out, err = _cli(["inspect", f"delta.`{path}`", "--json", "--no-history"])
    assert code == 0, err
    assert json.loads(out)["table"] == path
    code, (result,), err = run_task(drop_feature_task, [f"--table=delta.`{path}`", "--feature=vacuumProtocolCheck"])
    assert code == 0, err
    assert result["status"] == "dropped" and result["table"] == path
    assert oracle.protocol(path).unwrap()["minReaderVersion"] == 1


# --- without Delta: one line, the same exit code for names and paths ------------------------------

def _subprocess(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABRICKS_RUNTIME_VERSION", "DELTA_DOWNGRADE_DELTA_JARS")}
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join([str(root / "src"), str(root / "tools" / "src"), str(root)])
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=120)


@pytest.mark.parametrize("args", [
    ["-m", "delta_downgrade.app.cli", "inspect", NAME],
    ["-m", "delta_downgrade.app.cli", "drop-feature", NAME, "deletionVectors"],
    ["-m", "delta_downgrade.app.cli", "drop-feature", "{path}", "deletionVectors", "--engine=delta-sql"],
    ["-m", "delta_downgrade.app.cli", "truncate-history", NAME, "--engine=auto"],
    ["-c", "import sys; from delta_downgrade.app.tasks.entrypoints import verify_task; sys.exit(verify_task())",
     f"--table={NAME}"],
    ["-c", "import sys; from delta_downgrade.app.tasks.entrypoints import drop_feature_task; "
           "sys.exit(drop_feature_task())", "--table={path}", "--feature=deletionVectors", "--engine=delta-sql"],
])
def test_without_delta_one_line_and_exit_2_for_names_and_paths(golden_table, tmp_path, args):
    path = golden_table("dv_basic_no_checkpoint")
    before = log_snapshot_files(path)
    proc = _subprocess([a.replace("{path}", path) for a in args], tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert errors[0].startswith("error: [DELTA_DOWNGRADE_ENGINE_UNAVAILABLE] the delta-sql engine needs a Spark "
                                "session with Delta Lake's SQL")
    assert ("catalog name" in errors[0]) == (path not in " ".join(args).replace("{path}", path))
    assert log_snapshot_files(path) == before


def test_a_bare_directory_name_is_the_directory_with_a_note(golden_table, tmp_path):
    path = Path(golden_table("vacuum_protocol_check"))
    bare = _subprocess(["-m", "delta_downgrade.app.cli", "inspect", path.name, "--no-history"], path.parent)
    assert bare.returncode == 0, bare.stderr
    assert f"note: {path.name} is taken as the directory ./{path.name} here" in bare.stderr
    dotted = _subprocess(["-m", "delta_downgrade.app.cli", "inspect", f"./{path.name}", "--no-history"], path.parent)
    assert dotted.returncode == 0, dotted.stderr
    assert "note:" not in dotted.stderr
    assert bare.stdout.replace(path.name, "T").replace("./T", "T") == dotted.stdout.replace(path.name, "T").replace("./T", "T")


def test_a_catalog_name_without_delta_names_no_flag_inspect_lacks(tmp_path):
    proc = _subprocess(["-m", "delta_downgrade.app.cli", "inspect", "main.sales.no_such_dir"], tmp_path)
    assert proc.returncode == 2
    assert "catalog name" in proc.stderr and "--engine" not in proc.stderr, proc.stderr


def _add_unknown_reader_feature(path: str) -> None:
    """Commit the next version with a reader feature no Delta knows (PROTOCOL.md "Table
    Features": a reader must refuse a table whose readerFeatures it does not support)."""
    import time

    log = Path(path) / "_delta_log"
    version = max(int(p.name.split(".")[0]) for p in log.glob("*.json")) + 1
    commit = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "UPGRADE PROTOCOL",
                             "operationParameters": {}}}
    protocol = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                             "readerFeatures": ["vacuumProtocolCheck", "aFeatureFromTheFuture"],
                             "writerFeatures": ["appendOnly", "invariants", "vacuumProtocolCheck",
                                                "aFeatureFromTheFuture"]}}
    (log / f"{version:020d}.json").write_text(json.dumps(commit) + "\n" + json.dumps(protocol) + "\n")


@classic
def test_a_table_delta_cannot_read_is_exit_2_with_its_class_as_on_the_path(names):
    """An unknown reader feature: Delta refuses DESCRIBE DETAIL itself, so the name gives what
    the path gives (exit 2, DELTA_UNSUPPORTED_FEATURES_FOR_READ), with Delta's own message (not
    py4j's "An error occurred while calling …" line)."""
    name = f"spark_catalog.{names.schema}.events"
    path = names.paths[name]
    _add_unknown_reader_feature(path)
    before = log_snapshot_files(path)
    by_name = run_task(verify_task, [f"--table={name}"])
    by_path = run_task(verify_task, [f"--table={path}"])
    for code, (result,), err in (by_name, by_path):
        assert code == 2, err
        assert result["error_class"] == "DELTA_UNSUPPORTED_FEATURES_FOR_READ", result
        assert "aFeatureFromTheFuture" in result["message"], result
    message = by_name[1][0]["message"]
    assert message.startswith("Unsupported Delta read feature") and "An error occurred" not in message, message
    code, (result,), err = run_task(drop_feature_task, [f"--table={name}", "--feature=vacuumProtocolCheck"])
    assert code == 2 and result["error_class"] == "DELTA_UNSUPPORTED_FEATURES_FOR_READ", err
    assert log_snapshot_files(path) == before


@classic
def test_a_read_the_runtime_refuses_is_a_failed_check(names):
    """A data file gone: DETAIL and HISTORY (the log) answer, Delta's read of the rows fails:
    verify reports the refused read as a failed check (exit 1), not as bad input."""
    name = f"spark_catalog.{names.schema}.events"
    for data in Path(names.paths[name]).glob("*.parquet"):
        data.unlink()
    code, (result,), err = run_task(verify_task, [f"--table={name}"])
    assert code == 1, err
    assert result["failed_checks"] == ["readable"]
    detail = next(c["detail"] for c in result["checks"] if c["check"] == "readable")
    assert "the runtime could not read" in detail and "An error occurred while calling" not in detail, detail
