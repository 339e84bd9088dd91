"""Catalog names through real Delta SQL: a golden table registered in Spark's session catalog
(``CREATE TABLE … USING delta LOCATION``) and the very same operations on a second copy named by
its path (``delta.`/path```): dry run, drop, rerun, verify, inspect and the truncate's wait give the
same answers through the name as through the path.

Still on the stand-in (tests/delta_sql_session.py): a missing MODIFY privilege and a managed table
of a Unity Catalog, which Spark's session catalog cannot express.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from delta_downgrade.app.cli import main as cli_main
from delta_downgrade.app.tasks.entrypoints import drop_feature_task, truncate_task, verify_task
from tests.drop_support import log_snapshot_files, run_task

pytestmark = pytest.mark.classic_spark("registers tables in the classic session's catalog")

FEATURE = "vacuumProtocolCheck"


@pytest.fixture
def named_and_path(delta_spark, golden_table):
    """(name, its location, a second copy's path) of the golden ``vacuum_protocol_check`` table."""
    name = "spark_catalog.default.events_by_name"
    named, by_path = golden_table("vacuum_protocol_check"), golden_table("vacuum_protocol_check")
    delta_spark.sql(f"DROP TABLE IF EXISTS {name}")
    delta_spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{named}'")
    yield name, named, by_path
    delta_spark.sql(f"DROP TABLE IF EXISTS {name}")  # unregisters; an external table's files stay


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(argv)
    return code, out.getvalue(), err.getvalue()


def _same(name_result: dict, path_result: dict, keys: tuple[str, ...]) -> None:
    for key in keys:
        assert name_result.get(key) == path_result.get(key), (key, name_result.get(key), path_result.get(key))


def test_drop_verify_truncate_and_inspect_by_name_match_the_path(named_and_path):
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
    before = log_snapshot_files(location)
    results = {}
    for table in (name, ref_path):
        code, (plan,), err = run_task(drop_feature_task, [f"--table={table}", f"--feature={FEATURE}",
                                                          "--engine=delta-sql", "--dry_run=true"])
        assert code == 0, err
        results[table] = plan
    assert results[name]["status"] == results[ref_path]["status"] == "planned"
    assert log_snapshot_files(location) == before

    # The drop through Delta's own ALTER TABLE … DROP FEATURE, by name and by path.
    drops = {}
    for table in (name, ref_path):
        code, (drop,), err = run_task(drop_feature_task, [f"--table={table}", f"--feature={FEATURE}",
                                                          "--engine=delta-sql"])
        assert code == 0, err
        drops[table] = drop
    _same(drops[name], drops[ref_path], ("status", "min_reader_version", "min_writer_version",
                                         "reader_features", "writer_features", "boundary_version",
                                         "needs_truncate", "commits"))
    assert drops[name]["status"] == "dropped"

    # A rerun: already absent, exit 0, on both.
    for table in (name, ref_path):
        code, (again,), err = run_task(drop_feature_task, [f"--table={table}", f"--feature={FEATURE}",
                                                           "--engine=delta-sql"])
        assert code == 0, err
        assert again["status"] == "already_absent"
        assert again["error_class"] == "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"

    # Verify: the checks SQL can answer pass by name; the path's own verification agrees.
    verified = {}
    for table in (name, path):
        code, (report,), err = run_task(verify_task, [f"--table={table}", f"--expect_absent_feature={FEATURE}",
                                                      "--expect_min_reader_version=1"])
        assert code == 0, err
        verified[table] = report
    assert verified[name]["status"] == verified[path]["status"] == "verified", verified

    # Truncate before the retention: Delta's own wait, with the same class by name and by path.
    waits = {}
    for table in (name, ref_path):
        code, (wait,), err = run_task(truncate_task, [f"--table={table}", "--engine=delta-sql"])
        assert code == 0, err
        waits[table] = wait
    _same(waits[name], waits[ref_path], ("status", "error_class", "needs_truncate"))
    assert waits[name]["status"] == "waiting"
