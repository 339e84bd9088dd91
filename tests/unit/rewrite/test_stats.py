"""The ``stats`` JSON of an ``add`` (rewrite/stats.py): leaves, values, exact numbers, carried-over
stats; the DV purge's and the other rewrites' spelling of the same JSON."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.protocol.actions import Metadata
from delta_downgrade.rewrite.stats import (
    StatsLeaf, clustering_stats_leaves, dumps_exact, footer_stats, loads_exact, rekey_stats, spark_leaf_stats,
    stat_value, stats_for_rewrite, stats_json, stats_leaves, with_footer_stats, with_missing_leaf_stats,
)
from tests.schema_support import field


def _metadata(fields, partition=(), conf=None) -> Metadata:
    return Metadata(id="x", schemaString=json.dumps({"type": "struct", "fields": fields}),
                    partitionColumns=list(partition), configuration=dict(conf or {}))


# --- which leaf columns get statistics ----------------------------------------------------------------

def test_stats_leaves_follow_delta_spark_rules():
    nested = {"type": "struct", "fields": [field("x", "long"), field("y", "string")]}
    fields = [field("p", "string"), field("a", "integer"), field("s", nested),
              field("arr", {"type": "array", "elementType": "long", "containsNull": True}), field("b", "binary")]
    md = _metadata(fields, partition=["p"])
    leaves = stats_leaves(md)
    assert [leaf.path for leaf in leaves] == [("a",), ("s", "x"), ("s", "y"), ("b",)]
    assert [leaf.min_max for leaf in leaves] == [True, True, True, False]
    two = stats_leaves(_metadata(fields, partition=["p"], conf={"delta.dataSkippingNumIndexedCols": "2"}))
    assert [leaf.path for leaf in two] == [("a",), ("s", "x")]
    listed = stats_leaves(_metadata(fields, partition=["p"], conf={"delta.dataSkippingStatsColumns": "`s`.y, b"}))
    assert [leaf.path for leaf in listed] == [("s", "y"), ("b",)]


def test_stats_leaves_use_physical_names_under_column_mapping():
    nested = {"type": "struct", "fields": [field("x", "long", "col-x", 3)]}
    md = _metadata([field("a", "integer", "col-a", 1), field("s", nested, "col-s", 2)],
                   conf={"delta.columnMapping.mode": "name", "delta.dataSkippingStatsColumns": "s.x"})
    assert stats_leaves(md) == [StatsLeaf(("col-s", "col-x"), "long")]  # listed by logical name
    everything = _metadata([field(f"c{i}", "long") for i in range(40)], conf={"delta.dataSkippingNumIndexedCols": "-1"})
    assert len(stats_leaves(everything)) == 40
    assert len(stats_leaves(_metadata([field(f"c{i}", "long") for i in range(40)]))) == 32
    bad = _metadata([field("a", "long")], conf={"delta.dataSkippingNumIndexedCols": "many"})
    assert stats_leaves(bad) == [StatsLeaf(("a",), "long")]  # unparsable: the default 32


# --- statistics of a new file -------------------------------------------------------------------------

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


@pytest.mark.parametrize(("delta_type", "value", "is_max", "expected"), [
    ("double", float("inf"), True, None),
    ("double", float("-inf"), False, None),
    ("float", float("nan"), False, None),
    ("decimal(10,2)", decimal.Decimal("NaN"), False, None),
    ("decimal(10,2)", "1.5", False, decimal.Decimal("1.5")),
    ("integer", True, False, 1),
    ("string", "x" * 32, True, "x" * 32),            # exactly the prefix: kept as a max
    ("string", "x" * 33, True, None),                # longer: no max (a cut max would be too small)
    ("string", "é" * 40, False, "é" * 32),           # the prefix counts characters, not bytes
    ("string", b"ab", True, "ab"),
    ("date", dt.datetime(2020, 1, 1, 5), True, "2020-01-01"),
    ("timestamp", -1, False, "1969-12-31T23:59:59.999Z"),   # truncated down, also before 1970
    ("timestamp_ntz", -1, False, "1969-12-31T23:59:59.999"),
    ("timestamp", 999, True, "1970-01-01T00:00:00.000Z"),
    ("binary", b"\x00", False, None),
    ("boolean", True, False, None),
])
def test_stat_value_edges(delta_type, value, is_max, expected):
    got = stat_value(delta_type, value, is_max=is_max)
    assert got == expected and type(got) is type(expected)


def test_negative_zero_stays_negative_zero():
    text = stats_json(1, [StatsLeaf(("d",), "double")], {("d",): (-0.0, -0.0, 0)})
    assert text == '{"numRecords":1,"minValues":{"d":-0.0},"maxValues":{"d":-0.0},"nullCount":{"d":0}}'


def test_stats_json_escapes_non_ascii_keys_but_not_values():
    leaves = [StatsLeaf(("é",), "string"), StatsLeaf(("s", "ü"), "long"), StatsLeaf(("n",), "long")]
    text = stats_json(2, leaves, {("é",): ("ä", "ö", 0), ("s", "ü"): (1, 2, None), ("n",): (None, None, 2)})
    assert text == ('{"numRecords":2,"minValues":{"\\u00e9":"ä","s":{"\\u00fc":1}},'
                    '"maxValues":{"\\u00e9":"ö","s":{"\\u00fc":2}},"nullCount":{"\\u00e9":0,"n":2}}')


def test_stats_json_of_nothing():
    assert stats_json(0, [StatsLeaf(("a",), "long")], {}) == '{"numRecords":0}'


def test_spark_leaf_stats_reads_the_aggregate_row():
    leaves = [StatsLeaf(("a",), "long"), StatsLeaf(("b",), "binary")]
    row = {"min0": 1, "max0": 9, "nulls0": 0, "nulls1": 3}
    assert spark_leaf_stats(row, leaves) == {("a",): (1, 9, 0), ("b",): (None, None, 3)}


def test_footer_stats_without_statistics(tmp_path):
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int64())}), path, write_statistics=False)
    rows, values = footer_stats(str(path), [StatsLeaf(("a",), "long"), StatsLeaf(("missing",), "long")])
    assert rows == 2 and values == {("a",): (None, None, None)}


# --- JSON with exact numbers --------------------------------------------------------------------------

def test_exact_json_round_trip():
    text = '{"é":123456789012345678901234567.1,"f":0.1,"i":-0,"l":[1.10,"ü",null,true],"s":"\\u00e9"}'
    value = loads_exact(text)
    assert value["é"] == decimal.Decimal("123456789012345678901234567.1")
    assert dumps_exact(value) == '{"é":123456789012345678901234567.1,"f":0.1,"i":0,"l":[1.10,"ü",null,true],"s":"é"}'
    assert dumps_exact(value, ascii_keys=True).startswith('{"\\u00e9":123456789012345678901234567.1,')
    assert dumps_exact({"x": decimal.Decimal("NaN"), "y": decimal.Decimal("-Infinity")}) == '{"x":NaN,"y":-Infinity}'


# --- statistics carried over from the replaced file ---------------------------------------------------

def test_carried_over_stats_put_num_records_first_and_keep_the_rest():
    old = '{"minValues":{"a":1},"tightBounds":true,"numRecords":3}'
    assert stats_for_rewrite(old, 5, []) == '{"numRecords":5,"minValues":{"a":1},"tightBounds":true}'


@pytest.mark.parametrize("old", [None, "", "not json", "[1]", '"x"'])
def test_unusable_old_stats_give_the_row_count_only(old):
    assert stats_for_rewrite(old, 4, []) == '{"numRecords":4}'


def test_widened_date_bounds_become_midnight_timestamps_at_any_depth():
    old = ('{"numRecords":1,"minValues":{"s":{"d":"2024-01-01"},"i":1.5},'
           '"maxValues":{"s":{"d":"2024-01-02"},"i":7}}')
    out = stats_for_rewrite(old, 1, [(("s", "d"), "date", "timestamp_ntz"), (("i",), "integer", "long"),
                                     (("gone",), "integer", "long")])
    assert out == ('{"numRecords":1,"minValues":{"s":{"d":"2024-01-01T00:00:00.000"},"i":1.5},'
                   '"maxValues":{"s":{"d":"2024-01-02T00:00:00.000"},"i":7}}')


def test_rekey_keeps_non_ascii_logical_names():
    schema = {"type": "struct", "fields": [field("é", "long", "col-1", 1)]}
    out = stats_for_rewrite('{"numRecords":1,"nullCount":{"col-1":0}}', 1, [],
                            lambda st: rekey_stats(st, schema, "name"))
    assert out == '{"numRecords":1,"nullCount":{"é":0}}'


# --- clustered tables: statistics for the clustering columns, always (PROTOCOL.md "Clustered Table") --

def test_clustering_columns_get_statistics_beyond_the_indexed_columns():
    fields = [field(f"c{i}", "long") for i in range(3)] + [
        field("s", {"type": "struct", "fields": [field("k", "string"), field("z", "date")]})]
    md = _metadata(fields, conf={"delta.dataSkippingNumIndexedCols": "1"})
    assert [leaf.path for leaf in stats_leaves(md)] == [("c0",)]
    # schema order kept; names resolve case-insensitively, as delta-spark's
    assert [leaf.path for leaf in stats_leaves(md, [("S", "z"), ("c2",)])] == [("c0",), ("c2",), ("s", "z")]
    listed = _metadata(fields, conf={"delta.dataSkippingStatsColumns": "c1"})
    assert [leaf.path for leaf in stats_leaves(listed, [("c0",)])] == [("c0",), ("c1",)]
    none = _metadata(fields, conf={"delta.dataSkippingNumIndexedCols": "0"})
    assert stats_leaves(none, [("s", "k")]) == [StatsLeaf(("s", "k"), "string")]
    assert stats_leaves(none, [("nope",)]) == []


def test_clustering_columns_are_physical_names_under_column_mapping():
    nested = {"type": "struct", "fields": [field("x", "long", "col-x", 3)]}
    md = _metadata([field("a", "integer", "col-a", 1), field("s", nested, "col-s", 2)],
                   conf={"delta.columnMapping.mode": "name", "delta.dataSkippingNumIndexedCols": "0"})
    assert stats_leaves(md, [("col-s", "col-x")]) == [StatsLeaf(("col-s", "col-x"), "long")]
    assert stats_leaves(md, [("s", "x")]) == []  # the domain records physical names
    assert clustering_stats_leaves(md, [("col-s", "col-x")]) == [StatsLeaf(("col-s", "col-x"), "long")]
    assert clustering_stats_leaves(md, [("col-s", "col-x")], logical=True) == [StatsLeaf(("s", "x"), "long")]


def test_missing_leaf_statistics_are_added_and_present_ones_kept():
    leaves = [StatsLeaf(("id",), "long"), StatsLeaf(("s", "k"), "string"), StatsLeaf(("b",), "binary")]
    values = {("id",): (1, 9, 0), ("s", "k"): ("a", "z" * 40, 1), ("b",): (None, None, 2)}
    out = json.loads(with_missing_leaf_stats('{"numRecords":3,"minValues":{"id":0}}', leaves, values))
    assert out == {"numRecords": 3, "minValues": {"id": 0, "s": {"k": "a"}}, "maxValues": {"id": 9},
                   "nullCount": {"id": 0, "s": {"k": 1}, "b": 2}}
    # an all-null column gets its null count only; nothing to add leaves the text as it was
    assert json.loads(with_missing_leaf_stats('{"numRecords":2}', leaves[:1], {("id",): (None, None, 2)})) == \
        {"numRecords": 2, "nullCount": {"id": 2}}
    same = '{"numRecords":3, "nullCount":{"id":0},"minValues":{"id":1},"maxValues":{"id":9}}'
    assert with_missing_leaf_stats(same, leaves[:1], values) == same


def test_footer_statistics_complete_a_rewritten_file(tmp_path):
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"id": pa.array([5, None, 2], pa.int64()), "x": pa.array([1.5, 2.5, None])}), path)
    leaves = [StatsLeaf(("id",), "long")]
    out = json.loads(with_footer_stats('{"numRecords":3,"maxValues":{"x":2.5}}', path, leaves))
    assert out == {"numRecords": 3, "maxValues": {"x": 2.5, "id": 5}, "minValues": {"id": 2}, "nullCount": {"id": 1}}
    assert with_footer_stats('{"numRecords":3}', path, []) == '{"numRecords":3}'


def test_rekey_renames_stats_with_collation_too():
    """Collated String Type RFC: statsWithCollation mirrors the physical stats schema per
    collation; after column-mapping removal it must name the logical columns."""
    nested = {"type": "struct", "fields": [field("e", "string", "col-e", 3)]}
    schema = {"type": "struct", "fields": [field("d", nested, "col-d", 2), field("gone", "string", "col-g", 4)]}
    old = {"numRecords": 2, "tightBounds": True,
           "minValues": {"col-d": {"col-e": "A"}}, "maxValues": {"col-d": {"col-e": "b"}},
           "statsWithCollation": {"ICU.en_US.72": {"minValues": {"col-d": {"col-e": "a"}},
                                                   "maxValues": {"col-d": {"col-e": "B"}, "col-x": "q"}}}}
    out = rekey_stats(old, schema, "name")
    assert out == {"numRecords": 2, "tightBounds": True,
                   "minValues": {"d": {"e": "A"}}, "maxValues": {"d": {"e": "b"}},
                   "statsWithCollation": {"ICU.en_US.72": {"minValues": {"d": {"e": "a"}},
                                                           "maxValues": {"d": {"e": "B"}}}}}


def test_footer_stats_of_a_file_with_a_deletion_vector_are_wide():
    # The footer counts rows a DV deletes: the bounds still hold, the null count is no exact
    # count of valid rows, so the stats must say tightBounds false (PROTOCOL.md "Per-file Statistics").
    leaves = [StatsLeaf(("id",), "long")]
    values = {("id",): (1, 9, 2)}
    wide = json.loads(with_missing_leaf_stats('{"numRecords":5}', leaves, values, wide=True))
    assert wide == {"numRecords": 5, "nullCount": {"id": 2}, "minValues": {"id": 1}, "maxValues": {"id": 9},
                    "tightBounds": False}
    tight = json.loads(with_missing_leaf_stats('{"numRecords":5}', leaves, values))
    assert "tightBounds" not in tight
    # nothing added: the stats stay as they were, whatever their bounds say
    same = '{"numRecords":5,"nullCount":{"id":0},"minValues":{"id":1},"maxValues":{"id":9}}'
    assert with_missing_leaf_stats(same, leaves, values, wide=True) == same
