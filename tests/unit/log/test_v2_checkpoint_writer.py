"""The V2 checkpoint writer (delta_downgrade.log.checkpoint.v2_writer) and the routing of
``checkpoint_table`` to it, on real tables built with the package's own commits.

What PROTOCOL.md asks of a UUID-named V2 checkpoint ("V2 Spec", "Sidecar Files", "Sidecar File
Information", "Checkpoint Metadata", "Last Checkpoint File Schema") is checked on the bytes
written: one ``checkpointMetadata``, every non-file action in the top-level file, every file action
in a sidecar (never split), ``sidecar`` actions naming the files as they are on disk, a
``_last_checkpoint`` describing them with a valid checksum. Then our own reader must rebuild the
table from that checkpoint alone (commits removed), with and without the ``_last_checkpoint``
hint, in both formats; the outside readers are tested in tests/integration.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import InvalidTablePropertyError
from delta_downgrade.log.format.checkpoint_schema import SIDECAR_SCHEMA, V2_CHECKPOINT_SCHEMA
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table, uses_v2_checkpoint
from tests.python_checkpoint_content import checkpoint_content
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LAST_CHECKPOINT, LOG_DIR, SIDECAR_DIR, classify
from delta_downgrade.log.format.last_checkpoint import parse_last_checkpoint, read_last_checkpoint
from delta_downgrade.log.checkpoint.v2_writer import (DEFAULT_SIDECAR_ACTIONS, LAST_CHECKPOINT_EMBED_LIMIT,
                                                      write_v2_checkpoint, write_v2_checkpoint_arrow)
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import Txn, parse_commit
from delta_downgrade.storage.local import LocalStorage
from delta_downgrade_tools.builders import TableBuilder
from tests.v2_tables import POLICY, SCHEMA, T0, V2, V2_PROTOCOL, rows, v2_table



def _rows(start: int, n: int) -> list[dict[str, Any]]:
    return rows(start, n)


def _canon(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def _maps(row: Any) -> Any:
    """Arrow gives maps as lists of pairs; JSON as objects."""
    if isinstance(row, dict):
        return {k: _maps(v) for k, v in row.items()}
    if isinstance(row, list) and all(isinstance(x, tuple) and len(x) == 2 for x in row) and row:
        return {k: _maps(v) for k, v in row}
    return row


def _state_record(log: DeltaLog) -> dict[str, Any]:
    state = log.snapshot().state()
    return {
        "files": sorted(_canon(a.to_obj() | {"dataChange": False}) for a in state.files.values()),
        # a checkpoint's remove has no stats and tags (PROTOCOL.md "Checkpoint Schema")
        "tombstones": sorted(_canon({k: v for k, v in r.to_obj().items() if k not in ("stats", "tags")}
                                    | {"dataChange": False}) for r in state.tombstones.values()),
        "protocol": state.protocol_action.to_obj(), "metadata": state.metadata.to_obj(),
        "txns": sorted((t.appId, t.version) for t in state.txns.values()),
        "domains": sorted((d.domain, d.configuration) for d in state.live_domains.values()),
    }


def _top_level_actions(root: Path, rel: str) -> list[dict[str, Any]]:
    """The top-level file's actions as ``{key: body}`` dicts, whatever its format."""
    if rel.endswith(".json"):
        return [{a.KEY: a.to_obj()} for a in parse_commit((root / rel).read_bytes())]
    table = pq.read_table(root / rel)
    assert table.schema == V2_CHECKPOINT_SCHEMA
    out = []
    for row in table.to_pylist():
        present = {k: v for k, v in row.items() if v is not None}
        assert len(present) == 1, row  # one action per row
        out.append({k: _maps(v) for k, v in present.items()})
    return out


def _mtime_ms(path: Path) -> int:
    return int(path.stat().st_mtime * 1000)


