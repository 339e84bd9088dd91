"""The Arrow replay (delta_downgrade.log.replay.arrow_replay) against the Python one (Snapshot.state).

Differential: for every golden table at every version a segment can be built for (from its
checkpoint, and from commit 0 when all commits are there), and for synthetic logs written here
line by line, the live adds, the tombstones, the txns and the domains of both replays are equal
(as sorted lists of canonical dicts, with ``dataChange`` false as the checkpoint writes it). Then
``checkpoint_table`` (Arrow) and ``write_checkpoint(checkpoint_content(...))`` (Python) must write
checkpoints with the same rows.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.protocol.actions import AddFile, Metadata, ProtocolAction, RemoveFile
from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import CorruptLogError
from delta_downgrade.log.replay import arrow_commits
from delta_downgrade.log.replay.arrow_replay import ArrowState, replay_segment
from delta_downgrade.log.format.checkpoint_schema import CHECKPOINT_SCHEMA
from delta_downgrade.log.checkpoint.classic_writer import write_checkpoint
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from tests.python_checkpoint_content import checkpoint_content
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.snapshot import LogSegment, Snapshot, TableState
from delta_downgrade.storage import FileStatus
from delta_downgrade.storage.local import LocalStorage

EXCLUDED = {"catalog_managed_ict"}

# --- canonical records ------------------------------------------------------------------------------

DV_FIELDS = ("storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality", "maxRowIndex")


def _dv(action: AddFile | RemoveFile) -> dict[str, Any] | None:
    dv = action.dv
    return None if dv is None else {k: getattr(dv, k) for k in DV_FIELDS}


def _map(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    return dict(value) if isinstance(value, dict) else {k: v for k, v in value}


def _py_add(a: AddFile) -> dict[str, Any]:
    return {"path": a.path, "partitionValues": _map(a.partitionValues), "size": a.size,
            "modificationTime": a.modificationTime, "dataChange": False, "stats": a.stats,
            "tags": _map(a.tags), "deletionVector": _dv(a), "baseRowId": a.baseRowId,
            "defaultRowCommitVersion": a.defaultRowCommitVersion,
            "clusteringProvider": a.clusteringProvider}


def _py_remove(r: RemoveFile) -> dict[str, Any]:
    return {"path": r.path, "deletionTimestamp": r.deletionTimestamp, "dataChange": False,
            "extendedFileMetadata": r.extendedFileMetadata,
            "partitionValues": _map(r.partitionValues), "size": r.size, "deletionVector": _dv(r),
            "baseRowId": r.baseRowId, "defaultRowCommitVersion": r.defaultRowCommitVersion}


def _arrow_rows(values: pa.ChunkedArray) -> list[dict[str, Any]]:
    rows = values.to_pylist()
    for row in rows:
        for key in ("partitionValues", "tags"):
            if key in row:
                row[key] = _map(row[key])
    return rows


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _python_view(state: TableState) -> dict[str, Any]:
    return {
        "adds": _sorted([_py_add(a) for a in state.files.values()]),
        "removes": _sorted([_py_remove(r) for r in state.tombstones.values()]),
        "txns": sorted((t.appId, t.version, t.lastUpdated) for t in state.txns.values()),
        "domains": sorted((d.domain, d.configuration, d.removed) for d in state.domains.values()),
        "protocol": state.protocol_action.to_obj(),
        "metadata": state.metadata.to_obj(),
    }


def _arrow_view(state: ArrowState) -> dict[str, Any]:
    return {
        "adds": _sorted(_arrow_rows(state.adds)),
        "removes": _sorted(_arrow_rows(state.removes)),
        "txns": sorted((t.appId, t.version, t.lastUpdated) for t in state.txns),
        "domains": sorted((d.domain, d.configuration, d.removed) for d in state.domains),
        "protocol": state.protocol.to_obj(),
        "metadata": state.metadata.to_obj(),
    }


def _compare(storage: LocalStorage, table: str, segment: LogSegment, **kw: Any) -> ArrowState:
    """Both replays of ``segment`` give the same state; the Arrow one is returned."""
    expected = _python_view(Snapshot(storage, table, segment).state())
    state = replay_segment(storage, table, segment, **kw)
    got = _arrow_view(state)
    assert state.version == segment.version
    assert got["adds"] == expected["adds"]
    assert got["removes"] == expected["removes"]
    assert got == expected
    assert len(state.adds) == len(expected["adds"]) and len(state.removes) == len(expected["removes"])
    assert state.adds.type == pa.struct(CHECKPOINT_SCHEMA.field("add").type)
    assert state.removes.type == pa.struct(CHECKPOINT_SCHEMA.field("remove").type)
    return state


def _segments(path: str) -> list[tuple[str, LogSegment]]:
    """Every segment ``DeltaLog.segment(v)`` builds, plus the pure-JSON one from commit 0 when
    a checkpoint would otherwise be used and all commits are there."""
    log = DeltaLog(path)
    listing = log.whole_listing()
    out = []
    for v in range(0, log.latest_version() + 1):
        try:
            segment = log.segment(v)
        except Exception:  # noqa: BLE001 - a version history no longer holds
            continue
        out.append((f"v{v}", segment))
        if segment.checkpoint is not None and all(c in listing.commits for c in range(v + 1)):
            out.append((f"v{v}-json", LogSegment(v, None, tuple(listing.commits[c] for c in range(v + 1)))))
    return out


# --- golden tables ----------------------------------------------------------------------------------

def _golden_dir() -> Path:
    env = os.environ.get("DELTA_DOWNGRADE_GOLDEN")
    return Path(env).expanduser() if env else Path(__file__).resolve().parents[3].parent / "shared" / "golden"


def _golden_names() -> list[str]:
    root = _golden_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / LOG_DIR).is_dir()
                  and not p.name.startswith("bad_") and p.name not in EXCLUDED)


GOLDEN = _golden_names()


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_table_every_version(name, golden_root):
    path = str(golden_root / name)
    storage = LocalStorage(path)
    segments = _segments(path)
    assert segments, name
    kinds = set()
    for label, segment in segments:
        state = _compare(storage, path, segment)
        # golden logs are regular: nothing falls back to the Python parser but the lines that
        # must (protocol/metadata are always re-read; null partition values / tags are)
        assert state.python_commits == (), (label, state.python_commits)
        kinds.add(segment.checkpoint.kind if segment.checkpoint else "json")
    if name == "multipart_checkpoint":
        assert "multipart" in kinds
    if name.startswith("v2_checkpoint"):
        assert "v2" in kinds


def test_golden_set_covers_the_checkpoint_kinds(golden_root):
    kinds = set()
    for name in GOLDEN:
        for _, segment in _segments(str(golden_root / name)):
            if segment.checkpoint is not None:
                kinds.add(segment.checkpoint.kind)
    assert {"classic", "multipart", "v2"} <= kinds


@pytest.mark.parametrize("name", [n for n in GOLDEN if n in {
    "dv_partitioned_checkpoint", "multipart_checkpoint", "domain_metadata_user_domains",
    "row_tracking_dv", "dv_cdf_shared_dv_file_dbr", "cm_name_partitioned"}])
def test_golden_table_in_small_chunks_and_threads(name, golden_root, monkeypatch):
    """One commit per chunk, parsed by a thread pool: the same state."""
    monkeypatch.setattr(arrow_commits, "CHUNK_MIN_BYTES", 1)
    path = str(golden_root / name)
    storage = LocalStorage(path)
    for _, segment in _segments(path):
        _compare(storage, path, segment, threads=3)


# --- synthetic logs ---------------------------------------------------------------------------------

SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "d", "type": "string", "nullable": True, "metadata": {}},
]}
T0 = 1_700_000_000_000
DV_A = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1,
        "sizeInBytes": 36, "cardinality": 2}
DV_B = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 77,
        "sizeInBytes": 40, "cardinality": 5, "maxRowIndex": 99}
DV_I = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "sizeInBytes": 40,
        "cardinality": 6}


def _info(v: int) -> dict[str, Any]:
    return {"commitInfo": {"timestamp": T0 + v, "operation": "WRITE", "readVersion": v - 1}}


def _header(partition_columns: list[str] | None = None, configuration: dict[str, str] | None = None,
            protocol: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [
        _info(0),
        {"protocol": protocol or {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "11111111-2222-3333-4444-555555555555", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(SCHEMA), "partitionColumns": partition_columns or [],
                      "configuration": configuration or {}, "createdTime": T0}},
    ]


def _add(path: str, pv: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    body = {"path": path, "partitionValues": {} if pv is None else pv, "size": 100,
            "modificationTime": T0, "dataChange": True,
            "stats": json.dumps({"numRecords": 3, "minValues": {"id": 1}})}
    body.update(kw)
    return {"add": body}


def _remove(path: str, ts: int | None = T0 + 5, **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"path": path, "dataChange": True}
    if ts is not None:
        body["deletionTimestamp"] = ts
    body.update(kw)
    return {"remove": body}


def _line(obj: Any) -> str:
    return obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))


def _write_log(root: Path, commits: list[list[Any]], *, newline: str = "\n") -> str:
    log = root / LOG_DIR
    log.mkdir(parents=True, exist_ok=True)
    for v, lines in enumerate(commits):
        if lines is None:
            continue
        text = newline.join(_line(x) for x in lines) + (newline if lines else "")
        (log / f"{v:020d}.json").write_text(text, encoding="utf-8")
    return str(root)


def _check_all_versions(path: str, **kw: Any) -> list[ArrowState]:
    storage = LocalStorage(path)
    return [_compare(storage, path, segment, **kw) for _, segment in _segments(path)]


def _check_everything(path: str) -> ArrowState:
    """All versions, in one chunk and in one chunk per commit with threads; then the written
    checkpoints of both paths; returns the latest state."""
    states = _check_all_versions(path)
    _check_all_versions_small_chunks(path)
    return states[-1]


def _check_all_versions_small_chunks(path: str) -> None:
    saved = arrow_commits.CHUNK_MIN_BYTES
    arrow_commits.CHUNK_MIN_BYTES = 1
    try:
        _check_all_versions(path, threads=3)
    finally:
        arrow_commits.CHUNK_MIN_BYTES = saved


def _live_paths(state: ArrowState) -> list[str]:
    return sorted(r["path"] for r in state.adds.to_pylist())


def test_re_added_paths(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header() + [_add("a.parquet"), _add("b.parquet")],
        [_info(1), _remove("a.parquet")],
        [_info(2), _add("a.parquet", size=7)],
        [_info(3), _remove("b.parquet"), _add("b.parquet", size=8)],
        [_info(4), _add("a.parquet", size=9)],  # re-added without a remove: the newer add wins
    ])
    state = _check_everything(path)
    assert sorted((r["path"], r["size"]) for r in state.adds.to_pylist()) == [("a.parquet", 9), ("b.parquet", 8)]
    assert len(state.removes) == 0


@pytest.mark.parametrize("remove_first", [True, False])
def test_remove_and_add_with_new_dv_in_one_commit(tmp_path, remove_first):
    pair = [_remove("p.parquet", deletionVector=DV_A, extendedFileMetadata=True, size=100,
                    partitionValues={}),
            _add("p.parquet", deletionVector=DV_B)]
    first_dv = [_remove("p.parquet", extendedFileMetadata=True, size=100, partitionValues={}),
                _add("p.parquet", deletionVector=DV_A)]
    path = _write_log(tmp_path / "t", [
        _header() + [_add("p.parquet"), _add("q.parquet"), _add("r.parquet", deletionVector=DV_I)],
        [_info(1)] + (first_dv if remove_first else first_dv[::-1]),
        [_info(2)] + (pair if remove_first else pair[::-1]),
        # the same logical file removed and added in one commit: the add stays
        [_info(3), _remove("q.parquet"), _add("q.parquet", deletionVector=DV_I),
         _remove("r.parquet", deletionVector=DV_I), _add("r.parquet", deletionVector=DV_I, size=5)],
    ])
    state = _check_everything(path)
    adds = {(r["path"], r["deletionVector"]["storageType"], r["deletionVector"]["offset"])
            for r in state.adds.to_pylist()}
    assert adds == {("p.parquet", "u", 77), ("q.parquet", "i", None), ("r.parquet", "i", None)}
    tombstones = sorted((r["path"], (r["deletionVector"] or {}).get("offset", -1)) for r in state.removes.to_pylist())
    assert tombstones == [("p.parquet", -1), ("p.parquet", 1), ("q.parquet", -1)]


def test_partition_values_nulls_dates_and_url_encoded_paths(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header(["d"]) + [
            _add("d=2024-01-01/a.parquet", {"d": "2024-01-01"}),
            _add("d=2024-01-01%2010%3A00%3A00/b.parquet", {"d": "2024-01-01 10:00:00"}),
            _add("d=__HIVE_DEFAULT_PARTITION__/c.parquet", {"d": None}),
            _add("d=a%20b/e.parquet", {"d": "a b"}),
            _add("d=x/%C3%A9t%C3%A9.parquet", {"d": "x"}),
        ],
        [_info(1), _remove("d=a b/e.parquet", partitionValues={"d": "a b"}, extendedFileMetadata=True, size=1)],
        [_info(2), _remove("d=x/été.parquet")],
        [_info(3), _add("d=2024-01-01T10:00:00/f.parquet", {"d": "2024-01-01T10:00:00"})],
    ])
    state = _check_everything(path)
    values = sorted((r["partitionValues"]["d"] or "") for r in _arrow_rows(state.adds))
    assert values == ["", "2024-01-01", "2024-01-01 10:00:00", "2024-01-01T10:00:00"]
    assert sorted(r["path"] for r in state.removes.to_pylist()) == ["d=a b/e.parquet", "d=x/été.parquet"]


def test_inferred_json_types_that_differ_between_commits(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header() + [_add("a.parquet", stats=None, tags=None)],
        [_info(1), _add("b.parquet", tags={"INSERTION_TIME": "1700000000000000"})],
        # a commitInfo field that is a number above and a string here: one chunk cannot hold both
        [{"commitInfo": {"timestamp": "yesterday", "readVersion": "1"}}, _add("c.parquet", stats=None)],
        [_info(3), _add("d.parquet", baseRowId=None, defaultRowCommitVersion=None)],
        [_info(4), _add("e.parquet", baseRowId=4, defaultRowCommitVersion=4, clusteringProvider="liquid")],
    ])
    states = _check_all_versions(path)
    assert states[-1].python_commits == ()  # split down to single commits, no Python parse
    _check_all_versions_small_chunks(path)


def test_tags_with_different_keys_and_empty_maps(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header() + [
            _add("a.parquet", tags={"INSERTION_TIME": "1", "MIN_INSERTION_TIME": "1"}),
            _add("b.parquet", tags={"OPTIMIZE_TARGET_SIZE": "268435456"}),
            _add("c.parquet", tags={}),
            _add("d.parquet"),
            _add("e.parquet", tags={"k": None}),
            _add("f.parquet", tags={"when": "2024-01-01"}),
            _add("g.parquet", tags={"INSERTION_TIME": "null", "x": "a:null}"}),
            _add("h.parquet", tags={"INSERTION_TIME": None, "z": "1"}, stats=None),
        ],
        [_info(1), '{"add":{"path":"dup.parquet","partitionValues":{},"size":1,"modificationTime":1,'
                   '"dataChange":true,"tags":{"k":"1","k":null}}}',
         '{"add":{"path":"spaces.parquet","partitionValues":{},"size":1,"modificationTime":1,'
         '"dataChange":true,"tags" :  { "k" : null , "OPTIMIZE_TARGET_SIZE" : "1" } }}',
         '{"add":{"path":"nested.parquet","partitionValues":{},"size":1,"modificationTime":1,'
         '"dataChange":true,"tags":{"INSERTION_TIME":"1"},"extra":{"tags":{"k":null}}}}'],
    ])
    state = _check_everything(path)
    tags = {r["path"]: r["tags"] for r in _arrow_rows(state.adds)}
    assert tags["dup.parquet"] == {"k": None} and tags["spaces.parquet"] == {"k": None, "OPTIMIZE_TARGET_SIZE": "1"}
    assert tags["g.parquet"] == {"INSERTION_TIME": "null", "x": "a:null}"}
    assert tags["h.parquet"] == {"INSERTION_TIME": None, "z": "1"}
    assert tags["nested.parquet"] == {"INSERTION_TIME": "1"}
    tags = {k: v for k, v in tags.items() if k in {f"{c}.parquet" for c in "abcdef"}}
    assert tags == {"a.parquet": {"INSERTION_TIME": "1", "MIN_INSERTION_TIME": "1"},
                    "b.parquet": {"OPTIMIZE_TARGET_SIZE": "268435456"}, "c.parquet": {},
                    "d.parquet": None, "e.parquet": {"k": None}, "f.parquet": {"when": "2024-01-01"}}


def test_txns_with_several_versions_per_app(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header() + [{"txn": {"appId": "app-1", "version": 1, "lastUpdated": T0}}],
        [_info(1), {"txn": {"appId": "app-1", "version": 2}}, {"txn": {"appId": "app-2", "version": 10}}],
        [_info(2), {"txn": {"appId": "app-1", "version": 3, "lastUpdated": T0 + 3}},
         {"txn": {"appId": "app-1", "version": 4, "lastUpdated": T0 + 4}}],
        [_info(3), {"txn": {"appId": "2024-01-01", "version": 1}}],
    ])
    state = _check_everything(path)
    assert sorted((t.appId, t.version) for t in state.txns) == [
        ("2024-01-01", 1), ("app-1", 4), ("app-2", 10)]


def test_domain_metadata_set_then_removed(tmp_path):
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["domainMetadata"]}
    path = _write_log(tmp_path / "t", [
        _header(protocol=protocol) + [
            {"domainMetadata": {"domain": "a", "configuration": '{"x":1}', "removed": False}},
            {"domainMetadata": {"domain": "b", "configuration": "{}", "removed": False}}],
        [_info(1), {"domainMetadata": {"domain": "a", "configuration": '{"x":1}', "removed": True}}],
        [_info(2), {"domainMetadata": {"domain": "c", "configuration": "2024-01-01", "removed": False}}],
        [_info(3), {"domainMetadata": {"domain": "b", "configuration": '{"y":2}', "removed": False}}],
    ])
    state = _check_everything(path)
    assert sorted((d.domain, d.removed) for d in state.domains) == [("a", True), ("b", False), ("c", False)]
    assert sorted(d.domain for d in state.live_domains) == ["b", "c"]


def test_tombstones_older_and_newer_than_retention(tmp_path):
    day = 86_400_000
    path = _write_log(tmp_path / "t", [
        _header(configuration={"delta.deletedFileRetentionDuration": "interval 2 days"})
        + [_add(f"{i}.parquet") for i in range(5)],
        [_info(1), _remove("0.parquet", ts=T0 - 10 * day), _remove("1.parquet", ts=T0 - day)],
        [_info(2), _remove("2.parquet", ts=T0), _remove("3.parquet", ts=None)],
    ])
    state = _check_everything(path)
    assert len(state.removes) == 4
    kept = sorted(r["path"] for r in state.tombstones_after(T0 - 2 * day).to_pylist())
    assert kept == ["1.parquet", "2.parquet", "3.parquet"]
    _same_checkpoints(path, ManualClock(T0))


def test_empty_commits_blank_lines_and_crlf(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header() + [_add("a.parquet")],
        [_info(1)],
        [],  # an empty file
        ["", _info(3), "   ", _add("b.parquet"), ""],
        [_info(4), _add("c.parquet")],
    ])
    _check_everything(path)
    crlf = _write_log(tmp_path / "crlf", [_header() + [_add("a.parquet")], [_info(1), _remove("a.parquet")],
                                          [_info(2), _add("b.parquet", tags={"k": "v"})]], newline="\r\n")
    _check_everything(crlf)


def test_adds_without_optional_or_defaulted_fields(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header(["d"]) + [
            {"add": {"path": "no-pv.parquet", "size": 1, "modificationTime": 1, "dataChange": True}},
            {"add": {"path": "null-pv.parquet", "partitionValues": None, "size": 1, "modificationTime": 1,
                     "dataChange": True}},
            {"add": {"path": "no-size.parquet", "partitionValues": {"d": "1"}, "modificationTime": 1,
                     "dataChange": True}},
            {"add": {"path": "null-size.parquet", "partitionValues": {"d": "1"}, "size": None,
                     "modificationTime": 1, "dataChange": True}},
            _add("pv-missing-key.parquet", {}),
            _add("pv-extra-key.parquet", {"d": "1", "e": "2"}),
            _add("dv-without-offset.parquet", {"d": "1"}, deletionVector={k: v for k, v in DV_A.items() if k != "offset"}),
            _add("dv-null.parquet", {"d": "1"}, deletionVector=None),
        ],
        [_info(1), {"remove": {"path": "no-pv.parquet"}}, _remove("null-pv.parquet", partitionValues=None)],
    ])
    _check_everything(path)


def test_partitioning_changes_within_the_segment(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header(["a"]) + [_add("a=1/x.parquet", {"a": "1"}), _add("a=2/y.parquet", {"a": "2"})],
        [_info(1)] + _header(["b"])[2:] + [
            _remove("a=1/x.parquet", partitionValues={"a": "1"}, extendedFileMetadata=True, size=100),
            _add("b=2024-01-01/z.parquet", {"b": "2024-01-01"})],
        [_info(2), _add("b=2024-01-02/w.parquet", {"b": "2024-01-02"})],
    ])
    state = _check_everything(path)
    assert _live_paths(state) == ["a=2/y.parquet", "b=2024-01-01/z.parquet", "b=2024-01-02/w.parquet"]


def test_lines_holding_two_actions_and_unknown_actions(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header() + [_add("a.parquet"), _add("b.parquet")],
        [_info(1),
         '{"commitInfo":{"operation":"X"},"add":' + json.dumps(_add("c.parquet")["add"]) + "}",
         '{"add":null,"remove":' + json.dumps(_remove("a.parquet")["remove"]) + "}",
         '{"someFutureAction":{"x":1}}',
         {"cdc": {"path": "_change_data/x.parquet", "partitionValues": {}, "size": 1, "dataChange": False}}],
    ])
    state = _check_everything(path)
    assert _live_paths(state) == ["b.parquet"]


def test_unicode_and_escapes_in_strings(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header(["d"]) + [
            _add("d=%E2%80%A8/a.parquet", {"d": "line\u2028sep"}, stats='{"numRecords":1,"minValues":{"d":"\\"q\\"\\n"}}'),
            _add("d=%F0%9F%98%80/b.parquet", {"d": "😀"}),
        ],
    ])
    _check_everything(path)


def test_many_commits_in_many_chunks(tmp_path):
    commits: list[list[Any]] = [_header(["d"])]
    for v in range(1, 60):
        lines: list[Any] = [_info(v)]
        lines += [_add(f"d={v % 3}/f-{v}-{i}.parquet", {"d": str(v % 3)}) for i in range(20)]
        if v % 7 == 0:
            lines += [_remove(f"d={(v - 1) % 3}/f-{v - 1}-{i}.parquet") for i in range(5)]
        if v % 11 == 0:
            lines += [_add(f"d={(v - 2) % 3}/f-{v - 2}-0.parquet", {"d": str((v - 2) % 3)}, size=v)]
        commits.append(lines)
    path = _write_log(tmp_path / "t", commits)
    storage = LocalStorage(path)
    segment = DeltaLog(path).segment()
    _compare(storage, path, segment)
    saved = arrow_commits.CHUNK_MIN_BYTES
    arrow_commits.CHUNK_MIN_BYTES = 10_000
    try:
        state = _compare(storage, path, segment, threads=4)
    finally:
        arrow_commits.CHUNK_MIN_BYTES = saved
    assert state.python_commits == () and state.python_lines == 0
    # 8 commits remove 5 files each; 5 commits re-add a file, one of them a removed one
    assert len(state.adds) == 59 * 20 - 8 * 5 + 1


def _statuses(sizes: list[int]) -> list[FileStatus]:
    return [FileStatus(f"{LOG_DIR}/{v:020d}.json", size, 0) for v, size in enumerate(sizes)]


def test_a_log_of_a_few_chunks_is_cut_in_one_chunk_per_cpu():
    """A log of more than CHUNK_MIN_BYTES but fewer chunks than CPUs: one chunk per CPU, each cut
    at the commit boundary nearest its share of the bytes; every commit in one chunk, in order."""
    mb = 1_000_000
    plan = arrow_commits._plan_chunks
    threads_of = arrow_commits.THREADS_PER_CPU  # threads per CPU: plan(..., 2 * threads_of) is 2 CPUs
    assert plan(_statuses([470_000] * 10), 2 * threads_of) == [(0, 5), (5, 10)]
    assert plan(_statuses([3 * mb, mb // 2, mb // 2, mb // 2, mb // 2]), 2 * threads_of) == [(0, 1), (1, 5)]
    assert plan(_statuses([mb // 2] * 12), 4 * threads_of) == [(0, 3), (3, 6), (6, 9), (9, 12)]
    assert plan(_statuses([5 * mb]), 2 * threads_of) == [(0, 1)]          # one commit: one chunk
    assert plan(_statuses([mb // 4] * 12), 2 * threads_of) == [(0, 12)]   # under CHUNK_MIN_BYTES: one chunk
    # as many chunks as CPUs at CHUNK_MIN_BYTES or more each: the plan as before, whole chunks
    # of CHUNK_MIN_BYTES or more
    big = plan(_statuses([mb // 2] * 20), 2 * threads_of)
    assert len(big) == 3 and big[0] == (0, 9) and big[-1][1] == 20
    # a streamed read's bound holds
    for lo, hi in plan(_statuses([470_000] * 10), 2 * threads_of, 3 * mb):
        assert sum([470_000] * (hi - lo)) <= 3 * mb


def test_a_log_cut_in_one_chunk_per_cpu_gives_the_state_of_one_chunk(tmp_path, monkeypatch):
    commits: list[list[Any]] = [_header(["d"])]
    for v in range(1, 12):
        commits.append([_info(v)] + [_add(f"d={v % 3}/f-{v}-{i}.parquet", {"d": str(v % 3)}) for i in range(30)]
                       + ([_remove(f"d={(v - 1) % 3}/f-{v - 1}-0.parquet")] if v > 1 else []))
    path = _write_log(tmp_path / "t", commits)
    storage = LocalStorage(path)
    segment = DeltaLog(path).segment()
    total = sum(st.size for st in segment.commits)
    one = _compare(storage, path, segment)
    # CHUNK_MIN_BYTES under the log's size, and its chunks fewer than the CPUs of 4 threads
    monkeypatch.setattr(arrow_commits, "CHUNK_MIN_BYTES", total * 2 // 3)
    assert len(arrow_commits._plan_chunks(segment.commits, 4)) == 2
    cut = _compare(storage, path, segment, threads=4)
    assert _live_paths(cut) == _live_paths(one) and len(one.adds) == 11 * 30 - 10


def test_broken_json_raises_what_the_python_replay_raises(tmp_path):
    path = _write_log(tmp_path / "t", [_header() + [_add("a.parquet")], [_info(1), '{"add": {"path": "b"']])
    storage = LocalStorage(path)
    segment = DeltaLog(path).segment()
    with pytest.raises(CorruptLogError) as python_error:
        Snapshot(storage, path, segment).state()
    with pytest.raises(CorruptLogError) as arrow_error:
        replay_segment(storage, path, segment)
    assert str(arrow_error.value) == str(python_error.value)


def test_a_commit_arrow_cannot_read_is_parsed_in_python(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header() + [_add("a.parquet")],
        [_info(1), _add("b.parquet", size=1.0)],  # a double where a long belongs
    ])
    states = _check_all_versions(path)
    assert states[-1].python_commits == (1,)


# --- checkpoints as the start of a segment -------------------------------------------------------

def _python_checkpoint(path: str, version: int, *, part_size: int | None = None) -> None:
    snapshot = DeltaLog(path).snapshot(version, check_read=False)
    write_checkpoint(LocalStorage(path), version, checkpoint_content(snapshot, T0), part_size=part_size,
                     now_ms=T0)


@pytest.mark.parametrize("part_size", [None, 3])
def test_segment_starting_at_our_classic_and_multipart_checkpoints(tmp_path, part_size):
    path = _write_log(tmp_path / "t", [
        _header(["d"]) + [_add(f"d={i % 2}/{i}.parquet", {"d": str(i % 2)}) for i in range(8)]
        + [{"txn": {"appId": "app", "version": 1}}],
        [_info(1), _remove("d=0/0.parquet", partitionValues={"d": "0"}, extendedFileMetadata=True, size=100),
         _add("d=1/1.parquet", {"d": "1"}, deletionVector=DV_A)],
        [_info(2), _add("d=0/0.parquet", {"d": "0"}), {"txn": {"appId": "app", "version": 2}}],
        [_info(3), _remove("d=1/3.parquet")],
    ])
    _python_checkpoint(path, 1, part_size=part_size)
    kinds = {s.checkpoint.kind for _, s in _segments(path) if s.checkpoint is not None}
    assert kinds == {"multipart" if part_size else "classic"}
    _check_everything(path)


# --- written checkpoints: Arrow path == Python path ------------------------------------------------

def _checkpoint_rows(path: str, files: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    table = pa.concat_tables([pq.read_table(os.path.join(path, f)) for f in files])
    assert table.schema == CHECKPOINT_SCHEMA
    out: dict[str, list[dict[str, Any]]] = {}
    for name in table.column_names:
        rows = [r for r in table.column(name).to_pylist() if r is not None]
        for r in rows:
            for key in ("partitionValues", "tags") + (("configuration",) if name == "metaData" else ()):
                if key in r:
                    r[key] = _map(r[key])
            if "format" in r:
                r["format"]["options"] = _map(r["format"]["options"])
        out[name] = _sorted(rows)
    return out


def _same_checkpoints(path: str, clock: ManualClock, part_size: int | None = None) -> None:
    """``checkpoint_table`` (Arrow) and the Python path write the same rows and parts."""
    python_copy = path + "-python"
    shutil.copytree(path, python_copy)
    ours = checkpoint_table(DeltaLog(path), clock=clock, part_size=part_size)
    snapshot = DeltaLog(python_copy).snapshot(check_read=False)
    theirs = write_checkpoint(LocalStorage(python_copy), snapshot.version,
                              checkpoint_content(snapshot, clock.now_ms()), part_size=part_size,
                              now_ms=clock.now_ms())
    assert ours.paths == theirs.paths
    assert ours.part_rows == theirs.part_rows
    assert (ours.num_actions, ours.num_add_files) == (theirs.num_actions, theirs.num_add_files)
    for a, b in zip(ours.paths, theirs.paths):
        assert _checkpoint_rows(path, (a,)) == _checkpoint_rows(python_copy, (b,))


@pytest.mark.parametrize("part_size", [None, 2])
def test_checkpoint_table_writes_what_the_python_path_writes(tmp_path, part_size):
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                "writerFeatures": ["deletionVectors", "domainMetadata"]}
    path = _write_log(tmp_path / "t", [
        _header(["d"], protocol=protocol) + [
            _add(f"d={i % 3}/{i}.parquet", {"d": str(i % 3) if i % 4 else None},
                 tags={"INSERTION_TIME": str(i)} if i % 2 else None) for i in range(9)]
        + [{"txn": {"appId": "app", "version": 1, "lastUpdated": T0}},
           {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": False}}],
        [_info(1), _remove("d=1/1.parquet", ts=T0 - 30 * 86_400_000), _remove("d=2/2.parquet", ts=T0),
         _add("d=0/3.parquet", {"d": "0"}, deletionVector=DV_B),
         {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": True}},
         {"domainMetadata": {"domain": "d2", "configuration": "{\"a\":1}", "removed": False}}],
    ])
    _same_checkpoints(path, ManualClock(T0 + 1000), part_size)


@pytest.mark.parametrize("name", [n for n in GOLDEN if n in {
    "dv_partitioned_checkpoint", "multipart_checkpoint", "domain_metadata_user_domains",
    "row_tracking_dv", "dv_cdf_shared_dv_file_dbr", "legacy_1_1_delta_0_1_0", "cm_name_partitioned"}])
def test_checkpoint_of_golden_table_writes_what_the_python_path_writes(name, golden_table):
    path = golden_table(name)
    state = DeltaLog(path).snapshot(check_read=False).state()
    stamps = [r.deletionTimestamp for r in state.tombstones.values() if r.deletionTimestamp]
    _same_checkpoints(path, ManualClock(max(stamps) + 1000 if stamps else T0))


def test_checkpoint_table_refusals_come_before_any_write(tmp_path):
    # (Was: delta.checkpointPolicy=v2, refused while only classic checkpoints were written; such
    # a table now gets a V2 checkpoint. A policy that is neither classic nor v2 is refused.)
    path = _write_log(tmp_path / "t", [
        _header(configuration={"delta.checkpointPolicy": "v3"},
                protocol={"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["v2Checkpoint"],
                          "writerFeatures": ["v2Checkpoint"]}) + [_add("a.parquet")],
    ])
    before = sorted(os.listdir(Path(path, LOG_DIR)))
    with pytest.raises(Exception) as refused:
        checkpoint_table(DeltaLog(path))
    assert getattr(refused.value, "error_class", None) == "DELTA_DOWNGRADE_INVALID_TABLE_PROPERTY"
    assert sorted(os.listdir(Path(path, LOG_DIR))) == before


def test_metadata_and_protocol_are_the_newest(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header() + [_add("a.parquet")],
        # one metaData per commit (PROTOCOL.md "Delta Log Entries"; two are refused, see
        # tests/unit/log/test_log_reader_edges.py)
        [_info(1), {"metaData": {**_header()[2]["metaData"], "configuration": {"k": "1"}}}],
        [_info(2), {"metaData": {**_header()[2]["metaData"], "configuration": {"k": "2"}}}],
        [_info(3), {"protocol": {"minReaderVersion": 1, "minWriterVersion": 3}}],
    ])
    state = _check_everything(path)
    assert state.metadata.configuration == {"k": "2"}
    assert state.protocol == ProtocolAction(1, 3)
    assert isinstance(state.metadata, Metadata)


def test_invalid_utf8_raises_what_the_python_replay_raises(tmp_path):
    path = _write_log(tmp_path / "t", [_header() + [_add("a.parquet")], [_info(1), _add("b.parquet")]])
    commit = Path(path, LOG_DIR, f"{1:020d}.json")
    commit.write_bytes(commit.read_bytes().replace(b"b.parquet", b"b\xff.parquet"))
    storage = LocalStorage(path)
    segment = DeltaLog(path).segment()
    with pytest.raises(CorruptLogError, match="utf-8"):
        Snapshot(storage, path, segment).state()
    with pytest.raises(CorruptLogError, match="utf-8"):
        replay_segment(storage, path, segment)


# --- random logs ----------------------------------------------------------------------------------

def _random_log(rng: random.Random) -> list[list[Any]]:
    names = ["a b", "a%20b", "c", "d=2024-01-01", "é", "x/y", "z"]
    dvs = [None, DV_A, DV_B, DV_I]
    values = ["1", None, "2024-01-01", "2024-01-01 10:00:00", "a b", ""]
    commits: list[list[Any]] = [_header(["p"]) + [{"txn": {"appId": "app", "version": 0}}]]
    for v in range(1, rng.randrange(2, 12)):
        lines: list[Any] = [_info(v) if rng.random() < 0.9 else
                            {"commitInfo": {"timestamp": str(v), "readVersion": "x"}}]
        for _ in range(rng.randrange(0, 12)):
            path = f"{rng.choice(names)}/{rng.randrange(4)}.parquet"
            dv = rng.choice(dvs)
            kind = rng.random()
            if kind < 0.5:
                extra: dict[str, Any] = {}
                if rng.random() < 0.3:
                    extra["tags"] = rng.choice([{}, {"k": "v"}, {"k": None}, {"t": "2024-01-01"}])
                if rng.random() < 0.2:
                    extra["baseRowId"] = rng.randrange(100)
                    extra["defaultRowCommitVersion"] = v
                lines.append(_add(path, {"p": rng.choice(values)}, deletionVector=dv, size=rng.randrange(1000),
                                  **extra))
            elif kind < 0.85:
                extra = {}
                if rng.random() < 0.5:
                    extra = {"extendedFileMetadata": True, "size": 5, "partitionValues": {"p": rng.choice(values)}}
                lines.append(_remove(path, ts=rng.choice([None, T0, T0 + v]), deletionVector=dv, **extra))
            elif kind < 0.92:
                lines.append({"txn": {"appId": rng.choice(["app", "other"]), "version": v,
                                      "lastUpdated": rng.choice([None, T0])}})
            elif kind < 0.97:
                lines.append({"domainMetadata": {"domain": rng.choice(["d1", "d2"]), "configuration": "{}",
                                                 "removed": rng.random() < 0.4}})
            else:
                lines.append("")
        rng.shuffle(lines)
        commits.append(lines)
    return commits


# ARROW_REPLAY_SEEDS=400 for a longer search (400 seeds passed when this was written)
@pytest.mark.parametrize("seed", range(int(os.environ.get("ARROW_REPLAY_SEEDS", "25"))))
def test_random_logs(tmp_path, seed):
    rng = random.Random(seed)
    path = _write_log(tmp_path / "t", _random_log(rng))
    _check_all_versions(path)
    _check_all_versions_small_chunks(path)
    if seed % 5 == 0:
        _python_checkpoint(path, DeltaLog(path).latest_version() // 2, part_size=rng.choice([None, 2]))
        _check_all_versions(path)
    if seed % 3 == 0:
        _same_checkpoints(path, ManualClock(T0 + 7 * 86_400_000 + 5), part_size=rng.choice([None, 3]))


# --- checkpoint_table: errors and fallbacks ---------------------------------------------------------

def test_checkpoint_table_falls_back_to_the_python_replay(tmp_path, monkeypatch):
    path = _write_log(tmp_path / "t", [_header() + [_add("a.parquet"), _add("b.parquet")],
                                       [_info(1), _remove("a.parquet")]])

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise pa.ArrowNotImplementedError("a shape the Arrow replay does not know")

    monkeypatch.setattr("delta_downgrade.log.replay.arrow_replay.replay_segment", broken)
    result = checkpoint_table(DeltaLog(path), clock=ManualClock(T0))
    rows = _checkpoint_rows(path, result.paths)
    assert [r["path"] for r in rows["add"]] == ["b.parquet"]
    assert [r["path"] for r in rows["remove"]] == ["a.parquet"]


def test_checkpoint_table_skips_an_unreadable_checkpoint_like_the_snapshot_does(tmp_path):
    path = _write_log(tmp_path / "t", [
        _header() + [_add("a.parquet"), _add("b.parquet")],
        [_info(1), _remove("a.parquet")],
        [_info(2), _add("c.parquet")],
        [_info(3), _add("d.parquet")],
    ])
    _python_checkpoint(path, 2)
    Path(path, LOG_DIR, f"{2:020d}.checkpoint.parquet").write_bytes(b"not parquet at all")
    result = checkpoint_table(DeltaLog(path), clock=ManualClock(T0))
    assert [r["path"] for r in _checkpoint_rows(path, result.paths)["add"]] == \
        ["b.parquet", "c.parquet", "d.parquet"]


def test_checkpoint_table_refuses_a_broken_log_for_its_protocol_first(tmp_path):
    # (Was: refused for delta.checkpointPolicy=v2, which is now written as a V2 checkpoint; a
    # writer feature this package does not know is refused the same way.)
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["fooBarWriter"]}
    path = _write_log(tmp_path / "t", [
        _header(protocol=protocol) + [_add("a.parquet")],
        [_info(1), '{"add": {"path": "b"'],
    ])
    with pytest.raises(Exception) as refused:
        checkpoint_table(DeltaLog(path))
    assert getattr(refused.value, "error_class", None) == "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE"
    fine = _write_log(tmp_path / "fine", [_header() + [_add("a.parquet")], [_info(1), '{"add": {"path": "b"']])
    with pytest.raises(CorruptLogError):
        checkpoint_table(DeltaLog(fine))
