"""The Arrow replay's read of a segment's checkpoint - classic, multi-part, or v2 with a JSON or
parquet manifest and its sidecars: ``add``/``remove`` columns read from parquet as Arrow, ``txn``
and ``domainMetadata`` (small) through :class:`CheckpointReader`."""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import pyarrow as pa
from delta_downgrade import arrow_compute as ac

from delta_downgrade.errors import CheckpointUnreadableError, CorruptLogError
from delta_downgrade.log.format.action_rows import DV_REQUIRED, is_exact_checkpoint_type, rows_lacking
from delta_downgrade.log.format.arrow_columns import arange, empty_maps, file_actions, struct_field, taken
from delta_downgrade.log.replay.arrow_pieces import CheckpointRows, Pieces, provenance, repeated_rank
from delta_downgrade.log.read.checkpoint_reader import (CheckpointReader, iter_checkpoint_columns, normalize_row,
                                                   open_checkpoint_parquet, parquet_source, read_checkpoint_columns,
                                                   sidecar_rel_path)
from delta_downgrade.log.format.checkpoint_schema import ADD_TYPE, REMOVE_TYPE
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.log.replay.reconcile import CHECKPOINT_RANK, file_key
from delta_downgrade.protocol.actions import ACTION_TYPES, AddFile, RemoveFile, Sidecar, parse_commit
from delta_downgrade.storage import Storage

_MAP = pa.map_(pa.string(), pa.string())
#: Rows per piece of a checkpoint file read as a stream (:func:`iter_checkpoint_pieces`).
STREAM_ROWS = 100_000


def _parquet_file_actions(s: pa.StructArray, typ: pa.StructType, source: str) -> pa.StructArray:
    """Checkpoint rows (non-null) as ``typ``. An absent field takes AddFile's default, a null
    stays null (the Python reader builds actions from the row dicts the same way)."""
    path = struct_field(s, "path")
    if path is None or path.null_count:
        raise CorruptLogError(f"checkpoint file {source} has a file action without a path")
    is_add = typ == ADD_TYPE

    def maps(name: str, child: pa.Array | None, n: int) -> pa.Array:
        if child is None:
            return empty_maps(n) if is_add and name == "partitionValues" else pa.nulls(n, _MAP)
        if pa.types.is_null(child.type):
            return pa.nulls(n, _MAP)
        return ac.cast(child, _MAP)

    return file_actions(s, typ, maps)


def _read_parquet(storage: Storage, rel_path: str, columns: Sequence[str]) -> pa.Table:
    """Derived columns (``stats_parsed``...) are left out, INT96 read without overflow
    (:func:`read_checkpoint_columns`, shared with the Python reader)."""
    with parquet_source(storage, rel_path) as source:
        return read_checkpoint_columns(source, columns, rel_path)


def _iter_parquet(storage: Storage, rel_path: str, columns: Sequence[str]) -> Iterator[pa.Table]:
    """:func:`_read_parquet` in pieces of whole row groups (:data:`STREAM_ROWS` rows or so)."""
    with parquet_source(storage, rel_path) as source:
        yield from iter_checkpoint_columns(source, columns, rel_path, STREAM_ROWS)


def _valid_rows(column: pa.ChunkedArray) -> pa.StructArray | None:
    if pa.types.is_null(column.type) or column.null_count == len(column):
        return None
    if column.null_count:
        column = ac.filter(column, ac.is_valid(column))
    return column.combine_chunks()


def _valid_runs(column: pa.ChunkedArray) -> list[pa.StructArray]:
    """The non-null rows of a checkpoint's ``add`` or ``remove`` column, in order, as arrays.

    A checkpoint row holds one action (PROTOCOL.md "Checkpoints"), so each of these columns is null
    on the rows of the other actions. Writers put those rows in a few blocks (protocol, metadata
    and the other kind's actions first or last), so the rows of one kind are usually a few runs:
    each row group's are kept as slices of the column as read where they are (:func:`taken`),
    where a filter would copy every path and statistic of a few hundred megabytes of a large
    checkpoint."""
    if pa.types.is_null(column.type) or column.null_count == len(column):
        return []
    out: list[pa.StructArray] = []
    for chunk in column.chunks:
        if chunk.null_count == 0:
            if len(chunk):
                out.append(chunk)
        elif chunk.null_count < len(chunk):
            out.extend(taken(pa.chunked_array([chunk], column.type), ac.indices_nonzero(ac.is_valid(chunk))).chunks)
    return out


