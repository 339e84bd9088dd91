"""DROP FEATURE typeWidening / typeWidening-preview on PySpark (rewrite/type_widening.py).

delta-rs cannot read a table with type widening, so the expected rows are computed here: every
live file before the drop, read with pyarrow and cast to the table schema (what the spec requires
a reader to do: "convert such values to the current, wider type"). After the drop delta-rs' pyarrow
path must return exactly those rows, only the files with narrower stored types may have been
rewritten, and no trace of the feature may be left.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
from typing import Any

from msgspec.structs import replace
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.app.render.inspect import inspect_document
from delta_downgrade.operations.inspect import inspect_table
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.schema import arrow_primitive_to_delta
from delta_downgrade.protocol.schema import delta_schema_to_arrow
from delta_downgrade_tools.builders import TableBuilder
from oracle import same_rows
from tests.logging_support import drop_steps


def _jsonable(v: Any) -> Any:
    """The oracle's row encoding (tests/oracle.py): ISO datetimes, str decimals, sorted map pairs."""
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc)
        return v.isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bytes):
        return "hex:" + v.hex()
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list) and v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        return sorted(([_jsonable(k), _jsonable(x)] for k, x in v),
                      key=lambda p: json.dumps(p, sort_keys=True, separators=(",", ":")))
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    return v


def expected_rows(path: str) -> list[dict]:
    """Live files read with pyarrow and cast to the table's (widened) types."""
    snapshot = DeltaLog(path).snapshot(check_read=False)
    target = delta_schema_to_arrow(snapshot.schema)
    rows: list[dict] = []
    for add in snapshot.state().files.values():
        table = pq.read_table(os.path.join(path, add.decoded_path))
        for name, value in add.partitionValues.items():
            table = table.append_column(name, pa.array([value] * table.num_rows, pa.string()))
        table = table.select(target.names).cast(target)
        rows += [_jsonable(r) for r in table.to_pylist()]
    return rows


def _operations(path: str) -> list[str]:
    ops = []
    log_dir = os.path.join(path, "_delta_log")
    for name in sorted(os.listdir(log_dir)):
        if name.endswith(".json") and name[:20].isdigit():
            with open(os.path.join(log_dir, name)) as fh:
                for line in fh:
                    action = json.loads(line)
                    if "commitInfo" in action:
                        ops.append(action["commitInfo"]["operation"])
    return ops


def assert_no_type_widening_left(path: str) -> None:
    snapshot = DeltaLog(path).snapshot()
    assert "delta.enableTypeWidening" not in snapshot.metadata.configuration
    assert "delta.typeChanges" not in snapshot.metadata.schemaString
    names = {f["name"] for f in inspect_document(inspect_table(path))["features"]}
    assert not names & {"typeWidening", "typeWidening-preview"}
    # every live file stores exactly the table types
    target = delta_schema_to_arrow(snapshot.schema)
    for add in snapshot.state().files.values():
        stored = pq.read_schema(os.path.join(path, add.decoded_path))
        for f in stored:
            want = target.field(f.name).type
            if pa.types.is_nested(want):
                assert stored.field(f.name).type.equals(want, check_metadata=False) or \
                    str(stored.field(f.name).type).replace(" not null", "") == str(want), (f.name, f.type, want)
            else:
                assert arrow_primitive_to_delta(f.type) == arrow_primitive_to_delta(want), (f.name, f.type, want)


GOLDEN = {
    "type_widening_preview": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["timestampNtz"],
                              "writerFeatures": ["appendOnly", "checkpointProtection", "invariants",
                                                 "timestampNtz"]},
    "type_widening_preview_nested": {"minReaderVersion": 1, "minWriterVersion": 7, "readerFeatures": None,
                                     "writerFeatures": ["appendOnly", "checkpointProtection", "invariants"]},
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_drop_type_widening_preview_golden(name, golden_table, spark, oracle):
    path = golden_table(name)
    expected = expected_rows(path)
    before = {f.path for f in DeltaLog(path).snapshot().state().files.values()}
    assert len(before) == 2
    outcome = drop_feature(path, "typeWidening-preview")
    assert outcome.status == "dropped"
    assert oracle.protocol(path).unwrap() == GOLDEN[name]
    after = oracle.pyarrow_rows(path)
    assert same_rows(expected, after), (expected, after.value if after.ok else after.error)
    assert_no_type_widening_left(path)
    ops = _operations(path)
    # The metadata commit and the downgrade commit are both "DROP FEATURE", as delta-spark's.
    assert ops.count("REORG") == 1 and ops.count("DROP FEATURE") == 2
    assert ops.count("UNSET TBLPROPERTIES") == 1
    # only the file written before the type change was rewritten
    live = {f.path for f in DeltaLog(path).snapshot().state().files.values()}
    assert len(live) == 2 and len(live & before) == 1


