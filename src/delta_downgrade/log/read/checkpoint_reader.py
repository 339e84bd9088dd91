"""Read checkpoints — classic, multi-part, and v2 (JSON or parquet manifest plus sidecars).

Reads are projected: asking for ``protocol`` and ``metaData`` reads only those columns of the
parquet files and never touches sidecars, so finding the protocol of a version costs the same for
a table of ten files as for one of ten million.
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

import pyarrow as pa

from delta_downgrade.protocol.actions import ACTION_TYPES, Action, parse_commit
from delta_downgrade.errors import CheckpointUnreadableError, CorruptLogError
from delta_downgrade.log.format.checkpoint_schema import STATS_PARSED
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.storage import Storage

if TYPE_CHECKING:
    from delta_downgrade.arrow_parquet import ParquetFile

_log = logging.getLogger(__name__)

# Columns that live in sidecar files of a v2 checkpoint.
FILE_ACTION_COLUMNS = frozenset({"add", "remove"})
# Derived columns some writers add; never copied into actions we write back.
_DERIVED_FIELDS = ("stats_parsed", "partitionValues_parsed")


def normalize_row(key: str, row: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint row as the actions are built from it: without the derived columns, and with a
    deletion vector without a storage type as none, null fields of one left out."""
    for name in _DERIVED_FIELDS:
        row.pop(name, None)
    dv = row.get("deletionVector")
    if isinstance(dv, dict):
        if dv.get("storageType") is None:
            row["deletionVector"] = None
        else:
            row["deletionVector"] = {k: v for k, v in dv.items() if v is not None}
    return row


@contextmanager
def parquet_source(storage: Storage, rel_path: str) -> Iterator[Any]:
    """What pyarrow reads a checkpoint (or sidecar) parquet file from: its local path when the
    table is local (memory-mapped reads), else a seekable file over the object
    (:meth:`Storage.open_input`), from which pyarrow reads the footer and then only the column
    chunks of the row groups it decodes - ranged reads, never the whole object as one ``bytes``.
    :class:`CheckpointUnreadableError` when it cannot be opened."""
    local = storage.local_file(rel_path)
    if local is not None:
        yield local
        return
    try:
        handle = storage.open_input(rel_path)
    except OSError as exc:
        raise CheckpointUnreadableError(f"cannot read checkpoint file {rel_path}: {exc}") from exc
    try:
        yield handle
    finally:
        handle.close()


def open_checkpoint_parquet(source: Any) -> ParquetFile:
    """A checkpoint (or sidecar) parquet file. INT96 timestamps - Databricks writes them in
    ``stats_parsed`` - are read in microseconds: in nanoseconds (pyarrow's default) the years
    after 2262 overflow, and such a file must stay readable (delta-rs reads it). The pages'
    CRCs are checked where the writer recorded them: a damaged page is an unreadable checkpoint
    (an older one is used), never a silently different action."""
    # imported here: a replay of a log without checkpoints never loads Arrow's Parquet module
    from delta_downgrade.arrow_parquet import ParquetFile

    pf = ParquetFile(source, coerce_int96_timestamp_unit="us", page_checksum_verification=True)
    _check_footer(pf)
    return pf


def _check_footer(pf: ParquetFile) -> None:
    """``pa.ArrowInvalid`` when a field of the footer that Arrow's reader passes over at open is
    not what the Parquet format allows: column names and key-value metadata that are not UTF-8
    text (Thrift ``string`` fields: ``SchemaElement.name``, ``KeyValue``), a column chunk whose
    ``path_in_schema`` is not its column's path or whose list of encodings holds a value the
    format does not define. No checksum covers a footer: such a byte marks the file as damaged,
    and delta-rs refuses the file; a name that is not text would otherwise fail later, as a
    UnicodeDecodeError, where the columns are looked up."""
    def damaged(what: str) -> pa.ArrowInvalid:
        return pa.ArrowInvalid(f"{what} (a damaged footer)")

    try:
        paths = [".".join(path) for path in pf.column_paths]
    except UnicodeDecodeError as exc:
        raise damaged(f"a column name in the footer is not UTF-8 text: {exc}") from None
    meta = pf.metadata
    for key, value in (meta.metadata or {}).items():
        try:
            key.decode("utf-8")
            value.decode("utf-8")
        except UnicodeDecodeError as exc:
            name = key.decode("utf-8", "replace")[:80]
            raise damaged(f"the footer's key-value metadata {name!r} is not UTF-8 text: {exc}") from None
    for group in range(meta.num_row_groups):
        row_group = meta.row_group(group)
        for column, path in enumerate(paths[:row_group.num_columns]):
            chunk = row_group.column(column)
            try:
                chunk_path = chunk.path_in_schema
            except UnicodeDecodeError:
                chunk_path = None
            if chunk_path != path:
                raise damaged(f"row group {group} names its column {column} {chunk_path!r}, not {path!r}")
            if "UNKNOWN" in chunk.encodings:
                raise damaged(f"row group {group}, column {path}: an encoding the Parquet format does not define")


