"""A corpus of real tables written by delta-spark itself, for the tests.

Every table here is made by delta-spark's own SQL (CREATE, INSERT, DELETE, UPDATE, MERGE, ALTER,
OPTIMIZE) on one local session: every droppable feature alone, and the combinations a current
Databricks table carries (deletion vectors made by DELETE, UPDATE and MERGE; row tracking with
materialised row-ID columns; liquid clustering; ``checkpointPolicy=v2`` checkpoints with
sidecars; column mapping in name and id mode after renames and drops; every type change type
widening allows, nested and on a partition column; in-commit timestamps; identity and default
columns; CHECK constraints; variant; timestampNtz; multi-part checkpoints). Tables stay small (a
few rows, a few commits) so that the whole corpus builds in about a minute.

Each table declares the features its protocol must list (`CorpusTable.features`): the build
checks them against what delta-spark wrote, and the tests parametrise on them without reading a
table. ``python -m delta_downgrade_tools.delta_spark_corpus OUT`` builds the corpus into ``OUT``
(a directory per table and ``corpus.json``) with the Delta jars of ``DELTA_DOWNGRADE_DELTA_JARS``;
`corpus_key` names a build: it changes with this file and with the delta-spark jar.

delta-spark 4.4 cannot write what is not here: the ``collations`` feature (Spark 4.2's collated
strings are refused on a Delta table: DELTA_UNSUPPORTED_DATA_TYPES), ``geospatial`` (GEOMETRY
columns: DELTA_GEOSPATIAL_NOT_SUPPORTED) and the Databricks-only names (``liquid``,
``catalogOwned-preview``, ...); the golden tables carry some of those.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

#: The Delta jar whose version is part of the corpus key, by file name.
_DELTA_SPARK_JAR = re.compile(r"^delta-spark_[\d.]+_[\d.]+-(?P<version>[\w.\-]+)\.jar$")
MANIFEST = "corpus.json"
#: Confs of the generator's session, for speed on tables of a few rows: each statement runs a
#: handful of tiny jobs, whose time goes to planning and code generation, not to data.
SESSION_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.databricks.delta.snapshotPartitions": "1",
}


@dataclass(frozen=True)
class CorpusTable:
    name: str
    #: Every feature the protocol lists (reader and writer features; legacy protocols: the
    #: features their versions imply), as delta-spark 4.4 writes them.
    features: tuple[str, ...]
    about: str
    build: Callable[..., None]


# --- building blocks ----------------------------------------------------------------------------------

def _sql(spark, *statements: str) -> None:
    for statement in statements:
        spark.sql(statement).collect()


def _t(path: str) -> str:
    return f"delta.`{path}`"


def _with_conf(spark, conf: dict[str, str], body: Callable[[], None]) -> None:
    """Run ``body`` with session confs set, restoring the previous values after."""
    before = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        body()
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _checkpoint(spark, path: str) -> None:
    """A checkpoint at the latest version, as delta-spark writes it (DeltaLog.checkpoint)."""
    jvm = spark._jvm
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    delta_log.checkpoint()


def _rows_sql(n: int, start: int = 0) -> str:
    return (f"SELECT CAST(id AS INT) AS id, CAST(id % 3 AS INT) AS part, concat('v', id) AS name "
            f"FROM range({start}, {start + n}, 1, 2)")


# --- the tables -------------------------------------------------------------------------------------

def _plain(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(6)})")


def _partitioned(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING) USING delta PARTITIONED BY (part)",
         f"INSERT INTO {_t(path)} {_rows_sql(9)}",
         f"INSERT INTO {_t(path)} {_rows_sql(3, 100)}")


def _dv_delete(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
         f"INSERT INTO {_t(path)} {_rows_sql(20)}",
         f"DELETE FROM {_t(path)} WHERE id % 4 = 1",
         f"DELETE FROM {_t(path)} WHERE id = 2")  # a second DV on the same file replaces the first


def _dv_update_merge_partitioned(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING) USING delta PARTITIONED BY (part) "
                "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
         f"INSERT INTO {_t(path)} {_rows_sql(24)}",
         f"UPDATE {_t(path)} SET name = concat(name, '-u') WHERE id % 5 = 0",
         f"MERGE INTO {_t(path)} t USING ({_rows_sql(6, 20)}) s ON t.id = s.id "
         "WHEN MATCHED THEN UPDATE SET name = concat(s.name, '-m') "
         "WHEN NOT MATCHED THEN INSERT *",
         f"DELETE FROM {_t(path)} WHERE id = 7")


def _dv_enabled_no_dvs(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4)})",
         f"DELETE FROM {_t(path)} WHERE id < 100")  # whole files removed: no DV left anywhere


def _dv_disabled_with_dvs(spark, path):
    # Deletion vectors written, then their creation disabled: the DVs stay in the table (the
    # shape in which delta-spark's own count of them comes back empty while they exist).
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(10)})",
         f"DELETE FROM {_t(path)} WHERE id % 3 = 0",
         f"ALTER TABLE {_t(path)} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')")


def _coordinated_commits_no_coordinator(spark, path):
    # The coordinated-commits preview feature supported, no commit coordinator configured: every
    # commit is a published file of _delta_log.
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.feature.coordinatedCommits-preview' = 'supported')",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4)})")


def _row_tracking(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
         f"INSERT INTO {_t(path)} {_rows_sql(12)}",
         # UPDATE and MERGE copy rows into new files: their stable row IDs and commit versions go
         # to the materialised columns.
         f"UPDATE {_t(path)} SET name = 'updated' WHERE id % 4 = 0",
         f"MERGE INTO {_t(path)} t USING ({_rows_sql(4, 10)}) s ON t.id = s.id "
         "WHEN MATCHED THEN UPDATE SET name = 'merged' WHEN NOT MATCHED THEN INSERT *",
         f"OPTIMIZE {_t(path)}")


def _row_tracking_dv(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true')",
         f"INSERT INTO {_t(path)} {_rows_sql(12)}",
         f"UPDATE {_t(path)} SET name = 'updated' WHERE id % 4 = 0",
         f"DELETE FROM {_t(path)} WHERE id = 5")


def _clustering(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING) USING delta CLUSTER BY (part)",
         f"INSERT INTO {_t(path)} {_rows_sql(10)}",
         f"INSERT INTO {_t(path)} {_rows_sql(10, 10)}",
         f"OPTIMIZE {_t(path)}")


def _v2_checkpoint_sidecars(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2')",
         f"INSERT INTO {_t(path)} {_rows_sql(6)}",
         f"INSERT INTO {_t(path)} {_rows_sql(6, 6)}")
    _with_conf(spark, {"spark.databricks.delta.checkpointV2.topLevelFileFormat": "json",
                       "spark.databricks.delta.checkpoint.partSize": "2"},
               lambda: _checkpoint(spark, path))
    _sql(spark, f"INSERT INTO {_t(path)} {_rows_sql(3, 12)}")
    _with_conf(spark, {"spark.databricks.delta.checkpointV2.topLevelFileFormat": "parquet"},
               lambda: _checkpoint(spark, path))
    _sql(spark, f"DELETE FROM {_t(path)} WHERE id = 0")


def _multipart_checkpoint(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING) USING delta PARTITIONED BY (part)",
         f"INSERT INTO {_t(path)} {_rows_sql(9)}",
         f"INSERT INTO {_t(path)} {_rows_sql(9, 9)}")
    _with_conf(spark, {"spark.databricks.delta.checkpoint.partSize": "3"}, lambda: _checkpoint(spark, path))
    _sql(spark, f"INSERT INTO {_t(path)} {_rows_sql(3, 18)}")


def _cm_name(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING, "
                "info STRUCT<a: INT, b: STRING>, tags ARRAY<STRING>) USING delta PARTITIONED BY (part) "
                "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
         f"INSERT INTO {_t(path)} SELECT id, part, name, named_struct('a', id, 'b', name), array(name) "
         f"FROM ({_rows_sql(6)})",
         f"ALTER TABLE {_t(path)} RENAME COLUMN name TO label",
         f"ALTER TABLE {_t(path)} RENAME COLUMN info.b TO bee",
         f"ALTER TABLE {_t(path)} RENAME COLUMN part TO bucket",
         f"ALTER TABLE {_t(path)} DROP COLUMN tags",
         f"ALTER TABLE {_t(path)} ADD COLUMN (name STRING)",  # a reused logical name, new physical one
         f"INSERT INTO {_t(path)} SELECT id, bucket, label, info, 'new' FROM "
         f"(SELECT id + 50 AS id, part AS bucket, name AS label, named_struct('a', id, 'bee', name) AS info "
         f"FROM ({_rows_sql(3)}))")


def _cm_id(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING, info STRUCT<a: INT, b: STRING>) USING delta "
                "TBLPROPERTIES ('delta.columnMapping.mode' = 'id')",
         f"INSERT INTO {_t(path)} SELECT id, name, named_struct('a', id, 'b', name) FROM ({_rows_sql(6)})",
         f"ALTER TABLE {_t(path)} RENAME COLUMN name TO label",
         f"ALTER TABLE {_t(path)} DROP COLUMN info",
         f"INSERT INTO {_t(path)} SELECT id + 50, label FROM (SELECT id, name AS label FROM ({_rows_sql(2)}))")


def _type_widening(spark, path):
    # Every widening delta-spark 4.4 allows (TypeWidening.isTypeChangeSupported): integral
    # widenings, integral to double and to decimal, float to double, decimal precision/scale, date
    # to timestamp_ntz; on top-level, struct, array and map fields, and on a partition column.
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, p SMALLINT, b BYTE, s SHORT, i INT, i2d INT, l LONG, "
                "f FLOAT, d DECIMAL(5, 2), dt DATE, st STRUCT<x: BYTE, y: FLOAT>, arr ARRAY<SHORT>, "
                "m MAP<INT, DECIMAL(4, 1)>) USING delta PARTITIONED BY (p) "
                "TBLPROPERTIES ('delta.enableTypeWidening' = 'true', 'delta.feature.timestampNtz' = 'supported')",
         f"INSERT INTO {_t(path)} SELECT CAST(id AS INT), CAST(id % 2 AS SMALLINT), CAST(id AS BYTE), "
         "CAST(id * 100 AS SHORT), CAST(id * 1000 AS INT), CAST(id AS INT), id * 100000, CAST(id AS FLOAT) / 4, "
         "CAST(id AS DECIMAL(5, 2)) / 3, date_add(DATE'2024-01-01', CAST(id AS INT)), "
         "named_struct('x', CAST(id AS BYTE), 'y', CAST(id AS FLOAT) / 8), array(CAST(id AS SHORT)), "
         "map(CAST(id AS INT), CAST(id AS DECIMAL(4, 1))) FROM range(0, 6, 1, 2)",
         *(f"ALTER TABLE {_t(path)} ALTER COLUMN {column} TYPE {new}" for column, new in (
             ("p", "INT"), ("b", "SHORT"), ("s", "INT"), ("i", "LONG"), ("i2d", "DOUBLE"),
             ("l", "DECIMAL(22, 0)"), ("f", "DOUBLE"), ("d", "DECIMAL(10, 4)"), ("dt", "TIMESTAMP_NTZ"),
             ("st.x", "INT"), ("st.y", "DOUBLE"), ("arr.element", "INT"), ("m.key", "LONG"),
             ("m.value", "DECIMAL(8, 2)"))),
         f"INSERT INTO {_t(path)} SELECT CAST(id AS INT), 70000, 30000, 2000000, 5000000000, 0.5, "
         "CAST(9 AS DECIMAL(22, 0)), 1.0E300, CAST(123456.7891 AS DECIMAL(10, 4)), TIMESTAMP_NTZ'2024-05-05 10:00:00', "
         "named_struct('x', 100000, 'y', 1.0E300D), array(100000), map(CAST(5000000000 AS LONG), "
         "CAST(123456.78 AS DECIMAL(8, 2))) FROM range(6, 8, 1, 1)")


def _type_widening_preview(spark, path):
    # The preview feature of type widening, as tables widened before it was released carry it.
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, s SHORT) USING delta TBLPROPERTIES ("
                "'delta.feature.typeWidening-preview' = 'supported', 'delta.enableTypeWidening' = 'true')",
         f"INSERT INTO {_t(path)} SELECT CAST(id AS INT), CAST(id AS SHORT) FROM range(0, 3, 1, 1)",
         f"ALTER TABLE {_t(path)} ALTER COLUMN s TYPE INT",
         f"INSERT INTO {_t(path)} VALUES (3, 100000)")


def _in_commit_timestamps(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4)})",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4, 4)})")


def _in_commit_timestamps_enabled_later(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4)})",
         f"ALTER TABLE {_t(path)} SET TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4, 4)})")


def _identity_and_defaults(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5), "
                "name STRING, status STRING DEFAULT 'new', doubled INT GENERATED ALWAYS AS (length(name) * 2)) "
                "USING delta TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
         f"INSERT INTO {_t(path)} (name) VALUES ('a'), ('bb'), ('ccc')",
         f"INSERT INTO {_t(path)} (name, status) VALUES ('dddd', 'old')")


def _check_constraints(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta",
         f"ALTER TABLE {_t(path)} ADD CONSTRAINT id_positive CHECK (id >= 0)",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4)})")


def _check_constraints_dropped(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.feature.checkConstraints' = 'supported')",
         f"ALTER TABLE {_t(path)} ADD CONSTRAINT id_positive CHECK (id >= 0)",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4)})",
         f"ALTER TABLE {_t(path)} DROP CONSTRAINT id_positive")


def _variant(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, v VARIANT) USING delta",
         f"INSERT INTO {_t(path)} SELECT id, parse_json(concat('{{\"k\": ', id, '}}')) FROM range(0, 4, 1, 1)")


def _timestamp_ntz_partitioned(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, day TIMESTAMP_NTZ, at TIMESTAMP_NTZ) USING delta "
                "PARTITIONED BY (day)",
         f"INSERT INTO {_t(path)} SELECT CAST(id AS INT), TIMESTAMP_NTZ'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 2 AS INT)), "
         "TIMESTAMP_NTZ'2024-01-01 12:34:56.789' + make_interval(0, 0, 0, 0, CAST(id AS INT)) FROM range(0, 4, 1, 1)")


def _vacuum_protocol_check(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.feature.vacuumProtocolCheck' = 'supported')",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4)})")


def _domain_metadata(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.feature.domainMetadata' = 'supported')",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4)})")


def _checkpoint_protection(spark, path):
    # What delta-spark's own fast drop of a reader-writer feature leaves: checkpointProtection and
    # the boundary property, with history before it still retained.
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, name STRING) USING delta "
                "TBLPROPERTIES ('delta.feature.vacuumProtocolCheck' = 'supported')",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(4)})",
         f"ALTER TABLE {_t(path)} DROP FEATURE vacuumProtocolCheck",
         f"INSERT INTO {_t(path)} SELECT id, name FROM ({_rows_sql(2, 4)})")


def _databricks_like(spark, path):
    # The combination a table created on a current Databricks runtime carries: deletion vectors,
    # row tracking, clustering, column mapping, in-commit timestamps, v2 checkpoints, type
    # widening; written to by DELETE, UPDATE, MERGE and OPTIMIZE, with a rename, a type change
    # and a checkpoint in the middle.
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING, amount SMALLINT) USING delta "
                "CLUSTER BY (part) TBLPROPERTIES ("
                "'delta.enableDeletionVectors' = 'true', 'delta.enableRowTracking' = 'true', "
                "'delta.columnMapping.mode' = 'name', 'delta.enableInCommitTimestamps' = 'true', "
                "'delta.checkpointPolicy' = 'v2', 'delta.enableTypeWidening' = 'true', "
                "'delta.checkpointInterval' = '100')",
         f"INSERT INTO {_t(path)} SELECT id, part, name, CAST(id AS SMALLINT) FROM ({_rows_sql(16)})",
         f"DELETE FROM {_t(path)} WHERE id % 5 = 0",
         f"UPDATE {_t(path)} SET name = 'updated' WHERE id % 3 = 0",
         f"ALTER TABLE {_t(path)} RENAME COLUMN name TO label",
         f"ALTER TABLE {_t(path)} ALTER COLUMN amount TYPE INT")
    _checkpoint(spark, path)
    _sql(spark, f"MERGE INTO {_t(path)} t USING (SELECT id, part, name AS label, 70000 + id AS amount "
                f"FROM ({_rows_sql(4, 14)})) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET label = 'merged', amount = s.amount WHEN NOT MATCHED THEN INSERT *",
         f"OPTIMIZE {_t(path)}",
         f"DELETE FROM {_t(path)} WHERE id = 1")


def _dv_column_mapping_checkpointed(spark, path):
    _sql(spark, f"CREATE TABLE {_t(path)} (id INT, part INT, name STRING) USING delta PARTITIONED BY (part) "
                "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', 'delta.columnMapping.mode' = 'name', "
                "'delta.checkpointInterval' = '3')",
         f"INSERT INTO {_t(path)} {_rows_sql(12)}",
         f"DELETE FROM {_t(path)} WHERE id % 5 = 2",
         f"ALTER TABLE {_t(path)} RENAME COLUMN name TO label",
         f"DELETE FROM {_t(path)} WHERE id = 3")


TABLES: tuple[CorpusTable, ...] = (
    CorpusTable("plain", ("appendOnly", "invariants"),
                "a table with the default protocol (1, 2)", _plain),
    CorpusTable("partitioned", ("appendOnly", "invariants"),
                "partitioned, two appends, default protocol", _partitioned),
    CorpusTable("dv_delete", ("appendOnly", "deletionVectors", "invariants"),
                "deletion vectors made by two DELETEs on the same files", _dv_delete),
    CorpusTable("dv_update_merge_partitioned", ("appendOnly", "deletionVectors", "invariants"),
                "partitioned; deletion vectors made by UPDATE, MERGE and DELETE", _dv_update_merge_partitioned),
    CorpusTable("dv_enabled_no_dvs", ("appendOnly", "deletionVectors", "invariants"),
                "deletion vectors enabled, every DELETE removed whole files", _dv_enabled_no_dvs),
    CorpusTable("dv_disabled_with_dvs", ("appendOnly", "deletionVectors", "invariants"),
                "deletion vectors made by DELETE, then delta.enableDeletionVectors=false", _dv_disabled_with_dvs),
    CorpusTable("coordinated_commits_no_coordinator",
                ("appendOnly", "coordinatedCommits-preview", "inCommitTimestamp", "invariants",
                 "vacuumProtocolCheck"),
                "coordinatedCommits-preview supported without a commit coordinator", _coordinated_commits_no_coordinator),
    CorpusTable("row_tracking", ("appendOnly", "domainMetadata", "invariants", "rowTracking"),
                "row tracking; UPDATE and MERGE materialise row IDs, then OPTIMIZE", _row_tracking),
    CorpusTable("row_tracking_dv", ("appendOnly", "deletionVectors", "domainMetadata", "invariants", "rowTracking"),
                "row tracking with deletion vectors", _row_tracking_dv),
    CorpusTable("clustering", ("appendOnly", "clustering", "domainMetadata", "invariants"),
                "liquid clustering, OPTIMIZE clustered the files", _clustering),
    CorpusTable("v2_checkpoint_sidecars", ("appendOnly", "invariants", "v2Checkpoint"),
                "checkpointPolicy=v2: a json and a parquet V2 checkpoint with sidecars", _v2_checkpoint_sidecars),
    CorpusTable("multipart_checkpoint", ("appendOnly", "invariants"),
                "partitioned, a classic checkpoint in three parts (checkpoint.partSize)", _multipart_checkpoint),
    CorpusTable("cm_name", ("appendOnly", "columnMapping", "invariants"),
                "column mapping name mode: renamed top-level, nested and partition columns, a dropped "
                "column, a re-added name", _cm_name),
    CorpusTable("cm_id", ("appendOnly", "columnMapping", "invariants"),
                "column mapping id mode, a rename and a dropped struct", _cm_id),
    CorpusTable("type_widening", ("appendOnly", "invariants", "timestampNtz", "typeWidening"),
                "every widening Delta allows, top-level, nested and on the partition column", _type_widening),
    CorpusTable("type_widening_preview", ("appendOnly", "invariants", "typeWidening-preview"),
                "a type change under the preview feature typeWidening-preview", _type_widening_preview),
    CorpusTable("in_commit_timestamps", ("appendOnly", "inCommitTimestamp", "invariants"),
                "in-commit timestamps from creation", _in_commit_timestamps),
    CorpusTable("in_commit_timestamps_enabled_later", ("appendOnly", "inCommitTimestamp", "invariants"),
                "in-commit timestamps enabled at version 2", _in_commit_timestamps_enabled_later),
    CorpusTable("identity_and_defaults",
                ("allowColumnDefaults", "appendOnly", "generatedColumns", "identityColumns", "invariants"),
                "an identity column, a default value and a generated column", _identity_and_defaults),
    CorpusTable("check_constraints", ("appendOnly", "checkConstraints", "invariants"),
                "a CHECK constraint (protocol 1, 3)", _check_constraints),
    CorpusTable("check_constraints_dropped", ("appendOnly", "checkConstraints", "invariants"),
                "checkConstraints supported, its only constraint dropped", _check_constraints_dropped),
    CorpusTable("variant", ("appendOnly", "invariants", "variantType"),
                "a variant column", _variant),
    CorpusTable("timestamp_ntz_partitioned", ("appendOnly", "invariants", "timestampNtz"),
                "timestamp_ntz columns, one the partition column", _timestamp_ntz_partitioned),
    CorpusTable("vacuum_protocol_check", ("appendOnly", "invariants", "vacuumProtocolCheck"),
                "vacuumProtocolCheck alone", _vacuum_protocol_check),
    CorpusTable("domain_metadata", ("appendOnly", "domainMetadata", "invariants"),
                "domainMetadata alone", _domain_metadata),
    CorpusTable("checkpoint_protection", ("appendOnly", "checkpointProtection", "invariants"),
                "after delta-spark's fast drop of vacuumProtocolCheck: checkpointProtection and its "
                "boundary, then one more append", _checkpoint_protection),
    CorpusTable("dv_column_mapping_checkpointed", ("appendOnly", "columnMapping", "deletionVectors", "invariants"),
                "partitioned; deletion vectors and column mapping, interval checkpoints", _dv_column_mapping_checkpointed),
    CorpusTable("databricks_like",
                ("appendOnly", "clustering", "columnMapping", "deletionVectors", "domainMetadata",
                 "inCommitTimestamp", "invariants", "rowTracking", "typeWidening", "v2Checkpoint"),
                "DVs, row tracking, clustering, column mapping, in-commit timestamps, v2 checkpoints and "
                "type widening; DELETE, UPDATE, MERGE, OPTIMIZE, a rename and a type change", _databricks_like),
)


# --- the build ---------------------------------------------------------------------------------------

def delta_spark_version(jars: list[str]) -> str:
    """The delta-spark version of the jar among ``jars`` (its file name)."""
    for jar in jars:
        m = _DELTA_SPARK_JAR.match(os.path.basename(jar))
        if m:
            return m.group("version")
    raise ValueError(f"no delta-spark jar among {jars}")


def corpus_key(jars: list[str]) -> str:
    """The name of a build: this generator's source and the delta-spark version it runs."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(delta_spark_version(jars).encode())
    return f"delta-{delta_spark_version(jars)}-{digest.hexdigest()[:12]}"


