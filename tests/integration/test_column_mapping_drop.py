"""DROP FEATURE columnMapping on PySpark (rewrite/column_mapping.py), checked against delta-rs.

For every column-mapping golden table: delta-rs' pyarrow path (which reads physical names left
under a protocol without columnMapping as all NULL) must return, after the drop, exactly the rows
delta-rs' kernel scan returned before it; the protocol must be the minimum for the remaining
features plus checkpointProtection; no trace of column mapping may be left in the schema, the
configuration, the data files (names, field ids), partition values or stats.
"""

from __future__ import annotations

import json
import os

from msgspec.structs import replace
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.protocol.actions import AddFile
from delta_downgrade.errors import FeatureDropError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.app.render.inspect import inspect_document
from delta_downgrade.operations.inspect import inspect_table
from delta_downgrade.protocol import Protocol
from delta_downgrade.rewrite.column_mapping import (
    COLUMN_MAPPING_FIELD_KEYS, INVALID_NAMES_ERROR, remove_column_mapping,
)
from delta_downgrade.rewrite.physical_schema import iter_named_fields
from delta_downgrade_tools.builders import TableBuilder
from oracle import same_rows
from tests.logging_support import drop_steps

LEGACY_2_5_AFTER = {"minReaderVersion": 1, "minWriterVersion": 7, "readerFeatures": None,
                    "writerFeatures": ["appendOnly", "changeDataFeed", "checkConstraints",
                                       "checkpointProtection", "generatedColumns", "invariants"]}

