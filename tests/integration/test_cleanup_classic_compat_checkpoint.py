"""The classic-named copy that metadata cleanup leaves of a UUID-named checkpoint is read by
delta-spark, delta-rs (deltalake) and this package (PROTOCOL.md "Handling Backward compatibility
while moving to UUID-named v2 Checkpoints"; operations/cleanup.py).

Tables written by delta-spark 4.4 (the corpus table ``v2_checkpoint_sidecars``): its newest
checkpoint is UUID-named with a parquet top-level file (copied byte for byte), or - with that one
removed - one with a JSON top-level file and two sidecars (written again as parquet). The log is
aged past the retention and cleaned up. Then:

* the copy is ``n.checkpoint.parquet`` at the newest checkpoint's version (the cutoff here),
  written before the history went, with the checkpointMetadata and sidecar actions of the
  UUID-named file;
* delta-spark, deltalake and this package read the same rows as before the cleanup;
* with the UUID-named file and ``_last_checkpoint`` gone too (what a client that knows no V2
  checkpoint sees: the copy is the table's only start), all three still read those rows;
* this package's drop of checkpointProtection with TRUNCATE HISTORY on a table with V2
  checkpoints (a fast drop of deletionVectors first) leaves the copy at its cut-off, and both
  outside readers read the table's rows.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LAST_CHECKPOINT, LOG_DIR, classic_checkpoint_path
from tests.delta_spark_corpus import corpus_table, delta_spark_corpus  # noqa: F401 (fixtures)
from tests.oracle import same_rows

pytestmark = pytest.mark.classic_spark("delta-spark reads the results on the classic session")

TABLE = "v2_checkpoint_sidecars"
#: Older than any retention used here: what aging the log means for metadata cleanup (it reads
#: the commit files' modification times, PROTOCOL.md "Metadata Cleanup").
AGE_S = 3 * 24 * 3600


def _age_log(path: str) -> None:
    for dirpath, _, files in os.walk(os.path.join(path, LOG_DIR)):
        for name in files:
            full = os.path.join(dirpath, name)
            st = os.stat(full)
            os.utime(full, ns=(st.st_atime_ns, st.st_mtime_ns - AGE_S * 1_000_000_000))


def _spark_rows(spark, path: str) -> list[dict]:
    return [r.asDict(recursive=True) for r in spark.read.format("delta").load(path).collect()]


def _all_rows(spark, oracle, path: str) -> tuple[list[dict], list[dict], list[dict]]:
    """delta-spark's, deltalake's and this package's rows."""
    kernel = oracle.scan_rows(path)
    assert kernel.ok, kernel.error
    return _spark_rows(spark, path), kernel.value, _our_rows(path)


def _our_rows(path: str) -> list[dict]:
    """This package's answer: the live files of its snapshot, their rows read with pyarrow (the
    corpus table has no deletion vector and no partition column)."""
    import pyarrow.parquet as pq

    state = DeltaLog(path).snapshot().state()
    assert all(a.deletionVector is None and not a.partitionValues for a in state.files.values())
    rows: list[dict] = []
    for add in state.files.values():
        rows += pq.read_table(os.path.join(path, add.path)).to_pylist()
    return rows


def _only_the_copy(path: str, dest: Path) -> str:
    """A copy of the table without its UUID-named checkpoints and ``_last_checkpoint``: a fresh
    path, so that delta-spark's cached log of ``path`` is not used."""
    shutil.copytree(path, dest)
    log_dir = dest / LOG_DIR
    for name in os.listdir(log_dir):
        if ".checkpoint." in name and name.count(".") == 3 and not name.endswith(".checkpoint.parquet"):
            os.remove(log_dir / name)  # n.checkpoint.<uuid>.{json,parquet}
    hint = log_dir / LAST_CHECKPOINT.split("/", 1)[1]
    if hint.exists():
        os.remove(hint)
    return str(dest)


