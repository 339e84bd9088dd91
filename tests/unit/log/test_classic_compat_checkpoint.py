"""The classic-named copy of a UUID-named V2 checkpoint (log/checkpoint/classic_compat.py,
PROTOCOL.md "Handling Backward compatibility while moving to UUID-named v2 Checkpoints",
"Classic checkpoint", "V2 Spec").

The copy must be ``n.checkpoint.parquet`` with the same rows as the UUID-named checkpoint's
top-level file (its checkpointMetadata and sidecar actions included), whatever that file's
format; and this package must rebuild the table from the copy alone (the UUID-named file,
``_last_checkpoint`` and the commits up to the version gone). delta-spark and delta-rs read it in
tests/integration/test_cleanup_classic_compat_checkpoint.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from delta_downgrade.errors import CheckpointUnreadableError
from delta_downgrade.log.checkpoint.classic_compat import classic_copy_bytes, write_classic_copy
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.format.checkpoint_schema import V2_CHECKPOINT_SCHEMA
from delta_downgrade.log.format.file_names import LAST_CHECKPOINT, classic_checkpoint_path, commit_path
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.protocol.actions import AddFile, RemoveFile, parse_commit, serialize_commit
from delta_downgrade.storage.local import LocalStorage
from tests.v2_tables import v2_table


def _canon(value: Any) -> Any:
    """Rows of either encoding as comparable values: Arrow's maps (lists of pairs) as dicts;
    absent, null and empty fields alike (an empty map is [] in Arrow, {} in JSON)."""
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items() if v is not None and v != [] and v != {}}
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return {k: _canon(v) for k, v in value}
    if isinstance(value, list):
        return [_canon(v) for v in value]
    return value


def _parquet_actions(path: Path) -> list[dict[str, Any]]:
    table = pq.read_table(path)
    out = []
    for row in table.to_pylist():
        present = {k: v for k, v in row.items() if v is not None}
        assert len(present) == 1, row  # one action per row
        out.append(_canon(present))
    return out


def _top_level_actions(root: Path, ck: CheckpointInstance) -> list[dict[str, Any]]:
    rel = ck.paths[0]
    if rel.endswith(".json"):
        return [_canon({a.KEY: a.to_obj()}) for a in parse_commit((root / rel).read_bytes())]
    return _parquet_actions(root / rel)


def _state(log: DeltaLog) -> dict[str, Any]:
    state = log.snapshot().state()
    # a checkpoint's file actions have dataChange false, its removes no stats or tags
    return {"files": sorted(json.dumps(a.to_obj() | {"dataChange": False}, sort_keys=True)
                            for a in state.files.values()),
            "tombstones": sorted(r.path for r in state.tombstones.values()), "protocol": state.protocol_action.to_obj(),
            "metadata": state.metadata.to_obj(), "txns": sorted((t.appId, t.version) for t in state.txns.values()),
            "domains": sorted((d.domain, d.configuration) for d in state.live_domains.values())}


def _only_the_copy_left(root: Path, ck: CheckpointInstance) -> None:
    """The log as an older client after the cleanup would need it: no UUID-named checkpoint, no
    hint, no commit up to the checkpoint's version."""
    os.remove(root / ck.paths[0])
    os.remove(root / LAST_CHECKPOINT)
    for v in range(ck.version + 1):
        os.remove(root / commit_path(v))


@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_copy_has_the_rows_of_the_top_level_file_and_rebuilds_the_table(tmp_path, fmt):
    b = v2_table(tmp_path / "t")
    root = Path(b.path)
    log = DeltaLog(b.path)
    before = _state(log)
    checkpoint_table(log, clock=b.clock, part_size=2, v2_format=fmt)
    [ck] = [c for c in log.refresh(Refresh.WHOLE_LOG).whole_listing().checkpoints if c.kind == "v2"]

    path = write_classic_copy(log.storage, ck)
    assert path == classic_checkpoint_path(ck.version)
    assert pq.read_schema(root / path) == V2_CHECKPOINT_SCHEMA
    copy = _parquet_actions(root / path)
    top = _top_level_actions(root, ck)
    dump = lambda a: json.dumps(a, sort_keys=True)  # noqa: E731
    assert sorted(map(dump, copy)) == sorted(map(dump, top))
    keys = [next(iter(a)) for a in copy]
    assert keys.count("checkpointMetadata") == 1 and keys.count("sidecar") >= 2
    assert copy[0]["checkpointMetadata"]["version"] == ck.version
    if fmt == "parquet":  # copied byte for byte
        assert (root / path).read_bytes() == (root / ck.paths[0]).read_bytes()

    sidecars = log.sidecars_of(ck)
    _only_the_copy_left(root, ck)
    fresh = DeltaLog(b.path)
    [only] = fresh.whole_listing().checkpoints
    assert only.kind == "classic" and only.version == ck.version
    assert fresh.sidecars_of(only) == sidecars
    assert _state(fresh) == before


def test_json_top_level_file_with_embedded_file_actions(tmp_path):
    # "A writer could choose to include the add and remove file action in the V2 spec
    # Checkpoint" (PROTOCOL.md "V2 Spec"): such a JSON top-level file becomes a parquet copy with
    # the file actions in its own add and remove columns.
    b = v2_table(tmp_path / "t")
    root = Path(b.path)
    log = DeltaLog(b.path)
    before = _state(log)
    checkpoint_table(log, clock=b.clock, part_size=2, v2_format="json")
    [ck] = [c for c in log.refresh(Refresh.WHOLE_LOG).whole_listing().checkpoints if c.kind == "v2"]
    state = log.snapshot().state()
    actions = [a for a in parse_commit((root / ck.paths[0]).read_bytes()) if a.KEY != "sidecar"]
    removes = [RemoveFile.from_obj({k: v for k, v in r.to_obj().items() if k not in ("stats", "tags")})
               for r in state.tombstones.values()]
    adds = [AddFile.from_obj({**a.to_obj(), "dataChange": False}) for a in state.files.values()]
    (root / ck.paths[0]).write_bytes(serialize_commit([*actions, *adds, *removes]))

    path = write_classic_copy(log.storage, ck)
    copy = _parquet_actions(root / path)
    keys = [next(iter(a)) for a in copy]
    assert "sidecar" not in keys
    assert keys.count("add") == len(state.files) and keys.count("remove") == len(state.tombstones) >= 1
    _only_the_copy_left(root, ck)
    assert _state(DeltaLog(b.path)) == before


def test_only_a_v2_checkpoint_with_one_protocol_and_metadata_is_copied(tmp_path):
    b = v2_table(tmp_path / "t")
    root = Path(b.path)
    log = DeltaLog(b.path)
    checkpoint_table(log, clock=b.clock, v2_format="json")
    [ck] = [c for c in log.refresh(Refresh.WHOLE_LOG).whole_listing().checkpoints if c.kind == "v2"]
    storage = LocalStorage(b.path)
    with pytest.raises(ValueError, match="UUID-named"):
        classic_copy_bytes(storage, CheckpointInstance(ck.version, "classic", ck.files))
    actions = parse_commit((root / ck.paths[0]).read_bytes())
    (root / ck.paths[0]).write_bytes(serialize_commit([a for a in actions if a.KEY != "protocol"]))
    with pytest.raises(CheckpointUnreadableError, match="exactly one"):
        write_classic_copy(storage, ck)
    assert not (root / classic_checkpoint_path(ck.version)).exists()
