"""End to end on a table delta-spark wrote as a current Databricks runtime would (the corpus table
``databricks_like``: deletion vectors from DELETE and MERGE, row tracking with materialised row
IDs, clustering, column mapping after a rename, in-commit timestamps, v2 checkpoints, a widened
column): every reader feature is dropped, one drop per feature, until deltalake 0.18.2 (reader
version 1) reads the latest version; then the history before the checkpoint-protection boundary
is truncated so that writers that do not know ``checkpointProtection`` can write again.

The hand-built modern table (tests/integration/test_modern_table.py) knows every row ID it
wrote; here delta-spark wrote them, so the reference is the table as it was: after every step,
delta-spark reads the same rows, and every row's stable row ID and row commit version, read from
the data files themselves (tests/row_tracking_support.py), are the ones the table had
(PROTOCOL.md "Row Tracking": a row keeps its stable row ID when its file is rewritten).
"""

from __future__ import annotations

import pytest

from tests.delta_spark_corpus import corpus_table, delta_spark_corpus  # noqa: F401 (fixtures)
from tests.modern_support import age_history
from tests.oracle import same_rows
from tests.row_tracking_support import tracked_rows

pytestmark = pytest.mark.classic_spark("delta-spark reads every step on the classic session")

TABLE = "databricks_like"
#: Reader-writer features first the purge, then the rewrite under logical names, then the widened
#: types, then the checkpoint policy (the earlier drops' barriers are then still V2 checkpoints).
DROPS = ("deletionVectors", "columnMapping", "typeWidening", "v2Checkpoint")
FINAL_WRITER_FEATURES = {"appendOnly", "invariants", "rowTracking", "domainMetadata", "clustering",
                         "inCommitTimestamp"}


def _spark_rows(spark, path: str) -> list[tuple]:
    return sorted(map(repr, (tuple(r) for r in spark.read.format("delta").load(path).collect())))


@pytest.mark.slow
def test_a_delta_spark_table_downgrades_to_reader_version_1(delta_spark, corpus_table, oracle, oracle_018):
    from delta_downgrade.log.delta_log import DeltaLog
    from delta_downgrade.operations.drop_feature import drop_feature

    path = corpus_table(TABLE)
    rows = _spark_rows(delta_spark, path)
    tracked = tracked_rows(path)
    tracking = tracked.tracking_by("id")
    assert len(tracking) == len(rows) > 0
    assert not oracle_018.pyarrow_rows(path).ok, "0.18.2 must refuse the table before the drops"

    for feature in DROPS:
        outcome = drop_feature(path, feature)
        assert outcome.status == "dropped", (feature, outcome)
        protocol = DeltaLog(path).snapshot(check_read=False).protocol
        assert feature not in protocol.features and "checkpointProtection" in protocol.features
        assert _spark_rows(delta_spark, path) == rows, f"delta-spark's rows after dropping {feature}"
        now = tracked_rows(path)
        assert now.tracking_by("id") == tracking, f"stable row IDs after dropping {feature}"

    assert DeltaLog(path).snapshot().protocol.min_reader_version == 1
    expected = tracked_rows(path).data_rows()
    assert same_rows(tracked.data_rows(), expected), "rows read from the files"
    assert same_rows(oracle.scan_rows(path), expected), "deltalake 1.6.6"
    assert same_rows(oracle_018.pyarrow_rows(path), expected), "deltalake 0.18.2"

    age_history(path)
    outcome = drop_feature(path, "checkpointProtection", truncate_history=True)
    assert outcome.status == "dropped", outcome
    protocol = DeltaLog(path).snapshot().protocol
    assert (protocol.min_reader_version, protocol.reader_features) == (1, None)
    assert set(protocol.writer_features) == FINAL_WRITER_FEATURES
    assert _spark_rows(delta_spark, path) == rows
    assert same_rows(oracle_018.pyarrow_rows(path), expected), "deltalake 0.18.2 after the truncation"