# --- layout ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_v2_checkpoint_layout(tmp_path, fmt):
    b = v2_table(tmp_path / "t")
    log = DeltaLog(b.path)
    snapshot = log.snapshot()
    state = snapshot.state()
    n_files = len(state.files) + len(state.tombstones)
    assert len(state.files) >= 4 and len(state.tombstones) >= 1  # the DV rewrites left both kinds

    result = checkpoint_table(log, clock=b.clock, part_size=2, v2_format=fmt)
    root = Path(b.path)
    top, sidecars = result.paths[0], result.paths[1:]
    assert result.checkpoint_kind == "v2" and result.version == snapshot.version
    assert classify(top).checkpoint_kind == "v2" and classify(top).fmt == fmt
    assert result.checkpoint_files == (top,) and result.sidecars == sidecars
    assert len(sidecars) == math.ceil(n_files / 2)
    for path in sidecars:
        name = path.rsplit("/", 1)[-1]
        assert path == f"{SIDECAR_DIR}/{name}"
        assert re.fullmatch(rf"{snapshot.version:020d}\.checkpoint\.\d{{10}}\.{len(sidecars):010d}\.[0-9a-f-]{{36}}\.parquet",
                            name)

    # The top-level file: exactly one checkpointMetadata, one sidecar action per sidecar (name
    # only, size and mtime as stored), every non-file action, no file action.
    actions = _top_level_actions(root, top)
    keys = [next(iter(a)) for a in actions]
    assert keys.count("checkpointMetadata") == 1 and keys[0] == "checkpointMetadata"
    assert "add" not in keys and "remove" not in keys
    metadata_action = actions[0]["checkpointMetadata"]
    assert metadata_action["version"] == snapshot.version
    sidecar_actions = [a["sidecar"] for a in actions if "sidecar" in a]
    assert [s["path"] for s in sidecar_actions] == [p.rsplit("/", 1)[-1] for p in sidecars]
    for action, path in zip(sidecar_actions, sidecars):
        assert action["sizeInBytes"] == (root / path).stat().st_size
        assert action["modificationTime"] == _mtime_ms(root / path)
    assert [a["protocol"] for a in actions if "protocol" in a] == [snapshot.protocol_action.to_obj()]
    [metadata] = [a["metaData"] for a in actions if "metaData" in a]
    assert metadata["id"] == snapshot.metadata.id and metadata["configuration"] == snapshot.metadata.configuration
    assert [(t["txn"]["appId"], t["txn"]["version"]) for t in actions if "txn" in t] == [("app-1", 7)]
    assert [d["domainMetadata"]["domain"] for d in actions if "domainMetadata" in d] == ["user.a"]

    # The sidecars: only add and remove, dataChange false, every file action exactly once.
    adds, removes = [], []
    for path in sidecars:
        table = pq.read_table(root / path)
        assert table.schema == SIDECAR_SCHEMA
        assert table.num_rows <= 2
        for row in table.to_pylist():
            kind, body = next((k, v) for k, v in row.items() if v is not None)
            assert body["dataChange"] is False
            (adds if kind == "add" else removes).append(body["path"])
    assert sorted(adds) == sorted(a.path for a in state.files.values())
    assert sorted(removes) == sorted(r.path for r in state.tombstones.values())
    tags = metadata_action["tags"]
    assert tags == {"sidecarNumActions": str(n_files), "numOfAddFiles": str(len(state.files)),
                    "sidecarSizeInBytes": str(sum((root / p).stat().st_size for p in sidecars))}

    # _last_checkpoint describes it, with a valid checksum.
    raw = (root / LAST_CHECKPOINT).read_text()
    info = parse_last_checkpoint(raw)
    assert info is not None and "checksum" in json.loads(raw)
    assert info["version"] == snapshot.version
    assert info["size"] == len(actions) + n_files == result.num_actions
    assert info["sizeInBytes"] == sum((root / p).stat().st_size for p in result.paths) == result.size_in_bytes
    assert info["numOfAddFiles"] == len(state.files) and "parts" not in info
    v2 = info["v2Checkpoint"]
    assert v2["path"] == top.rsplit("/", 1)[-1]
    assert v2["sizeInBytes"] == (root / top).stat().st_size
    assert v2["modificationTime"] == _mtime_ms(root / top)
    # the non-file actions as in the top-level file (delta-spark's order: checkpointMetadata last)
    embedded = v2["nonFileActions"]
    assert [next(iter(a)) for a in embedded] == ["protocol", "metaData", "txn", "domainMetadata",
                                                 "checkpointMetadata"]
    assert embedded[0]["protocol"] == snapshot.protocol_action.to_obj()
    assert embedded[1]["metaData"] == snapshot.metadata.to_obj()
    assert embedded[-1] == actions[0]
    assert [{k: v for k, v in s.items() if v is not None} for s in sidecar_actions] == v2["sidecarFiles"]


