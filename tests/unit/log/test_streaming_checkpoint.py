"""Differential test of the streamed replay and checkpoint (bounded driver memory): a
log reconciled in hash parts spilled to disk (``arrow_replay.PART_ACTIONS`` forced small) gives a
checkpoint with exactly the actions of the one-part replay - classic, multi-part (each part the
same rows: Spark's placement of the path) and V2 - on a real Delta log (JSON commits written here,
a prior checkpoint written by the package) with what reconciliation has to get right: URL-escaped
spellings of one path, deletion vectors (the same path live twice with different DVs, a DV
replaced), files removed and re-added, tombstones expired and not, txns and domains."""

from __future__ import annotations

import gc
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from msgspec.structs import replace
import pyarrow.parquet as pq
import pytest

from delta_downgrade.arrow_parquet import ParquetFile
from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import CorruptLogError, StorageFullError
from delta_downgrade.log.replay import arrow_checkpoint
from delta_downgrade.log.replay import arrow_replay
from delta_downgrade.log.checkpoint import classic_writer as checkpoint_writer
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LAST_CHECKPOINT, LOG_DIR
from delta_downgrade.log.checkpoint import from_state
from delta_downgrade.log.checkpoint.from_state import write_state_checkpoint
from delta_downgrade.log.replay.state_parts import SpilledParts
from delta_downgrade.storage.local import LocalStorage

DAY = 86_400_000
NOW = 1_700_000_000_000
SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                       {"name": "d", "type": "string", "nullable": True, "metadata": {}}]}


def _dv(offset: int) -> dict[str, Any]:
    return {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": offset,
            "sizeInBytes": 34, "cardinality": 2}


def _add(path: str, v: int, dv: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"path": path, "partitionValues": {"d": path.split("/")[0][2:]}, "size": 100 + v,
                            "modificationTime": NOW - DAY + v, "dataChange": True,
                            "stats": json.dumps({"numRecords": v + 1})}
    if dv is not None:
        body["deletionVector"] = dv
    return {"add": body}


def _remove(path: str, stamp: int, dv: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"path": path, "deletionTimestamp": stamp, "dataChange": True,
                            "extendedFileMetadata": True, "partitionValues": {"d": path.split("/")[0][2:]},
                            "size": 7}
    if dv is not None:
        body["deletionVector"] = dv
    return {"remove": body}


def _commit(root: Path, version: int, actions: list[dict[str, Any]]) -> None:
    info = {"commitInfo": {"timestamp": NOW - DAY + version, "operation": "WRITE"}}
    (root / LOG_DIR / f"{version:020d}.json").write_text(
        "\n".join(json.dumps(a) for a in [info, *actions]) + "\n")