def _stable_table(path: str, *, old_files: int, new_files: int, widen: bool = True,
                  enable: bool = True) -> TableBuilder:
    """Stable typeWidening (3,7): x was written as int32, then widened to long (delta.typeChanges),
    then appended as int64."""
    builder = TableBuilder(path)
    int_schema = pa.schema([("x", pa.int32()), ("s", pa.string())])
    builder.create(int_schema, protocol=Protocol(3, 7, {"typeWidening"}, {"typeWidening"}),
                   configuration={"delta.enableTypeWidening": "true"} if enable else {},
                   rows=[{"x": i, "s": f"old{i}"} for i in range(old_files * 2)] if old_files else None,
                   files=max(1, old_files))
    if widen:
        schema = {"type": "struct", "fields": [
            {"name": "x", "type": "long", "nullable": True,
             "metadata": {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}},
            {"name": "s", "type": "string", "nullable": True, "metadata": {}}]}
        metadata = builder.log.snapshot(check_read=False).metadata
        builder.set_metadata(replace(metadata, schemaString=json.dumps(schema)))
    if new_files:
        long_schema = pa.schema([("x", pa.int64()), ("s", pa.string())])
        builder.append(pa.Table.from_pylist([{"x": 2**40 + i, "s": f"new{i}"} for i in range(new_files)],
                                            schema=long_schema), files=new_files)
    return builder


def test_stable_type_widening_rewrites_only_old_files(tmp_path, spark, oracle):
    path = str(tmp_path / "t")
    _stable_table(path, old_files=2, new_files=1)
    state = DeltaLog(path).snapshot(check_read=False).state()
    old = {f.path for f in state.files.values()
           if pq.read_schema(os.path.join(path, f.decoded_path)).field("x").type == pa.int32()}
    new = {f.path for f in state.files.values()} - old
    assert len(old) == 2 and len(new) == 1
    expected = expected_rows(path)
    with drop_steps() as messages:
        outcome = drop_feature(path, "typeWidening")
    assert outcome.status == "dropped"
    assert oracle.protocol(path).unwrap() == {"minReaderVersion": 1, "minWriterVersion": 7,
                                              "readerFeatures": None, "writerFeatures": ["checkpointProtection"]}
    assert same_rows(expected, oracle.pyarrow_rows(path))
    assert_no_type_widening_left(path)
    live = {f.path for f in DeltaLog(path).snapshot().state().files.values()}
    assert len(live) == 3 and live & old == set() and new <= live
    assert any("2 live file(s) store narrower types" in m for m in messages)
    # fresh stats: numRecords of each rewritten file, bounds as longs
    for f in DeltaLog(path).snapshot().state().files.values():
        if f.path not in new:
            stats = json.loads(f.stats)
            assert stats["numRecords"] == pq.read_metadata(os.path.join(path, f.decoded_path)).num_rows
            assert isinstance(stats["minValues"]["x"], int)


def test_batches_commit_separately(tmp_path, spark, oracle):
    path = str(tmp_path / "t")
    builder = _stable_table(path, old_files=3, new_files=0)
    expected = expected_rows(path)
    from delta_downgrade.rewrite.type_widening import rewrite_type_widening

    outcome = drop_feature(path, "typeWidening",
                           rewrites={"typeWidening": lambda run: rewrite_type_widening(run, batch_files=2)})
    assert outcome.status == "dropped"
    assert _operations(path).count("REORG") == 2
    assert same_rows(expected, oracle.pyarrow_rows(path))
    assert builder.version > 0


def test_nothing_to_rewrite_completes_in_one_run(tmp_path, spark, oracle):
    """The feature is enabled but no type ever changed: unset the property, 0 rewrites, and the
    drop completes (also on the TRUNCATE HISTORY path, in one run)."""
    path = str(tmp_path / "t")
    _stable_table(path, old_files=1, new_files=0, widen=False)
    expected = expected_rows(path)
    outcome = drop_feature(path, "typeWidening")
    assert outcome.status == "dropped"
    ops = _operations(path)
    assert "REORG" not in ops and ops.count("DROP FEATURE") == 1
    assert ops.count("UNSET TBLPROPERTIES") == 1
    assert same_rows(expected, oracle.pyarrow_rows(path))

    legacy = str(tmp_path / "legacy")
    _stable_table(legacy, old_files=1, new_files=0, widen=False)
    outcome = drop_feature(legacy, "typeWidening", truncate_history=True)
    assert outcome.status == "dropped"
    assert "REORG" not in _operations(legacy)