def test_default_sidecar_size_is_delta_sparks(tmp_path):
    b = v2_table(tmp_path / "t", configuration=POLICY)
    assert DEFAULT_SIDECAR_ACTIONS == 50_000
    result = checkpoint_table(DeltaLog(b.path), clock=b.clock)
    assert len(result.sidecars) == 1
    # the table's delta.checkpoint.partSize splits as for a classic checkpoint
    b.set_properties({"delta.checkpoint.partSize": "1"})
    state = b.log.refresh().snapshot().state()
    result = checkpoint_table(DeltaLog(b.path), clock=b.clock)
    assert len(result.sidecars) == len(state.files) + len(state.tombstones)


# --- reading it back -------------------------------------------------------------------------------

def _prune_commits(path: str, through: int) -> None:
    for version in range(through + 1):
        os.unlink(os.path.join(path, LOG_DIR, f"{version:020d}.json"))


@pytest.mark.parametrize("fmt", ["parquet", "json"])
@pytest.mark.parametrize("hint", [True, False], ids=["with-last-checkpoint", "listing-only"])
def test_our_reader_rebuilds_the_table_from_the_v2_checkpoint_alone(tmp_path, fmt, hint):
    b = v2_table(tmp_path / "t")
    expected = _state_record(DeltaLog(b.path))
    result = checkpoint_table(DeltaLog(b.path), clock=b.clock, part_size=3, v2_format=fmt)
    _prune_commits(b.path, result.version)
    if not hint:
        os.unlink(os.path.join(b.path, LAST_CHECKPOINT))
    log = DeltaLog(b.path)
    snapshot = log.snapshot()
    assert snapshot.segment.checkpoint is not None
    assert snapshot.segment.checkpoint.paths == result.checkpoint_files and snapshot.segment.commits == ()
    assert _state_record(log) == expected
    assert log.sidecars_of(snapshot.segment.checkpoint) == list(result.sidecars)
    assert log.checkpoint_files(snapshot.segment.checkpoint) == list(result.paths)
    # a commit after the checkpoint applies on top of it
    b.append(_rows(100, 1))
    assert len(DeltaLog(b.path).snapshot().state().files) == len(expected["files"]) + 1


def test_arrow_and_python_paths_write_the_same_checkpoint(tmp_path):
    b = v2_table(tmp_path / "t")
    python_copy = str(tmp_path / "python")
    shutil.copytree(b.path, python_copy)
    ours = checkpoint_table(DeltaLog(b.path), clock=b.clock, part_size=2)
    snapshot = DeltaLog(python_copy).snapshot()
    theirs = write_v2_checkpoint(LocalStorage(python_copy), snapshot.version,
                                 checkpoint_content(snapshot, b.clock.now_ms()), sidecar_actions=2,
                                 now_ms=b.clock.now_ms())
    assert (ours.num_actions, ours.num_add_files, ours.part_rows) == \
        (theirs.num_actions, theirs.num_add_files, theirs.part_rows)
    for a, c in zip(ours.sidecars, theirs.sidecars):
        assert pq.read_table(Path(b.path, a)).to_pylist() == pq.read_table(Path(python_copy, c)).to_pylist()
    assert _state_record(DeltaLog(b.path)) == _state_record(DeltaLog(python_copy))


