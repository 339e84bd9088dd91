"""Catalog names through real Delta SQL: tables in Spark's session catalog, external (a golden table
registered with ``CREATE TABLE … USING delta LOCATION``) and managed (written by delta-spark into
its schema's location), and the very same operations on a twin named by its path
(``delta.`/path```): dry run, drop, rerun, verify, inspect, the truncate's wait and, once the
history is past the truncate retention, the truncate itself give the same answers through the
name as through the path, and both tables end with the same protocol, properties and rows.

The retention is reached the way time would reach it: every file of both logs is dated two days
back (delta-spark dates a commit by its file's modification time when in-commit timestamps are
off), and Delta itself decides whether the history may be truncated.

Still a stand-in (tests/delta_sql_session.py, used by tests/integration/test_catalog_names.py):
a missing MODIFY privilege and a managed table whose location may not be read, which only a Unity
Catalog shows. A real Unity Catalog server cannot run here: its server and Spark connector jars
are not served by the Maven registry these machines reach (only the client jars delta-spark
depends on are).
"""

from __future__ import annotations

import io
import json
import os
import uuid
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from delta_downgrade.app.cli import main as cli_main
from delta_downgrade.app.render.result import parse_result_lines
from delta_downgrade.app.tasks.entrypoints import drop_feature_task, truncate_task, verify_task
from tests.drop_support import log_snapshot_files, run_task

pytestmark = pytest.mark.classic_spark("registers tables in the classic session's catalog")

FEATURE = "vacuumProtocolCheck"
#: Past delta.dropFeatureTruncateHistory.retentionDuration (24 hours by default).
TWO_DAYS_S = 2 * 24 * 3600
#: RESULT fields of a drop or truncate that must agree between a name and its path twin.
RESULT_FIELDS = ("status", "min_reader_version", "min_writer_version", "reader_features",
                 "writer_features", "boundary_version", "needs_truncate", "commits", "error_class")


@pytest.fixture
def schema(delta_spark, tmp_path):
    """A schema of this test's own in Spark's session catalog, its managed tables under tmp_path."""
    name = f"spark_catalog.names_{uuid.uuid4().hex[:12]}"
    delta_spark.sql(f"CREATE SCHEMA {name} LOCATION '{tmp_path / 'warehouse'}'")
    yield name
    delta_spark.sql(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.fixture
def named_and_path(delta_spark, golden_table, schema):
    """(name, its location, a second copy's path) of the golden ``vacuum_protocol_check`` table."""
    name = f"{schema}.events_by_name"
    named, by_path = golden_table("vacuum_protocol_check"), golden_table("vacuum_protocol_check")
    delta_spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{named}'")
    return name, named, by_path


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(argv)
    return code, out.getvalue(), err.getvalue()


def _same(name_result: dict, path_result: dict, keys: tuple[str, ...]) -> None:
    for key in keys:
        assert name_result.get(key) == path_result.get(key), (key, name_result.get(key), path_result.get(key))


def _task_both(task, tables: tuple[str, str], *args: str) -> dict[str, dict]:
    results = {}
    for table in tables:
        code, (result,), err = run_task(task, [f"--table={table}", *args])
        assert code == 0, err
        results[table] = result
    return results


def _age_log(location: str, seconds: int) -> None:
    """Date every file of the table's log ``seconds`` back, keeping their order."""
    for entry in (Path(location) / "_delta_log").rglob("*"):
        if entry.is_file():
            stat = entry.stat()
            os.utime(entry, (stat.st_atime - seconds, stat.st_mtime - seconds))


def _detail(spark, table: str) -> dict:
    row = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0].asDict()
    return {k: row[k] for k in ("minReaderVersion", "minWriterVersion", "tableFeatures", "properties",
                                "partitionColumns", "numFiles")}


def _rows(spark, table: str) -> list:
    return sorted(spark.sql(f"SELECT * FROM {table}").collect(), key=repr)