def projected_columns(pf: ParquetFile, columns: Iterable[str]) -> list[str]:
    """The parquet column paths to read for the action columns ``columns`` that the file has:
    a struct column as its fields, less the derived ones (``stats_parsed``,
    ``partitionValues_parsed``: PROTOCOL.md "Checkpoint Schema" makes them optional copies of
    ``stats`` and ``partitionValues``), so that they are never decoded."""
    schema = pf.schema_arrow
    out: list[str] = []
    for name in columns:
        index = schema.get_field_index(name)
        if index < 0:
            continue
        typ = schema.field(index).type
        if pa.types.is_struct(typ) and any(typ.field(i).name in _DERIVED_FIELDS for i in range(typ.num_fields)):
            out += [f"{name}.{typ.field(i).name}" for i in range(typ.num_fields)
                    if typ.field(i).name not in _DERIVED_FIELDS]
        else:
            out.append(name)
    return out


def read_checkpoint_columns(source: Any, columns: Iterable[str], rel_path: str) -> pa.Table:
    """The action columns ``columns`` of a checkpoint parquet file (those it has), projected as
    :func:`projected_columns` says, ``add.stats`` filled from ``add.stats_parsed`` where only the
    latter is there (:func:`_with_stats_from_parsed`); :class:`CheckpointUnreadableError` when it
    cannot be read."""
    try:
        pf = open_checkpoint_parquet(source)
        present = projected_columns(pf, columns)
    except (pa.ArrowException, OSError) as exc:
        raise CheckpointUnreadableError(f"cannot read checkpoint file {rel_path}: {exc}") from exc
    return _read_groups(pf, present, None, rel_path)


def iter_checkpoint_columns(source: Any, columns: Iterable[str], rel_path: str,
                            max_rows: int) -> Iterator[pa.Table]:
    """:func:`read_checkpoint_columns` in pieces of whole row groups of about ``max_rows`` rows
    (one row group when it is larger), for a checkpoint file too large to read at once."""
    try:
        pf = open_checkpoint_parquet(source)
        present = projected_columns(pf, columns)
        sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
    except (pa.ArrowException, OSError) as exc:
        raise CheckpointUnreadableError(f"cannot read checkpoint file {rel_path}: {exc}") from exc
    add_type = pf.schema_arrow.field("add").type if "add" in pf.schema_arrow.names else None
    # stats_parsed is read row group by row group, beside the rows it completes
    splittable = not (add_type is not None and pa.types.is_struct(add_type)
                      and add_type.get_field_index(STATS_PARSED) >= 0)
    group: list[int] = []
    rows = 0
    for i, n in enumerate(sizes):
        if n > max_rows and splittable and present:
            # One row group larger than a piece (delta-rs writes a checkpoint as one row group):
            # read it in batches, so that only a piece of it is decoded at a time.
            if group:
                yield _read_groups(pf, present, group, rel_path)
                group, rows = [], 0
            try:
                for batch in pf.iter_batches(batch_size=max_rows, row_groups=[i], columns=present):
                    yield pa.Table.from_batches([batch])
            except (pa.ArrowException, OSError) as exc:
                raise CheckpointUnreadableError(f"cannot read checkpoint file {rel_path}: {exc}") from exc
            continue
        group.append(i)
        rows += n
        if rows >= max_rows:
            yield _read_groups(pf, present, group, rel_path)
            group, rows = [], 0
    if group:
        yield _read_groups(pf, present, group, rel_path)
    if not sizes:
        yield _read_groups(pf, present, None, rel_path)


def _read_groups(pf: ParquetFile, present: list[str], groups: list[int] | None, rel_path: str) -> pa.Table:
    """The columns ``present`` of row groups ``groups`` (None: all) of ``pf``, stats recovered."""
    try:
        if not present:
            table = pa.table({})
        else:
            table = pf.read(columns=present) if groups is None else pf.read_row_groups(groups, columns=present)
    except (pa.ArrowException, OSError) as exc:
        raise CheckpointUnreadableError(f"cannot read checkpoint file {rel_path}: {exc}") from exc
    try:
        return _with_stats_from_parsed(pf, table, groups)
    except (pa.ArrowException, OSError, ValueError, TypeError, OverflowError) as exc:
        # Statistics are optional (PROTOCOL.md "Per-file Statistics"): a stats_parsed this
        # package cannot turn into JSON costs those files their statistics, never the table.
        _log.warning("checkpoint file %s: add.stats_parsed not usable (%s: %s); the files without "
                     "JSON stats are read without statistics", rel_path, type(exc).__name__, exc)
        return table


