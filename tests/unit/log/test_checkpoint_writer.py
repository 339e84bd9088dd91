"""Checkpoint writer (delta_downgrade.log.checkpoint.classic_writer) and _last_checkpoint
(delta_downgrade.log.format.last_checkpoint).

Real files only: checkpoints are written with LocalStorage into tmp_path and read back with
pyarrow; delta-rs (subprocess oracle) reads tables whose only history is our checkpoint; golden
checkpoints written by delta-spark give the reference schema and the reference hash partitioning.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.log.format import last_checkpoint as lc
from delta_downgrade.log.format.checkpoint_schema import CHECKPOINT_SCHEMA
from delta_downgrade.log.checkpoint.classic_writer import (
    DEFAULT_PART_SIZE,
    CheckpointContent,
    plan_num_parts,
    resolve_part_size,
    split_into_parts,
    write_checkpoint,
)
from delta_downgrade.log.format.file_names import (
    LAST_CHECKPOINT,
    classic_checkpoint_path,
    parse_log_file,
)
from delta_downgrade.log.checkpoint.spark_hash import (
    spark_murmur3_hash,
    spark_murmur3_hashes,
    spark_partition_of,
)
from delta_downgrade.protocol.actions import (
    AddFile,
    DeletionVectorDescriptor,
    DomainMetadata,
    Metadata,
    ProtocolAction,
    RemoveFile,
    Txn,
)
from delta_downgrade.storage.local import LocalStorage
from tests.checkpoint_support import (
    checkpoint_metadata,
    checkpoint_only_copy,
    replay_to_content,
)

# --- helpers -------------------------------------------------------------------------------------

DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1,
      "sizeInBytes": 36, "cardinality": 2}


def _content(n_adds: int = 3, n_removes: int = 1, **kw: Any) -> CheckpointContent:
    adds = [AddFile(path=f"part-{i:05d}.parquet", partitionValues={}, size=100 + i,
                    modificationTime=1700000000000 + i, dataChange=True,
                    stats=json.dumps({"numRecords": i})) for i in range(n_adds)]
    removes = [RemoveFile(path=f"gone-{i}.parquet", deletionTimestamp=1700000001000 + i,
                          dataChange=True, extendedFileMetadata=True, partitionValues={},
                          size=7) for i in range(n_removes)]
    base = dict(protocol=ProtocolAction(1, 2), metadata=checkpoint_metadata(), adds=adds, removes=removes)
    base.update(kw)
    return CheckpointContent(**base)


def _rows(root: Path | str, rel: str) -> list[dict[str, Any]]:
    return pq.read_table(os.path.join(str(root), rel)).to_pylist()


def _only(row: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The one non-null column of a checkpoint row."""
    present = [(k, v) for k, v in row.items() if v is not None]
    assert len(present) == 1, row
    return present[0]


def _as_map(value: Any) -> dict | None:
    return None if value is None else dict(value)


def _expected_add(a: AddFile) -> dict[str, Any]:
    dv = a.dv
    return {
        "path": a.path, "partitionValues": dict(a.partitionValues), "size": a.size,
        "modificationTime": a.modificationTime, "dataChange": False,
        "tags": None if a.tags is None else dict(a.tags),
        "deletionVector": None if dv is None else {
            "storageType": dv.storageType, "pathOrInlineDv": dv.pathOrInlineDv,
            "offset": dv.offset, "sizeInBytes": dv.sizeInBytes, "cardinality": dv.cardinality,
            "maxRowIndex": dv.maxRowIndex},
        "baseRowId": a.baseRowId, "defaultRowCommitVersion": a.defaultRowCommitVersion,
        "clusteringProvider": a.clusteringProvider, "stats": a.stats,
    }


def _normalise_row(kind: str, value: dict[str, Any]) -> dict[str, Any]:
    """pyarrow gives maps as lists of pairs; make them dicts for comparisons."""
    out = dict(value)
    for key in ("partitionValues", "tags", "configuration"):
        if key in out and not isinstance(out[key], str):
            out[key] = _as_map(out[key])
    if kind == "metaData":
        out["format"] = {**out["format"], "options": _as_map(out["format"]["options"])}
    return out


