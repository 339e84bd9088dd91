"""``delta_downgrade.arrow_parquet`` reads what ``pyarrow.parquet.ParquetFile`` reads and writes the
bytes ``pyarrow.parquet.ParquetWriter`` writes, for the calls the package makes (that the commands
then leave ``pyarrow.fs`` unloaded: ``tests/integration/test_command_imports.py``)."""

from __future__ import annotations

import datetime as dt
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade import arrow_parquet
from delta_downgrade.arrow_parquet import ParquetFile, ParquetWriter
from delta_downgrade.log.checkpoint.classic_writer import checkpoint_parquet_writer
from delta_downgrade.log.format.checkpoint_schema import CHECKPOINT_SCHEMA

SCHEMA = pa.schema([
    ("add", pa.struct([("path", pa.string()), ("size", pa.int64()),
                       ("stats_parsed", pa.struct([("numRecords", pa.int64())])),
                       ("partitionValues", pa.map_(pa.string(), pa.string()))])),
    ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64())])),
    ("n", pa.int32()),
])


def _table(rows: int, start: int = 0) -> pa.Table:
    return pa.table({
        "add": [None if i % 5 == 0 else {"path": f"f{i}.parquet", "size": i, "stats_parsed": {"numRecords": i},
                                         "partitionValues": [("p", str(i % 3))]} for i in range(start, start + rows)],
        "txn": [{"appId": "a", "version": i} if i % 7 == 0 else None for i in range(start, start + rows)],
        "n": pa.array(range(start, start + rows), pa.int32()),
    }, schema=SCHEMA)


def _write_both(tmp_path, tables, **options):
    ours, public = tmp_path / "ours.parquet", tmp_path / "public.parquet"
    with ParquetWriter(str(ours), SCHEMA, **options) as writer:
        for t in tables:
            writer.write_table(t, row_group_size=t.num_rows)
    with pq.ParquetWriter(str(public), SCHEMA, **options) as writer:
        for t in tables:
            writer.write_table(t, row_group_size=t.num_rows)
    return ours, public


@pytest.mark.parametrize("options", [{}, {"compression": "snappy", "use_dictionary": ["add.path"],
                                           "write_statistics": ["n"], "write_page_checksum": True}],
                         ids=["defaults", "checkpoint-options"])
def test_a_file_written_to_a_path_is_the_public_writers_bytes(tmp_path, options):
    ours, public = _write_both(tmp_path, [_table(40), _table(25, 40)], **options)
    assert ours.read_bytes() == public.read_bytes()
    assert pq.read_table(ours).equals(pa.concat_tables([_table(40), _table(25, 40)]))


def _checkpoint_settings(schema: pa.Schema) -> dict:
    from delta_downgrade.log.checkpoint.classic_writer import _encoding_columns

    dictionary, statistics = _encoding_columns(schema)
    return {"compression": "snappy", "use_dictionary": dictionary, "write_statistics": statistics,
            "write_page_checksum": True}


def test_a_checkpoint_written_to_a_stream_is_the_public_writers_bytes():
    """The checkpoint writer's own settings (``checkpoint_parquet_writer``), into an Arrow buffer
    as ``checkpoint_parquet_bytes`` does, against the public writer given the same settings."""
    rows = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["checkpointProtection"]}},
            *({"add": {"path": f"part-{i}.parquet", "size": 100 + i, "modificationTime": i, "dataChange": False,
                       "partitionValues": [], "stats": '{"numRecords":1}'}} for i in range(20))]
    table = pa.Table.from_pylist(rows, schema=CHECKPOINT_SCHEMA)
    ours_sink = pa.BufferOutputStream()
    with checkpoint_parquet_writer(ours_sink, CHECKPOINT_SCHEMA) as writer:
        writer.write_table(table, row_group_size=table.num_rows)
    public_sink = pa.BufferOutputStream()
    with pq.ParquetWriter(public_sink, CHECKPOINT_SCHEMA, **_checkpoint_settings(CHECKPOINT_SCHEMA)) as writer:
        writer.write_table(table, row_group_size=table.num_rows)
    ours = ours_sink.getvalue().to_pybytes()
    assert ours == public_sink.getvalue().to_pybytes()
    assert pq.read_table(pa.BufferReader(ours)).equals(table)


def test_a_table_of_another_schema_is_refused_and_the_file_still_closes(tmp_path):
    path = tmp_path / "x.parquet"
    with pytest.raises(ValueError, match="schema"):
        with ParquetWriter(str(path), SCHEMA) as writer:
            writer.write_table(pa.table({"n": pa.array([1], pa.int64())}))
    assert pq.ParquetFile(path).metadata.num_rows == 0  # closed with a footer, as the public writer