def test_files_already_wide_only_drop_the_metadata(tmp_path, spark, oracle):
    path = str(tmp_path / "t")
    _stable_table(path, old_files=0, new_files=2)
    expected = expected_rows(path)
    outcome = drop_feature(path, "typeWidening")
    assert outcome.status == "dropped"
    ops = _operations(path)
    assert "REORG" not in ops and ops.count("DROP FEATURE") == 2
    assert same_rows(expected, oracle.pyarrow_rows(path))
    assert_no_type_widening_left(path)


def test_dry_run_plans_and_writes_nothing(golden_table):
    path = golden_table("type_widening_preview")
    listing = sorted(os.listdir(path))
    version = DeltaLog(path).latest_version()
    with drop_steps() as messages:
        outcome = drop_feature(path, "typeWidening-preview", committer=PlanRecorder())
    assert outcome.status == "planned"
    assert DeltaLog(path).latest_version() == version
    assert sorted(os.listdir(path)) == listing
    assert any("1 live file(s) store narrower types" in m for m in messages)


def _cm_field(name: str, type_: Any, physical: str, cid: int, extra: dict | None = None) -> dict:
    return {"name": name, "type": type_, "nullable": True,
            "metadata": {"delta.columnMapping.id": cid, "delta.columnMapping.physicalName": physical,
                         **(extra or {})}}


@pytest.mark.parametrize("mode", ["name", "id"])
def test_type_widening_on_column_mapping_table_keeps_physical_layout(tmp_path, mode, spark, oracle):
    """The rewrite keeps physical names (and field ids in id mode): column mapping stays."""
    path = str(tmp_path / "t")
    builder = TableBuilder(path)
    features = {"columnMapping", "typeWidening"}
    fid = {b"PARQUET:field_id": b"1"} if mode == "id" else None
    arrow_int = pa.schema([pa.field("col-x", pa.int32(), metadata=fid)])
    schema0 = {"type": "struct", "fields": [_cm_field("x", "integer", "col-x", 1)]}
    builder.create(arrow_int, protocol=Protocol(3, 7, features, features), delta_schema=schema0,
                   configuration={"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "1",
                                  "delta.enableTypeWidening": "true"},
                   rows=pa.Table.from_pylist([{"col-x": 7}], schema=arrow_int))
    schema1 = {"type": "struct", "fields": [_cm_field(
        "x", "long", "col-x", 1, {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]})]}
    metadata = builder.log.snapshot(check_read=False).metadata
    builder.set_metadata(replace(metadata, schemaString=json.dumps(schema1)))
    drop_feature(path, "typeWidening")
    snapshot = DeltaLog(path).snapshot()
    assert snapshot.metadata.configuration["delta.columnMapping.mode"] == mode
    [add] = snapshot.state().files.values()
    stored = pq.read_schema(os.path.join(path, add.decoded_path))
    assert stored.names == ["col-x"] and stored.field("col-x").type == pa.int64()
    if mode == "id":
        assert stored.field("col-x").metadata[b"PARQUET:field_id"] == b"1"
    assert same_rows([{"x": 7}], oracle.scan_rows(path))


@pytest.mark.parametrize("from_type,to_type,widening", [
    ("byte", "short", True), ("byte", "long", True), ("integer", "long", True), ("long", "integer", False),
    ("float", "double", True), ("integer", "double", True), ("long", "double", False),
    ("date", "timestamp_ntz", True), ("date", "timestamp", False),
    ("decimal(10,2)", "decimal(20,5)", True), ("decimal(10,2)", "decimal(11,4)", False),
    ("decimal(10, 2)", "decimal(10,2)", False), ("integer", "decimal(11,1)", True),
    ("integer", "decimal(10,1)", False), ("long", "decimal(21,1)", True), ("long", "decimal(20,1)", False),
    ("string", "binary", False), ("integer", "integer", False),
])
def test_spec_widening_matrix(from_type, to_type, widening):
    from delta_downgrade.rewrite.type_widening_rules import is_widening

    assert is_widening(from_type, to_type) is widening