@pytest.mark.parametrize("top_level", ["parquet", "json"])
def test_cleanup_leaves_a_classic_copy_every_reader_reads(delta_spark, corpus_table, oracle, tmp_path, top_level):
    from delta_downgrade.operations.cleanup import cleanup_expired_logs

    path = corpus_table(TABLE)
    log_dir = Path(path, LOG_DIR)
    uuid_named = sorted(n for n in os.listdir(log_dir) if ".checkpoint." in n and n.count(".") == 3)
    assert [n.rsplit(".", 1)[1] for n in uuid_named] == ["json", "parquet"], uuid_named
    if top_level == "json":
        # The newest checkpoint is then the one with the JSON top-level file (and two sidecars).
        os.remove(log_dir / uuid_named[1])
        os.remove(log_dir / LAST_CHECKPOINT.split("/", 1)[1])
    newest = int((uuid_named[0] if top_level == "json" else uuid_named[1])[:20])
    expected = _spark_rows(delta_spark, path)
    assert expected and same_rows(*_all_rows(delta_spark, oracle, path)[:2])

    _age_log(path)
    result = cleanup_expired_logs(DeltaLog(path), retention_ms=24 * 3600 * 1000, granularity="minute")
    copy = classic_checkpoint_path(newest)
    assert result.plan.cutoff_checkpoint == newest and result.plan.delete_commits
    assert result.written == [copy]
    assert min(int(n[:20]) for n in os.listdir(log_dir) if n.endswith(".json") and n[:20].isdigit()) == newest

    import pyarrow.parquet as pq

    rows = [{k: v for k, v in r.items() if v is not None} for r in pq.read_table(Path(path, copy)).to_pylist()]
    assert [r["checkpointMetadata"]["version"] for r in rows if "checkpointMetadata" in r] == [newest]
    sidecars = [r["sidecar"]["path"] for r in rows if "sidecar" in r]
    assert sidecars and all((log_dir / "_sidecars" / name).is_file() for name in sidecars)
    assert len(sidecars) == (2 if top_level == "json" else 1)

    spark_rows, kernel_rows, ours = _all_rows(delta_spark, oracle, path)
    assert same_rows(spark_rows, expected) and same_rows(kernel_rows, expected) and same_rows(ours, expected)

    alone = _only_the_copy(path, tmp_path / "alone")
    [only] = DeltaLog(alone).whole_listing().checkpoints
    assert (only.kind, only.version) == ("classic", newest)
    spark_rows, kernel_rows, ours = _all_rows(delta_spark, oracle, alone)
    assert same_rows(spark_rows, expected) and same_rows(kernel_rows, expected) and same_rows(ours, expected)

    # A second cleanup finds the copy: nothing is written again.
    assert cleanup_expired_logs(DeltaLog(path), retention_ms=24 * 3600 * 1000, granularity="minute").written == []


def test_drop_of_checkpoint_protection_leaves_a_classic_copy_at_its_cutoff(delta_spark, oracle, tmp_path):
    from delta_downgrade.operations.drop_feature import drop_feature
    from tests.v2_tables import v2_table

    # Deletion vectors and V2 checkpoints (delta.checkpointPolicy=v2): the fast drop of the DVs
    # leaves checkpointProtection and V2 barrier checkpoints behind.
    path = v2_table(tmp_path / "t").path
    before = oracle.scan_rows(path)
    assert before.ok, before.error
    assert drop_feature(path, "deletionVectors").status == "dropped"
    boundary = int(DeltaLog(path).snapshot().metadata.configuration["delta.requireCheckpointProtectionBeforeVersion"])
    assert Path(path, classic_checkpoint_path(boundary)).exists() is False
    _age_log(path)
    assert drop_feature(path, "checkpointProtection", truncate_history=True).status == "dropped"

    listing = DeltaLog(path).whole_listing()
    kinds = {(ck.version, ck.kind) for ck in listing.checkpoints}
    assert (boundary, "classic") in kinds and (boundary, "v2") in kinds
    assert min(listing.commits) == boundary
    spark_rows = _spark_rows(delta_spark, path)
    after = oracle.scan_rows(path)
    assert after.ok, after.error
    assert same_rows(after.value, before.value) and same_rows(spark_rows, before.value)

    alone = _only_the_copy(path, tmp_path / "alone")
    after = oracle.scan_rows(alone)
    assert after.ok, after.error
    assert same_rows(after.value, before.value) and same_rows(_spark_rows(delta_spark, alone), before.value)
