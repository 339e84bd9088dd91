"""One reconciliation (delta_downgrade.log.replay.reconcile, delta_downgrade.log.replay.arrow_replay).

``Snapshot.state()`` is the Arrow replay's Python view. Differential: on every version of every
golden table, and on synthetic logs written here (re-added files, same-key pairs in a checkpoint,
deletion vectors, key order, explicit nulls, unknown fields, malformed lines and checkpoint
rows), it equals the state the same rules build one checkpoint and one commit at a time
(``TableState.apply_checkpoint`` / ``apply_commit``, what ``Snapshot`` falls back to) - object
for object, in the same dict order, or with the same error - and the checkpoint result of the
Arrow replay holds the same live files and tombstones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.log.replay import arrow_commits

from delta_downgrade.log.replay import arrow_replay

from delta_downgrade.log.replay import choice as replay_choice
from delta_downgrade.log import snapshot as snapshot_module
from delta_downgrade.log.format.checkpoint_columns import add_array, remove_array
from delta_downgrade.log.checkpoint.classic_writer import CheckpointContent, write_checkpoint
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.last_checkpoint import serialize_last_checkpoint
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.replay.reconcile import CHECKPOINT_RANK, TableState, commit_rank, file_key
from delta_downgrade.log.read.segment import LogSegment
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol.actions import (AddFile, DomainMetadata, Metadata, ProtocolAction, RemoveFile,
                                              Txn)
from delta_downgrade.storage.local import LocalStorage

T0 = 1_700_000_000_000
SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "p", "type": "string", "nullable": True, "metadata": {}},
    {"name": "q", "type": "string", "nullable": True, "metadata": {}}]})
DV_A = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36,
        "cardinality": 2}
DV_B = {"pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "storageType": "u", "sizeInBytes": 40, "cardinality": 5,
        "offset": 77, "maxRowIndex": 99}  # keys in another order than Spark writes them
DV_I = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
        "sizeInBytes": 40, "cardinality": 6}
DV_PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
               "writerFeatures": ["deletionVectors"]}


# --- the rules, one action at a time ---------------------------------------------------------------

def _a(path: str, **kw: Any) -> AddFile:
    return AddFile(**{"path": path, "size": 1, "modificationTime": T0, **kw})


def _r(path: str, **kw: Any) -> RemoveFile:
    return RemoveFile(**{"path": path, "deletionTimestamp": T0, **kw})


def _empty() -> TableState:
    return TableState(0, ProtocolAction(1, 2), Metadata(id="x", schemaString=SCHEMA))


def test_ranks():
    assert CHECKPOINT_RANK == 0
    assert [commit_rank(c, k) for c in (0, 1, 2) for k in ("remove", "add")] == [1, 2, 3, 4, 5, 6]


def test_identity_is_decoded_path_and_dv():
    assert file_key(_a("a%20b")) == ("a b", None)
    assert file_key(_a("a", deletionVector=DV_A)) == ("a", "uab^-aqEH.-t@S}K{vb[*k^@1")
    assert file_key(_a("a", deletionVector={"storageType": None})) == ("a", None)
    assert file_key(_r("a", deletionVector=DV_I)) == ("a", "i" + DV_I["pathOrInlineDv"])


def test_a_re_added_file_keeps_its_place_and_takes_the_new_value():
    state = _empty()
    state.apply_commit([_a("a"), _a("b"), _a("c")])
    state.apply_commit([_a("a", size=9)])  # a row-tracking backfill re-adds without a remove
    assert [(k[0], a.size) for k, a in state.files.items()] == [("a", 9), ("b", 1), ("c", 1)]
    state.apply_commit([_r("b")])
    state.apply_commit([_a("b", size=5)])  # removed, then added: a new place
    assert [(k[0], a.size) for k, a in state.files.items()] == [("a", 9), ("c", 1), ("b", 5)]
    assert state.tombstones == {}


@pytest.mark.parametrize("remove_first", [True, False])
def test_a_commit_applies_its_removes_first(remove_first):
    state = _empty()
    state.apply_commit([_a("p", deletionVector=DV_A)])
    pair = [_r("p", deletionVector=DV_A), _a("p", deletionVector=DV_B)]
    state.apply_commit(pair if remove_first else pair[::-1])
    assert [a.deletionVector for a in state.files.values()] == [DV_B]
    assert list(state.tombstones) == [("p", "uab^-aqEH.-t@S}K{vb[*k^@1")]
    same = [_r("p", deletionVector=DV_B), _a("p", deletionVector=DV_B, size=3)]
    state.apply_commit(same if remove_first else same[::-1])  # the same logical file: the add stays
    assert [a.size for a in state.files.values()] == [3]


def test_a_checkpoint_never_cancels_itself():
    state = _empty()
    state.apply_checkpoint([Txn("app", 1)], [DomainMetadata("d", "{}")], [_a("a"), _a("b")], [_r("a"), _r("z")])
    assert list(state.files) == [("a", None), ("b", None)]
    assert list(state.tombstones) == [("a", None), ("z", None)]
    state.apply_commit([_a("z")])
    assert ("z", None) not in state.tombstones and ("z", None) in state.files


# --- the differential: the Arrow view against the rules one commit at a time ---------------------

@pytest.fixture(autouse=True)
def _arrow_view_for_every_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshot.state() is the Arrow replay's view here for small segments too: the Python
    replay they get otherwise (replay_choice) is what the view is compared with."""
    monkeypatch.setattr(replay_choice, "PYTHON_REPLAY_MAX_COMMITS", -1)