def test_widened_bounds():
    from delta_downgrade.rewrite.stats import stats_for_rewrite

    old = ('{"numRecords":1,"minValues":{"i":1,"f":3.4,"d":"2024-09-09","m":12.34},'
           '"maxValues":{"i":1,"f":3.4,"d":"2024-09-09","m":12.34},"nullCount":{"i":0,"f":0,"d":0,"m":0}}')
    widened = [(("i",), "integer", "long"), (("f",), "float", "double"), (("d",), "date", "timestamp_ntz"),
               (("m",), "decimal(4,2)", "decimal(10,4)")]
    stats = json.loads(stats_for_rewrite(old, 1, widened))
    # a float bound is not a valid double bound (3.4f widens to 3.4000000953674316): dropped
    assert stats["minValues"] == {"i": 1, "d": "2024-09-09T00:00:00.000", "m": 12.34}
    assert stats["maxValues"] == stats["minValues"]
    assert stats["nullCount"] == {"i": 0, "f": 0, "d": 0, "m": 0}


def test_id_mode_nested_field_ids_survive(tmp_path, spark, oracle):
    """Id mode resolves nested columns by field id too: a rewritten file keeps every id."""
    path = str(tmp_path / "t")

    def fid(n: int) -> dict:
        return {b"PARQUET:field_id": str(n).encode()}

    inner = pa.struct([pa.field("col-x", pa.int32(), metadata=fid(2)),
                       pa.field("col-y", pa.string(), metadata=fid(3))])
    element = pa.struct([pa.field("col-z", pa.int32(), metadata=fid(5))])
    arrow = pa.schema([pa.field("col-s", inner, metadata=fid(1)),
                       pa.field("col-l", pa.list_(element), metadata=fid(4))])
    s_type = {"type": "struct",
              "fields": [_cm_field("x", "integer", "col-x", 2), _cm_field("y", "string", "col-y", 3)]}
    l_type = {"type": "array", "elementType": {"type": "struct", "fields": [_cm_field("z", "integer", "col-z", 5)]},
              "containsNull": True}
    schema0 = {"type": "struct", "fields": [_cm_field("s", s_type, "col-s", 1), _cm_field("l", l_type, "col-l", 4)]}
    features = {"columnMapping", "typeWidening"}
    builder = TableBuilder(path)
    builder.create(arrow, protocol=Protocol(3, 7, features, features), delta_schema=schema0,
                   configuration={"delta.columnMapping.mode": "id", "delta.columnMapping.maxColumnId": "5"},
                   rows=pa.Table.from_pylist([{"col-s": {"col-x": 1, "col-y": "a"}, "col-l": [{"col-z": 9}]}],
                                             schema=arrow))
    schema1 = json.loads(json.dumps(schema0))
    x = schema1["fields"][0]["type"]["fields"][0]
    x["type"] = "long"
    x["metadata"]["delta.typeChanges"] = [{"fromType": "integer", "toType": "long"}]
    builder.set_metadata(replace(builder.log.snapshot(check_read=False).metadata, schemaString=json.dumps(schema1)))
    drop_feature(path, "typeWidening")
    [add] = DeltaLog(path).snapshot().state().files.values()
    stored = pq.read_schema(os.path.join(path, add.decoded_path))
    s_field, l_field = stored.field("col-s"), stored.field("col-l")
    assert s_field.metadata[b"PARQUET:field_id"] == b"1" and l_field.metadata[b"PARQUET:field_id"] == b"4"
    assert [(f.name, f.type, f.metadata[b"PARQUET:field_id"]) for f in s_field.type] == [
        ("col-x", pa.int64(), b"2"), ("col-y", pa.string(), b"3")]
    assert l_field.type.value_type.field(0).metadata[b"PARQUET:field_id"] == b"5"
    assert same_rows([{"s": {"x": 1, "y": "a"}, "l": [{"z": 9}]}], oracle.scan_rows(path))


# --- widened partition columns: partition values spelled in the current type -------------------------

_P_CHANGE = [{"fromType": "integer", "toType": "decimal(12,2)"}]
_D_CHANGE = [{"fromType": "date", "toType": "timestamp_ntz"}]


def _schema(v: str, p: str, d: str, *, v_changes=None, p_changes=None, d_changes=None) -> dict:
    def field(name, type_, changes):
        return {"name": name, "type": type_, "nullable": True,
                "metadata": {"delta.typeChanges": changes} if changes else {}}
    return {"type": "struct", "fields": [field("v", v, v_changes), field("p", p, p_changes), field("d", d, d_changes)]}