def _instant_leaves(pf: ParquetFile) -> frozenset[str]:
    """The timestamp leaves of ``add.stats_parsed`` stored as INT96: instants (Spark's
    ``TIMESTAMP``), which pyarrow reads without a zone."""
    prefix = f"add.{STATS_PARSED}."
    schema = pf.schema
    return frozenset(schema.column(i).path[len(prefix):] for i in range(len(schema))
                     if schema.column(i).physical_type == "INT96"
                     and schema.column(i).path.startswith(prefix))


def _with_stats_from_parsed(pf: ParquetFile, table: pa.Table, groups: list[int] | None = None) -> pa.Table:
    """``table`` with the ``add`` rows that have no JSON ``stats`` but a ``stats_parsed``
    (PROTOCOL.md "Checkpoints": ``stats`` is omitted when ``delta.checkpoint.writeStatsAsJson``
    is false, ``stats_parsed`` written when ``writeStatsAsStruct`` is true) given the JSON the
    struct stands for, so that no statistics are lost by a replay that keeps the JSON only.
    ``stats_parsed`` is read only when some add lacks ``stats``: the common checkpoint costs a
    null count."""
    if "add" not in table.column_names:
        return table
    add_type = pf.schema_arrow.field("add").type
    if not pa.types.is_struct(add_type) or add_type.get_field_index(STATS_PARSED) < 0:
        return table
    column = table.column("add")
    if len(column) == column.null_count:
        return table
    stats_index = column.type.get_field_index("stats")
    if stats_index >= 0 and sum(c.field(stats_index).null_count for c in column.chunks) == column.null_count:
        return table  # read from parquet, a child is null where its parent is: every add has stats
    add = column.combine_chunks()
    stats = add.field(stats_index) if stats_index >= 0 else None
    wanted = [f"add.{STATS_PARSED}"]
    parsed_table = pf.read(columns=wanted) if groups is None else pf.read_row_groups(groups, columns=wanted)
    parsed = parsed_table.column("add").combine_chunks().field(STATS_PARSED)
    if not pa.types.is_struct(parsed.type):  # not the shape PROTOCOL.md gives it: nothing to recover
        return table
    # Arrow compute (and its import) only for the rare checkpoint without JSON stats
    from delta_downgrade import arrow_compute as ac
    from delta_downgrade.log.format.stats_json import fill_missing_stats

    valid = ac.is_valid(add)
    filled = fill_missing_stats(stats, parsed, valid, _instant_leaves(pf))
    if stats_index >= 0:
        children = [filled if i == stats_index else add.field(i) for i in range(add.type.num_fields)]
        fields = list(add.type)
    else:
        children = [add.field(i) for i in range(add.type.num_fields)] + [filled]
        fields = list(add.type) + [pa.field("stats", pa.string())]
    new_add = ac.with_validity(pa.StructArray.from_arrays(children, fields=fields), valid if add.null_count else None)
    return table.set_column(table.column_names.index("add"), "add", new_add)


_SET_BITS = re.compile("1+")
#: Up to this many runs of rows, a chunk is converted run by run (see _valid_rows).
_FEW_RUNS = 16


def _valid_rows(column: pa.ChunkedArray) -> list[Any]:
    """The non-null rows of ``column`` as Python values, in order: what filtering on ``is_valid``
    and converting gives. A chunk whose rows sit in a few runs (the ``protocol`` column: one row
    of a checkpoint's thousands) is converted run by run, from the set bits of its validity
    bitmap, without Arrow's compute module: reading only the ``protocol`` and ``metaData`` of a
    checkpoint then needs no compute function, and that import is about a fifth of the CPU of
    finding a table's latest protocol in a fresh process. Any other chunk is filtered with it: a
    slice per run costs microseconds, ten times the filter's cost per row."""
    out: list[Any] = []
    for chunk in column.chunks:
        if chunk.null_count == 0:
            out += chunk.to_pylist()
            continue
        if chunk.null_count == len(chunk):
            continue
        bitmap = chunk.buffers()[0]  # validity, least significant bit first (Arrow columnar format)
        bits = format(int.from_bytes(bitmap, "little"), "b")[::-1]
        bits = bits[chunk.offset:chunk.offset + len(chunk)]
        if bits.count("01") + bits.startswith("1") > _FEW_RUNS:
            from delta_downgrade import arrow_compute as ac

            out += ac.filter(chunk, ac.is_valid(chunk)).to_pylist()
            continue
        for run in _SET_BITS.finditer(bits):
            out += chunk.slice(run.start(), run.end() - run.start()).to_pylist()
    return out


