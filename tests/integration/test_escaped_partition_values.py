"""Rewrites on partitions whose values a path must escape.

A real table partitioned by a string holds values with spaces, ``:``, ``%``, ``=``, ``/``, ``#``,
non-ASCII letters, an empty string and null: Spark names their directories with Hive's escapes
(``p=x%3Ay``) and the log's ``add.path`` is a URI of that name (``p=x%253Ay``, PROTOCOL.md "Add File
and Remove File": the path is a URI, RFC 2396). The drops that rewrite data files - the deletion
vector purge, column mapping's removal with a renamed column - must read the old files and write
the new ones under such names. delta-spark 4.4 writes the table (DELETE makes the deletion
vectors), this package drops natively, and delta-spark and delta-rs read every row back.

Typed partitions too: a timestamp partition written in a session east or west of UTC has a
directory named by the session's wall time (``ts=2024-03-10 01%3A30%3A00.123456``) and a partition
value in UTC (``2024-03-10T09:30:00.123456Z``); the checkpoints this package writes after a purge
carry ``partitionValues_parsed`` and ``stats_parsed`` (``delta.checkpoint.writeStatsAsStruct``),
which must hold what delta-spark's own checkpoint of the same files holds."""

from __future__ import annotations

import datetime as dt
import glob

import pyarrow.parquet as pq
import pytest

from tests.delta_spark_support import delta_rs_rows, detail, read_rows
from tests.process_support import run_cli

pytestmark = pytest.mark.classic_spark("delta-spark's SQL runs on the classic session")

#: Values Hive's partition-path escaping changes, and the two without a directory name of their own.
VALUES = ["a b", "x:y", "50%", "k=v", "s/t", "#h", "ü ñ", "", None]


def _rows() -> list[tuple]:
    return [(i, VALUES[i % len(VALUES)], f"n{i}") for i in range(90)]


def _create(spark, path: str, properties: str) -> None:
    spark.createDataFrame(_rows(), "id INT, p STRING, name STRING").createOrReplaceTempView("source")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, p STRING, name STRING) USING delta "
              f"PARTITIONED BY (p) TBLPROPERTIES ({properties})")
    spark.sql(f"INSERT INTO delta.`{path}` SELECT * FROM source")


@pytest.mark.oracle
def test_deletion_vectors_purged_on_escaped_partitions(delta_spark, oracle, tmp_path):
    path = str(tmp_path / "t")
    _create(delta_spark, path, "'delta.enableDeletionVectors' = 'true'")
    delta_spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 4 = 0")
    expected = read_rows(delta_spark, path)
    assert len(expected) == 90 - 23
    done = run_cli("drop-feature", path, "deletionVectors")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "deletionVectors" not in detail(delta_spark, path)["features"]
    assert read_rows(delta_spark, path) == expected
    assert delta_rs_rows(oracle.scan_rows(path).unwrap()) == expected


@pytest.mark.oracle
def test_column_mapping_removed_on_escaped_partitions(delta_spark, oracle, tmp_path):
    path = str(tmp_path / "t")
    _create(delta_spark, path, "'delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', "
                               "'delta.minWriterVersion' = '5'")
    delta_spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN name TO label")
    delta_spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN p TO q")
    expected = read_rows(delta_spark, path)
    assert len(expected) == 90
    done = run_cli("drop-feature", path, "columnMapping")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "columnMapping" not in detail(delta_spark, path)["features"]
    assert read_rows(delta_spark, path) == expected
    assert delta_rs_rows(oracle.scan_rows(path).unwrap()) == expected


def _instants(parsed: dict | None) -> dict | None:
    """A ``partitionValues_parsed`` row with its timestamps as UTC instants: delta-spark writes
    Spark's INT96 (naive, UTC), this package TIMESTAMP_MICROS adjusted to UTC."""
    if parsed is None:
        return None
    out = {}
    for key, value in parsed.items():
        if hasattr(value, "to_pydatetime"):
            value = value.to_pydatetime()
        if isinstance(value, dt.datetime):
            value = (value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)).astimezone(dt.timezone.utc)
        out[key] = value
    return out


def _checkpoint_adds(path: str) -> dict[str, dict]:
    newest = sorted(glob.glob(f"{path}/_delta_log/*.checkpoint.parquet"))[-1]
    return {row["add"]["path"]: row["add"] for row in pq.read_table(newest).to_pylist() if row.get("add")}


@pytest.mark.oracle
def test_typed_partitions_of_a_session_west_of_utc_checkpoint_as_delta_spark_does(delta_spark, oracle, tmp_path):
    spark = delta_spark
    path = str(tmp_path / "t")
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        spark.sql(f"CREATE TABLE delta.`{path}` (id INT, ts TIMESTAMP, d DATE, dec DECIMAL(10,2), name STRING) "
                  "USING delta PARTITIONED BY (ts, d, dec) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', "
                  "'delta.checkpoint.writeStatsAsStruct' = 'true', 'delta.checkpointInterval' = '2')")
        spark.sql(f"INSERT INTO delta.`{path}` SELECT id, timestamp'2024-03-10 01:30:00.123456' "
                  "+ make_interval(0, 0, 0, 0, CAST(id % 3 AS INT), 0, 0), date_add(date'2024-01-01', CAST(id % 2 AS INT)), "
                  "CAST(id % 3 AS DECIMAL(10,2)) / 3, concat('n', id) FROM range(60)")
        spark.sql(f"INSERT INTO delta.`{path}` SELECT id, NULL, NULL, NULL, 'nulls' FROM range(100, 110)")
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 5 = 0")
        expected = read_rows(spark, path)
        done = run_cli("drop-feature", path, "deletionVectors")
        assert done.returncode == 0, done.stderr[-3000:]
        assert read_rows(spark, path) == expected
        assert delta_rs_rows(oracle.scan_rows(path).unwrap()) == expected
        ours = _checkpoint_adds(path)
        assert ours and all("partitionValues_parsed" in add and "stats_parsed" in add for add in ours.values())
        # two appends: delta-spark's next checkpoint (interval 2) holds the same files again
        for key in (998, 999):
            spark.sql(f"INSERT INTO delta.`{path}` SELECT {key}, NULL, NULL, NULL, 'x'")
        theirs = _checkpoint_adds(path)
        assert set(ours) <= set(theirs)
        for name, add in ours.items():
            assert _instants(add["partitionValues_parsed"]) == _instants(theirs[name]["partitionValues_parsed"]), name
            assert add["stats_parsed"] == theirs[name]["stats_parsed"], name
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
