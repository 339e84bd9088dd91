"""The modern table builder writes what it claims (tools/src/delta_downgrade_tools/modern_builder.py):
each property is checked on the log and the parquet files themselves, independently of the
builder's own bookkeeping. The outside readers' view of the same table is in
tests/integration/test_modern_builder.py."""

from __future__ import annotations

import json
import os
import re

import pyarrow.parquet as pq
import pytest

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import commit_path
from delta_downgrade.log.read.segment import read_commit_actions
from delta_downgrade.protocol.actions import CommitInfo, Metadata
from delta_downgrade.protocol.schema import (
    COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY, iter_fields,
)
from delta_downgrade.storage import FileStatus
from delta_downgrade_tools.modern_builder import (
    MODERN_PROTOCOL, ROW_COMMIT_VERSION_COLUMN_KEY, ROW_ID_COLUMN_KEY, ModernTable, build_modern_table,
)
from tests.modern_support import build
from tests.oracle import same_rows
from tests.row_tracking_support import jsonable, tracked_rows

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> ModernTable:
    """Without the checkpoint: everything but the V2 checkpoint can be checked today (the
    checkpoint has its own test)."""
    return build_modern_table(str(tmp_path_factory.mktemp("modern") / "t"), v2_checkpoint=False)


def snapshot(t: ModernTable):
    return DeltaLog(t.path).snapshot(check_read=False)


def commit_actions(t: ModernTable, version: int) -> list:
    log = DeltaLog(t.path)
    return list(read_commit_actions(log.storage, FileStatus(commit_path(version), 0, 0)))


def test_protocol_lists_every_modern_feature(table):
    snap = snapshot(table)
    assert snap.protocol == MODERN_PROTOCOL
    action = snap.protocol_action
    assert (action.minReaderVersion, action.minWriterVersion) == (3, 7)
    assert set(action.readerFeatures) == {"deletionVectors", "columnMapping", "v2Checkpoint"}
    assert set(action.writerFeatures) == {"deletionVectors", "columnMapping", "v2Checkpoint", "rowTracking",
                                          "domainMetadata", "clustering", "inCommitTimestamp", "appendOnly",
                                          "invariants"}
    conf = snap.metadata.configuration
    assert conf["delta.checkpointPolicy"] == "v2"
    assert conf["delta.enableDeletionVectors"] == "true"


def test_column_mapping_name_mode_with_a_renamed_column(table):
    snap = snapshot(table)
    conf = snap.metadata.configuration
    assert conf["delta.columnMapping.mode"] == "name"
    fields = list(iter_fields(snap.schema))
    ids = [f["metadata"][COLUMN_MAPPING_ID_KEY] for f in fields]
    assert sorted(ids) == list(range(1, len(fields) + 1)) and int(conf["delta.columnMapping.maxColumnId"]) == max(ids)
    physical = {f["name"]: f["metadata"][COLUMN_MAPPING_PHYSICAL_NAME_KEY] for f in fields}
    assert all(re.fullmatch(f"col-{UUID}", p) for p in physical.values())
    # The rename: version 0 names the column "name", a later metaData "customer", same physical name.
    old, new = table.renamed
    created = next(a for a in commit_actions(table, 0) if isinstance(a, Metadata))
    created_physical = {f["name"]: f["metadata"][COLUMN_MAPPING_PHYSICAL_NAME_KEY] for f in iter_fields(created.schema)}
    renamed_at = table.versions["rename"]
    assert any(isinstance(a, Metadata) for a in commit_actions(table, renamed_at))
    assert old in created_physical and new not in created_physical and old not in physical
    assert physical[new] == created_physical[old]
    # Data files name their columns by physical name, with the column-mapping ids as field ids.
    top = {f["metadata"][COLUMN_MAPPING_PHYSICAL_NAME_KEY]: f["metadata"][COLUMN_MAPPING_ID_KEY]
           for f in snap.schema["fields"]}
    for add in snap.state().files.values():
        schema = pq.read_schema(os.path.join(table.path, add.decoded_path))
        data_columns = [f for f in schema if not f.name.startswith("_row-")]
        assert {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in data_columns} == top
        stats = json.loads(add.stats)
        assert set(stats["nullCount"]) == set(top)  # stats are keyed by physical names


