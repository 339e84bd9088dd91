"""delta-spark 3.1 writes no clustered table with its default configuration (liquid clustering is
a preview there, behind spark.databricks.delta.clusteredTable.enableClusteringTablePreview; Delta's
"Use liquid clustering" documentation, Limitations): the packaged catalogue says so, as the real
3.1.0 client answered the clients matrix; 3.2, which dropped the flag, writes it."""

from __future__ import annotations

from delta_downgrade.compat import Verdict, packaged_catalogue, read_verdict, write_verdict
from delta_downgrade.protocol.protocol import Protocol

# A clustered table as delta-spark writes it (Delta's liquid clustering documentation: the
# Clustering and DomainMetadata writer features, reader version 1)
CLUSTERED = Protocol(1, 7, None, {"appendOnly", "invariants", "clustering", "domainMetadata"})


def test_delta_spark_3_1_reads_a_clustered_table_and_does_not_write_it():
    entry = packaged_catalogue().client("delta-spark-3.1")
    assert read_verdict(entry, CLUSTERED).verdict is Verdict.YES
    verdict = write_verdict(entry, CLUSTERED)
    assert verdict.verdict is Verdict.NO
    assert verdict.blocking_features == ("clustering",)


def test_delta_spark_3_2_writes_a_clustered_table():
    entry = packaged_catalogue().client("delta-spark-3.2")
    assert write_verdict(entry, CLUSTERED).verdict is Verdict.YES