def _one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshot.state() as it is built when the Arrow replay gives up on a log."""
    monkeypatch.setattr(snapshot_module, "replay_state", lambda *args, **kw: None)


def _state_or_error(snapshot: Snapshot) -> Any:
    try:
        state = snapshot.state()
    except Exception as exc:  # noqa: BLE001 - the error is what is compared
        return (type(exc), str(exc))
    return (state.version, state.protocol_action, state.metadata, list(state.files.items()),
            list(state.tombstones.items()), list(state.txns.items()), list(state.domains.items()))


def _segments(path: str) -> list[LogSegment]:
    """Every segment ``DeltaLog.segment(v)`` builds, plus the one from commit 0 when all
    commits are there."""
    log = DeltaLog(path)
    listing = log.whole_listing()
    out = []
    for v in range(log.latest_version() + 1):
        try:
            segment = log.segment(v)
        except Exception:  # noqa: BLE001 - a version history no longer holds
            continue
        out.append(segment)
        if segment.checkpoint is not None and all(c in listing.commits for c in range(v + 1)):
            out.append(LogSegment(v, None, tuple(listing.commits[c] for c in range(v + 1))))
    return out


def _row(row: dict[str, Any]) -> str:
    """A checkpoint row, its maps as objects (the checkpoint result keeps the keys in the order
    of the columns Arrow read, the objects in the order of their line)."""
    for key in ("partitionValues", "tags"):
        if row.get(key) is not None:
            row[key] = dict(row[key])
    return json.dumps(row, sort_keys=True, default=str)


def _checkpoint_rows(path: str, segment: LogSegment) -> tuple[list[str], list[str]]:
    """The live files and the tombstones of the Arrow replay's checkpoint result."""
    state = arrow_replay.replay_segment(LocalStorage(path), path, segment)
    return sorted(map(_row, state.adds.to_pylist())), sorted(map(_row, state.removes.to_pylist()))


def _canonical(action: AddFile | RemoveFile, kind: str) -> str:
    """An action as the checkpoint result holds it (its columns, dataChange false)."""
    (row,) = (add_array if kind == "add" else remove_array)([action]).to_pylist()  # type: ignore[list-item]
    return _row(row)