def _table(root: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commits 0-2, a checkpoint of version 2 (one part, written by the package in row groups of
    3 rows, so that the streamed read takes it in pieces), commits 3-5."""
    (root / LOG_DIR).mkdir(parents=True)
    features = ["deletionVectors", "v2Checkpoint"] if kind == "v2" else ["deletionVectors"]
    config = {"delta.enableDeletionVectors": "true"}
    if kind == "v2":
        config["delta.checkpointPolicy"] = "v2"
    _commit(root, 0, [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features,
                      "writerFeatures": features + ["domainMetadata"]}},
        {"metaData": {"id": "0b1c2d3e-0000-4000-8000-000000000001", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(SCHEMA), "partitionColumns": ["d"], "configuration": config,
                      "createdTime": NOW - 2 * DAY}},
        *[_add(f"d=a/f{i}.parquet", 0) for i in range(12)],
        _add("d=a%20b/sp%20ace.parquet", 0),            # the same file as "d=a b/sp ace.parquet"
        _add("d=b/dv.parquet", 0),
        {"txn": {"appId": "app-1", "version": 1, "lastUpdated": NOW - DAY}},
        {"domainMetadata": {"domain": "delta.rowTracking", "configuration": "{}", "removed": False}},
        {"domainMetadata": {"domain": "user.gone", "configuration": "{}", "removed": False}},
    ])
    _commit(root, 1, [
        _remove("d=b/dv.parquet", NOW - DAY + 1),       # DV added: the old file is a tombstone
        _add("d=b/dv.parquet", 1, _dv(1)),
        _add("d=b/dv.parquet", 1, _dv(40)),             # a second live file of the same path
        _remove("d=a/f0.parquet", NOW - 30 * DAY),      # expired tombstone (past retention)
        _remove("d=a/f1.parquet", NOW - DAY),           # a tombstone within retention
        {"txn": {"appId": "app-2", "version": 7, "lastUpdated": NOW - DAY}},
    ])
    _commit(root, 2, [
        _remove("d=a%20b/sp%20ace.parquet", NOW - DAY),
        _add("d=a/f1.parquet", 2),                     # re-added after its remove
    ])
    with monkeypatch.context() as patch:
        patch.setattr(checkpoint_writer, "BATCH_ROWS", 3)
        checkpoint_table(DeltaLog(str(root)), clock=ManualClock(NOW), part_size=5 if kind == "multipart" else None)
    _commit(root, 3, [
        _add("d=a b/sp ace.parquet", 3),               # re-added, spelled unescaped (the same logical file)
        _remove("d=b/dv.parquet", NOW - DAY + 3, _dv(1)),
        _add("d=b/dv.parquet", 3, _dv(80)),            # DV replaced
        {"txn": {"appId": "app-1", "version": 2, "lastUpdated": NOW}},
        {"domainMetadata": {"domain": "user.gone", "configuration": "{}", "removed": True}},
    ])
    _commit(root, 4, [
        *[_add(f"d=c/g{i}.parquet", 4) for i in range(8)],
        _remove("d=a/f2.parquet", NOW - 40 * DAY),     # expired
        _remove("d=a/f%33.parquet", NOW - 2 * DAY),    # f3, escaped spelling, within retention
    ])
    _commit(root, 5, [
        _add("d=a/f%33.parquet", 5),                   # f3 back, with the escaped spelling again
        _add("d=c/g0.parquet", 5),                     # the same path added twice: the last one wins
    ])


def _normalized(value: Any) -> Any:
    if isinstance(value, list) and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return sorted((k, _normalized(v)) for k, v in value)  # a map read as key/value pairs
    if isinstance(value, dict):
        return {k: _normalized(v) for k, v in value.items()}
    return value


def _rows(root: Path, paths: tuple[str, ...]) -> list[set[str]]:
    """Each written file's actions as a set of JSON strings; the V2 top-level file without its
    ``sidecar`` and ``checkpointMetadata`` rows (names, sizes, times of the sidecars differ)."""
    out = []
    for rel in paths:
        rows = set()
        if rel.endswith(".json"):
            lines = [json.loads(line) for line in (root / rel).read_text().splitlines() if line.strip()]
        else:
            lines = [{k: v for k, v in row.items() if v is not None}
                     for row in pq.read_table(root / rel).to_pylist()]
        for line in lines:
            (kind, value), = line.items()
            if kind in ("sidecar", "checkpointMetadata"):
                continue
            rows.add(json.dumps([kind, _normalized(value)], sort_keys=True, default=str))
        out.append(rows)
    return out


def _clear_checkpoint(root: Path, paths: tuple[str, ...]) -> None:
    for rel in paths:
        os.unlink(root / rel)
    os.unlink(root / LAST_CHECKPOINT)


@pytest.mark.parametrize("kind", ["classic", "multipart", "v2"])
def test_a_streamed_checkpoint_holds_the_actions_of_the_one_part_replay(tmp_path, monkeypatch, kind):
    root = tmp_path / "t"
    _table(root, kind, monkeypatch)
    part_size = {"classic": None, "multipart": 4, "v2": 3}[kind]
    clock = ManualClock(NOW)

    whole = checkpoint_table(DeltaLog(str(root)), clock=clock, part_size=part_size)
    expected = _rows(root, whole.paths)
    _clear_checkpoint(root, whole.paths)

    monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 3)
    monkeypatch.setattr(arrow_checkpoint, "STREAM_ROWS", 2)
    log = DeltaLog(str(root))
    state = arrow_replay.replay_segment(log.storage, log.table, log.segment())
    assert isinstance(state.parts, SpilledParts) and state.num_parts > 3
    assert log.segment().checkpoint is not None  # the replay starts from the checkpoint of version 2
    prior = [f for f in (root / LOG_DIR).rglob("00000000000000000002.checkpoint*.parquet")]
    assert prior and max(pq.ParquetFile(f).num_row_groups for f in prior) > 1  # read in pieces
    streamed = checkpoint_table(log, clock=clock, part_size=part_size)
    got = _rows(root, streamed.paths)

    if kind == "v2":  # sidecars are cut per part: compare the union of their rows, and the top-level file
        assert got[0] == expected[0]
        assert set().union(*got[1:]) == set().union(*expected[1:])
        assert all(len(rows) <= part_size for rows in got[1:])
        assert streamed.num_add_files == whole.num_add_files
        assert sum(streamed.part_rows[1:]) == sum(whole.part_rows[1:])  # file actions
        assert streamed.part_rows[0] - len(streamed.sidecars) == whole.part_rows[0] - len(whole.sidecars)
    else:  # classic: one file; multi-part: the same rows in each part (Spark's placement)
        assert got == expected
        assert streamed.parts == whole.parts and streamed.part_rows == whole.part_rows
        assert streamed.num_actions == whole.num_actions
    joined = set().union(*expected)
    assert any("sp ace" in r and '"add"' in r for r in joined)       # the re-added escaped file is live
    assert not any("f0.parquet" in r for r in joined)                  # expired tombstone left out
    assert any("f1.parquet" in r and '"add"' in r for r in joined)     # re-added after its remove
    assert sum('"d=b/dv.parquet"' in r and '"add"' in r for r in joined) == 2  # two DVs live

    directory = state.parts.directory
    assert os.path.isdir(directory) and not directory.startswith(str(root))
    del state
    gc.collect()
    assert not os.path.exists(directory)  # the spilled files go with the state


def test_checkpoints_of_states_sharing_their_parts_hash_the_paths_once_and_place_rows_alike(tmp_path, monkeypatch):
    # A drop's barrier states share their parts (advanced over commits that change no file):
    # the second multi-part checkpoint takes the adds' partition ids from the first, and its
    # parts hold the rows a checkpoint of a fresh replay of the same state holds.
    root = tmp_path / "t"
    _table(root, "multipart", monkeypatch)
    monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 3)
    storage = LocalStorage(str(root))
    hashed: list[int] = []
    real = from_state.spark_partition_ids

    def counted(paths, num_parts):
        hashed.append(len(paths))
        return real(paths, num_parts)

    monkeypatch.setattr(from_state, "spark_partition_ids", counted)

    def states():
        log = DeltaLog(str(root))
        state = arrow_replay.replay_segment(log.storage, log.table, log.segment())
        newer = replace(state.protocol, writerFeatures=[*state.protocol.writerFeatures, "checkpointProtection"])
        return state, state.advanced(state.version + 1, newer, state.metadata, state.txns, state.domains)

    first, second = states()
    assert first.num_parts > 1 and second.same_files(first)
    a = write_state_checkpoint(storage, first, NOW - 7 * DAY, v2=False, part_size=4, update_last_checkpoint=False)
    hashed_once = list(hashed)
    b = write_state_checkpoint(storage, second, NOW - 7 * DAY, v2=False, part_size=4, update_last_checkpoint=False)
    adds_hashed = sum(len(adds) for adds, _ in first.file_parts())
    assert sum(hashed_once) >= adds_hashed and sum(hashed) - sum(hashed_once) == sum(hashed_once) - adds_hashed
    got = _rows(root, b.paths)
    for rel in b.paths:
        os.unlink(root / rel)
    _, fresh_second = states()  # a new parts object: nothing known about it
    c = write_state_checkpoint(storage, fresh_second, NOW - 7 * DAY, v2=False, part_size=4,
                               update_last_checkpoint=False)
    assert c.paths == b.paths and _rows(root, c.paths) == got and c.part_rows == b.part_rows
    # the same files in the same parts; only the part with the protocol differs
    assert a.parts == b.parts and sum(x != y for x, y in zip(_rows(root, a.paths), got)) == 1


def test_spilled_parts_hold_every_logical_file_once_and_stay_valid_while_advanced(tmp_path, monkeypatch):
    root = tmp_path / "t"
    _table(root, "classic", monkeypatch)
    log = DeltaLog(str(root))
    one = arrow_replay.replay_segment(log.storage, log.table, log.segment())
    monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 2)
    parted = arrow_replay.replay_segment(log.storage, log.table, log.segment())
    assert parted.num_parts > 1 and (parted.num_adds, parted.num_removes) == (one.num_adds, one.num_removes)

    def key(row: dict[str, Any]) -> str:
        return json.dumps(_normalized(row), sort_keys=True, default=str)

    seen: list[str] = []
    moved = parted.advanced(parted.version + 1, parted.protocol, parted.metadata, parted.txns, parted.domains)
    del parted
    gc.collect()
    for adds, removes in moved.file_parts():  # still readable through the advanced state
        seen += [key(r) for r in adds.to_pylist()] + [key(r) for r in removes.to_pylist()]
    assert sorted(seen) == sorted(key(r) for r in one.adds.to_pylist() + one.removes.to_pylist())
    assert len(seen) == len(set(seen))
    shutil.rmtree(root)


def test_the_size_of_a_v2_checkpoint_counts_its_sidecars(tmp_path, monkeypatch):
    """The streamed replay sizes its parts from the bytes of the segment: for a V2 checkpoint the
    file actions are in the sidecars, not in the top-level file."""
    root = tmp_path / "t"
    _table(root, "v2", monkeypatch)
    log = DeltaLog(str(root))
    checkpoint = log.segment(2).checkpoint
    assert checkpoint is not None and checkpoint.kind == "v2"
    sidecars = sorted((root / LOG_DIR / "_sidecars").iterdir())
    assert sidecars
    assert arrow_checkpoint.checkpoint_size_bytes(log.storage, checkpoint) == \
        checkpoint.size_bytes + sum(f.stat().st_size for f in sidecars)


def test_a_broken_commit_fails_the_streamed_replay_as_the_one_part_replay_and_leaves_no_spill(
        tmp_path, monkeypatch):
    root = tmp_path / "t"
    _table(root, "classic", monkeypatch)
    with open(root / LOG_DIR / f"{4:020d}.json", "a") as fh:
        fh.write('{"add": {"path": "d=a/broken.parquet", "size": \n')  # not JSON
    log = DeltaLog(str(root))
    with pytest.raises(CorruptLogError) as one:
        arrow_replay.replay_segment(log.storage, log.table, log.segment())
    monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 2)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "spill"))
    os.makedirs(tmp_path / "spill")
    with pytest.raises(CorruptLogError) as streamed:
        arrow_replay.replay_segment(log.storage, log.table, log.segment())
    assert str(streamed.value) == str(one.value)
    assert os.listdir(tmp_path / "spill") == []  # the spill of the failed replay is gone


class _FailingPublish(LocalStorage):
    """Local storage whose ``atomic_file`` fails to publish the file whose name matches ``needle``
    (after it was written in full, as a failed rename would)."""

    def __init__(self, root: str, needle: str) -> None:
        super().__init__(root)
        self.needle = needle

    @contextmanager
    def atomic_file(self, rel_path: str) -> Iterator[str]:
        with super().atomic_file(rel_path) as local:
            yield local
            if self.needle in rel_path:
                raise OSError(28, "No space left on device")


def test_a_failed_part_of_a_streamed_multipart_checkpoint_leaves_no_part(tmp_path, monkeypatch):
    root = tmp_path / "t"
    _table(root, "multipart", monkeypatch)
    monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 3)
    log = DeltaLog(str(root))
    state = arrow_replay.replay_segment(log.storage, log.table, log.segment())
    before = sorted(p.name for p in (root / LOG_DIR).iterdir())
    storage = _FailingPublish(str(root), ".checkpoint.0000000002.")  # published last to first: 3.. exist then
    with pytest.raises(StorageFullError):  # typed by the storage, as any full disk
        write_state_checkpoint(storage, state, NOW - 7 * DAY, v2=False, part_size=4)
    assert sorted(p.name for p in (root / LOG_DIR).iterdir()) == before


def test_a_prior_checkpoint_in_one_large_row_group_is_read_in_batches(tmp_path, monkeypatch):
    """delta-rs writes a checkpoint as one row group: the streamed read takes it in batches of a
    piece's size (not the whole group at once), with the same result."""
    root = tmp_path / "t"
    _table(root, "classic", monkeypatch)
    prior = root / LOG_DIR / f"{2:020d}.checkpoint.parquet"
    rows = pq.read_table(prior)
    pq.write_table(rows, prior, row_group_size=len(rows) + 1)  # one row group, as delta-rs writes
    assert pq.ParquetFile(prior).num_row_groups == 1
    clock = ManualClock(NOW)
    whole = checkpoint_table(DeltaLog(str(root)), clock=clock)
    expected = _rows(root, whole.paths)
    _clear_checkpoint(root, whole.paths)

    batches: list[int] = []
    real = ParquetFile.iter_batches

    def spy(self: ParquetFile, *args: Any, **kwargs: Any) -> Any:
        for batch in real(self, *args, **kwargs):
            batches.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(ParquetFile, "iter_batches", spy)
    monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 3)
    monkeypatch.setattr(arrow_checkpoint, "STREAM_ROWS", 2)
    streamed = checkpoint_table(DeltaLog(str(root)), clock=clock)
    assert len(batches) > 3 and max(batches) <= 2  # the one row group, two rows at a time
    assert _rows(root, streamed.paths) == expected