def test_row_tracking_on_every_file_with_materialised_stable_ids(table):
    snap = snapshot(table)
    conf = snap.metadata.configuration
    state = snap.state()
    assert conf["delta.enableRowTracking"] == "true"
    id_column, version_column = conf[ROW_ID_COLUMN_KEY], conf[ROW_COMMIT_VERSION_COLUMN_KEY]
    assert re.fullmatch(f"_row-id-col-{UUID}", id_column)
    assert re.fullmatch(f"_row-commit-version-col-{UUID}", version_column)
    adds = list(state.files.values())
    assert all(a.baseRowId is not None and a.defaultRowCommitVersion is not None for a in adds)
    # Fresh row IDs never overlap, and the high-water mark covers the highest one.
    ranges = sorted((a.baseRowId, a.baseRowId + a.num_records - 1) for a in adds)
    assert all(hi < lo for (_, hi), (lo, _) in zip(ranges, ranges[1:]))
    mark = json.loads(state.live_domains["delta.rowTracking"].configuration)["rowIdHighWaterMark"]
    assert mark >= ranges[-1][1]
    # At least one file materialises stable IDs that differ from the fresh ones (OPTIMIZE, UPDATE).
    differing = 0
    for add in adds:
        data = pq.read_table(os.path.join(table.path, add.decoded_path))
        if id_column in data.column_names:
            for index, value in enumerate(data.column(id_column).to_pylist()):
                differing += value is not None and value != add.baseRowId + index
    assert differing > 0
    # Read from the files (materialised columns, baseRowId + index, DVs applied), the stable
    # IDs are the ones the builder assigned.
    rows = tracked_rows(table.path)
    assert rows.tracks_rows
    assert rows.tracking_by("id") == {i: (t.row_id, t.commit_version) for i, t in table.tracking.items()}
    assert same_rows(rows.data_rows(), [jsonable(r) for r in table.rows])
    # Stable IDs are unique, and some rows keep a commit version older than their file's.
    assert len({r["_row_id"] for r in rows.rows}) == len(rows.rows)


def test_clustering_domain_provider_and_stats(table):
    snap = snapshot(table)
    state = snap.state()
    config = json.loads(state.live_domains["delta.clustering"].configuration)
    assert config == {"clusteringColumns": [[table.clustering_physical]]}
    adds = list(state.files.values())
    assert any(a.clusteringProvider == "liquid" for a in adds)
    assert any(a.clusteringProvider is None for a in adds)
    for add in adds:
        stats = json.loads(add.stats)
        assert table.clustering_physical in stats["minValues"] and table.clustering_physical in stats["maxValues"]


def test_deletion_vectors_persisted_shared_and_inline(table):
    adds = list(snapshot(table).state().files.values())
    dvs = [a.dv for a in adds if a.dv is not None]
    persisted = [dv for dv in dvs if dv.storageType == "u"]
    assert len(persisted) >= 2 and any(dv.storageType == "i" for dv in dvs)
    by_file: dict[str, int] = {}
    for dv in persisted:
        by_file[dv.pathOrInlineDv] = by_file.get(dv.pathOrInlineDv, 0) + 1
    assert max(by_file.values()) == 2  # one DV file holds the DVs of two data files


def test_in_commit_timestamps_enabled_with_provenance(table):
    conf = snapshot(table).metadata.configuration
    enabled_at = table.versions["enable_ict"]
    assert enabled_at > 0
    assert conf["delta.enableInCommitTimestamps"] == "true"
    assert conf["delta.inCommitTimestampEnablementVersion"] == str(enabled_at)
    latest = DeltaLog(table.path).latest_version()
    stamps = []
    for version in range(latest + 1):
        actions = commit_actions(table, version)
        assert isinstance(actions[0], CommitInfo)  # PROTOCOL.md: commitInfo first
        stamps.append(actions[0].inCommitTimestamp)
    assert all(s is None for s in stamps[:enabled_at])
    tail = stamps[enabled_at:]
    assert all(s is not None for s in tail) and all(a < b for a, b in zip(tail, tail[1:]))
    assert conf["delta.inCommitTimestampEnablementTimestamp"] == str(stamps[enabled_at])
    # PROTOCOL.md "In-Commit Timestamps" 5: later than the previous commit's file time.
    before = int(os.stat(os.path.join(table.path, commit_path(enabled_at - 1))).st_mtime * 1000)
    assert stamps[enabled_at] > before


def test_v2_checkpoint_with_sidecars(tmp_path):
    t = build(str(tmp_path / "t"), v2_checkpoint=True)
    log = DeltaLog(t.path)
    checkpoint = [c for c in log.checkpoint_inventory() if c.complete]
    assert [c.version for c in checkpoint] == [t.versions["checkpoint"]]
    assert checkpoint[0].kind == "v2"
    sidecars = log.sidecars_of(checkpoint[0])
    assert sidecars, "the V2 checkpoint references sidecar files"
    assert all(os.path.exists(os.path.join(t.path, "_delta_log", "_sidecars", os.path.basename(s))) for s in sidecars)
    # The state read through the checkpoint is the state the builder made.
    rows = tracked_rows(t.path)
    assert rows.tracking_by("id") == {i: (r.row_id, r.commit_version) for i, r in t.tracking.items()}
