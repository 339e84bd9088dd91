"""The pure parts of the DV purge: batches, physical schemas, statistics JSON, join keys."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.protocol.actions import AddFile, Metadata
from delta_downgrade.rewrite.dv_purge_join import deleted_masks, join_key, unique_residue_modulus
from delta_downgrade.rewrite.dv_purge_plan import PurgeFile, PurgeGroup, plan_batches
from delta_downgrade.rewrite.physical_schema import physical_schemas
from delta_downgrade.rewrite.stats import StatsLeaf, footer_stats, stat_value, stats_json, stats_leaves

DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*", "offset": 1, "sizeInBytes": 36, "cardinality": 2}


def _file(path: str, size: int = 100, records: int = 10, pv: dict | None = None) -> PurgeFile:
    add = AddFile(path=path, partitionValues=pv or {}, size=size, stats=json.dumps({"numRecords": records}),
                  deletionVector=DV)
    return PurgeFile(add=add, dv=add.dv, spark_path="/t/" + path, out_dir=path.rpartition("/")[0],
                     num_records=records)


def _metadata(fields, partition=(), conf=None) -> Metadata:
    return Metadata(id="x", schemaString=json.dumps({"type": "struct", "fields": fields}),
                    partitionColumns=list(partition), configuration=dict(conf or {}))


def _field(name, type_, physical=None, fid=None):
    meta = {}
    if physical:
        meta["delta.columnMapping.physicalName"] = physical
    if fid is not None:
        meta["delta.columnMapping.id"] = fid
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


# --- batches --------------------------------------------------------------------------------------------

def test_batches_are_balanced_and_bounded():
    files = [_file(f"f{i}.parquet") for i in range(72)]
    batches = plan_batches(files, batch_files=64)
    assert [len(b) for b in batches] == [36, 36]
    assert [len(b) for b in plan_batches(files, batch_files=1)] == [1] * 72
    big = [_file("a.parquet", size=10), _file("b.parquet", size=500), _file("c.parquet", size=10)]
    assert [len(b) for b in plan_batches(big, batch_files=10, batch_bytes=100)] == [1, 1, 1]
    assert plan_batches([], batch_files=3) == []
    with pytest.raises(ValueError):
        plan_batches(files, batch_files=0)


# --- physical schema and statistics columns ------------------------------------------------------------

def test_physical_schemas_for_column_mapping():
    nested = {"type": "struct", "fields": [_field("x", "long", "col-x", 3)]}
    md = _metadata([_field("a", "integer", "col-a", 1), _field("s", nested, "col-s", 2),
                    _field("p", "string", "col-p", 4)], partition=["p"],
                   conf={"delta.columnMapping.mode": "name"})
    read, write = physical_schemas(md)
    assert [f["name"] for f in read["fields"]] == ["col-a", "col-s"]
    assert read["fields"][1]["type"]["fields"][0]["name"] == "col-x"
    assert all(f["metadata"] == {} for f in read["fields"])
    assert write["fields"][0]["metadata"] == {"parquet.field.id": 1}
    assert write["fields"][1]["type"]["fields"][0]["metadata"] == {"parquet.field.id": 3}
    materialized, _ = physical_schemas(md, materialized_partitions=True)
    assert [f["name"] for f in materialized["fields"]] == ["col-a", "col-s", "col-p"]


def test_physical_schemas_without_column_mapping_ignore_stale_physical_names():
    md = _metadata([_field("a", "integer", "col-a", 1)])
    read, write = physical_schemas(md)
    assert read["fields"][0]["name"] == "a" and write["fields"][0]["metadata"] == {}


def test_stats_leaves_follow_delta_spark_rules():
    nested = {"type": "struct", "fields": [_field("x", "long"), _field("y", "string")]}
    fields = [_field("p", "string"), _field("a", "integer"), _field("s", nested),
              _field("arr", {"type": "array", "elementType": "long", "containsNull": True}), _field("b", "binary")]
    md = _metadata(fields, partition=["p"])
    leaves = stats_leaves(md)
    assert [leaf.path for leaf in leaves] == [("a",), ("s", "x"), ("s", "y"), ("b",)]
    assert [leaf.min_max for leaf in leaves] == [True, True, True, False]
    two = stats_leaves(_metadata(fields, partition=["p"], conf={"delta.dataSkippingNumIndexedCols": "2"}))
    assert [leaf.path for leaf in two] == [("a",), ("s", "x")]
    listed = stats_leaves(_metadata(fields, partition=["p"], conf={"delta.dataSkippingStatsColumns": "`s`.y, b"}))
    assert [leaf.path for leaf in listed] == [("s", "y"), ("b",)]


# --- statistics JSON ---------------------------------------------------------------------------------------

def test_stat_values():
    assert stat_value("long", 5, is_max=False) == 5
    assert stat_value("double", float("nan"), is_max=True) is None
    assert stat_value("string", "x" * 40, is_max=False) == "x" * 32
    assert stat_value("string", "x" * 40, is_max=True) is None
    assert stat_value("date", dt.date(2024, 2, 29), is_max=False) == "2024-02-29"
    assert stat_value("timestamp", 1_700_000_000_123_999, is_max=True) == "2023-11-14T22:13:20.123Z"
    assert stat_value("timestamp_ntz", dt.datetime(2024, 1, 2, 3, 4, 5, 678901), is_max=False) == "2024-01-02T03:04:05.678"
    aware = dt.datetime(2024, 1, 2, 4, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert stat_value("timestamp", aware, is_max=False) == "2024-01-02T03:04:05.000Z"
    assert stat_value("decimal(10,2)", decimal.Decimal("12.30"), is_max=False) == decimal.Decimal("12.30")


def test_stats_json_is_nested_and_exact():
    leaves = [StatsLeaf(("a",), "long"), StatsLeaf(("s", "d"), "decimal(38,18)"), StatsLeaf(("n",), "string"),
              StatsLeaf(("b",), "boolean")]
    text = stats_json(3, leaves, {("a",): (1, 9, 0),
                                  ("s", "d"): (decimal.Decimal("0.100000000000000001"), decimal.Decimal("2"), 1),
                                  ("n",): (None, None, 3), ("b",): (None, None, 0)})
    assert '"d":0.100000000000000001' in text  # no float rounding
    obj = json.loads(text)
    assert obj["numRecords"] == 3
    assert obj["minValues"] == {"a": 1, "s": {"d": 0.1}}
    assert obj["nullCount"] == {"a": 0, "s": {"d": 1}, "n": 3, "b": 0}
    assert "n" not in obj["minValues"]


def test_footer_stats(tmp_path):
    table = pa.table({"a": pa.array([3, None, 1], pa.int64()), "s": pa.array(["b", "a", None]),
                      "t": pa.array([{"x": 5}, {"x": 7}, None])})
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, row_group_size=2)
    leaves = [StatsLeaf(("a",), "long"), StatsLeaf(("s",), "string"), StatsLeaf(("t", "x"), "long")]
    rows, values = footer_stats(str(path), leaves)
    assert rows == 3
    assert values[("a",)] == (1, 3, 1)
    assert values[("s",)] == ("a", "b", 1)
    assert values[("t", "x")] == (5, 7, 1)


# --- join keys ---------------------------------------------------------------------------------------------

def test_unique_residue_modulus():
    assert unique_residue_modulus([10, 11]) == 2
    assert unique_residue_modulus([4, 8, 12]) == 16
    assert unique_residue_modulus([5, 5]) is None
    assert unique_residue_modulus([]) is None
    k = unique_residue_modulus([1 << 40, 2 << 40, 3 << 40])
    assert k is None  # equal below bit 20: no modulus ≤ 2^20 separates them


def _group(files):
    return PurgeGroup(list(enumerate(files)), "", {})


def test_join_key_prefers_sizes_then_name_hashes_then_names():
    by_size = join_key(_group([_file("a.parquet", size=100), _file("b.parquet", size=101)]))
    assert by_size.mode == "size" and by_size.modulus == 2 and by_size.residues == {0: 0, 1: 1}
    same_size = join_key(_group([_file("a.parquet"), _file("b.parquet")]))
    assert same_size.mode == "crc"
    k = same_size.modulus
    assert same_size.residues == {0: zlib.crc32(b"a.parquet") & (k - 1), 1: zlib.crc32(b"b.parquet") & (k - 1)}
    odd_names = join_key(_group([_file("a%20b.parquet"), _file("c.parquet")]))
    assert odd_names.mode == "name" and odd_names.modulus is None
    assert odd_names.names[0] == "a b.parquet"
    assert join_key(_group([_file("a.parquet", size=1), _file("b.parquet", size=2)]), allow_packed=False).mode == "name"


def test_deleted_masks():
    values = pa.array([0, 1, 63, 64, 130, 2**40 + 5], pa.uint64())
    blocks, masks = deleted_masks(values)
    assert blocks.to_pylist() == [0, 1, 2, 2**34]
    assert masks.to_pylist()[0] == (1 | 2 | (1 << 63)) - (1 << 64)  # bit 63 makes it negative
    assert masks.to_pylist()[1:] == [1, 1 << 2, 1 << 5]
    full_blocks, full_masks = deleted_masks(pa.array(range(128), pa.uint64()))
    assert full_blocks.to_pylist() == [0, 1] and full_masks.to_pylist() == [-1, -1]
    empty = deleted_masks(pa.array([], pa.uint64()))
    assert len(empty[0]) == 0
