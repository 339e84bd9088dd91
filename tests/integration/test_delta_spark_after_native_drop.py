"""delta-spark working on tables this package dropped features from.

For a few golden tables chosen so that every feature this package drops on a golden table is
dropped at least once (deletion vectors and column mapping, both rewrites; v2 checkpoints with
sidecars; type widening; row tracking and then domain metadata; in-commit timestamps; check
constraints; vacuum protocol check), this package's native drop runs first. Then delta-spark 4.4,
on the classic session with its SQL extension:

- appends, DELETEs, MERGEs and OPTIMIZEs the table; after each statement delta-spark reads the
  rows this package's bookkeeping expects (the rows before, plus the appended ones, minus the
  deleted key, with the merged row in place), and delta-rs reads the same rows at the end;
- checkpoints it and runs its own metadata cleanup (``delta.checkpointInterval`` = 1 makes its
  post-commit hook checkpoint and clean up after the next commit), with the history before the
  drop expired under ``delta.logRetentionDuration`` (the commit files backdated: delta-spark takes
  a commit's time from its file when in-commit timestamps are off). The cleanup must remove that
  expired history (else the test proves nothing) and keep every checkpoint this package
  protected (Checkpoint Protection RFC rule (a): no checkpoint before the boundary is cleaned up
  while history before the boundary remains). This package's ``verify_task`` checks the
  protected checkpoints, and delta-spark reads every retained version with the rows it read
  there before the cleanup;
- (a writer feature's drop protects no history: no boundary; there delta-spark's cleanup of the
  expired history leaves the rows and ``verify_task`` passes)
- drops ``checkpointProtection`` itself with ``TRUNCATE HISTORY`` once the history before the
  boundary has expired: the protocol loses the feature and the boundary property, the rows stay,
  and this package's ``inspect`` and ``verify_task`` read the result.

Once, on the classic session: the Connect server the tests start has no Delta extension.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.delta_spark_support import (
    BOUNDARY, DAY_S, backdate_log, canonical_rows, commit_versions, condition, delta_rs_rows,
    detail, log_names, read_rows, remove_hadoop_checksums
)

pytestmark = pytest.mark.classic_spark("delta-spark's SQL runs on the classic session")

#: (golden table, delta-spark statements run first, the features this package drops in order).
CASES = [
    ("dv_cm_name_checkpoint", (), ("deletionVectors", "columnMapping")),
    ("v2_checkpoint_parquet_sidecars", (), ("v2Checkpoint",)),
    ("type_widening_preview", (), ("typeWidening-preview",)),
    ("row_tracking", (), ("rowTracking", "domainMetadata")),
    ("ict_cdf", (), ("inCommitTimestamp",)),
    ("check_constraints_table_features", ("ALTER TABLE {t} DROP CONSTRAINT const1",), ("checkConstraints",)),
    ("vacuum_protocol_check", (), ("vacuumProtocolCheck",)),
]

#: ``all``: every case (``DELTA_DOWNGRADE_INTEROP=all``; each runs some twenty delta-spark
#: statements: 5-9 min a case on the shared, overloaded 2-core machine); otherwise (``make test``)
#: the cheapest, vacuumProtocolCheck (no rewrite), which still takes every step of delta-spark's.
SCOPE_VARIABLE = "DELTA_DOWNGRADE_INTEROP"
if os.environ.get(SCOPE_VARIABLE, "").strip().lower() != "all":
    CASES = [c for c in CASES if c[0] == "vacuum_protocol_check"]

#: Older than delta-spark's default ``delta.logRetentionDuration`` (30 days) plus the day its cutoff
#: is truncated to.
EXPIRED_S = 40 * DAY_S
KEY_TYPES = ("IntegerType", "LongType", "ShortType", "ByteType", "StringType")


def _key_column(df) -> str:
    """A top-level column of an integral or string type to DELETE and MERGE on."""
    for field in df.schema.fields:
        if type(field.dataType).__name__ in KEY_TYPES:
            return field.name
    raise AssertionError(f"no integral or string column in {df.schema.simpleString()}")


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(value) -> str:
    return "'" + value.replace("'", "''") + "'" if isinstance(value, str) else str(value)


def _write_with_delta_spark(spark, path: str) -> list[str]:
    """Append, DELETE, MERGE and OPTIMIZE with delta-spark, each checked against the rows expected;
    the final rows."""
    t = f"delta.`{path}`"
    df = spark.read.format("delta").load(path)
    key = _key_column(df)
    rows = df.collect()
    expected = canonical_rows(rows)
    assert expected, f"{path} has no rows to work with"

    sample = [r for r in rows if r[key] is not None][:2]
    spark.createDataFrame(sample, df.schema).write.format("delta").mode("append").save(path)
    rows = rows + sample
    assert read_rows(spark, path) == canonical_rows(rows), "append"

    victim = sample[0][key]
    spark.sql(f"DELETE FROM {t} WHERE {_quoted(key)} = {_literal(victim)}").collect()
    rows = [r for r in rows if r[key] != victim]
    assert read_rows(spark, path) == canonical_rows(rows), "DELETE"

    source = next(r for r in rows if r[key] is not None)
    spark.createDataFrame([source], df.schema).createOrReplaceTempView("merge_source")
    spark.sql(f"MERGE INTO {t} AS target USING merge_source AS source "
              f"ON target.{_quoted(key)} = source.{_quoted(key)} "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").collect()
    rows = [source if r[key] == source[key] else r for r in rows]
    assert read_rows(spark, path) == canonical_rows(rows), "MERGE"

    spark.sql(f"OPTIMIZE {t}").collect()
    assert read_rows(spark, path) == canonical_rows(rows), "OPTIMIZE"
    return canonical_rows(rows)


def _verify(path: str, *args: str) -> dict:
    from delta_downgrade.app.tasks.entrypoints import verify_task
    from tests.drop_support import run_task

    code, results, err = run_task(verify_task, [f"--table={path}", *args])
    assert code == 0, f"verify_task failed ({code}): {results} {err}"
    (result,) = results
    return result


@pytest.mark.parametrize(("table", "prepare", "features"), CASES, ids=[c[0] for c in CASES])
def test_delta_spark_writes_cleans_up_and_truncates_after_native_drop(
        delta_spark, golden_table, oracle, table, prepare, features):
    from delta_downgrade.operations.drop_feature import drop_feature

    spark = delta_spark
    path = remove_hadoop_checksums(golden_table(table))
    t = f"delta.`{path}`"
    for statement in prepare:
        spark.sql(statement.format(t=t)).collect()
    first_drop_version = max(commit_versions(path)) + 1
    for feature in features:
        outcome = drop_feature(path, feature)
        assert outcome.status == "dropped", (feature, outcome)
    boundary = outcome.boundary_version
    protected = list(outcome.protected_checkpoints)

    # delta-spark writes on the result.
    final_rows = _write_with_delta_spark(spark, path)
    assert delta_rs_rows(oracle.scan_rows(path).unwrap()) == final_rows, "delta-rs reads other rows"

    if boundary is None:
        # A writer feature leaves no history to protect (PROTOCOL.md "Table Features": readers
        # ignore writer features): no boundary, no checkpointProtection. delta-spark's checkpoint
        # and cleanup with the history before the drop expired leave the table whole.
        assert "checkpointProtection" not in detail(spark, path)["features"] and not protected
        assert backdate_log(path, first_drop_version, EXPIRED_S)
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.checkpointInterval' = '1')").collect()
        assert read_rows(spark, path) == final_rows
        _verify(path, f"--expect_absent_feature={features[-1]}")
        assert delta_rs_rows(oracle.scan_rows(path).unwrap()) == final_rows
        return
    assert protected
    assert detail(spark, path)["properties"][BOUNDARY] == str(boundary)

    # delta-spark's checkpoint and metadata cleanup with the history before the drop expired.
    before_cleanup = commit_versions(path)
    # The versions read before and after the cleanup: the drop's first and each protected
    # checkpoint's (their history is what the cleanup must keep), and from the boundary on.
    protected_versions = {int(n[:20]) for n in (p.rsplit("/", 1)[-1] for p in protected) if n[:20].isdigit()}
    read_at = sorted({first_drop_version, *protected_versions,
                      *(v for v in before_cleanup if v >= boundary)})
    rows_at = {v: read_rows(spark, path, v) for v in read_at}
    names_at = {p: p.rsplit("/", 1)[-1] for p in protected}

    def protected_present() -> list[str]:
        return [p for p in protected if os.path.isfile(os.path.join(path, p))]

    # 1. Only the history before the drop expired: delta-spark's cleanup would remove part of
    # the history before the boundary, which rule (a) forbids: every protected checkpoint stays.
    expired = backdate_log(path, first_drop_version, EXPIRED_S)
    assert expired
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.checkpointInterval' = '1')").collect()
    assert any(n.startswith(f"{max(commit_versions(path)):020d}.checkpoint") for n in log_names(path)), \
        "delta-spark wrote no checkpoint (its cleanup runs after one)"
    assert protected_present() == protected, f"delta-spark's cleanup removed a protected checkpoint: {sorted(log_names(path))}"
    _verify(path, f"--expect_boundary_version={boundary}", f"--expect_protected_checkpoints={json.dumps(protected)}")
    for version, rows in rows_at.items():
        assert read_rows(spark, path, version) == rows, f"version {version} reads other rows after the cleanup"

    # 2. Everything before the boundary expired: delta-spark may clean it up in one go (rule (c)),
    # and keeps the checkpoint at the boundary, from which every later version is read.
    backdate_log(path, boundary, EXPIRED_S)
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('interop.cleanup' = 'expired')").collect()
    kept_before = [v for v in commit_versions(path) if v < boundary]
    assert not kept_before, f"delta-spark's cleanup kept part of the history before the boundary: {kept_before}"
    at_boundary = [p for p in protected if names_at[p][:20] == f"{boundary:020d}"]
    assert at_boundary and set(at_boundary) <= set(protected_present()), sorted(log_names(path))
    verified = _verify(path, f"--expect_boundary_version={boundary}",
                       f"--expect_protected_checkpoints={json.dumps(at_boundary)}")
    assert verified["boundary_version"] == boundary
    for version, rows in rows_at.items():
        if version >= boundary:
            assert read_rows(spark, path, version) == rows, f"version {version} reads other rows after the cleanup"
    assert read_rows(spark, path) == final_rows

    # delta-spark drops checkpointProtection, truncating the history before the boundary.
    backdate_log(path, boundary, EXPIRED_S)
    try:
        spark.sql(f"ALTER TABLE {t} DROP FEATURE checkpointProtection TRUNCATE HISTORY").collect()
    except Exception as exc:  # the class, for the failure message
        pytest.fail(f"delta-spark refused to drop checkpointProtection: {condition(exc)}: {exc}")
    after = detail(spark, path)
    assert "checkpointProtection" not in after["features"] and BOUNDARY not in after["properties"], after
    assert read_rows(spark, path) == final_rows
    verified = _verify(path, "--expect_absent_feature=checkpointProtection")
    assert verified["boundary_version"] is None
    from delta_downgrade.operations.inspect import inspect_table

    report = inspect_table(path)
    assert report.boundary_version is None and "checkpointProtection" not in report.protocol.features
    assert delta_rs_rows(oracle.scan_rows(path).unwrap()) == final_rows