# table -> (protocol after the drop, whether the pyarrow path can read it afterwards)
GOLDEN = {
    "cm_name_renamed_column": (LEGACY_2_5_AFTER, True),
    "cm_id_basic": (LEGACY_2_5_AFTER, True),
    "cm_id_nested_all_types": (LEGACY_2_5_AFTER, True),
    "cm_name_partitioned": (LEGACY_2_5_AFTER, True),
    "cm_id_timestamp_ntz": ({"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["timestampNtz"],
                             "writerFeatures": ["checkpointProtection", "timestampNtz"]}, True),
    # deletionVectors stays a reader feature, which the pyarrow path refuses: compare scans.
    "cm_name_enabled_late_dbr": ({"minReaderVersion": 3, "minWriterVersion": 7,
                                  "readerFeatures": ["deletionVectors"],
                                  "writerFeatures": ["appendOnly", "changeDataFeed", "checkConstraints",
                                                     "checkpointProtection", "deletionVectors",
                                                     "generatedColumns", "invariants"]}, False),
    "dv_cm_name_checkpoint": ({"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                               "writerFeatures": ["checkpointProtection", "deletionVectors"]}, False),
}


def _commit_actions(path: str, version: int) -> list[dict]:
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _commits_with(path: str, operation: str) -> list[int]:
    out = []
    for name in sorted(os.listdir(os.path.join(path, "_delta_log"))):
        if name.endswith(".json") and name[:20].isdigit():
            info = next((a["commitInfo"] for a in _commit_actions(path, int(name[:20])) if "commitInfo" in a), {})
            if info.get("operation") == operation:
                out.append(int(name[:20]))
    return out


def _arrow_names_and_ids(t: pa.DataType, names: list[str], ids: list[bytes]) -> None:
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            f = t.field(i)
            names.append(f.name)
            if f.metadata and b"PARQUET:field_id" in f.metadata:
                ids.append(f.metadata[b"PARQUET:field_id"])
            _arrow_names_and_ids(f.type, names, ids)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        _arrow_names_and_ids(t.value_type, names, ids)
    elif pa.types.is_map(t):
        _arrow_names_and_ids(t.key_type, names, ids)
        _arrow_names_and_ids(t.item_type, names, ids)


def assert_no_column_mapping_left(path: str) -> None:
    snapshot = DeltaLog(path).snapshot()
    conf = snapshot.metadata.configuration
    assert "delta.columnMapping.mode" not in conf and "delta.columnMapping.maxColumnId" not in conf
    logical: set[str] = set()
    for _, f in iter_named_fields(snapshot.schema):
        logical.add(f["name"])
        assert not set(f.get("metadata") or {}) & set(COLUMN_MAPPING_FIELD_KEYS), f
    partition_columns = set(snapshot.metadata.partitionColumns)
    for add in snapshot.state().files.values():
        assert set(add.partitionValues) == partition_columns
        # Every file sits under `<logical name>=<value>/` directories, none named by a physical
        # name: readers that take partition values from such paths (Polars) refuse a column the
        # table does not have, and read NULL without one.
        hive_names = {d.split("=", 1)[0] for d in add.decoded_path.split("/")[:-1] if "=" in d}
        assert hive_names == partition_columns, (add.path, hive_names)
        schema = pq.read_schema(os.path.join(path, add.decoded_path))
        names: list[str] = []
        ids: list[bytes] = []
        for f in schema:
            names.append(f.name)
            if f.metadata and b"PARQUET:field_id" in f.metadata:
                ids.append(f.metadata[b"PARQUET:field_id"])
            _arrow_names_and_ids(f.type, names, ids)
        assert ids == [], f"{add.path} still carries parquet field ids"
        assert {n for n in names if n not in ("element", "key", "value")} <= logical, (add.path, names)
        if add.stats:
            stats = json.loads(add.stats)
            for key in ("minValues", "maxValues", "nullCount"):
                assert set(stats.get(key, {})) <= logical, (add.path, key, stats.get(key))
    doc = inspect_document(inspect_table(path))
    assert "columnMapping" not in {f["name"] for f in doc["features"]}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_drop_column_mapping_golden(name, golden_table, spark, oracle):
    path = golden_table(name)
    expected_protocol, pyarrow_readable = GOLDEN[name]
    before_version = DeltaLog(path).latest_version()
    before_state = DeltaLog(path).snapshot().state()
    before_dvs = sorted(f.dv.unique_id for f in before_state.files.values() if f.dv is not None)
    expected = oracle.scan_rows(path)
    assert expected.ok, expected.error

    outcome = drop_feature(path, "columnMapping")

    assert outcome.status == "dropped"
    assert oracle.protocol(path).unwrap() == expected_protocol
    after = oracle.pyarrow_rows(path) if pyarrow_readable else oracle.scan_rows(path)
    assert same_rows(expected, after), (expected.value, after.value if after.ok else after.error)
    assert_no_column_mapping_left(path)

    # One REMOVE COLUMN MAPPING commit with the metadata, the removes and the adds.
    [version] = _commits_with(path, "REMOVE COLUMN MAPPING")
    assert version == before_version + 1
    actions = _commit_actions(path, version)
    removes = [a["remove"] for a in actions if "remove" in a]
    adds = [a["add"] for a in actions if "add" in a]
    assert sum("metaData" in a for a in actions) == 1
    assert all(r["dataChange"] is False for r in removes) and all(a["dataChange"] is False for a in adds)
    assert len(adds) == len(before_state.files)
    # Deletion vectors index rows of the rewritten files: they are carried over unchanged.
    after_state = DeltaLog(path).snapshot().state()
    assert sorted(f.dv.unique_id for f in after_state.files.values() if f.dv is not None) == before_dvs


def test_dv_table_keeps_deleted_rows_deleted(golden_table, spark, oracle):
    """dv_cm_name_checkpoint: rows a DV deletes differ from those it keeps, so a reordered
    rewrite would show up as different rows; the DV count and the row count stay."""
    path = golden_table("dv_cm_name_checkpoint")
    before = oracle.scan_rows(path).unwrap()
    state = DeltaLog(path).snapshot().state()
    deleted = sum(f.dv.cardinality for f in state.files.values() if f.dv is not None)
    physical = sum(f.num_records or 0 for f in state.files.values())
    assert deleted > 0 and physical - deleted == len(before)
    drop_feature(path, "columnMapping")
    assert same_rows(before, oracle.scan_rows(path))
    after_state = DeltaLog(path).snapshot().state()
    assert sum(f.num_records or 0 for f in after_state.files.values()) == physical
    assert sum(f.dv.cardinality for f in after_state.files.values() if f.dv is not None) == deleted


def test_iceberg_compat_v2_blocks_the_drop(golden_table):
    path = golden_table("cm_id_iceberg_compat_v2")
    version = DeltaLog(path).latest_version()
    with pytest.raises(FeatureDropError) as info:
        drop_feature(path, "columnMapping")
    assert info.value.error_class == "DELTA_FEATURE_DROP_DEPENDENT_FEATURE"
    assert DeltaLog(path).latest_version() == version


def _field(name: str, type_: object, physical: str, cid: int) -> dict:
    return {"name": name, "type": type_, "nullable": True,
            "metadata": {"delta.columnMapping.id": cid, "delta.columnMapping.physicalName": physical}}


def test_invalid_column_name_is_refused_and_nothing_written(tmp_path):
    path = str(tmp_path / "t")
    builder = TableBuilder(path)
    schema = {"type": "struct", "fields": [_field("a b", "integer", "col-1", 1), _field("c", "string", "col-2", 2)]}
    builder.create(pa.schema([("col-1", pa.int32()), ("col-2", pa.string())]), protocol=Protocol(2, 5),
                   configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"},
                   delta_schema=schema, rows=[{"col-1": 1, "col-2": "x"}])
    files_before = sorted(os.listdir(path))
    with pytest.raises(FeatureDropError) as info:
        drop_feature(path, "columnMapping")
    assert info.value.error_class == INVALID_NAMES_ERROR
    assert info.value.sqlstate == "42K05"
    assert "a b" in info.value.message
    assert DeltaLog(path).latest_version() == 0
    assert sorted(os.listdir(path)) == files_before


def _evolved_name_mode_table(path: str) -> TableBuilder:
    """Name mode, created with physical == logical names (as after SET mode=name on an old table):
    file 1 needs no rewrite; then a column is dropped, one is renamed and one is added; file 2 holds
    the dropped column, file 3 the added one under its uuid-style physical name; s is a struct."""
    builder = TableBuilder(path)
    s_type = {"type": "struct", "fields": [_field("x", "integer", "x", 3)]}
    v0 = {"type": "struct", "fields": [_field("id", "long", "id", 1), _field("s", s_type, "s", 2),
                                       _field("gone", "string", "gone", 4)]}
    arrow_v0 = pa.schema([("id", pa.int64()), ("s", pa.struct([("x", pa.int32())])), ("gone", pa.string())])
    builder.create(arrow_v0, protocol=Protocol(2, 5), delta_schema=v0,
                   configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "4"},
                   rows=[{"id": 2, "s": {"x": 20}, "gone": "dropped later"}])
    builder.append(pa.table({"id": pa.array([1], pa.int64()), "s": pa.array([{"x": 10}], arrow_v0.field("s").type),
                             "gone": pa.array(["kept in the file"])}))
    # v2: drop `gone`, rename s.x -> s.renamed, add `added` (physical col-added-uuid)
    snapshot = builder.log.snapshot(check_read=False)
    s2 = {"type": "struct", "fields": [_field("renamed", "integer", "x", 3)]}
    v2 = {"type": "struct", "fields": [_field("id", "long", "id", 1), _field("s", s2, "s", 2),
                                       _field("added", "string", "col-added-uuid", 5)]}
    md = snapshot.metadata.with_configuration({"delta.columnMapping.maxColumnId": "5"})
    builder.set_metadata(replace(md, schemaString=json.dumps(v2)))
    return builder


def test_evolved_schema_missing_dropped_and_renamed_columns(tmp_path, spark, oracle):
    path = str(tmp_path / "t")
    builder = _evolved_name_mode_table(path)
    builder.append(pa.table({"id": pa.array([3], pa.int64()),
                             "s": pa.array([{"x": 30}], pa.struct([("x", pa.int32())])),
                             "col-added-uuid": pa.array(["new"])}))
    expected = oracle.scan_rows(path).unwrap()
    assert sorted(expected, key=lambda r: r["id"]) == [
        {"id": 1, "s": {"renamed": 10}, "added": None},
        {"id": 2, "s": {"renamed": 20}, "added": None},
        {"id": 3, "s": {"renamed": 30}, "added": "new"}]
    drop_feature(path, "columnMapping")
    assert same_rows(expected, oracle.pyarrow_rows(path))
    assert_no_column_mapping_left(path)
    for add in DeltaLog(path).snapshot().state().files.values():
        names = pq.read_schema(os.path.join(path, add.decoded_path)).names
        assert "gone" not in names


def test_a_logical_file_under_a_physical_partition_directory_moves_to_the_logical_one(tmp_path, spark, oracle):
    """A file whose columns already carry the logical names (and no field ids), but which sits in
    a directory named by the physical column (``col-p=x/``), is rewritten under ``p=x/``: once the
    mapping is gone, readers that take partition values from Hive-style paths would find a column
    the table lacks there."""
    path = str(tmp_path / "t")
    builder = TableBuilder(path)
    schema = {"type": "struct", "fields": [_field("id", "long", "id", 1), _field("v", "string", "v", 2),
                                           _field("p", "string", "col-p", 3)]}
    builder.create(pa.schema([("id", pa.int64()), ("v", pa.string()), ("col-p", pa.string())]),
                   partition_columns=["col-p"], protocol=Protocol(2, 5), delta_schema=schema,
                   configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "3"},
                   rows=[{"id": 1, "v": "a", "col-p": "x"}])
    # the log keys partitionColumns by logical name
    snapshot = builder.log.snapshot(check_read=False)
    builder.set_metadata(replace(snapshot.metadata, partitionColumns=["p"]))
    kept = next(iter(DeltaLog(path).snapshot().state().files.values())).path
    expected = oracle.scan_rows(path).unwrap()
    assert expected == [{"id": 1, "v": "a", "p": "x"}]
    assert kept.startswith(("col-p=x/", "col-p%3Dx/"))  # as the builder escaped it
    drop_feature(path, "columnMapping")
    files = list(DeltaLog(path).snapshot().state().files.values())
    assert len(files) == 1 and files[0].path.startswith("p=x/")
    assert files[0].partitionValues == {"p": "x"}
    assert same_rows(expected, oracle.pyarrow_rows(path))
    [version] = _commits_with(path, "REMOVE COLUMN MAPPING")
    assert [a["remove"]["path"] for a in _commit_actions(path, version) if "remove" in a] == [kept]