def _widened_partition_table(path: str) -> tuple[TableBuilder, set[str], set[str], set[str]]:
    """Partitioned by p (int, widened to decimal(12,2)) and d (date, widened to timestamp_ntz).
    Stage 1 files store v as int32 (v widened to long later: they are rewritten); stage 2 files
    store v as int64 but were written before the partition columns were widened (re-spelled
    without a rewrite); stage 3 files were written after every widening (left alone)."""
    builder = TableBuilder(path)
    features = {"typeWidening", "timestampNtz"}
    stage1 = pa.schema([("v", pa.int32()), ("p", pa.int32()), ("d", pa.date32())])
    builder.create(stage1, partition_columns=["p", "d"], protocol=Protocol(3, 7, features, features),
                   configuration={"delta.enableTypeWidening": "true"},
                   rows=[{"v": 1, "p": 1, "d": dt.date(2024, 6, 19)},
                         {"v": 2, "p": -7, "d": dt.date(1969, 12, 31)}])
    first = {f.path for f in builder.log.snapshot(check_read=False).state().files.values()}
    metadata = builder.log.snapshot(check_read=False).metadata
    builder.set_metadata(replace(metadata, schemaString=json.dumps(_schema(
        "long", "integer", "date", v_changes=[{"fromType": "integer", "toType": "long"}]))))
    stage2 = pa.schema([("v", pa.int64()), ("p", pa.int32()), ("d", pa.date32())])
    builder.append(pa.Table.from_pylist([{"v": 3, "p": None, "d": dt.date(2024, 2, 29)},
                                         {"v": 4, "p": 2147483647, "d": dt.date(1, 1, 1)}], schema=stage2))
    second = {f.path for f in builder.log.snapshot(check_read=False).state().files.values()} - first
    metadata = builder.log.snapshot(check_read=False).metadata
    builder.set_metadata(replace(metadata, schemaString=json.dumps(_schema(
        "long", "decimal(12,2)", "timestamp_ntz", v_changes=[{"fromType": "integer", "toType": "long"}],
        p_changes=_P_CHANGE, d_changes=_D_CHANGE))))
    stage3 = pa.schema([("v", pa.int64()), ("p", pa.decimal128(12, 2)), ("d", pa.timestamp("us"))])
    builder.append(pa.Table.from_pylist([{"v": 5, "p": decimal.Decimal("2.50"), "d": dt.datetime(2024, 1, 1, 10, 0)}],
                                        schema=stage3))
    third = {f.path for f in builder.log.snapshot(check_read=False).state().files.values()} - first - second
    return builder, first, second, third


# What every reader must return: the values written, in the widened types.
_WIDENED_ROWS = [
    {"v": 1, "p": "1.00", "d": "2024-06-19T00:00:00"},
    {"v": 2, "p": "-7.00", "d": "1969-12-31T00:00:00"},
    {"v": 3, "p": None, "d": "2024-02-29T00:00:00"},
    {"v": 4, "p": "2147483647.00", "d": "0001-01-01T00:00:00"},
    {"v": 5, "p": "2.50", "d": "2024-01-01T10:00:00"},
]


def test_widened_partition_values_are_respelled_in_the_current_type(tmp_path, spark, oracle, oracle_018,
                                                                    duckdb_reader):
    path = str(tmp_path / "t")
    _builder, first, second, third = _widened_partition_table(path)
    assert same_rows(_WIDENED_ROWS, expected_rows(path))  # our own reading of the original table
    outcome = drop_feature(path, "typeWidening")
    assert outcome.status == "dropped"
    assert_no_type_widening_left(path)
    assert oracle.protocol(path).unwrap()["readerFeatures"] == ["timestampNtz"]

    # deltalake 0.18.2 (older reader), 1.6.6 and DuckDB's delta-kernel-rs all read the written values
    assert same_rows(_WIDENED_ROWS, oracle_018.pyarrow_rows(path).unwrap())
    assert same_rows(_WIDENED_ROWS, oracle.scan_rows(path).unwrap())
    assert same_rows(_WIDENED_ROWS, duckdb_reader.duckdb_rows(path).unwrap())

    live = {f.path: f for f in DeltaLog(path).snapshot().state().files.values()}
    spellings = {(f.partitionValues["p"], f.partitionValues["d"]) for f in live.values()}
    assert spellings == {("1.00", "2024-06-19 00:00:00"), ("-7.00", "1969-12-31 00:00:00"),
                         (None, "2024-02-29 00:00:00"), ("2147483647.00", "0001-01-01 00:00:00"),
                         ("2.50", "2024-01-01 10:00:00.000000")}
    # stage 1 rewritten (narrower v), stage 2 re-added as they are, stage 3 untouched
    assert not first & set(live) and second | third <= set(live) and len(live) == 5
    # the re-spelling is metadata-only: remove + add of the same file, dataChange=false, in REORG
    reorg = [json.loads(line) for name in sorted(os.listdir(os.path.join(path, "_delta_log")))
             if name.endswith(".json") for line in open(os.path.join(path, "_delta_log", name))]
    respelled = [a for a in reorg if "add" in a and a["add"]["path"] in second]
    assert len(respelled) == 2 + 2  # appended, then re-added
    assert all(a["add"]["dataChange"] is False for a in respelled[2:])
    removes = [a["remove"] for a in reorg if "remove" in a and a["remove"]["path"] in second]
    assert len(removes) == 2 and all(r["dataChange"] is False for r in removes)


