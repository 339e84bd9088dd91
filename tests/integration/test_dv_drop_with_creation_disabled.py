"""Dropping deletionVectors from a table whose deletion vectors were written and whose DV creation
was then disabled (``delta.enableDeletionVectors=false``), as delta-spark writes it (the corpus
table ``dv_disabled_with_dvs``).

In that state delta-spark 4.4 computes no deletion-vector count for its snapshot (it counts them
only while DVs are writable), and its DROP FEATURE check of "no DVs left" reads that missing count
as none: an open Delta bug. The drop must not rely on such a count: this package finds the DVs
in the live files themselves, purges them, and the rows after the drop are the rows before it.
PROTOCOL.md "Deletion Vectors": rows marked deleted by a file's deletion vector are not part of
the table, so a file may lose its DV only by being rewritten without those rows.
"""

from __future__ import annotations

import pytest

from tests.delta_spark_corpus import corpus_table, delta_spark_corpus  # noqa: F401 (fixtures)

pytestmark = pytest.mark.classic_spark("reads delta-spark's snapshot through the driver JVM")

TABLE = "dv_disabled_with_dvs"


def _rows(spark, path: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def test_the_drop_purges_deletion_vectors_delta_spark_does_not_count(delta_spark, corpus_table):
    from delta_downgrade.log.delta_log import DeltaLog
    from delta_downgrade.operations.drop_feature import drop_feature

    path = corpus_table(TABLE)
    before = DeltaLog(path).snapshot()
    with_dv = [f for f in before.state().files.values() if f.dv is not None]
    assert with_dv, "the corpus table must carry deletion vectors"
    assert before.metadata.configuration.get("delta.enableDeletionVectors") == "false"
    rows = _rows(delta_spark, path)

    # What delta-spark's DROP FEATURE check reads: the snapshot's count of deletion vectors,
    # absent while DV creation is disabled (recorded, not asserted: a fixed Delta counts them).
    jvm = delta_spark._jvm
    snapshot = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(delta_spark._jsparkSession, path) \
        .unsafeVolatileSnapshot()
    print(f"delta-spark's numDeletionVectorsOpt: {snapshot.numDeletionVectorsOpt()}")

    outcome = drop_feature(path, "deletionVectors")
    assert outcome.status == "dropped"
    after = DeltaLog(path).snapshot()
    assert "deletionVectors" not in after.protocol.features
    assert not [f for f in after.state().files.values() if f.dv is not None]
    # The rows deleted through the DVs stay deleted: delta-spark reads the same rows as before.
    assert _rows(delta_spark, path) == rows