def protocol_features(path: str) -> tuple[str, ...]:
    from delta_downgrade.log.delta_log import DeltaLog

    return tuple(sorted(DeltaLog(path).snapshot(check_read=False).protocol.features))


def _without_hadoop_checksums(path: str) -> None:
    """Remove Hadoop's hidden ``.<file>.crc`` files: its local file system's own checksums, no
    part of a Delta table, which go stale (and then fail Hadoop's reads) as soon as a test's
    writer replaces a file such as ``_last_checkpoint`` without them."""
    for dirpath, _, files in os.walk(path):
        for name in files:
            if name.startswith(".") and name.endswith(".crc"):
                os.remove(os.path.join(dirpath, name))


def build_corpus(spark, out: Path, names: list[str] | None = None) -> dict:
    """Write every table (or those ``names``) under ``out``, check each one's protocol against its
    declared features, and write the manifest. Raises on the first table that fails."""
    out.mkdir(parents=True, exist_ok=True)
    tables, wrong = {}, []
    for table in TABLES:
        if names and table.name not in names:
            continue
        path = str((out / table.name).resolve())
        started = time.monotonic()
        table.build(spark, path)
        _without_hadoop_checksums(path)
        features = protocol_features(path)
        if features != tuple(sorted(table.features)):
            wrong.append(f"{table.name}: delta-spark wrote the features {features}, "
                         f"the corpus declares {tuple(sorted(table.features))}")
        tables[table.name] = {"features": list(features), "seconds": round(time.monotonic() - started, 1)}
        print(f"{table.name}: {tables[table.name]['seconds']} s", file=sys.stderr, flush=True)
    if wrong:
        raise AssertionError("\n".join(wrong))
    manifest = {"tables": tables}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def _jvm_cpu_seconds(spark) -> float:
    """CPU time (user + system) the session's JVM has used so far; 0 where /proc is missing."""
    try:
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory to write the tables into (created)")
    parser.add_argument("--only", nargs="*", help="build only these tables")
    args = parser.parse_args(argv)
    if not os.environ.get("DELTA_DOWNGRADE_DELTA_JARS"):
        print("DELTA_DOWNGRADE_DELTA_JARS must name the Delta jars (make jars)", file=sys.stderr)
        return 2
    from delta_downgrade.spark import get_spark

    started = time.monotonic()
    spark = get_spark("delta-spark-corpus")
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    try:
        manifest = build_corpus(spark, args.out, args.only)
        jvm_cpu = _jvm_cpu_seconds(spark)
    finally:
        spark.stop()
    for name, table in manifest["tables"].items():
        print(f"{name}: {table['seconds']} s {','.join(table['features'])}")
    # The CPU time says what the build costs on a machine shared with other work (wall time
    # there grows with the load).
    print(f"corpus of {len(manifest['tables'])} tables in {time.monotonic() - started:.1f} s "
          f"(Spark's JVM used {jvm_cpu:.1f} s of CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
