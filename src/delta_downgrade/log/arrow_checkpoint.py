"""The Arrow replay's read of a segment's checkpoint - classic, multi-part, or v2 with a JSON or
parquet manifest and its sidecars: ``add``/``remove`` columns read from parquet as Arrow, ``txn``
and ``domainMetadata`` (small) through :class:`CheckpointReader`."""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from delta_downgrade.errors import CheckpointUnreadableError, CorruptLogError
from delta_downgrade.log.action_rows import DV_REQUIRED, is_exact_checkpoint_type, rows_lacking
from delta_downgrade.log.arrow_columns import arange, empty_maps, file_actions, struct_field
from delta_downgrade.log.arrow_pieces import CheckpointRows, Pieces, provenance, repeated_rank
from delta_downgrade.log.checkpoint_reader import (CheckpointReader, normalize_row, read_checkpoint_columns,
                                                   sidecar_rel_path)
from delta_downgrade.log.checkpoint_schema import ADD_TYPE, REMOVE_TYPE
from delta_downgrade.log.listing import CheckpointInstance
from delta_downgrade.log.reconcile import CHECKPOINT_RANK, file_key
from delta_downgrade.protocol.actions import ACTION_TYPES, AddFile, RemoveFile, Sidecar, parse_commit
from delta_downgrade.storage import Storage

_MAP = pa.map_(pa.string(), pa.string())


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
        return child.cast(_MAP)

    return file_actions(s, typ, maps)


def _read_parquet(storage: Storage, rel_path: str, columns: Sequence[str]) -> pa.Table:
    """Derived columns (``stats_parsed``...) are left out, INT96 read without overflow
    (:func:`read_checkpoint_columns`, shared with the Python reader)."""
    local = getattr(storage, "local_path", None)
    try:
        source: Any = local(rel_path) if local else pa.BufferReader(storage.read_bytes(rel_path))
    except OSError as exc:
        raise CheckpointUnreadableError(f"cannot read checkpoint file {rel_path}: {exc}") from exc
    return read_checkpoint_columns(source, columns, rel_path)


def _valid_rows(column: pa.ChunkedArray) -> pa.StructArray | None:
    if pa.types.is_null(column.type) or column.null_count == len(column):
        return None
    if column.null_count:
        column = column.filter(pc.is_valid(column))
    return column.combine_chunks()


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
    return actions  # type: ignore[return-value]


def checkpoint_pieces(storage: Storage, checkpoint: CheckpointInstance, view: bool = False) -> Pieces:
    """The checkpoint's adds and removes (rank :data:`CHECKPOINT_RANK` both: a checkpoint is
    already reconciled), txns and domains, in the order :meth:`CheckpointReader.rows` gives
    them: its files in part order, then the sidecars. With ``view``, what the Python view needs
    too, and the errors :class:`CheckpointReader` raises for rows it cannot take."""
    out = Pieces()
    sidecars: list[str] = []
    if view:  # read first, as the Python view reads a checkpoint
        found = CheckpointReader(storage, checkpoint).actions(["txn", "domainMetadata"])

    def take_table(table: pa.Table, source: str) -> None:
        for kind, typ, cls in (("add", ADD_TYPE, AddFile), ("remove", REMOVE_TYPE, RemoveFile)):
            if kind not in table.column_names:
                continue
            rows = _valid_rows(table.column(kind))
            if rows is None:
                continue
            path = struct_field(rows, "path")
            if view and (not is_exact_checkpoint_type(rows.type, cls) or path is None or path.null_count
                         or rows_lacking(rows, "deletionVector", DV_REQUIRED) is not None):
                out.add_objects(kind, _python_checkpoint_actions(storage, checkpoint, rows, kind, source),
                                CHECKPOINT_RANK, view)
                continue
            try:
                arr = _parquet_file_actions(rows, typ, source)
            except pa.ArrowException as exc:
                raise CheckpointUnreadableError(
                    f"cannot read the {kind} actions of checkpoint file {source}: {exc}") from exc
            origin = provenance(out.source(CheckpointRows(rows, cls)), arange(0, len(arr))) if view else None
            out.add(kind, arr, repeated_rank(CHECKPOINT_RANK, len(arr)), origin)

    for status in checkpoint.files:
        if status.path.endswith(".json"):
            try:
                actions = parse_commit(storage.read_bytes(status.path))
            except ValueError as exc:
                raise CheckpointUnreadableError(f"cannot parse checkpoint {status.path}: {exc}") from exc
            # the JSON manifest's actions go through to_obj/from_obj, as in CheckpointReader.rows
            adds = [AddFile.from_obj(a.to_obj()) for a in actions if isinstance(a, AddFile)]
            removes = [RemoveFile.from_obj(a.to_obj()) for a in actions if isinstance(a, RemoveFile)]
            if view:
                for action in (*adds, *removes):
                    file_key(action)  # type: ignore[arg-type]
            out.add_objects("add", adds, CHECKPOINT_RANK, view)  # type: ignore[arg-type]
            out.add_objects("remove", removes, CHECKPOINT_RANK, view)  # type: ignore[arg-type]
            sidecars += [a.path for a in actions if isinstance(a, Sidecar)]
            continue
        table = _read_parquet(storage, status.path, ["add", "remove", "sidecar"])
        take_table(table, status.path)
        if "sidecar" in table.column_names:
            rows = _valid_rows(table.column("sidecar"))
            if rows is not None:
                sidecars += [r["path"] for r in rows.to_pylist()]
    for path in sidecars:
        rel = sidecar_rel_path(path)
        take_table(_read_parquet(storage, rel, ["add", "remove"]), rel)

    if not view:
        found = CheckpointReader(storage, checkpoint).actions(["txn", "domainMetadata"])
    out.txns = [((-1, k), t) for k, t in enumerate(found.get("txn", []))]  # type: ignore[misc]
    out.domains = [((-1, k), d) for k, d in enumerate(found.get("domainMetadata", []))]  # type: ignore[misc]
    return out
