"""Removing column mapping from a clustered table, as delta-spark writes one (the corpus table
``databricks_like``: clustered by ``part``, column mapping in name mode).

The ``delta.clustering`` domain names the clustering columns by their physical names (PROTOCOL.md
"Clustered Table"): under column mapping ``col-<uuid>``. Once column mapping is removed a column's
physical name is its display name (PROTOCOL.md "Column Mapping"), so the domain must name
``part``: this package renames the domain's columns in the commit that removes column mapping.

delta-spark 4.4's own DROP FEATURE columnMapping leaves the domain as it was, naming a column the
schema no longer has, and its DESCRIBE DETAIL then fails on its own result (NoSuchElementException
in ClusteringColumnInfo): a Delta bug. What it leaves is printed, not asserted (a fixed Delta
renames the columns); the oracle (test_drop_against_delta_spark.py) lists the difference.
"""

from __future__ import annotations

import pytest

from tests.delta_spark_corpus import corpus_table, delta_spark_corpus  # noqa: F401 (fixtures)
from tests.delta_spark_support import condition

pytestmark = pytest.mark.classic_spark("compares with delta-spark's own drop on the classic session")

TABLE = "databricks_like"


def _clustering(path: str) -> list[list[str]]:
    from delta_downgrade.log.delta_log import DeltaLog
    from delta_downgrade.protocol.clustering import clustering_columns

    snapshot = DeltaLog(path).snapshot(check_read=False)
    return [list(parts) for parts in clustering_columns(snapshot.state().live_domains.values())]


def _rows(spark, path: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def test_column_mapping_removal_renames_the_clustering_columns(delta_spark, corpus_table):
    from delta_downgrade.operations.drop_feature import drop_feature

    theirs, ours = corpus_table(TABLE), corpus_table(TABLE)
    before = _clustering(ours)
    assert len(before) == 1 and before[0][0].startswith("col-"), \
        f"the corpus table must be clustered by a column-mapped column: {before}"
    rows = _rows(delta_spark, ours)

    # delta-spark's own drop: recorded, not asserted.
    delta_spark.sql(f"ALTER TABLE delta.`{theirs}` DROP FEATURE columnMapping").collect()
    try:
        answer = delta_spark.sql(f"DESCRIBE DETAIL delta.`{theirs}`").collect()[0]["clusteringColumns"]
    except Exception as exc:  # the Delta bug: an answer to record
        answer = ("refused", condition(exc))
    print(f"delta-spark's drop left the clustering domain naming {_clustering(theirs)}; "
          f"its DESCRIBE DETAIL: {answer!r}")

    assert drop_feature(ours, "columnMapping").status == "dropped"
    assert _clustering(ours) == [["part"]]
    detail = delta_spark.sql(f"DESCRIBE DETAIL delta.`{ours}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["part"]
    assert "columnMapping" not in detail["tableFeatures"]
    assert _rows(delta_spark, ours) == rows
    # delta-spark clusters the result by the renamed column: OPTIMIZE reads the domain.
    delta_spark.sql(f"OPTIMIZE delta.`{ours}`").collect()
    assert _clustering(ours) == [["part"]]
    assert _rows(delta_spark, ours) == rows