def _parquet_column_rows(storage: Storage, rel_path: str, columns: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    source = rel_path
    with parquet_source(storage, rel_path) as data:
        table = read_checkpoint_columns(data, columns, source)
    out: dict[str, list[dict[str, Any]]] = {}
    for name in table.column_names:
        try:
            rows = _valid_rows(table.column(name))
        except (pa.ArrowException, ValueError, OverflowError) as exc:  # a value Python cannot hold
            raise CheckpointUnreadableError(f"cannot read the {name} actions of checkpoint file "
                                            f"{source}: {exc}") from exc
        out[name] = [normalize_row(name, row) for row in rows]
    return out


class CheckpointReader:
    """Reads the actions of one checkpoint, column by column."""

    def __init__(self, storage: Storage, checkpoint: CheckpointInstance) -> None:
        self.storage = storage
        self.checkpoint = checkpoint

    def rows(self, columns: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """The raw rows of each requested action column (``add``, ``protocol``, …)."""
        wanted = list(dict.fromkeys(columns))
        out: dict[str, list[dict[str, Any]]] = {c: [] for c in wanted}
        needs_sidecars = bool(FILE_ACTION_COLUMNS.intersection(wanted))
        read_cols = wanted + (["sidecar"] if needs_sidecars and "sidecar" not in wanted else [])
        sidecars: list[dict[str, Any]] = []
        for status in self.checkpoint.files:
            if status.path.endswith(".json"):
                try:
                    actions = parse_commit(self.storage.read_bytes(status.path))
                except ValueError as exc:
                    raise CheckpointUnreadableError(f"cannot parse checkpoint {status.path}: {exc}") from exc
                for action in actions:
                    key = getattr(action, "KEY", None) or getattr(action, "key", None)
                    if key in read_cols and isinstance(action, Action):
                        (sidecars if key == "sidecar" else out.setdefault(key, [])).append(action.to_obj())
                continue
            found = _parquet_column_rows(self.storage, status.path, read_cols)
            for key, rows in found.items():
                (sidecars if key == "sidecar" else out.setdefault(key, [])).extend(rows)
        if "sidecar" in wanted:
            out["sidecar"] = list(sidecars)
        if needs_sidecars:
            for sidecar in sidecars:
                rel = sidecar_rel_path(sidecar["path"])
                found = _parquet_column_rows(self.storage, rel, [c for c in wanted if c in FILE_ACTION_COLUMNS])
                for key, rows in found.items():
                    out[key].extend(rows)
        return out

    def actions(self, columns: Sequence[str]) -> dict[str, list[Action]]:
        try:
            return {key: [ACTION_TYPES[key].from_obj(r) for r in rows]
                    for key, rows in self.rows(columns).items() if key in ACTION_TYPES}
        except ValueError as exc:
            raise CorruptLogError(f"checkpoint {self.checkpoint.paths[0]}: {exc}",
                                  table=getattr(self.storage, "root", None)) from exc

    def sidecar_paths(self) -> list[str]:
        return [sidecar_rel_path(r["path"]) for r in self.rows(["sidecar"])["sidecar"]]


def sidecar_rel_path(path: object) -> str:
    """The table-relative path of a sidecar: PROTOCOL.md "Sidecar File Information" makes its
    ``path`` a file name relative to ``_delta_log/_sidecars`` or an absolute path of a file
    there. Anything that would lead elsewhere (``../../x.parquet``, a sub-directory, another
    directory's file) is refused with :class:`CheckpointUnreadableError`: a checkpoint naming it
    is not one this table's writers made, and is never followed."""
    if not isinstance(path, str) or not path:
        raise CheckpointUnreadableError(f"a sidecar action has no usable path ({path!r})")
    name = path
    if "://" in path or path.startswith("/"):
        marker = f"/{LOG_DIR}/_sidecars/"
        if marker not in path:
            raise CheckpointUnreadableError(
                f"the sidecar path {path!r} is not in _delta_log/_sidecars; refusing to read it")
        name = path.rsplit(marker, 1)[1]
    if "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        raise CheckpointUnreadableError(
            f"the sidecar path {path!r} leads outside _delta_log/_sidecars; refusing to read it")
    return f"{LOG_DIR}/_sidecars/{name}"