def _assert_one_reconciliation(path: str, monkeypatch: pytest.MonkeyPatch, *,
                               falls_back: Callable[[LogSegment], bool] = lambda _: False) -> int:
    storage = LocalStorage(path)
    segments = _segments(path)
    for segment in segments:
        view = _state_or_error(Snapshot(storage, path, segment))
        if not isinstance(view[0], type):
            snap = Snapshot(storage, path, segment)
            protocol, metadata = snap._protocol_and_metadata
            replayed = arrow_replay.replay_state(storage, path, segment, protocol, metadata)
            assert (replayed is None) == falls_back(segment), segment  # the Arrow replay gave it
            if replayed is not None:  # the checkpoint result: the same files and tombstones
                rows = _checkpoint_rows(path, segment)
                live = {k for k, _ in view[3]}
                assert rows[0] == sorted(_canonical(a, "add") for _, a in view[3])
                assert rows[1] == sorted(_canonical(r, "remove") for k, r in view[4] if k not in live)
        with monkeypatch.context() as m:
            _one_at_a_time(m)
            assert _state_or_error(Snapshot(storage, path, segment)) == view, segment
    return len(segments)


def _golden_names() -> list[str]:
    env = os.environ.get("DELTA_DOWNGRADE_GOLDEN")
    root = Path(env).expanduser() if env else Path(__file__).resolve().parents[3].parent / "shared" / "golden"
    return sorted(p.name for p in root.iterdir() if (p / LOG_DIR).is_dir()) if root.is_dir() else []


@pytest.mark.parametrize("name", _golden_names())
def test_golden_tables(name, golden_root, monkeypatch):
    """Every golden table, the bad ones and catalog_managed_ict included."""
    path = str(golden_root / name)
    try:
        DeltaLog(path).latest_version()
    except Exception:  # noqa: BLE001 - a log that cannot even be listed has no segment
        return
    _assert_one_reconciliation(path, monkeypatch)


# --- synthetic logs --------------------------------------------------------------------------------

def _info(v: int) -> dict[str, Any]:
    return {"commitInfo": {"timestamp": T0 + v, "operation": "WRITE"}}


def _header(partition_columns: list[str] | None = None, protocol: dict[str, Any] | None = None) -> list[Any]:
    return [_info(0), {"protocol": protocol or {"minReaderVersion": 1, "minWriterVersion": 2}},
            {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                          "partitionColumns": partition_columns or [], "configuration": {}, "createdTime": T0}}]


