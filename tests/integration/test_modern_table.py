"""End to end on the modern table (tools/src/delta_downgrade_tools/modern_builder.py): every
reader feature is dropped through the CLI, one command per feature, until deltalake 0.18.2
(reader version 1) reads the latest version; then the history before the checkpoint-protection
boundary is truncated (``truncate-history``) so that writers that do not know
``checkpointProtection`` can write again.

After every step the table must still be the table: the same rows through DuckDB's delta
extension and deltalake 1.6.6 (and 0.18.2 once the protocol lets it read, which it must refuse
before), and every row's stable row ID and row commit version equal to the original's, read from
the data files themselves (tests/row_tracking_support.py). A drop that rewrites files (the DV
purge, the column-mapping removal) must carry row IDs into the files it writes, and give the
files it adds fresh ones in the log (PROTOCOL.md "Row Tracking", "Writer Requirements").
"""

from __future__ import annotations

import json

import pytest

from delta_downgrade.app.tasks.entrypoints import verify_task
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import commit_path
from delta_downgrade.log.read.segment import read_commit_actions
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol.actions import CommitInfo
from delta_downgrade.storage import FileStatus
from delta_downgrade_tools.modern_builder import ModernTable, build_modern_table
from tests.drop_support import run_task
from tests.modern_support import age_history, build, cli, result_line
from tests.oracle import same_rows
from tests.row_tracking_support import fresh_row_id_violations, fresh_row_ids, jsonable, tracked_rows

# The order of the drops. None of the three reader features requires another (the registry,
# protocol/features.py, gives none of them required_features), so every order is valid; these
# two are the ones worth their runtime:
#
# - deletionVectors, columnMapping, v2Checkpoint. The DV purge goes first because it rewrites
#   only the files that carry DVs (under their physical names while column mapping is on), and
#   the column-mapping removal after it then rewrites every file once with no DV to carry along.
#   v2Checkpoint goes last so that the first two drops write their barrier checkpoints as V2
#   checkpoints (the policy is still v2: PROTOCOL.md "V2 Checkpoint Table Feature"), and its own
#   drop switches the policy to classic, so the table ends with classic checkpoints only.
# - v2Checkpoint, columnMapping, deletionVectors: the reverse. The policy turns classic first;
#   the column-mapping removal rewrites files that still have DVs (row positions kept, DVs
#   carried over), and the purge then drops deleted rows from files with logical names.
#
# The writer features (rowTracking, domainMetadata, clustering, inCommitTimestamp, appendOnly,
# invariants) stay: reader-version-1 clients read tables with them, and dropping rowTracking would
# throw away the row IDs the scenario proves are kept.
ORDERS = {
    "dv-cm-v2": ("deletionVectors", "columnMapping", "v2Checkpoint"),
    "v2-cm-dv": ("v2Checkpoint", "columnMapping", "deletionVectors"),
}
FINAL_WRITER_FEATURES = {"appendOnly", "invariants", "rowTracking", "domainMetadata", "clustering",
                         "inCommitTimestamp"}


def assert_same_table(path: str, table: ModernTable, readers: dict, step: str) -> None:
    """Rows through every reader that can read the latest version, and row tracking from the
    files, equal to what the builder wrote."""
    expected = [jsonable(r) for r in table.rows]
    duck = readers["duckdb"].duckdb_rows(path)
    assert same_rows(duck, expected), f"{step}: DuckDB: {duck.error or duck.value}"
    rs = readers["delta-rs"].scan_rows(path)
    assert same_rows(rs, expected), f"{step}: deltalake 1.6.6: {rs.error or rs.value}"
    old = readers["0.18.2"].pyarrow_rows(path)
    reader_version = DeltaLog(path).snapshot(check_read=False).protocol.min_reader_version
    if reader_version == 1:
        assert same_rows(old, expected), f"{step}: deltalake 0.18.2: {old.error or old.value}"
    else:
        # Refusing is right for an older client; returning other rows never is.
        assert not old.ok or same_rows(old, expected), f"{step}: deltalake 0.18.2 read wrong rows"
    rows = tracked_rows(path)
    assert same_rows(rows.data_rows(), expected), f"{step}: rows read from the files"
    assert rows.tracking_by("id") == {i: (t.row_id, t.commit_version) for i, t in table.tracking.items()}, \
        f"{step}: stable row IDs / row commit versions changed"