def test_dry_run_plans_and_writes_nothing(golden_table):
    path = golden_table("cm_id_nested_all_types")
    listing = sorted(os.listdir(path))
    with drop_steps() as messages:
        outcome = drop_feature(path, "columnMapping", committer=PlanRecorder())
    assert outcome.status == "planned"
    assert DeltaLog(path).latest_version() == 0
    assert sorted(os.listdir(path)) == listing
    assert any("2 of 2 live file(s) to rewrite" in m for m in messages)
    assert any("REMOVE COLUMN MAPPING" in m for m in outcome.plan)


def test_hook_directly_and_crash_before_commit_leaves_only_orphans(golden_table, spark, monkeypatch):
    """A failure after the data files are written commits nothing: the table still reads with
    column mapping, and a rerun completes."""
    from delta_downgrade.drop.run import DropRun

    path = golden_table("cm_name_renamed_column")
    log = DeltaLog(path)
    version = log.latest_version()
    run = DropRun(log, "columnMapping")

    def boom(*args, **kwargs):
        raise RuntimeError("crash before the commit")

    monkeypatch.setattr(run, "commit", boom)
    with pytest.raises(RuntimeError):
        remove_column_mapping(run)
    assert DeltaLog(path).latest_version() == version
    assert DeltaLog(path).snapshot().metadata.configuration["delta.columnMapping.mode"] == "name"
    assert not os.path.exists(os.path.join(path, "_delta_downgrade_staging"))
    assert drop_feature(path, "columnMapping").status == "dropped"
    assert_no_column_mapping_left(path)