def _python_checkpoint_actions(storage: Storage, checkpoint: CheckpointInstance, rows: pa.StructArray,
                               kind: str, source: str) -> list[AddFile | RemoveFile]:
    """The actions of checkpoint rows as :class:`CheckpointReader` builds them, with its errors."""
    try:
        values = rows.to_pylist()
    except (pa.ArrowException, ValueError, OverflowError) as exc:  # a value Python cannot hold
        raise CheckpointUnreadableError(f"cannot read the {kind} actions of checkpoint file "
                                        f"{source}: {exc}") from exc
    try:
        actions = [ACTION_TYPES[kind].from_obj(normalize_row(kind, r)) for r in values]
    except ValueError as exc:
        raise CorruptLogError(f"checkpoint {checkpoint.paths[0]}: {exc}",
                              table=getattr(storage, "root", None)) from exc
    for action in actions:
        file_key(action)  # type: ignore[arg-type]  # raises for a deletion vector it cannot read, as applying it would
    return actions  # type: ignore[return-value]  # ``kind`` is add or remove: these are file actions


def _take_table(out: Pieces, storage: Storage, checkpoint: CheckpointInstance, table: pa.Table, source: str,
                view: bool) -> None:
    """The ``add`` and ``remove`` rows of one checkpoint file (or part of it) into ``out``."""
    for kind, typ, cls in (("add", ADD_TYPE, AddFile), ("remove", REMOVE_TYPE, RemoveFile)):
        if kind not in table.column_names:
            continue
        if not view:  # the rows as slices where they can be (_valid_runs)
            for rows in _valid_runs(table.column(kind)):
                out.add(kind, _file_actions_of(rows, typ, kind, source), repeated_rank(CHECKPOINT_RANK, len(rows)))
            continue
        valid = _valid_rows(table.column(kind))
        if valid is None:
            continue
        path = struct_field(valid, "path")
        if not is_exact_checkpoint_type(valid.type, cls) or path is None or path.null_count \
                or rows_lacking(valid, "deletionVector", DV_REQUIRED) is not None:
            out.add_objects(kind, _python_checkpoint_actions(storage, checkpoint, valid, kind, source),
                            CHECKPOINT_RANK, view)
            continue
        arr = _file_actions_of(valid, typ, kind, source)
        origin = provenance(out.source(CheckpointRows(valid, cls)), arange(0, len(arr)))
        out.add(kind, arr, repeated_rank(CHECKPOINT_RANK, len(arr)), origin)


def _file_actions_of(rows: pa.StructArray, typ: pa.StructType, kind: str, source: str) -> pa.StructArray:
    """:func:`_parquet_file_actions`, Arrow's errors as the checkpoint's."""
    try:
        return _parquet_file_actions(rows, typ, source)
    except pa.ArrowException as exc:
        raise CheckpointUnreadableError(
            f"cannot read the {kind} actions of checkpoint file {source}: {exc}") from exc


def _json_manifest(storage: Storage, rel_path: str, out: Pieces, view: bool) -> list[str]:
    """A V2 checkpoint's JSON top-level file: its adds and removes into ``out`` (through
    to_obj/from_obj, as in CheckpointReader.rows); the paths of its sidecars."""
    try:
        actions = parse_commit(storage.read_bytes(rel_path))
    except ValueError as exc:
        raise CheckpointUnreadableError(f"cannot parse checkpoint {rel_path}: {exc}") from exc
    adds = [AddFile.from_obj(a.to_obj()) for a in actions if isinstance(a, AddFile)]
    removes = [RemoveFile.from_obj(a.to_obj()) for a in actions if isinstance(a, RemoveFile)]
    if view:
        for action in (*adds, *removes):
            file_key(action)  # type: ignore[arg-type]  # adds and removes only
    out.add_objects("add", adds, CHECKPOINT_RANK, view)
    out.add_objects("remove", removes, CHECKPOINT_RANK, view)
    return [a.path for a in actions if isinstance(a, Sidecar)]


def _sidecar_paths(table: pa.Table) -> list[str]:
    if "sidecar" not in table.column_names:
        return []
    rows = _valid_rows(table.column("sidecar"))
    return [] if rows is None else [r["path"] for r in rows.to_pylist()]