class RecordingStorage(LocalStorage):
    """LocalStorage that also records the order of its atomic writes (the writes are real)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self.writes: list[str] = []

    def write_atomic(self, rel_path: str, data: bytes) -> None:
        super().write_atomic(rel_path, data)
        self.writes.append(rel_path)

    def replace_hint(self, rel_path: str, data: bytes) -> None:
        super().replace_hint(rel_path, data)
        self.writes.append(rel_path)


# --- schema and values ---------------------------------------------------------------------------

def test_classic_checkpoint_round_trips_every_field(tmp_path):
    adds = [
        AddFile(path="p=a/f%201.parquet", partitionValues={"p": "a", "q": None}, size=10,
                modificationTime=1, stats='{"numRecords":3}', tags={"INSERTION_TIME": "1"},
                deletionVector=dict(DV), baseRowId=5, defaultRowCommitVersion=2,
                clusteringProvider="liquid"),
        AddFile(path="p=b/f2.parquet", partitionValues={"p": "b", "q": "1"}, size=11,
                modificationTime=2, stats=None,
                deletionVector=DeletionVectorDescriptor(
                    "i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 1,
                    maxRowIndex=9)),
    ]
    removes = [RemoveFile(path="p=c/old.parquet", deletionTimestamp=99, dataChange=True,
                          extendedFileMetadata=True, partitionValues={"p": "c", "q": None},
                          size=12, stats='{"numRecords":1}', tags={"t": "v"},
                          deletionVector=dict(DV, offset=None), baseRowId=1,
                          defaultRowCommitVersion=0),
               RemoveFile(path="legacy.parquet", deletionTimestamp=None, dataChange=False)]
    protocol = ProtocolAction(3, 7, ["deletionVectors"], ["deletionVectors", "rowTracking",
                                                          "domainMetadata"])
    metadata = checkpoint_metadata(name="t", description="d", partitionColumns=["p", "q"],
                         configuration={"delta.enableDeletionVectors": "true"},
                         format={"provider": "parquet", "options": {"k": "v"}})
    state = CheckpointContent(protocol, metadata, adds, removes,
                              txns=[Txn("app-1", 7, 1234), Txn("app-2", 1, None)],
                              domains=[DomainMetadata("delta.rowTracking",
                                                      '{"rowIdHighWaterMark":9}'),
                                       DomainMetadata("dropped", "{}", removed=True)])
    result = write_checkpoint(LocalStorage(tmp_path), 4, state)

    assert result.paths == (classic_checkpoint_path(4),)
    assert result.parts is None and result.checkpoint_kind == "classic"
    table = pq.read_table(tmp_path / classic_checkpoint_path(4))
    assert table.schema.names == ["txn", "add", "remove", "metaData", "protocol", "domainMetadata"]
    rows = [_only(r) for r in table.to_pylist()]
    kinds = [k for k, _ in rows]
    assert kinds == ["protocol", "metaData", "txn", "txn", "domainMetadata", "add", "add",
                     "remove", "remove"]
    assert result.num_actions == len(rows) == table.num_rows == 9
    values = [_normalise_row(k, v) for k, v in rows]

    assert values[0] == {"minReaderVersion": 3, "minWriterVersion": 7,
                         "readerFeatures": ["deletionVectors"],
                         "writerFeatures": ["deletionVectors", "rowTracking", "domainMetadata"]}
    assert values[1] == {"id": metadata.id, "name": "t", "description": "d",
                         "format": {"provider": "parquet", "options": {"k": "v"}},
                         "schemaString": metadata.schemaString, "partitionColumns": ["p", "q"],
                         "configuration": {"delta.enableDeletionVectors": "true"},
                         "createdTime": metadata.createdTime}
    assert values[2] == {"appId": "app-1", "version": 7, "lastUpdated": 1234}
    assert values[3] == {"appId": "app-2", "version": 1, "lastUpdated": None}
    # removed=true domains are tombstones: not part of a checkpoint
    assert values[4] == {"domain": "delta.rowTracking", "configuration": '{"rowIdHighWaterMark":9}',
                         "removed": False}
    assert values[5] == _expected_add(adds[0])
    assert values[6] == _expected_add(adds[1])
    # remove: no stats/tags in checkpoints, dataChange false like delta-spark
    assert values[7] == {"path": "p=c/old.parquet", "deletionTimestamp": 99, "dataChange": False,
                         "extendedFileMetadata": True, "partitionValues": {"p": "c", "q": None},
                         "size": 12, "deletionVector": {**DV, "offset": None, "maxRowIndex": None},
                         "baseRowId": 1, "defaultRowCommitVersion": 0}
    assert values[8] == {"path": "legacy.parquet", "deletionTimestamp": None, "dataChange": False,
                         "extendedFileMetadata": None, "partitionValues": None, "size": None,
                         "deletionVector": None, "baseRowId": None,
                         "defaultRowCommitVersion": None}


def test_protocol_without_feature_lists_writes_nulls(tmp_path):
    write_checkpoint(LocalStorage(tmp_path), 0, _content(0, 0))
    rows = [_only(r) for r in _rows(tmp_path, classic_checkpoint_path(0))]
    assert rows[0] == ("protocol", {"minReaderVersion": 1, "minWriterVersion": 2,
                                    "readerFeatures": None, "writerFeatures": None})
    assert [k for k, _ in rows] == ["protocol", "metaData"]


def test_fields_in_extra_are_not_written(tmp_path):
    """The checkpoint schema is fixed: unknown fields kept in ``extra`` stay in the JSON log."""
    add = AddFile.from_obj({"path": "a.parquet", "partitionValues": {}, "size": 1,
                            "modificationTime": 1, "dataChange": True, "futureField": {"x": 1}})
    assert add.extra == {"futureField": {"x": 1}}
    md = Metadata.from_obj({**checkpoint_metadata().to_obj(), "futureMeta": "x"})
    state = _content(0, 0, adds=[add], metadata=md)
    write_checkpoint(LocalStorage(tmp_path), 1, state)
    table = pq.read_table(tmp_path / classic_checkpoint_path(1))
    assert table.schema.equals(CHECKPOINT_SCHEMA)
    assert _normalise_row(*_only(table.to_pylist()[2])) == _expected_add(add)


def test_schema_matches_delta_spark_golden_checkpoint(golden_root, tmp_path):
    """Our parquet schema equals delta-spark's (classic_checkpoint golden, Spark 3.5.1 / Delta
    3.1.0) column for column and field for field, nested names included."""
    write_checkpoint(LocalStorage(tmp_path), 0, _content())
    ours = pq.ParquetFile(tmp_path / classic_checkpoint_path(0)).schema_arrow
    golden = pq.ParquetFile(golden_root / "classic_checkpoint/_delta_log/"
                            "00000000000000000002.checkpoint.parquet").schema_arrow
    assert _skeleton_schema(ours) == _skeleton_schema(golden)


def _skeleton(t: pa.DataType) -> Any:
    """A type without the names pyarrow and parquet-mr give to map entries / list items."""
    if pa.types.is_struct(t):
        return {"struct": [(f.name, _skeleton(f.type)) for f in t]}
    if pa.types.is_map(t):
        return {"map": (_skeleton(t.key_type), _skeleton(t.item_type))}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"list": _skeleton(t.value_type)}
    return str(t)


def _skeleton_schema(schema: pa.Schema) -> list:
    return [(f.name, _skeleton(f.type)) for f in schema]


def _diff(ours: Any, theirs: Any, path: str, out: list[str]) -> None:
    if isinstance(ours, dict) and isinstance(theirs, dict) and ours.keys() == theirs.keys():
        (kind,) = ours.keys()
        if kind == "struct":
            a, b = dict(ours[kind]), dict(theirs[kind])
            for name in b.keys() - a.keys():
                out.append(f"extra in golden: {path}.{name}: {b[name]}")
            for name in a.keys() - b.keys():
                out.append(f"missing in golden: {path}.{name}")
            for name in a.keys() & b.keys():
                _diff(a[name], b[name], f"{path}.{name}", out)
            return
        if kind == "map":
            _diff(ours[kind][0], theirs[kind][0], path + ".key", out)
            _diff(ours[kind][1], theirs[kind][1], path + ".value", out)
            return
        _diff(ours[kind], theirs[kind], path + ".element", out)
        return
    if ours != theirs:
        out.append(f"TYPE MISMATCH {path}: ours {ours} golden {theirs}")


def test_schema_compatible_with_all_golden_checkpoints(golden_root):
    """For every golden checkpoint parquet file: every column and field both have must have the
    same type. Differences in presence are printed (golden files may hold ``commitInfo``,
    ``checkpointMetadata``, ``sidecar``, or lack newer fields)."""
    ours = dict(_skeleton_schema(CHECKPOINT_SCHEMA))
    mismatches: list[str] = []
    files = sorted(golden_root.glob("*/_delta_log/*.checkpoint*.parquet"))
    files += sorted(golden_root.glob("*/_delta_log/_sidecars/*.parquet"))
    assert files
    for f in files:
        theirs = dict(_skeleton_schema(pq.ParquetFile(f).schema_arrow))
        notes: list[str] = []
        for col in ours.keys() & theirs.keys():
            _diff(ours[col], theirs[col], col, notes)
        for col in theirs.keys() - ours.keys():
            notes.append(f"extra column in golden: {col}")
        if notes:
            print(f"{f.relative_to(golden_root)}:\n  " + "\n  ".join(sorted(notes)))
        mismatches += [n for n in notes if n.startswith("TYPE MISMATCH")]
    assert not mismatches, mismatches


# --- multi-part ----------------------------------------------------------------------------------

def test_multipart_split_parts_are_complete_and_union_is_the_state(tmp_path):
    state = _content(n_adds=8, n_removes=2, txns=[Txn("a", 1, 2)])
    storage = RecordingStorage(tmp_path)
    result = write_checkpoint(storage, 5, state, part_size=3)   # ceil(10 file actions / 3) = 4

    assert result.parts == 4 and result.checkpoint_kind == "multipart"
    names = [parse_log_file(p) for p in result.paths]
    assert [(n.version, n.part, n.num_parts) for n in names] == [(5, i, 4) for i in range(1, 5)]
    seen: list[tuple[str, Any]] = []
    sizes = 0
    for i, path in enumerate(result.paths):
        table = pq.read_table(tmp_path / path)         # each part is a full parquet file
        assert table.schema.equals(CHECKPOINT_SCHEMA)
        assert table.num_rows == result.part_rows[i]
        rows = [_only(r) for r in table.to_pylist()]
        for kind, value in rows:
            if kind in ("add", "remove"):
                assert spark_partition_of(value["path"], 4) == i   # Spark's clustering
            else:
                assert spark_partition_of(None, 4) == i == 42 % 4  # null key: all non-file rows
        seen += rows
        sizes += (tmp_path / path).stat().st_size
    assert sorted(v["path"] for k, v in seen if k == "add") == sorted(a.path for a in state.adds)
    assert sorted(v["path"] for k, v in seen if k == "remove") == \
        sorted(r.path for r in state.removes)
    assert sorted(k for k, _ in seen if k not in ("add", "remove")) == \
        ["metaData", "protocol", "txn"]
    assert result.num_actions == len(seen) == 13

    # _last_checkpoint comes last, after every part
    assert storage.writes == [*result.paths, LAST_CHECKPOINT]
    info = json.loads((tmp_path / LAST_CHECKPOINT).read_text())
    assert info == {"version": 5, "size": 13, "parts": 4, "sizeInBytes": sizes,
                    "numOfAddFiles": 8, "checksum": lc.checksum(info)}


def test_multipart_parts_may_be_empty_but_are_still_written(tmp_path):
    # three paths that all hash to part 1 of 3 (where protocol and metadata go too: 42 % 3 == 0)
    paths = [p for p in (f"f{i}.parquet" for i in range(200)) if spark_partition_of(p, 3) == 0][:3]
    adds = [AddFile(path=p, partitionValues={}, size=1, modificationTime=1) for p in paths]
    result = write_checkpoint(LocalStorage(tmp_path), 3, _content(adds=adds, removes=[]),
                              part_size=1)
    assert result.parts == 3
    assert result.part_rows == (5, 0, 0)
    for path in result.paths[1:]:
        empty = pq.read_table(tmp_path / path)
        assert empty.num_rows == 0 and empty.schema.equals(CHECKPOINT_SCHEMA)


def test_part_size_resolution():
    md = checkpoint_metadata()
    assert resolve_part_size(md) == DEFAULT_PART_SIZE
    assert resolve_part_size(md, 10) == 10
    assert resolve_part_size(checkpoint_metadata(configuration={"delta.checkpoint.partSize": "25"})) == 25
    assert resolve_part_size(checkpoint_metadata(configuration={"delta.checkpoint.partSize": "x"})) \
        == DEFAULT_PART_SIZE
    assert resolve_part_size(checkpoint_metadata(configuration={"delta.checkpoint.partSize": "25"}), 3) == 3
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError):
            resolve_part_size(md, bad)


def test_part_size_from_table_property(tmp_path):
    state = _content(n_adds=5, n_removes=0,
                     metadata=checkpoint_metadata(configuration={"delta.checkpoint.partSize": "2"}))
    result = write_checkpoint(LocalStorage(tmp_path), 0, state)
    assert result.parts == 3


def test_number_of_parts_counts_file_actions_like_delta_spark():
    # numParts = ceil((numFiles + numRemoves) / partSize); protocol/metadata/txns do not count
    state = _content(n_adds=6, n_removes=0, txns=[Txn("a", 1, 1)] * 3)
    assert plan_num_parts(state, 3) == 2
    assert plan_num_parts(state, 6) == 1
    assert plan_num_parts(_content(0, 0), 1) == 1


def test_no_multipart_for_v2_checkpoint_tables(tmp_path):
    """PROTOCOL.md: multi-part checkpoints are forbidden when v2Checkpoint is supported; a
    classic V1 checkpoint is always allowed."""
    protocol = ProtocolAction(3, 7, ["v2Checkpoint"], ["v2Checkpoint"])
    result = write_checkpoint(LocalStorage(tmp_path), 3, _content(10, 0, protocol=protocol),
                              part_size=2)
    assert result.parts is None and result.paths == (classic_checkpoint_path(3),)


# --- Spark hash partitioning ---------------------------------------------------------------------

def test_hash_partitioning_reproduces_delta_spark_multipart_golden(golden_root):
    """The golden multipart checkpoint (delta-spark 3.1.0, 2 parts): every row sits in the part
    our hash gives, both with the scalar and the vectorised hash."""
    parts = sorted((golden_root / "multipart_checkpoint/_delta_log").glob("*.checkpoint.*.parquet"))
    assert len(parts) == 2
    paths_by_part: dict[int, list[str | None]] = {}
    for f in parts:
        lf = parse_log_file(f.name)
        rows = pq.read_table(f).to_pylist()
        paths_by_part[lf.part - 1] = [
            (r["add"] or {}).get("path") or (r["remove"] or {}).get("path") for r in rows]
    n_files = 0
    for index, keys in paths_by_part.items():
        for key in keys:
            assert spark_partition_of(key, 2) == index, key
        files = [k for k in keys if k is not None]
        n_files += len(files)
        assert [h % 2 for h in spark_murmur3_hashes(files)] == [index] * len(files)
    assert n_files == 10


def test_vectorised_hash_equals_scalar_hash():
    rng = random.Random(7)
    alphabet = "abcXYZ019/=-_.%~ é€😀\u0000"
    values = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 45))) for _ in range(2000)]
    values += ["", "a", "ab", "abc", "abcd", "abcde", "\u00ff", "\u0080x"]
    assert spark_murmur3_hashes(values) == [spark_murmur3_hash(v.encode("utf-8")) for v in values]
    assert spark_murmur3_hashes([]) == []
    assert all(-2**31 <= h < 2**31 for h in spark_murmur3_hashes(values))


def test_split_into_parts_is_deterministic():
    state = _content(n_adds=50, n_removes=10)
    a = split_into_parts(state, 4)
    b = split_into_parts(state, 4)
    assert [[x.path for x in p.adds] for p in a] == [[x.path for x in p.adds] for p in b]
    assert sum(p.num_rows for p in a) == state.num_actions


# --- _last_checkpoint ----------------------------------------------------------------------------

def test_last_checkpoint_written_last_and_never_moved_backwards(tmp_path):
    storage = RecordingStorage(tmp_path)
    r5 = write_checkpoint(storage, 5, _content())
    assert r5.last_checkpoint_updated
    assert storage.writes == [classic_checkpoint_path(5), LAST_CHECKPOINT]
    assert lc.read_last_checkpoint(storage)["version"] == 5

    r3 = write_checkpoint(storage, 3, _content())
    assert not r3.last_checkpoint_updated
    assert (tmp_path / classic_checkpoint_path(3)).exists()        # the checkpoint is written
    assert lc.read_last_checkpoint(storage)["version"] == 5        # the pointer is not moved
    assert storage.writes[-1] == classic_checkpoint_path(3)

    r5b = write_checkpoint(storage, 5, _content(n_adds=4))          # same version: rewritten
    assert r5b.last_checkpoint_updated
    assert lc.read_last_checkpoint(storage)["numOfAddFiles"] == 4

    r7 = write_checkpoint(storage, 7, _content(), update_last_checkpoint=False)
    assert not r7.last_checkpoint_updated
    assert lc.read_last_checkpoint(storage)["version"] == 5


def test_last_checkpoint_fields(tmp_path):
    result = write_checkpoint(LocalStorage(tmp_path), 2, _content(n_adds=3, n_removes=1))
    raw = (tmp_path / LAST_CHECKPOINT).read_text()
    info = json.loads(raw)
    assert "\n" not in raw
    assert info == {"version": 2, "size": 6, "sizeInBytes":
                    (tmp_path / classic_checkpoint_path(2)).stat().st_size,
                    "numOfAddFiles": 3, "checksum": lc.checksum(info)}
    assert result.last_checkpoint_info() == {k: v for k, v in info.items() if k != "checksum"}


def test_json_checksum_spec_example():
    """The example of PROTOCOL.md "JSON checksum"."""
    text = ('{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", '
            '[1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}')
    info = lc._parse(text)
    assert lc.canonical_json(info) == (
        '"k0"="%27v%200%27","k1"+"k2"=2,"k1"+"k3"+0="v3","k1"+"k3"+1+0=1,"k1"+"k3"+1+1=2,'
        '"k1"+"k3"+2+"k4"="v4","k1"+"k3"+2+"k5"+0="v5","k1"+"k3"+2+"k5"+1="v6",'
        '"k1"+"k3"+2+"k5"+2="v7"')
    assert lc.checksum(info) == "6a92d155a59bf2eecbd4b4ec7fd1f875"


def test_json_checksum_matches_every_golden_last_checkpoint(golden_root):
    checked = 0
    for f in sorted(golden_root.glob("*/_delta_log/_last_checkpoint")):
        text = f.read_text()
        if '"checksum"' not in text:
            continue
        assert lc.checksum(lc._parse(text)) == json.loads(text)["checksum"], f
        assert lc.parse_last_checkpoint(text) is not None
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("content", [
    b"", b"   \n", b"not json", b"[1, 2]", b'{"size": 3}', b'{"version": -1}',
    b'{"version": "3"}', b'{"version": 3, "version": 4}', b'{"version": 1.5}',
    b'{"version": 3, "checksum": "00000000000000000000000000000000"}', b"\xff\xfe",
    b'{"version": 3, "size": 4',
])
def test_untrustworthy_last_checkpoint_reads_as_none(tmp_path, content):
    storage = LocalStorage(tmp_path)
    storage.write_atomic(LAST_CHECKPOINT, content)
    assert lc.read_last_checkpoint(storage) is None


def test_missing_last_checkpoint_reads_as_none_and_is_then_written(tmp_path):
    storage = LocalStorage(tmp_path)
    assert lc.read_last_checkpoint(storage) is None
    storage.write_atomic(LAST_CHECKPOINT, b"garbage")              # corrupt pointer: replaced
    assert lc.write_last_checkpoint(storage, {"version": 1, "size": 2})
    assert lc.read_last_checkpoint(storage) == {"version": 1, "size": 2,
                                                "checksum": lc.checksum({"version": 1, "size": 2})}


def test_last_checkpoint_without_checksum_is_accepted(tmp_path):
    storage = LocalStorage(tmp_path)
    lc.write_last_checkpoint(storage, {"version": 4, "size": 9, "parts": None}, with_checksum=False)
    assert (tmp_path / LAST_CHECKPOINT).read_bytes() == b'{"version":4,"size":9}'
    assert lc.read_last_checkpoint(storage) == {"version": 4, "size": 9}
    with pytest.raises(ValueError):
        lc.write_last_checkpoint(storage, {"size": 9})


def test_write_rejects_bad_version(tmp_path):
    for bad in (-1, True, "3"):
        with pytest.raises(ValueError):
            write_checkpoint(LocalStorage(tmp_path), bad, _content())


# --- delta-rs reads tables whose only history is our checkpoint ----------------------------------


# --- golden tables: replay the JSON log, checkpoint, drop the log, compare data -----------------


def test_checkpoint_of_golden_dv_table_keeps_dv_descriptors(golden_table, tmp_path):
    src = golden_table("dv_partitioned_checkpoint")
    _, state = replay_to_content(Path(src))
    assert any(a.deletionVector for a in state.adds)
    result = checkpoint_only_copy(src, tmp_path / "copy", None)
    rows = [_only(r) for r in _rows(tmp_path / "copy", result.paths[0])]
    got = {v["path"]: v for k, v in rows if k == "add"}
    for a in state.adds:
        assert _normalise_row("add", got[a.path]) == _expected_add(a)