def test_row_order_survives_files_larger_than_a_split(tmp_path, spark, oracle):
    """Deletion vectors and row ids address rows by position: a file larger than Spark's default
    split size, with many row groups, must come back with its rows in the same order."""
    import random

    path = str(tmp_path / "t")
    builder = TableBuilder(path)
    schema = {"type": "struct", "fields": [_field("id", "long", "col-id", 1), _field("v", "double", "col-v", 2)]}
    n = 600_000
    rng = random.Random(7)
    data = pa.table({"col-id": pa.array(range(n), pa.int64()),
                     "col-v": pa.array([rng.random() for _ in range(n)], pa.float64())})
    builder.create(data.schema, protocol=Protocol(2, 5), delta_schema=schema,
                   configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"})
    rel = "part-00000-big-c000.snappy.parquet"
    pq.write_table(data, os.path.join(path, rel), row_group_size=50_000)
    size = os.path.getsize(os.path.join(path, rel))
    assert size > 5 * 1024 * 1024  # above Spark's 4 MiB open cost: it would split this file
    builder.commit([AddFile(path=rel, size=size, modificationTime=0, dataChange=True,
                        stats=json.dumps({"numRecords": n}))], "WRITE")
    drop_feature(path, "columnMapping")
    [add] = DeltaLog(path).snapshot().state().files.values()
    out = pq.read_table(os.path.join(path, add.decoded_path))
    assert out.column_names == ["id", "v"]
    assert out.column("id").to_pylist() == list(range(n))
    assert out.column("v").equals(data.column("col-v"))


def test_mode_none_with_leftover_field_metadata_only_strips_it(tmp_path, oracle):
    """Mode none: every reader already resolves logical names, so nothing is rewritten."""
    path = str(tmp_path / "t")
    builder = TableBuilder(path)
    schema = {"type": "struct", "fields": [_field("id", "long", "col-id", 1)]}
    builder.create(pa.schema([("id", pa.int64())]), protocol=Protocol(2, 5), delta_schema=schema,
                   configuration={"delta.columnMapping.mode": "none"}, rows=[{"id": 1}])
    files = {f.path for f in DeltaLog(path).snapshot().state().files.values()}
    assert drop_feature(path, "columnMapping").status == "dropped"
    assert {f.path for f in DeltaLog(path).snapshot().state().files.values()} == files
    assert same_rows([{"id": 1}], oracle.pyarrow_rows(path))
    assert_no_column_mapping_left(path)


def test_stats_rekeyed_at_every_level_with_exact_decimals():
    from delta_downgrade.rewrite.stats import rekey_stats, stats_for_rewrite

    schema = {"type": "struct", "fields": [
        _field("a", "decimal(38,1)", "col-a", 1),
        _field("s", {"type": "struct", "fields": [_field("x", "integer", "col-x", 3)]}, "col-s", 2)]}
    old = ('{"numRecords":2,"minValues":{"col-a":123456789012345678901234567.1,"col-s":{"col-x":1},'
           '"col-dropped":5},"nullCount":{"col-a":0,"col-s":{"col-x":1}},"tightBounds":true}')
    out = stats_for_rewrite(old, 2, [], lambda st: rekey_stats(st, schema, "name"))
    assert out == ('{"numRecords":2,"tightBounds":true,"minValues":{"a":123456789012345678901234567.1,'
                   '"s":{"x":1}},"nullCount":{"a":0,"s":{"x":1}}}')


def test_invalid_names_are_found_at_every_level():
    from delta_downgrade.rewrite.column_mapping import invalid_column_names

    schema = {"type": "struct", "fields": [
        _field("ok", {"type": "array", "elementType": {"type": "struct", "fields": [
            _field("bad=name", "integer", "c2", 2)]}, "containsNull": True}, "c1", 1),
        _field("fine", "string", "c3", 3)]}
    assert invalid_column_names(schema) == ["ok.element.bad=name"]
    for ch in " ,;{}()\n\t=":
        assert invalid_column_names({"type": "struct", "fields": [_field(f"a{ch}b", "long", "c", 1)]})