def _non_file_actions(storage: Storage, checkpoint: CheckpointInstance, out: Pieces,
                      found: dict[str, list[Any]] | None = None) -> None:
    if found is None:
        found = CheckpointReader(storage, checkpoint).actions(["txn", "domainMetadata"])
    out.txns = [((-1, k), t) for k, t in enumerate(found.get("txn", []))]
    out.domains = [((-1, k), d) for k, d in enumerate(found.get("domainMetadata", []))]


def checkpoint_pieces(storage: Storage, checkpoint: CheckpointInstance, view: bool = False) -> Pieces:
    """The checkpoint's adds and removes (rank :data:`CHECKPOINT_RANK` both: a checkpoint is
    already reconciled), txns and domains, in the order :meth:`CheckpointReader.rows` gives
    them: its files in part order, then the sidecars. With ``view``, what the Python view needs
    too, and the errors :class:`CheckpointReader` raises for rows it cannot take."""
    out = Pieces()
    sidecars: list[str] = []
    found = None
    if view:  # read first, as the Python view reads a checkpoint
        found = CheckpointReader(storage, checkpoint).actions(["txn", "domainMetadata"])
    for status in checkpoint.files:
        if status.path.endswith(".json"):
            sidecars += _json_manifest(storage, status.path, out, view)
            continue
        table = _read_parquet(storage, status.path, ["add", "remove", "sidecar"])
        _take_table(out, storage, checkpoint, table, status.path, view)
        sidecars += _sidecar_paths(table)
    for path in sidecars:
        rel = sidecar_rel_path(path)
        _take_table(out, storage, checkpoint, _read_parquet(storage, rel, ["add", "remove"]), rel, view)
    _non_file_actions(storage, checkpoint, out, found)
    return out


def checkpoint_size_bytes(storage: Storage, checkpoint: CheckpointInstance) -> int:
    """Bytes of the checkpoint's files and, for a V2 checkpoint, of the sidecars its top-level
    file names (their ``sizeInBytes``, PROTOCOL.md "Sidecar File Information"): where its file
    actions are."""
    total = checkpoint.size_bytes
    if checkpoint.kind == "v2":
        sidecars = CheckpointReader(storage, checkpoint).rows(["sidecar"]).get("sidecar", [])
        total += sum(int(row.get("sizeInBytes") or 0) for row in sidecars)
    return total


def checkpoint_rows(storage: Storage, checkpoint: CheckpointInstance) -> int | None:
    """The rows of a classic or multi-part checkpoint, as its files' parquet footers state them
    (one small read per file); None for a V2 checkpoint (its file actions are in sidecars) or a
    file whose footer cannot be read (the replay then meets, and reports, the damage itself)."""
    if checkpoint.kind == "v2":
        return None
    rows = 0
    try:
        for status in checkpoint.files:
            with parquet_source(storage, status.path) as source:
                rows += open_checkpoint_parquet(source).metadata.num_rows
    except (OSError, pa.ArrowException, CheckpointUnreadableError):
        return None
    return rows


def iter_checkpoint_pieces(storage: Storage, checkpoint: CheckpointInstance) -> Iterator[Pieces]:
    """:func:`checkpoint_pieces` (not for the Python view) as a stream: one :class:`Pieces` per
    :data:`STREAM_ROWS` rows or so of each checkpoint file and sidecar in turn, in the same
    order, then one with the txns and domains."""
    sidecars: list[str] = []
    for status in checkpoint.files:
        out = Pieces()
        if status.path.endswith(".json"):
            sidecars += _json_manifest(storage, status.path, out, False)
            yield out
            continue
        for table in _iter_parquet(storage, status.path, ["add", "remove", "sidecar"]):
            out = Pieces()
            _take_table(out, storage, checkpoint, table, status.path, False)
            sidecars += _sidecar_paths(table)
            del table
            yield out
    for path in sidecars:
        rel = sidecar_rel_path(path)
        for table in _iter_parquet(storage, rel, ["add", "remove"]):
            out = Pieces()
            _take_table(out, storage, checkpoint, table, rel, False)
            del table
            yield out
    out = Pieces()
    _non_file_actions(storage, checkpoint, out)
    yield out