def test_a_state_without_file_actions_has_no_sidecar(tmp_path):
    b = TableBuilder(tmp_path / "t", clock=ManualClock(T0))
    b.create(SCHEMA, protocol=V2_PROTOCOL, configuration=POLICY)
    result = checkpoint_table(DeltaLog(b.path), clock=b.clock)
    assert result.checkpoint_kind == "v2" and result.sidecars == () and len(result.paths) == 1
    info = read_last_checkpoint(LocalStorage(b.path))
    assert info["v2Checkpoint"]["sidecarFiles"] == [] and info["size"] == 3
    _prune_commits(b.path, 0)
    snapshot = DeltaLog(b.path).snapshot()
    assert snapshot.segment.checkpoint is not None and snapshot.state().files == {}


def test_long_lists_are_left_out_of_last_checkpoint(tmp_path):
    b = TableBuilder(tmp_path / "t", clock=ManualClock(T0))
    b.create(SCHEMA, protocol=V2_PROTOCOL, configuration=POLICY, rows=_rows(0, 31), files=31)
    b.commit([Txn(appId=f"app-{i}", version=i) for i in range(LAST_CHECKPOINT_EMBED_LIMIT)], "WRITE")
    expected = _state_record(DeltaLog(b.path))
    result = checkpoint_table(DeltaLog(b.path), clock=b.clock, part_size=1)
    assert len(result.sidecars) == 31 > LAST_CHECKPOINT_EMBED_LIMIT
    v2 = read_last_checkpoint(LocalStorage(b.path))["v2Checkpoint"]
    assert "nonFileActions" not in v2 and "sidecarFiles" not in v2  # 33 non-file actions, 31 sidecars
    _prune_commits(b.path, result.version)
    assert _state_record(DeltaLog(b.path)) == expected


# --- order of writes, failures ----------------------------------------------------------------------

class _FailingStorage(LocalStorage):
    """Local storage whose ``write_atomic`` fails for the ``fail_at``-th matching path."""

    def __init__(self, root: str, pattern: str, fail_at: int = 1) -> None:
        super().__init__(root)
        self.pattern, self.left = re.compile(pattern), fail_at
        self.written: list[str] = []

    def write_atomic(self, rel_path: str, data: bytes) -> None:
        if self.pattern.search(rel_path):
            self.left -= 1
            if self.left == 0:
                raise OSError(28, "No space left on device")
        super().write_atomic(rel_path, data)
        self.written.append(rel_path)

    def replace_hint(self, rel_path: str, data: bytes) -> None:  # _last_checkpoint: the same refusals
        if self.pattern.search(rel_path):
            self.left -= 1
            if self.left == 0:
                raise OSError(28, "No space left on device")
        super().replace_hint(rel_path, data)
        self.written.append(rel_path)


@pytest.mark.parametrize("pattern,fail_at", [(r"_sidecars/", 2), (r"\.checkpoint\.[0-9a-f-]{36}\.parquet$", 1),
                                             (r"_last_checkpoint$", 1)],
                         ids=["second-sidecar", "top-level", "last-checkpoint"])