@pytest.mark.parametrize("columns", [None, ["add"], ["add.path"], ["add.path", "add.size"], ["txn", "n"],
                                     ["add.stats_parsed"], ["add.stats_parsed.numRecords"], ["n", "add.path"],
                                     ["nothing"], ["add.nothing", "n"], []],
                         ids=repr)
def test_columns_are_selected_as_the_public_reader_selects_them(tmp_path, columns):
    path, _ = _write_both(tmp_path, [_table(30), _table(30, 30), _table(10, 60)])
    ours, public = ParquetFile(str(path)), pq.ParquetFile(str(path))
    assert ours.read(columns=columns).equals(public.read(columns=columns))
    assert ours.read_row_groups([2, 0], columns=columns).equals(public.read_row_groups([2, 0], columns=columns))
    for row_groups in (None, [1]):
        mine = list(ours.iter_batches(batch_size=7, row_groups=row_groups, columns=columns))
        theirs = list(public.iter_batches(batch_size=7, row_groups=row_groups, columns=columns))
        assert [b.num_rows for b in mine] == [b.num_rows for b in theirs]
        assert all(a.equals(b) for a, b in zip(mine, theirs))


def test_metadata_and_schemas_are_the_files(tmp_path):
    path, _ = _write_both(tmp_path, [_table(30), _table(5, 30)])
    ours, public = ParquetFile(str(path)), pq.ParquetFile(str(path))
    assert ours.metadata.equals(public.metadata)
    assert ours.schema.equals(public.schema)
    assert ours.schema_arrow.equals(public.schema_arrow)
    assert ours.num_row_groups == public.num_row_groups == 2


def test_a_python_file_object_is_read_as_a_path_is(tmp_path):
    """Objects in a store are read through a seekable Python file (``parquet_source``)."""
    path, _ = _write_both(tmp_path, [_table(30)])
    with open(path, "rb") as fh:
        from_file = ParquetFile(fh).read(columns=["add.path"])
    assert from_file.equals(ParquetFile(str(path)).read(columns=["add.path"]))
    assert ParquetFile(io.BytesIO(path.read_bytes())).read().equals(pq.read_table(path))


def test_int96_instants_after_2262_are_read_in_microseconds(tmp_path):
    path = tmp_path / "int96.parquet"
    late = dt.datetime(2500, 1, 2, 3, 4, 5, 6)
    pq.write_table(pa.table({"t": pa.array([late], pa.timestamp("us"))}), path,
                   use_deprecated_int96_timestamps=True)
    read = ParquetFile(str(path), coerce_int96_timestamp_unit="us").read()
    assert read.column("t").type == pa.timestamp("us") and read.column("t")[0].as_py() == late


def test_a_damaged_page_is_an_error_when_checksums_are_verified(tmp_path):
    path = tmp_path / "crc.parquet"
    with ParquetWriter(str(path), pa.schema([("s", pa.string())]), write_page_checksum=True,
                       compression="none") as writer:
        writer.write_table(pa.table({"s": ["hello-page-checksum"] * 50}))
    data = bytearray(path.read_bytes())
    at = data.find(b"hello-page-checksum")
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    assert ParquetFile(str(path)).read().num_rows == 50  # unchecked: read as is
    with pytest.raises(OSError, match="CRC"):
        ParquetFile(str(path), page_checksum_verification=True).read()


@pytest.fixture
def without_compiled_classes(monkeypatch):
    """As on a pyarrow whose compiled reader and writer are not where the module looks: the
    public classes are used instead."""
    monkeypatch.setattr(arrow_parquet, "ParquetReader", None)
    monkeypatch.setattr(arrow_parquet, "_CompiledWriter", None)


def test_without_the_compiled_classes_the_public_ones_read_and_write_the_same(tmp_path, without_compiled_classes):
    ours, public = _write_both(tmp_path, [_table(30), _table(12, 30)], compression="snappy",
                               write_page_checksum=True)
    assert ours.read_bytes() == public.read_bytes()
    mine, theirs = ParquetFile(str(ours), page_checksum_verification=True), pq.ParquetFile(str(public))
    for columns in (None, ["add.path"], ["txn", "n"], ["nothing"]):
        assert mine.read(columns=columns).equals(theirs.read(columns=columns))
        assert mine.read_row_groups([1], columns=columns).equals(theirs.read_row_groups([1], columns=columns))
    batches = [list(pf.iter_batches(batch_size=8, columns=["n"])) for pf in (mine, theirs)]
    assert len(batches[0]) == len(batches[1]) and all(a.equals(b) for a, b in zip(*batches))
    assert mine.metadata.equals(theirs.metadata) and mine.schema_arrow.equals(theirs.schema_arrow)