def assert_in_commit_timestamps_increase(path: str) -> None:
    """PROTOCOL.md "In-Commit Timestamps": every commit left carries one, strictly increasing
    (the table enabled them long before these commits)."""
    log = DeltaLog(path)
    stamps = []
    for version in sorted(log.whole_listing().commits):
        actions = list(read_commit_actions(log.storage, FileStatus(commit_path(version), 0, 0)))
        assert isinstance(actions[0], CommitInfo), f"version {version}: commitInfo is not first"
        stamps.append(actions[0].inCommitTimestamp)
    assert all(s is not None for s in stamps) and all(a < b for a, b in zip(stamps, stamps[1:])), stamps


@pytest.mark.spark  # the CLI starts Spark for the DV purge and the column-mapping rewrite
@pytest.mark.slow
@pytest.mark.parametrize("order, v2_checkpoint", [("dv-cm-v2", True), ("v2-cm-dv", False)],
                         ids=["dv-cm-v2.v2-checkpoint", "v2-cm-dv.no-checkpoint-yet"])
def test_modern_table_downgrades_to_reader_version_1(tmp_path, oracle, duckdb_reader, oracle_018,
                                                      order, v2_checkpoint):
    path = str(tmp_path / "modern")
    table = build(path, v2_checkpoint=v2_checkpoint)
    readers = {"duckdb": duckdb_reader, "delta-rs": oracle, "0.18.2": oracle_018}
    assert_same_table(path, table, readers, "as built")
    assert not oracle_018.pyarrow_rows(path).ok, "0.18.2 must refuse the table before the drops"

    # What the drops write against PROTOCOL.md "Row Tracking" (a rewritten file is a new add:
    # fresh baseRowId, its commit's defaultRowCommitVersion), held until the end so that the
    # rows of every step are still compared; failed at the end.
    violations: list[str] = []
    for feature in ORDERS[order]:
        ids_before = fresh_row_ids(path)
        proc = cli("drop-feature", path, feature, step=f"drop-feature {feature}", pending=violations)
        result = result_line(proc)
        assert result["status"] == "dropped" and result["feature"] == feature, result
        assert feature not in (result["reader_features"] or []) + (result["writer_features"] or []), result
        assert result["needs_truncate"] is True and "checkpointProtection" in result["writer_features"]
        assert_same_table(path, table, readers, f"after dropping {feature}")
        violations += [f"drop {feature}: {v}" for v in fresh_row_id_violations(ids_before, fresh_row_ids(path))]

    assert result["min_reader_version"] == 1, result
    # A day passes (truncate-history's retention is measured against commit times), then the
    # history before the boundary goes and checkpointProtection with it.
    age_history(path)
    proc = cli("truncate-history", path, step="truncate-history", pending=violations)
    result = result_line(proc)
    assert result["status"] == "dropped" and result["feature"] == "checkpointProtection", result
    assert_same_table(path, table, readers, "after truncate-history")

    protocol = DeltaLog(path).snapshot().protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 7)
    assert protocol.reader_features is None and set(protocol.writer_features) == FINAL_WRITER_FEATURES
    assert_in_commit_timestamps_increase(path)
    for feature in (*ORDERS[order], "checkpointProtection"):
        code, results, err = run_task(verify_task, [f"--table={path}", f"--expect_absent_feature={feature}",
                                                    "--expect_min_reader_version=1"])
        assert code == 0 and results[0]["status"] == "verified", (feature, results, err)
    inspected = cli("inspect", path, "--json", step="inspect")
    doc = json.loads(inspected.stdout)
    assert doc["protocol"]["minReaderVersion"] == 1, doc["protocol"]
    assert doc["unsupported_features"] == {"read": [], "write": []}, doc["unsupported_features"]
    assert not violations, "\n".join(violations)


def test_column_mapping_removal_renames_the_clustering_columns(tmp_path, spark):
    path = str(tmp_path / "modern")
    table = build_modern_table(path, v2_checkpoint=False)
    drop_feature(path, "columnMapping")
    state = DeltaLog(path).snapshot().state()
    assert json.loads(state.live_domains["delta.clustering"].configuration) == {"clusteringColumns": [["id"]]}
    assert table.clustering_physical not in state.live_domains["delta.clustering"].configuration