def test_an_interrupted_write_leaves_a_complete_checkpoint_or_no_referenced_file(tmp_path, pattern, fail_at):
    b = v2_table(tmp_path / "t")
    log = DeltaLog(b.path)
    expected = _state_record(log)
    state = log.snapshot().state()
    before = read_last_checkpoint(LocalStorage(b.path))
    storage = _FailingStorage(b.path, pattern, fail_at)
    snapshot = log.snapshot()
    with pytest.raises(OSError):
        write_v2_checkpoint(storage, snapshot.version, checkpoint_content(snapshot, b.clock.now_ms()),
                            sidecar_actions=2)
    sidecar_dir = Path(b.path, SIDECAR_DIR)
    left = sorted(p.name for p in sidecar_dir.iterdir()) if sidecar_dir.exists() else []
    tops = [c for c in DeltaLog(b.path).checkpoint_inventory() if c.kind == "v2"]
    if pattern.endswith("_last_checkpoint$"):
        # Sidecars and top-level file were complete: a checkpoint readers may use (listing).
        assert len(tops) == 1 and len(left) == math.ceil((len(state.files) + len(state.tombstones)) / 2)
        assert read_last_checkpoint(LocalStorage(b.path)) == before
    else:
        # No top-level file names the sidecars written so far: they are gone again.
        assert tops == [] and left == []
        assert any("_sidecars/" in p for p in storage.written)
    assert _state_record(DeltaLog(b.path)) == expected


def test_last_checkpoint_never_moves_backwards(tmp_path):
    b = v2_table(tmp_path / "t")
    latest = checkpoint_table(DeltaLog(b.path), clock=b.clock)
    older = checkpoint_table(DeltaLog(b.path), latest.version - 1, clock=b.clock)
    assert older.checkpoint_kind == "v2" and not older.last_checkpoint_updated
    info = read_last_checkpoint(LocalStorage(b.path))
    assert info["version"] == latest.version
    assert info["v2Checkpoint"]["path"] == latest.paths[0].rsplit("/", 1)[-1]


def test_refuses_a_protocol_without_v2_checkpoint(tmp_path):
    b = v2_table(tmp_path / "t", protocol=Protocol(3, 7, frozenset({"deletionVectors"}),
                                                   frozenset({"deletionVectors", "domainMetadata"})))
    snapshot = DeltaLog(b.path).snapshot()
    with pytest.raises(ValueError, match="v2Checkpoint"):
        write_v2_checkpoint_arrow(LocalStorage(b.path), snapshot.version, snapshot.protocol_action,
                                  snapshot.metadata, None)
    assert not Path(b.path, SIDECAR_DIR).exists()


# --- routing: which checkpoint a version gets ----------------------------------------------------------

@pytest.mark.parametrize("features,policy,kind", [
    (frozenset({V2}), "v2", "v2"),
    (frozenset({V2}), "classic", "classic"),
    (frozenset({V2}), None, "classic"),
    (frozenset(), "v2", "classic"),   # UUID-named checkpoints only with the feature
])
def test_checkpoint_table_writes_v2_only_under_the_v2_policy_with_the_feature(tmp_path, features, policy, kind):
    protocol = Protocol(3, 7, frozenset({"deletionVectors"}) | features,
                        frozenset({"deletionVectors", "domainMetadata"}) | features)
    b = v2_table(tmp_path / "t", protocol=protocol,
                 configuration={"delta.checkpointPolicy": policy} if policy else {})
    snapshot = DeltaLog(b.path).snapshot()
    assert uses_v2_checkpoint(snapshot.protocol, snapshot.metadata) is (kind == "v2")
    result = checkpoint_table(DeltaLog(b.path), clock=b.clock)
    assert result.checkpoint_kind == kind
    assert [c.kind for c in DeltaLog(b.path).checkpoint_inventory()] == [kind]
    assert (Path(b.path, SIDECAR_DIR).exists() and any(Path(b.path, SIDECAR_DIR).iterdir())) is (kind == "v2")


def test_an_unreadable_policy_is_refused_before_any_write(tmp_path):
    b = v2_table(tmp_path / "t", configuration={"delta.checkpointPolicy": "v3"})
    before = sorted(os.listdir(Path(b.path, LOG_DIR)))
    with pytest.raises(InvalidTablePropertyError):
        checkpoint_table(DeltaLog(b.path), clock=b.clock)
    assert sorted(os.listdir(Path(b.path, LOG_DIR))) == before
