"""A checkpoint written by this package holds the whole table state, for us and for delta-rs.

For every golden table (except the ``bad_*`` ones and ``catalog_managed_ict``) on a writable copy:

* ``checkpoint_table`` writes a checkpoint at the latest version (a V2 one with sidecars for the
  tables with ``delta.checkpointPolicy=v2``, :data:`V2_POLICY_TABLES`), and then
  (a) a fresh ``DeltaLog`` builds the latest version from that checkpoint alone and finds the
      same live files (path, size, partition values, DV descriptor, stats, row-tracking fields),
      protocol, metadata, app transactions, live domains and unexpired tombstones as before;
  (b) delta-rs scans the same rows before and after the checkpoint;
  (c) on a second copy, every commit, checksum and older checkpoint up to that version is
      deleted, so that only the new checkpoint can explain the table: delta-rs still scans the
      same rows and we still find the same files.

delta-rs cannot read ``typeWidening-preview`` and ``vacuumProtocolCheck`` tables at all
(:data:`DELTA_RS_REFUSES`); for them only our own reading is compared, and delta-rs must keep
refusing them in the same way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LAST_CHECKPOINT, LOG_DIR, parse_log_file
from delta_downgrade.log.snapshot import TableState
from delta_downgrade.protocol.table_config import TableConfig

from tests.oracle import same_rows

#: Tables the test leaves out: corrupt on purpose, or owned by a catalog.
EXCLUDED = {"catalog_managed_ict"}

#: Tables with ``delta.checkpointPolicy=v2``: they get a UUID-named V2 checkpoint with sidecars.
#: (They were refused while this package wrote classic checkpoints only.)
V2_POLICY_TABLES = {"v2_checkpoint_dbr_identity", "v2_checkpoint_json_sidecars", "v2_checkpoint_parquet_sidecars"}

#: Tables delta-rs 1.6.6 refuses to scan, and the feature it names.
DELTA_RS_REFUSES = {
    "type_widening_preview": "TypeWideningPreview",
    "type_widening_preview_nested": "TypeWideningPreview",
    "vacuum_protocol_check": "VacuumProtocolCheck",
}


def _golden_dir() -> Path:
    # The rule of conftest's `golden_root`, needed at collection time to parametrize.
    env = os.environ.get("DELTA_DOWNGRADE_GOLDEN")
    return Path(env).expanduser() if env else Path(__file__).resolve().parents[2].parent / "shared" / "golden"


def _table_names(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if (p / LOG_DIR).is_dir() and not p.name.startswith("bad_") and p.name not in EXCLUDED)


TABLES = _table_names(_golden_dir())


def test_table_lists_match_the_golden_set(golden_root):
    assert TABLES == _table_names(golden_root)
    assert len(TABLES) >= 30
    assert V2_POLICY_TABLES <= set(TABLES)
    assert set(DELTA_RS_REFUSES) <= set(TABLES)


# --- what is compared ---------------------------------------------------------------------------

def _dv(action: Any) -> dict[str, Any] | None:
    dv = action.dv
    return dv.to_obj() if dv is not None else None


def _file_record(add: Any) -> dict[str, Any]:
    return {"path": add.path, "size": add.size, "partitionValues": dict(add.partitionValues or {}),
            "modificationTime": add.modificationTime, "deletionVector": _dv(add),
            "stats": add.stats, "tags": add.tags, "baseRowId": add.baseRowId,
            "defaultRowCommitVersion": add.defaultRowCommitVersion,
            "clusteringProvider": add.clusteringProvider}


def _tombstone_record(remove: Any) -> dict[str, Any]:
    return {"path": remove.path, "deletionTimestamp": remove.deletionTimestamp,
            "size": remove.size, "partitionValues": remove.partitionValues,
            "deletionVector": _dv(remove), "extendedFileMetadata": remove.extendedFileMetadata}


def _metadata_record(md: Any) -> dict[str, Any]:
    return {"id": md.id, "name": md.name, "description": md.description, "schemaString": md.schemaString,
            "partitionColumns": list(md.partitionColumns), "configuration": dict(md.configuration),
            "format": md.format, "createdTime": md.createdTime}


def _protocol_record(p: Any) -> dict[str, Any]:
    return {"minReaderVersion": p.minReaderVersion, "minWriterVersion": p.minWriterVersion,
            "readerFeatures": sorted(p.readerFeatures) if p.readerFeatures is not None else None,
            "writerFeatures": sorted(p.writerFeatures) if p.writerFeatures is not None else None}


def _state_record(state: TableState, now_ms: int) -> dict[str, Any]:
    """The state a checkpoint at ``now_ms`` must carry (tombstones: only the unexpired ones)."""
    cutoff = now_ms - TableConfig(state.metadata.configuration).deleted_file_retention_ms
    return {
        "files": {k: _file_record(a) for k, a in state.files.items()},
        "tombstones": {k: _tombstone_record(r) for k, r in state.tombstones.items()
                       if r.deletionTimestamp is None or r.deletionTimestamp > cutoff},
        "protocol": _protocol_record(state.protocol_action),
        "metadata": _metadata_record(state.metadata),
        "txns": {k: (t.version, t.lastUpdated) for k, t in state.txns.items()},
        "domains": {k: (d.configuration, d.removed) for k, d in state.live_domains.items()},
    }


def _clock_for(state: TableState) -> ManualClock:
    """Just after the newest tombstone, so that recent tombstones are still within retention and
    the checkpoint has ``remove`` rows to get right."""
    stamps = [r.deletionTimestamp for r in state.tombstones.values() if r.deletionTimestamp]
    return ManualClock(max(stamps) + 1000) if stamps else ManualClock()


def _state_from_checkpoint_only(path: str, version: int, checkpoint_paths: tuple[str, ...]) -> TableState:
    snapshot = DeltaLog(path).snapshot()
    segment = snapshot.segment
    assert snapshot.version == version
    assert segment.checkpoint is not None and segment.checkpoint.version == version
    assert segment.checkpoint.paths == checkpoint_paths, "the replay must start at our checkpoint"
    assert segment.commits == ()
    return snapshot.state()


def _prune_log_through(path: str, version: int, keep: tuple[str, ...]) -> list[str]:
    """Delete every commit, .crc and checkpoint at or below ``version`` except ``keep``."""
    removed = []
    log_dir = Path(path, LOG_DIR)
    for entry in sorted(log_dir.iterdir()):
        if not entry.is_file():
            continue
        rel = f"{LOG_DIR}/{entry.name}"
        name = entry.name[1:-4] if entry.name.startswith(".") and entry.name.endswith(".crc") else entry.name
        parsed = parse_log_file(name)  # hidden Hadoop checksums go with the file they check
        if parsed is None or parsed.version is None or parsed.version > version or rel in keep:
            continue
        if parsed.kind in ("commit", "crc", "checkpoint", "compacted"):
            entry.unlink()
            removed.append(entry.name)
    return removed


# --- the test -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", TABLES)
def test_checkpoint_round_trip(name, golden_table, oracle):
    path = golden_table(name)
    log = DeltaLog(path)
    before_snapshot = log.snapshot(check_read=False)
    version = before_snapshot.version
    before_state = before_snapshot.state()
    clock = _clock_for(before_state)

    rows_before = oracle.scan_rows(path)
    if name in DELTA_RS_REFUSES:
        assert not rows_before.ok and DELTA_RS_REFUSES[name] in rows_before.error, rows_before
    else:
        assert rows_before.ok, rows_before.error

    result = checkpoint_table(log, clock=clock)
    assert result.version == version
    assert result.paths and all(Path(path, p).is_file() for p in result.paths)
    assert result.last_checkpoint_updated
    assert Path(path, LAST_CHECKPOINT).is_file()
    assert (result.checkpoint_kind == "v2") is (name in V2_POLICY_TABLES)
    if name in V2_POLICY_TABLES:  # every file action in sidecars
        assert result.sidecars and result.paths == (*result.checkpoint_files, *result.sidecars)

    # (a) our reader, from the checkpoint alone, sees the same state.
    expected = _state_record(before_state, clock.now_ms())
    after_state = _state_from_checkpoint_only(path, version, result.checkpoint_files)
    assert _state_record(after_state, clock.now_ms()) == expected
    assert result.num_add_files == len(before_state.files)

    # (b) delta-rs reads the same rows with our checkpoint in the log.
    rows_after = oracle.scan_rows(path)
    if name in DELTA_RS_REFUSES:
        assert not rows_after.ok and DELTA_RS_REFUSES[name] in rows_after.error, rows_after
    else:
        assert rows_after.ok, rows_after.error
        assert same_rows(rows_after, rows_before)
        assert oracle.version(path).unwrap() == version

    # (c) with everything older than the checkpoint gone, the checkpoint alone explains the table.
    pruned = golden_table(name)
    pruned_result = checkpoint_table(DeltaLog(pruned), clock=clock)
    if result.checkpoint_kind == "v2":  # UUID-named: new names, the same layout
        assert (pruned_result.checkpoint_kind, len(pruned_result.sidecars)) == ("v2", len(result.sidecars))
    else:
        assert pruned_result.paths == result.paths
    removed = _prune_log_through(pruned, version, pruned_result.paths)
    assert f"{version:020d}.json" in removed
    remaining = [p for p in os.listdir(Path(pruned, LOG_DIR))
                 if (f := parse_log_file(p)) is not None and f.version is not None and f.version <= version]
    assert sorted(remaining) == sorted(p.rsplit("/", 1)[-1] for p in pruned_result.checkpoint_files)
    pruned_state = _state_from_checkpoint_only(pruned, version, pruned_result.checkpoint_files)
    assert _state_record(pruned_state, clock.now_ms()) == expected
    if name not in DELTA_RS_REFUSES:
        rows_pruned = oracle.scan_rows(pruned)
        assert rows_pruned.ok, rows_pruned.error
        assert same_rows(rows_pruned, rows_before)
        assert oracle.version(pruned).unwrap() == version
        assert sorted(Path(u).name for u in oracle.files(pruned).unwrap()) == \
            sorted(Path(f.decoded_path).name for f in before_state.files.values())


def _checkpoint_and_json_states(root: Path, name: str) -> list[tuple[int, str, TableState, TableState]]:
    from delta_downgrade.log.snapshot import LogSegment, Snapshot

    log = DeltaLog(str(root / name))
    listing = log.whole_listing()
    out = []
    for checkpoint in listing.checkpoints:
        v = checkpoint.version
        if not checkpoint.complete or not all(c in listing.commits for c in range(v + 1)):
            continue
        from_checkpoint = Snapshot(log.storage, log.table, LogSegment(v, checkpoint, ())).state()
        from_json = Snapshot(log.storage, log.table,
                             LogSegment(v, None, tuple(listing.commits[c] for c in range(v + 1)))).state()
        out.append((v, checkpoint.kind, from_checkpoint, from_json))
    return out


def test_other_writers_checkpoints_read_like_their_commits(golden_root):
    """Every checkpoint in the golden set (delta-spark's and Databricks', classic, multi-part and
    v2) gives the live files, protocol, metadata, txns and domains that replaying the JSON
    commits up to its version gives. Tombstones are left out: writers drop expired ones."""
    checked = []
    for name in TABLES:
        for version, kind, from_checkpoint, from_json in _checkpoint_and_json_states(golden_root, name):
            got = {"files": {k: _file_record(a) for k, a in from_checkpoint.files.items()},
                   "protocol": _protocol_record(from_checkpoint.protocol_action),
                   "metadata": _metadata_record(from_checkpoint.metadata),
                   "txns": {k: (t.version, t.lastUpdated) for k, t in from_checkpoint.txns.items()},
                   "domains": {k: (d.configuration, d.removed) for k, d in from_checkpoint.live_domains.items()}}
            want = {"files": {k: _file_record(a) for k, a in from_json.files.items()},
                    "protocol": _protocol_record(from_json.protocol_action),
                    "metadata": _metadata_record(from_json.metadata),
                    "txns": {k: (t.version, t.lastUpdated) for k, t in from_json.txns.items()},
                    "domains": {k: (d.configuration, d.removed) for k, d in from_json.live_domains.items()}}
            assert got["files"].keys() == want["files"].keys(), f"{name} checkpoint {version}"
            assert got == want, f"{name} checkpoint {version}"
            checked.append((name, version, kind))
    # the DV tables whose checkpoints hold remove(path) next to add(path, dv) are among them
    assert {("dv_partitioned_checkpoint", 10, "classic"), ("dv_cm_name_checkpoint", 10, "classic"),
            ("multipart_checkpoint", 1, "multipart")} <= set(checked), checked
