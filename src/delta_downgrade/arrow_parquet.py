"""Arrow's Parquet reader and writer, opened directly: what the package uses of ``pyarrow.parquet``.

``import pyarrow.parquet`` loads ``pyarrow.fs`` with it, to resolve a path through Arrow's
filesystems: the local one, and the S3, GCS, Azure and HDFS modules, which bring ``ssl``,
``pathlib`` and the AWS SDK along (about 16 ms of every process that reads a checkpoint, a tenth of
a fast drop on a small table). The package never reads or writes Parquet through Arrow's
filesystems: it hands pyarrow a local path, an open Python file over an object
(:func:`~delta_downgrade.log.read.checkpoint_reader.parquet_source`) or an Arrow buffer stream, and
the compiled reader and writer (``pyarrow._parquet``, which ``pyarrow.parquet`` wraps) open each of
these themselves. So :class:`ParquetFile` and :class:`ParquetWriter` are the calls the package
makes on their namesakes in ``pyarrow.parquet``, made on the compiled classes with the same
settings: a column named by a dotted prefix (``add``, ``add.path``) reads every leaf under it, and
a file is written with the format version, data page version and Arrow schema that
``pyarrow.parquet.ParquetWriter`` gives it by default (``tests/unit/test_arrow_parquet.py`` checks
the bytes are the same).

The Spark rewrites (``rewrite/``) keep ``pyarrow.parquet``: they read data files' footers in a
process that runs a Spark job.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence

import pyarrow as pa

try:  # the compiled reader and writer, as every pyarrow the package supports (>= 15) lays them out
    from pyarrow._parquet import FileMetaData, ParquetReader, ParquetSchema
    from pyarrow._parquet import ParquetWriter as _CompiledWriter
except ImportError:  # pragma: no cover - a pyarrow that moved them: the public module's classes
    from pyarrow.parquet import FileMetaData, ParquetSchema  # noqa: F401 - re-exported

    ParquetReader = _CompiledWriter = None

__all__ = ["FileMetaData", "ParquetFile", "ParquetSchema", "ParquetWriter"]

#: What ``pyarrow.parquet.ParquetWriter`` gives the compiled writer where its caller says nothing,
#: and the compiled writer's own default differs (None: the C++ library's).
_PUBLIC_WRITER_DEFAULTS = {"version": "2.6", "data_page_version": "1.0", "writer_engine_version": "V2",
                           "compression": "snappy", "use_dictionary": True, "write_statistics": True}


class ParquetFile:
    """A Parquet file open for reading (``pyarrow.parquet.ParquetFile``'s reading calls):
    ``source`` a local path, a Python file object or an Arrow input stream; its footer is read
    here. Column chunks are buffered ahead as the public class does (``pre_buffer``: the ranges
    of a row group are read in a few coalesced requests, which a file over an object needs).
    Arrow's extension types stay off (the compiled reader's default): a column a writer annotated
    with a Parquet logical type such as JSON or UUID is read as its plain storage type, the type
    PROTOCOL.md "Checkpoint Schema" gives every checkpoint column."""

    def __init__(self, source: Any, *, coerce_int96_timestamp_unit: str | None = None,
                 page_checksum_verification: bool = False) -> None:
        if ParquetReader is None:  # a pyarrow without the compiled classes (see the import)
            import pyarrow.parquet as pq

            public = pq.ParquetFile(source, coerce_int96_timestamp_unit=coerce_int96_timestamp_unit,
                                    page_checksum_verification=page_checksum_verification)
            self._reader: Any = public.reader
        else:
            self._reader = ParquetReader()
            self._reader.open(source, pre_buffer=True, coerce_int96_timestamp_unit=coerce_int96_timestamp_unit,
                              page_checksum_verification=page_checksum_verification)
        self._leaves: dict[str, list[int]] | None = None
        self._column_paths: list[list[str]] | None = None

    @property
    def metadata(self) -> FileMetaData:
        return self._reader.metadata

    @property
    def schema(self) -> ParquetSchema:
        """The Parquet schema (physical types, leaf paths), not converted to Arrow."""
        return self._reader.metadata.schema

    @property
    def schema_arrow(self) -> pa.Schema:
        return self._reader.schema_arrow

    @property
    def num_row_groups(self) -> int:
        return int(self._reader.num_row_groups)

    @property
    def column_paths(self) -> list[list[str]]:
        """Each leaf column's path of names, decoded from the footer once (a checkpoint's footer
        check and the column lookups both use them)."""
        if self._column_paths is None:
            self._column_paths = self._reader.column_paths
        return self._column_paths

    def read(self, columns: Iterable[str] | None = None) -> pa.Table:
        """The whole file, or the leaves under ``columns``."""
        return self._reader.read_all(column_indices=self._indices(columns), use_threads=True)

    def read_row_groups(self, row_groups: Sequence[int], columns: Iterable[str] | None = None) -> pa.Table:
        return self._reader.read_row_groups(list(row_groups), column_indices=self._indices(columns),
                                            use_threads=True)

    def iter_batches(self, batch_size: int, row_groups: Sequence[int] | None = None,
                     columns: Iterable[str] | None = None) -> Iterator[pa.RecordBatch]:
        groups = range(self.num_row_groups) if row_groups is None else row_groups
        return self._reader.iter_batches(batch_size, row_groups=list(groups), column_indices=self._indices(columns),
                                         use_threads=True)

    def _indices(self, columns: Iterable[str] | None) -> list[int] | None:
        """The leaf columns under each name of ``columns`` (a top-level column or a dotted path
        into a struct), in the order asked; a name the file does not have selects nothing, as in
        ``pyarrow.parquet``. None (every column) when ``columns`` is None."""
        if columns is None:
            return None
        if self._leaves is None:
            leaves: dict[str, list[int]] = {}
            for index, path in enumerate(self.column_paths):
                for depth in range(1, len(path) + 1):
                    leaves.setdefault(".".join(path[:depth]), []).append(index)
            self._leaves = leaves
        return [index for name in columns for index in self._leaves.get(name, ())]


class ParquetWriter:
    """A Parquet file written from Arrow tables of one schema (``pyarrow.parquet.ParquetWriter``'s
    writing calls): ``sink`` a local path (created or truncated, closed with the writer) or an
    Arrow output stream (left open). ``options`` are the compiled writer's (``compression``,
    ``use_dictionary``, ``write_statistics``, ``write_page_checksum``, ``memory_pool``, ...).
    Closed by ``with``, also when its block raises: the footer is written, and whoever owns the
    file decides whether it is kept."""

    def __init__(self, sink: Any, schema: pa.Schema, **options: Any) -> None:
        self.schema = schema
        if _CompiledWriter is None:  # a pyarrow without the compiled classes (see the import)
            import pyarrow.parquet as pq

            self._writer: Any = pq.ParquetWriter(sink, schema, **options)
        else:
            # pyarrow.parquet.ParquetWriter's defaults, where the compiled writer's differ (it
            # leaves them to the C++ library's, which change from release to release)
            options = {**_PUBLIC_WRITER_DEFAULTS, **options}
            self._writer = _CompiledWriter(sink, schema, **options)
        self._open = True

    def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None:
        """``table``'s rows, in row groups of at most ``row_group_size`` rows. A table of another
        schema is refused (ValueError), as by the public writer: the file has one schema."""
        if not table.schema.equals(self.schema, check_metadata=False):
            raise ValueError(f"table schema does not match the schema the Parquet file is written with:\n"
                             f"{table.schema}\nexpected:\n{self.schema}")
        self._writer.write_table(table, row_group_size=row_group_size)

    def close(self) -> None:
        if self._open:
            self._open = False
            self._writer.close()

    def __enter__(self) -> "ParquetWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
