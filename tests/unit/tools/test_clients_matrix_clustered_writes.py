"""delta-spark 3.1's refusal to write a clustered table (an UnsupportedOperationException of its
own, not its protocol error: liquid clustering is a preview there) is a known behaviour of that
release alone, recognised by its message."""

from __future__ import annotations

from delta_downgrade_tools.clients_matrix import known_behaviour

REFUSAL = {"ok": False, "error_class": "UnsupportedOperationException",
           "error": "java.lang.UnsupportedOperationException: A clustered table is currently in preview and is "
                    "disabled by default. Please set spark.databricks.delta.clusteredTable."
                    "enableClusteringTablePreview to true to enable it."}


def test_delta_spark_3_1_refusing_a_clustered_table_write_is_a_known_behaviour_on_any_table():
    why = known_behaviour("delta-spark 3.1.0", "corpus-clustering", REFUSAL) or ""
    assert "enableClusteringTablePreview" in why and "delta-spark-3.1" in why
    assert known_behaviour("delta-spark 3.1.0", "liquid_row_tracking_dbr", REFUSAL) is not None


def test_another_release_or_another_refusal_is_not_that_behaviour():
    assert known_behaviour("delta-spark 3.2.1", "corpus-clustering", REFUSAL) is None
    other = {**REFUSAL, "error": "java.lang.UnsupportedOperationException: something else"}
    assert known_behaviour("delta-spark 3.1.0", "corpus-clustering", other) is None
    assert known_behaviour("delta-spark 3.1.0", "corpus-clustering", {"ok": True, "rows": []}) is None
