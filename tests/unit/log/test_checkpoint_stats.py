"""``add.stats`` from ``add.stats_parsed`` (delta_downgrade.log.format.stats_json, and its use by
read_checkpoint_columns for any checkpoint parquet file: classic, part, V2 top-level, sidecar)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from delta_downgrade.log.read.checkpoint_reader import read_checkpoint_columns
from delta_downgrade.log.format.stats_json import fill_missing_stats, stats_json

UTC = dt.timezone.utc
BOUNDS = pa.struct([("i", pa.int32()), ("s", pa.string()), ("d", pa.date32()),
                    ("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")),
                    ("dec", pa.decimal128(5, 2)), ("f", pa.float64()), ("b", pa.binary()),
                    ("nested", pa.struct([("x", pa.int64())]))])
PARSED = pa.struct([("numRecords", pa.int64()), ("minValues", BOUNDS),
                    ("nullCount", pa.struct([("i", pa.int64()), ("b", pa.int64())])),
                    ("tightBounds", pa.bool_())])
ROW = {"numRecords": 5,
       "minValues": {"i": -3, "s": 'a"b\\c\nd\te', "d": dt.date(1999, 12, 31),
                     "ts": dt.datetime(2024, 2, 29, 23, 59, 58, 987654, tzinfo=UTC),
                     "ntz": dt.datetime(2024, 1, 1, 0, 0, 1, 5000), "dec": decimal.Decimal("-1.50"),
                     "f": 0.5, "b": b"\x00", "nested": {"x": 7}},
       "nullCount": {"i": 0, "b": 2}, "tightBounds": False}


def test_values_are_spelled_as_delta_writes_them() -> None:
    text = stats_json(pa.array([ROW], PARSED)).to_pylist()[0]
    assert json.loads(text) == {
        "numRecords": 5,
        "minValues": {"i": -3, "s": 'a"b\\c\nd\te', "d": "1999-12-31", "ts": "2024-02-29T23:59:58.987Z",
                      "ntz": "2024-01-01T00:00:01.005", "dec": -1.5, "f": 0.5, "nested": {"x": 7}},
        "nullCount": {"i": 0, "b": 2}, "tightBounds": False}
    assert '"dec":-1.50' in text  # the decimal as a number, never a string


def test_what_json_cannot_carry_is_left_out() -> None:
    row = {"numRecords": 1, "minValues": {"f": float("nan"), "s": "a\x01b", "b": b"x"},
           "nullCount": None, "tightBounds": None}
    assert json.loads(stats_json(pa.array([row], PARSED)).to_pylist()[0]) == {"numRecords": 1}
    empty = {"numRecords": None, "minValues": None, "nullCount": None, "tightBounds": None}
    assert stats_json(pa.array([empty, None], PARSED)).to_pylist() == ["{}", None]


def test_only_rows_without_stats_are_filled() -> None:
    parsed = pa.array([ROW, ROW, None, ROW], PARSED)
    stats = pa.array(['{"numRecords":1}', None, None, None], pa.string())
    valid = pa.array([True, True, True, False])
    out = fill_missing_stats(stats, parsed, valid).to_pylist()
    assert out[0] == '{"numRecords":1}'
    assert json.loads(out[1])["numRecords"] == 5
    assert out[2] is None and out[3] is None  # no struct / not an add row


def test_sidecar_without_json_stats_and_int96_timestamps(tmp_path: Path) -> None:
    """A sidecar-shaped file (only ``add``/``remove``) without ``add.stats``; its timestamp
    bounds in INT96, as Databricks writes them: instants, spelled with ``Z``."""
    bounds = pa.struct([("ts", pa.timestamp("us"))])
    parsed_type = pa.struct([("numRecords", pa.int64()), ("maxValues", bounds)])
    add_type = pa.struct([("path", pa.string()), ("size", pa.int64()), ("stats_parsed", parsed_type)])
    remove_type = pa.struct([("path", pa.string())])
    add = pa.array([{"path": "a.parquet", "size": 1,
                     "stats_parsed": {"numRecords": 2, "maxValues": {"ts": dt.datetime(2300, 1, 2, 3, 4, 5)}}},
                    None], add_type)
    remove = pa.array([None, {"path": "gone.parquet"}], remove_type)
    file = tmp_path / "sidecar.parquet"
    pq.write_table(pa.table({"add": add, "remove": remove}), file, use_deprecated_int96_timestamps=True)
    table = read_checkpoint_columns(str(file), ["add", "remove"], "sidecar.parquet")
    rows = table.column("add").to_pylist()
    assert "stats_parsed" not in rows[0]
    assert json.loads(rows[0]["stats"]) == {"numRecords": 2, "maxValues": {"ts": "2300-01-02T03:04:05.000Z"}}
    assert rows[1] is None
    assert table.column("remove").to_pylist()[1] == {"path": "gone.parquet"}


def test_a_stats_parsed_that_is_no_struct_is_ignored(tmp_path):
    # A stats_parsed this package cannot turn into JSON (here: not even a struct) must leave the
    # checkpoint readable: statistics are optional (PROTOCOL.md "Per-file Statistics").
    import pyarrow as pa
    import pyarrow.parquet as pq

    from delta_downgrade.log.read.checkpoint_reader import read_checkpoint_columns

    add = pa.array([{"path": "a.parquet", "size": 1, "stats": None, "stats_parsed": "not a struct"}],
                   pa.struct([("path", pa.string()), ("size", pa.int64()), ("stats", pa.string()),
                              ("stats_parsed", pa.string())]))
    path = tmp_path / "00000000000000000001.checkpoint.parquet"
    pq.write_table(pa.table({"add": add}), path)
    table = read_checkpoint_columns(str(path), ["add"], path.name)
    assert table.column("add").to_pylist() == [{"path": "a.parquet", "size": 1, "stats": None}]


def test_a_failing_stats_recovery_leaves_the_checkpoint_readable(tmp_path, caplog, monkeypatch):
    # Fault injection: whatever the conversion of a well-shaped stats_parsed raises, the
    # checkpoint is still read, without those statistics, and the reader says so.
    import pyarrow as pa
    import pyarrow.parquet as pq

    import delta_downgrade.log.format.stats_json as stats_json_module
    import delta_downgrade.log.read.checkpoint_reader as checkpoint_reader

    parsed_type = pa.struct([("numRecords", pa.int64())])
    add = pa.array([{"path": "a.parquet", "stats": None, "stats_parsed": {"numRecords": 3}}],
                   pa.struct([("path", pa.string()), ("stats", pa.string()), ("stats_parsed", parsed_type)]))
    path = tmp_path / "00000000000000000001.checkpoint.parquet"
    pq.write_table(pa.table({"add": add}), path)
    assert checkpoint_reader.read_checkpoint_columns(str(path), ["add"], path.name).column("add").to_pylist() \
        == [{"path": "a.parquet", "stats": '{"numRecords":3}'}]

    def broken(*_args, **_kwargs):
        raise pa.ArrowInvalid("injected")

    # the reader imports the conversion when it needs it (Arrow compute only then)
    monkeypatch.setattr(stats_json_module, "fill_missing_stats", broken)
    with caplog.at_level("WARNING"):
        table = checkpoint_reader.read_checkpoint_columns(str(path), ["add"], path.name)
    assert table.column("add").to_pylist() == [{"path": "a.parquet", "stats": None}]
    assert "stats_parsed not usable" in caplog.text