def _drop_verify_truncate(spark, name: str, name_location: str, path: str) -> None:
    """Drop → verify → wait → (history aged) truncate, by name and on the path twin, compared."""
    ref_path = f"delta.`{path}`"
    tables = (name, ref_path)
    rows_before = _rows(spark, name)
    assert rows_before == _rows(spark, ref_path)

    drops = _task_both(drop_feature_task, tables, f"--feature={FEATURE}", "--engine=delta-sql")
    _same(drops[name], drops[ref_path], RESULT_FIELDS)
    assert drops[name]["status"] == "dropped" and drops[name]["needs_truncate"] is True

    verified = _task_both(verify_task, (name, path), f"--expect_absent_feature={FEATURE}",
                          "--expect_min_reader_version=1",
                          f"--expect_boundary_version={drops[name]['boundary_version']}")
    assert verified[name]["status"] == verified[path]["status"] == "verified", verified

    # Before the retention: Delta's own wait, the same by name and by path.
    waits = _task_both(truncate_task, tables, "--engine=delta-sql")
    _same(waits[name], waits[ref_path], ("status", "error_class", "needs_truncate"))
    assert waits[name]["status"] == "waiting"
    assert waits[name]["error_class"] == "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"

    # Two days later: Delta truncates the history and drops checkpointProtection, on both.
    for location in (name_location, path):
        _age_log(location, TWO_DAYS_S)
    truncated = _task_both(truncate_task, tables, "--engine=delta-sql")
    _same(truncated[name], truncated[ref_path],
          ("status", "min_reader_version", "min_writer_version", "reader_features", "writer_features",
           "boundary_version", "needs_truncate", "truncate_after"))
    assert truncated[name]["status"] == "dropped" and truncated[name]["needs_truncate"] is False
    assert "checkpointProtection" not in (truncated[name]["writer_features"] or [])

    # The same table on both sides, as Delta shows it, and the rows unchanged.
    assert _detail(spark, name) == _detail(spark, ref_path)
    assert FEATURE not in _detail(spark, name)["tableFeatures"]
    assert _rows(spark, name) == _rows(spark, ref_path) == rows_before
    final = _task_both(verify_task, (name, path), f"--expect_absent_feature={FEATURE}")
    assert final[name]["status"] == final[path]["status"] == "verified", final


def test_drop_verify_truncate_and_inspect_by_name_match_the_path(delta_spark, named_and_path):
    name, location, path = named_and_path
    ref_path = f"delta.`{path}`"

    # Inspect before: the same protocol, properties and droppable features through DETAIL/HISTORY.
    code, out_name, err = _cli(["inspect", name, "--json"])
    assert code == 0, err
    code, out_path, err = _cli(["inspect", path, "--json"])
    assert code == 0, err
    doc_name, doc_path = json.loads(out_name), json.loads(out_path)
    for key in ("version", "latest_version", "protocol", "properties", "droppable_features",
                "partition_columns"):
        assert doc_name[key] == doc_path[key], key

    # Dry run: planned, nothing written, on either.
    before = log_snapshot_files(location), log_snapshot_files(path)
    plans = _task_both(drop_feature_task, (name, ref_path), f"--feature={FEATURE}", "--engine=delta-sql",
                       "--dry_run=true")
    assert plans[name]["status"] == plans[ref_path]["status"] == "planned"
    assert (log_snapshot_files(location), log_snapshot_files(path)) == before

    _drop_verify_truncate(delta_spark, name, location, path)

    # A rerun: already absent, exit 0, on both.
    again = _task_both(drop_feature_task, (name, ref_path), f"--feature={FEATURE}", "--engine=delta-sql")
    _same(again[name], again[ref_path], RESULT_FIELDS)
    assert again[name]["status"] == "already_absent"
    assert again[name]["error_class"] == "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"


def test_a_managed_table_drop_verify_truncate_by_name_match_the_path(delta_spark, schema, tmp_path):
    """A managed table delta-spark writes into the schema's location, and a path table written by
    the same statement: drop → verify → truncate by name give what they give on the path."""
    name, path = f"{schema}.managed", str(tmp_path / "path_twin")
    body = (f"USING delta TBLPROPERTIES ('delta.feature.{FEATURE}' = 'supported') "
            f"AS SELECT id, CAST(id * 7 AS STRING) AS label FROM range(0, 40, 1, 2)")
    delta_spark.sql(f"CREATE TABLE {name} {body}")
    delta_spark.sql(f"CREATE TABLE delta.`{path}` {body}")
    location = delta_spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"]
    location = location.removeprefix("file:")
    assert Path(location).resolve().is_relative_to((tmp_path / "warehouse").resolve()), location
    assert FEATURE in _detail(delta_spark, name)["tableFeatures"]
    _drop_verify_truncate(delta_spark, name, location, path)


@pytest.mark.parametrize("args", [["drop-feature", "{name}", FEATURE], ["truncate-history", "{name}"],
                                  ["inspect", "{name}"]])
def test_a_missing_table_is_exit_2_with_sparks_class(delta_spark, schema, args):
    name = f"{schema}.no_such_table"
    code, out, err = _cli([a.replace("{name}", name) for a in args])
    assert code == 2, err
    assert err.startswith("error: [TABLE_OR_VIEW_NOT_FOUND]") and name in err, err
    (result,) = parse_result_lines(out)
    assert (result["status"], result["error_class"], result["exit_code"], result["table"]) == \
        ("error", "TABLE_OR_VIEW_NOT_FOUND", 2, name)
    assert "Next: check the name as catalog.schema.table" in err or args[0] == "inspect", err

