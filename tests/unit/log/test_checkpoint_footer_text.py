"""A checkpoint whose footer holds what the Parquet format does not allow is a damaged file,
refused as an unreadable checkpoint (then an older checkpoint or the commits serve, or the table
is refused): column names and key-value metadata that are not text (Thrift ``string`` fields,
UTF-8), a column chunk naming another column, an encoding the format does not define. No
checksum covers a footer, Arrow's reader opens such a file anyway, and delta-rs refuses it. A
column name that is not text used to escape as a UnicodeDecodeError (an internal error, exit 1).
(Found by tests/integration/test_log_corruption_property.py with other seeds.)"""

from __future__ import annotations

import io

import pyarrow as pa
import pytest

from delta_downgrade.arrow_parquet import ParquetWriter
from delta_downgrade.errors import CheckpointUnreadableError
from delta_downgrade.log.read.checkpoint_reader import open_checkpoint_parquet, read_checkpoint_columns

SPARK_KEY = b"org.apache.spark.sql.parquet.row.metadata"


def _file(**metadata: str) -> bytes:
    table = pa.table({"add": pa.array([{"path": "part-0.parquet", "size": 1}],
                                      pa.struct([("path", pa.string()), ("size", pa.int64())]))})
    table = table.replace_schema_metadata({k.replace("_", "."): v for k, v in metadata.items()} or None)
    sink = io.BytesIO()
    with ParquetWriter(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _damaged(data: bytes, text: bytes, at: int) -> bytes:
    """``data`` with the byte ``at`` of the first copy of ``text`` in the footer set to 0xFF
    (never UTF-8). The footer's Thrift ``FileMetaData`` lists the schema's names first, then
    the row groups (their columns' paths), then the key-value metadata."""
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    start = data.index(text, footer)
    return data[:start + at] + b"\xff" + data[start + at + 1:]


def test_an_undamaged_footer_opens():
    data = _file(org_apache_spark_sql_parquet_row_metadata='{"type":"struct","fields":[]}')
    assert open_checkpoint_parquet(pa.BufferReader(data)).metadata.num_rows == 1
    assert read_checkpoint_columns(pa.BufferReader(data), ["add"], "c.parquet").num_rows == 1


def test_key_value_metadata_that_is_not_text_is_an_unreadable_checkpoint():
    value = '{"type":"struct","fields":[]}'
    data = _damaged(_file(org_apache_spark_sql_parquet_row_metadata=value), value.encode(), 9)
    with pytest.raises(pa.ArrowInvalid, match="key-value metadata 'org.apache.spark.sql.parquet.row.metadata'"):
        open_checkpoint_parquet(pa.BufferReader(data))
    with pytest.raises(CheckpointUnreadableError, match="c.parquet.*not UTF-8"):
        read_checkpoint_columns(pa.BufferReader(data), ["add"], "c.parquet")


def test_a_column_name_that_is_not_text_is_an_unreadable_checkpoint():
    data = _damaged(_file(), b"path", 1)
    with pytest.raises(pa.ArrowInvalid, match="column name"):
        open_checkpoint_parquet(pa.BufferReader(data))
    with pytest.raises(CheckpointUnreadableError, match="c.parquet.*column name"):
        read_checkpoint_columns(pa.BufferReader(data), ["add"], "c.parquet")


def _chunk_changed(data: bytes, old: bytes, new: bytes) -> bytes:
    """``data`` with the first ``old`` after the footer's schema (in a column chunk's metadata)
    replaced by ``new`` of the same length."""
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    start = data.index(old, data.index(b"size", footer))
    return data[:start] + new + data[start + len(old):]


def test_a_column_chunk_of_another_column_is_an_unreadable_checkpoint():
    # the first chunk's path_in_schema ("add", "path") names a column of the schema no more
    data = _chunk_changed(_file(), b"\x04path", b"\x04pxth")
    with pytest.raises(CheckpointUnreadableError, match="names its column 0 'add.pxth', not 'add.path'"):
        read_checkpoint_columns(pa.BufferReader(data), ["add"], "c.parquet")


def test_an_encoding_the_format_does_not_define_is_an_unreadable_checkpoint():
    # a column chunk's encodings, Thrift compact: a list of three i32 (0x35), PLAIN (0), RLE (3)
    # and RLE_DICTIONARY (8) zigzag-encoded; 63 is no encoding
    data = _chunk_changed(_file(), b"\x35\x00\x06\x10", b"\x35\x00\x06\x7e")
    with pytest.raises(CheckpointUnreadableError, match="an encoding the Parquet format does not define"):
        read_checkpoint_columns(pa.BufferReader(data), ["add"], "c.parquet")