def test_widened_partition_value_of_no_possible_type_is_refused(tmp_path, spark):
    """A partition value that no type the column had can spell is refused, naming the file, before
    anything is written (the drop's rehearsal sees it)."""
    import shutil

    from delta_downgrade.errors import FileLayoutError

    path = str(tmp_path / "t")
    builder, _first, second, _third = _widened_partition_table(path)
    add = next(f for f in builder.log.snapshot(check_read=False).state().files.values() if f.path in second)
    os.makedirs(os.path.join(path, "p=one"))
    shutil.copy(os.path.join(path, add.decoded_path), os.path.join(path, "p=one", "x.parquet"))
    builder.commit([replace(add, path="p=one/x.parquet", partitionValues={"p": "one", "d": None})])
    version = DeltaLog(path).latest_version()
    with pytest.raises(FileLayoutError) as info:
        drop_feature(path, "typeWidening")
    assert "p=one/x.parquet" in str(info.value) and "'one'" in str(info.value)
    assert info.value.exit_code == 2
    assert DeltaLog(path).latest_version() == version


def test_widened_clustering_column_keeps_statistics_and_provider(tmp_path, spark, oracle):
    """A clustered table (PROTOCOL.md "Clustered Table") whose clustering column x went float ->
    double: the float bounds cannot be carried over (3.4f is not 3.4), so the rewritten file's
    bounds for x come from its footer; clusteringProvider stays."""
    from delta_downgrade.protocol.actions import DomainMetadata

    path = str(tmp_path / "t")
    builder = TableBuilder(path)
    arrow = pa.schema([("x", pa.float32()), ("s", pa.string())])
    features = {"typeWidening"}
    builder.create(arrow, protocol=Protocol(3, 7, features, features | {"clustering", "domainMetadata"}),
                   configuration={"delta.enableTypeWidening": "true"})
    adds = builder.write_files([{"x": 3.4, "s": "a"}, {"x": -1.5, "s": "b"}, {"x": None, "s": "c"}])
    builder.commit([DomainMetadata(domain="delta.clustering", configuration='{"clusteringColumns":[["x"]]}'),
                    *(replace(a, clusteringProvider="liquid") for a in adds)], "OPTIMIZE")
    schema = {"type": "struct", "fields": [
        {"name": "x", "type": "double", "nullable": True,
         "metadata": {"delta.typeChanges": [{"fromType": "float", "toType": "double"}]}},
        {"name": "s", "type": "string", "nullable": True, "metadata": {}}]}
    builder.set_metadata(replace(builder.log.snapshot(check_read=False).metadata, schemaString=json.dumps(schema)))
    expected = expected_rows(path)

    assert drop_feature(path, "typeWidening").status == "dropped"
    [add] = DeltaLog(path).snapshot().state().files.values()
    assert add.path not in {a.path for a in adds} and add.clusteringProvider == "liquid"
    stats = json.loads(add.stats)
    assert stats["minValues"]["x"] == -1.5 and stats["maxValues"]["x"] == pytest.approx(3.4, rel=1e-6)
    assert stats["nullCount"]["x"] == 1
    assert json.loads(DeltaLog(path).snapshot().state().live_domains["delta.clustering"].configuration) == \
        {"clusteringColumns": [["x"]]}
    assert same_rows(expected, oracle.scan_rows(path).unwrap())