def _add(path: str, pv: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    body = {"path": path, "partitionValues": {} if pv is None else pv, "size": 100, "modificationTime": T0,
            "dataChange": True, "stats": json.dumps({"numRecords": 3})}
    body.update(kw)
    return {"add": body}


def _remove(path: str, **kw: Any) -> dict[str, Any]:
    body = {"path": path, "deletionTimestamp": T0 + 5, "dataChange": True}
    body.update(kw)
    return {"remove": body}


def _write(root: Path, commits: list[list[Any]], start: int = 0) -> str:
    log = root / LOG_DIR
    log.mkdir(parents=True, exist_ok=True)
    for v, lines in enumerate(commits, start=start):
        text = "\n".join(x if isinstance(x, str) else json.dumps(x, separators=(",", ":")) for x in lines)
        (log / f"{v:020d}.json").write_text(text + "\n", encoding="utf-8")
    return str(root)


JSON_LOGS: dict[str, list[list[Any]]] = {
    "re_added": [_header() + [_add("a"), _add("b"), _add("c")], [_info(1), _remove("a")],
                 [_info(2), _add("a", size=7)], [_info(3), _add("b", size=9), _add("c", size=1)],
                 [_info(4), _add("a", size=8)], [_info(5), _add("d"), _remove("b"), _add("b", size=2)]],
    "dv_pairs": [_header(protocol=DV_PROTOCOL) + [_add("p"), _add("q"), _add("r", deletionVector=DV_I)],
                 [_info(1), _add("p", deletionVector=DV_A),
                  _remove("p", extendedFileMetadata=True, size=100, partitionValues={})],
                 [_info(2), _remove("p", deletionVector=DV_A), _add("p", deletionVector=DV_B)],
                 [_info(3), _remove("q"), _add("q", deletionVector=DV_I), _remove("r", deletionVector=DV_I),
                  _add("r", deletionVector=DV_I, size=5)]],
    "partition_key_order": [_header(["p", "q"]) + [
        _add("p=1/q=2/a", {"p": "1", "q": "2"}), _add("p=1/q=3/b", {"q": "3", "p": "1"}),
        _add("p=2/q=x/c", {"p": "2", "q": None})], [_info(1), _add("p=3/q=4/d", {"q": "4", "p": "3"})]],
    "partition_nulls": [_header(["p"]) + [_add("p=1/a", {"p": "1"}), _add("p=n/b", {"p": None}), _add("c", {})],
                        [_info(1), _add("p=2020-01-01/d", {"p": "2020-01-01"}),
                         _remove("p=1/a", partitionValues={"p": "1"})]],
    "unknown_fields_and_tags": [
        _header() + [_add("a", futureField=5), _add("b"), _remove("zz", futureRemove={"x": 1})],
        [_info(1), _add("c", tags={"t1": "a", "t2": None}), _add("d", tags={"t": "x"})],
        [_info(2), _remove("c", stats="{}", tags={"k": "v"}), _add("e", dataChange=None),
         _add("f", dataChange=False)]],
    "explicit_nulls": [_header() + [_add("a", stats=None, baseRowId=None), _add("b", clusteringProvider=None),
                                    _add("c", deletionVector=None)],
                       [_info(1), _remove("a", deletionTimestamp=None, size=None), _remove("b", partitionValues=None)]],
    "txns_and_domains": [
        _header() + [{"txn": {"appId": "a", "version": 1, "lastUpdated": T0}}, {"txn": {"appId": "b", "version": 2}},
                     {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": False}}],
        [_info(1), {"txn": {"appId": "a", "version": 3, "futureTxn": 1}},
         {"domainMetadata": {"domain": "d2", "configuration": "{\"x\":1}", "removed": False}}],
        [_info(2), {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": True}},
         {"txn": {"appId": "c", "version": 0}}]],
    "encoded_paths": [_header() + [_add("a%20b"), _add("c%3Ad"), _add("x/%C3%A9")],
                      [_info(1), _remove("a b"), _add("c:d", size=5)], [_info(2), _add("a%20b", size=6)]],
    "same_key_twice_in_a_commit": [_header() + [_add("a", size=1), _add("a", size=2), _add("b")],
                                   [_info(1), _add("b", size=3), _add("b", size=4)]],
    "several_actions_on_a_line": [
        _header() + ['{"commitInfo":{"timestamp":1},"add":{"path":"z","size":1,"modificationTime":1,'
                     '"partitionValues":{},"dataChange":true}}', _add("a")],
        [_info(1), '{"add":null,"remove":{"path":"a","deletionTimestamp":5,"dataChange":true}}']],
    "commit_info_and_cdc": [_header() + [_add("a")],
                            [{"commitInfo": {"timestamp": T0, "inCommitTimestamp": 1.0}}, _add("b")],
                            [_info(2), {"cdc": {"path": "c", "partitionValues": {}, "size": 3, "dataChange": False}}]],
    # what the Python parser refuses, the view refuses with its error
    "bad_commit_info": [_header() + [_add("a")], [_info(1), {"commitInfo": {"inCommitTimestamp": "abc"}}, _add("b")]],
    "bad_cdc": [_header() + [_add("a")], [_info(1), {"cdc": {"path": "c", "partitionValues": {}, "size": "big"}}]],
    "bad_data_change": [_header() + [_add("a")], [_info(1), _add("b", dataChange="yes")]],
    "bad_remove_stats": [_header() + [_add("a")], [_info(1), _remove("a", stats={"numRecords": 1})]],
    "bad_remove_tags": [_header() + [_add("a")], [_info(1), _remove("a", tags={"k": 1})]],
    "dv_without_path": [_header(protocol=DV_PROTOCOL) + [
        _add("a", deletionVector={"storageType": "u", "sizeInBytes": 1, "cardinality": 1})]],
    "dv_without_storage_type": [_header(protocol=DV_PROTOCOL) + [
        _add("a", deletionVector={"pathOrInlineDv": "x"}), _add("b", deletionVector={})]],
    "duplicate_protocol_before_a_broken_line": [
        _header() + [_add("a")],
        [_info(1), {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
         {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}],
        [_info(2), "{not json"]],
}


@pytest.mark.parametrize("name", sorted(JSON_LOGS))
def test_synthetic_logs(name, tmp_path, monkeypatch):
    path = _write(tmp_path / name, JSON_LOGS[name])
    assert _assert_one_reconciliation(path, monkeypatch)
    _small_chunks(path, monkeypatch)


def _small_chunks(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One commit per chunk, parsed by a thread pool: the same view."""
    storage = LocalStorage(path)
    for segment in _segments(path):
        expected = _state_or_error(Snapshot(storage, path, segment))
        with monkeypatch.context() as m:
            m.setattr(arrow_commits, "CHUNK_MIN_BYTES", 1)
            m.setattr(arrow_commits, "THREADS_PER_CPU", 3)
            assert _state_or_error(Snapshot(storage, path, segment)) == expected


def test_a_lone_surrogate_is_left_to_the_rules_one_commit_at_a_time(tmp_path, monkeypatch):
    """A path that JSON allows and Arrow cannot hold: the state comes from the fallback."""
    path = _write(tmp_path / "t", [_header() + [
        '{"add":{"path":"\\ud800x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}',
        _add("\U0001F600")]])
    _assert_one_reconciliation(path, monkeypatch, falls_back=lambda _: True)
    assert [k for k in DeltaLog(path).snapshot().state().files] == [("\ud800x", None), ("\U0001F600", None)]


# --- synthetic checkpoints -------------------------------------------------------------------------

def _checkpointed(root: Path, adds: list[AddFile], removes: list[RemoveFile], after: list[list[Any]],
                  change: Callable[[Path], None] | None = None, **kw: Any) -> str:
    (root / LOG_DIR).mkdir(parents=True)
    metadata = Metadata(id="x", schemaString=SCHEMA, createdTime=T0)
    result = write_checkpoint(LocalStorage(root), 0, CheckpointContent(
        protocol=ProtocolAction(3, 7, ["deletionVectors"], ["deletionVectors"]), metadata=metadata,
        adds=adds, removes=removes, **kw), now_ms=T0)
    if change is not None:
        change(root / result.paths[0])
    return _write(root, after, start=1)


def _change_add_column(file: Path, change: Callable[[pa.StructArray], pa.StructArray]) -> None:
    data = pq.read_table(file)
    column = data.column("add").combine_chunks()
    pq.write_table(data.set_column(data.schema.get_field_index("add"), "add", change(column)), file)


def _struct(column: pa.StructArray, fields: list[pa.Field], children: list[pa.Array]) -> pa.StructArray:
    return pa.StructArray.from_arrays(children, fields=fields, mask=column.is_null())


def _null_last_path(column: pa.StructArray) -> pa.StructArray:
    paths = column.field("path").to_pylist()
    paths[-1] = None
    return _struct(column, list(column.type), [pa.array(paths, pa.string()) if f.name == "path"
                                               else column.field(f.name) for f in column.type])


def _size_as_string(column: pa.StructArray) -> pa.StructArray:
    fields = [pa.field("size", pa.string()) if f.name == "size" else f for f in column.type]
    return _struct(column, fields, [column.field(f.name).cast(f.type) for f in fields])


def _unknown_column(column: pa.StructArray) -> pa.StructArray:
    return _struct(column, list(column.type) + [pa.field("futureColumn", pa.int64())],
                   [column.field(f.name) for f in column.type] + [pa.array([7] * len(column), pa.int64())])


def _dv_without_path(column: pa.StructArray) -> pa.StructArray:
    dv = column.field("deletionVector")
    new_dv = _struct(dv, list(dv.type), [pa.nulls(len(dv), pa.string()) if f.name == "pathOrInlineDv"
                                         else dv.field(f.name) for f in dv.type])
    return _struct(column, list(column.type), [new_dv if f.name == "deletionVector" else column.field(f.name)
                                               for f in column.type])


CHECKPOINTS: dict[str, Callable[[Path], str]] = {
    "same_key_add_and_remove": lambda root: _checkpointed(
        root, [_a("a"), _a("b"), _a("c", deletionVector=DV_A)], [_r("a"), _r("c", deletionVector=DV_A), _r("z")],
        [[_info(1), _add("d")], [_info(2), _remove("b"), _add("a", size=5)]],
        txns=[Txn("app", 1, T0)], domains=[DomainMetadata("d", "{}", False)]),
    "same_key_added_twice": lambda root: _checkpointed(root, [_a("a"), _a("b"), _a("a", size=9)], [],
                                                       [[_info(1), _add("b", size=3)]]),
    "re_added_after": lambda root: _checkpointed(
        root, [_a("a"), _a("b")], [_r("y")],
        [[_info(1), _add("a", size=2)], [_info(2), _remove("a")], [_info(3), _add("a", size=4), _add("y")]]),
    "a_path_null": lambda root: _checkpointed(root, [_a("a"), _a("b")], [], [[_info(1), _add("c")]],
                                              lambda f: _change_add_column(f, _null_last_path)),
    "size_as_a_string": lambda root: _checkpointed(root, [_a("a"), _a("b")], [], [[_info(1), _add("c")]],
                                                   lambda f: _change_add_column(f, _size_as_string)),
    "an_unknown_column": lambda root: _checkpointed(root, [_a("a"), _a("b")], [_r("q")], [[_info(1), _add("c")]],
                                                    lambda f: _change_add_column(f, _unknown_column)),
    "a_dv_without_path": lambda root: _checkpointed(root, [_a("a", deletionVector=DV_A), _a("b")], [],
                                                    [[_info(1), _add("c")]],
                                                    lambda f: _change_add_column(f, _dv_without_path)),
}


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_synthetic_checkpoints(name, tmp_path, monkeypatch):
    path = CHECKPOINTS[name](tmp_path / name)
    assert _assert_one_reconciliation(path, monkeypatch)


def test_a_checkpoint_keeps_both_sides_of_a_same_key_pair(tmp_path):
    """In the Python view, as before: the file is live and its tombstone stays; the checkpoint
    result keeps the file and leaves out the tombstone of a live file."""
    path = CHECKPOINTS["same_key_add_and_remove"](tmp_path / "t")
    log = DeltaLog(path)
    state = log.snapshot(0).state()
    assert [k[0] for k in state.files] == ["a", "b", "c"]
    assert [k[0] for k in state.tombstones] == ["a", "c", "z"]
    result = arrow_replay.replay_segment(log.storage, path, log.segment(0))
    assert [r["path"] for r in result.adds.to_pylist()] == ["a", "b", "c"]
    assert [r["path"] for r in result.removes.to_pylist()] == ["z"]


def test_a_json_manifest_keeps_both_sides_of_a_same_key_pair(golden_table):
    """A v2 checkpoint's JSON manifest is a checkpoint like any other: its remove does not
    cancel its add (the checkpoint result used to drop the file there)."""
    path = golden_table("v2_checkpoint_json_sidecars")
    (manifest,) = [p for p in (Path(path) / LOG_DIR).iterdir() if ".checkpoint." in p.name and p.suffix == ".json"]
    with manifest.open("a") as fh:
        fh.write(json.dumps(_add("zz.parquet", dataChange=False)) + "\n")
        fh.write(json.dumps(_remove("zz.parquet", dataChange=False)) + "\n")
    # the checkpoint's writer would have recorded the add it holds (else it is set aside as damaged)
    hint = json.loads((Path(path) / LOG_DIR / "_last_checkpoint").read_text())
    hint["numOfAddFiles"] += 1
    (Path(path) / LOG_DIR / "_last_checkpoint").write_bytes(serialize_last_checkpoint(hint))
    log = DeltaLog(path)
    state = log.snapshot(check_read=False).state()
    assert ("zz.parquet", None) in state.files and ("zz.parquet", None) in state.tombstones
    result = arrow_replay.replay_segment(log.storage, path, log.segment())
    assert "zz.parquet" in [r["path"] for r in result.adds.to_pylist()]
    assert "zz.parquet" not in [r["path"] for r in result.removes.to_pylist()]
