"""Deletion vectors for tables built with :class:`~delta_downgrade_tools.builders.TableBuilder`:
what a ``DELETE`` on a DV-enabled table commits, written with delta_downgrade's own DV code.

For every affected file, one commit holds ``remove(old add)`` + ``add(same path, deletionVector =
new descriptor, stats with tightBounds = false)`` (PROTOCOL.md "Deletion Vectors": a file with a
DV keeps its physical ``numRecords``; bounds become wide). A file that already has a DV gets the
union of its old and new deleted rows. DVs go to one file each, into one shared file
(``shared_file=True``), or inline into the log (``inline=True``).

Tests and the demo use it to make DV tables the golden set lacks (inline DVs, shared DV files,
many files); delta-rs reading them back through ``scan()`` is the proof that the bytes are right.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_downgrade.protocol.actions import AddFile, AnyAction, DeletionVectorDescriptor, RemoveFile
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade.deletion_vectors import (
    DvFileReader, inline_descriptor, row_index_list, write_dv_file,
)
from delta_downgrade.protocol import Protocol

DV_FEATURE = "deletionVectors"
DV_PROTOCOL = Protocol(3, 7, frozenset({DV_FEATURE}), frozenset({DV_FEATURE}))
ENABLE_DV = "delta.enableDeletionVectors"

RowPredicate = Callable[[dict[str, Any]], bool]
Selection = Union[Mapping[str, Iterable[int]], RowPredicate, pc.Expression]


def create_dv_table(builder: TableBuilder, schema: pa.Schema,
                    rows: pa.Table | Sequence[Mapping[str, Any]] | None = None, *,
                    partition_columns: Sequence[str] = (), files: int = 1,
                    protocol: Protocol = DV_PROTOCOL, configuration: Mapping[str, str] | None = None) -> int:
    """Version 0 of a table that supports deletion vectors (3,7 with ``deletionVectors``) and has
    ``delta.enableDeletionVectors=true``."""
    conf = {ENABLE_DV: "true", **dict(configuration or {})}
    return builder.create(schema, partition_columns=partition_columns, protocol=protocol,
                          configuration=conf, rows=rows, files=files)


def _file_table(builder: TableBuilder, add: AddFile) -> pa.Table:
    return pq.read_table(builder.storage.uri(add.decoded_path))


def _num_records(builder: TableBuilder, add: AddFile) -> int:
    if add.num_records is not None:
        return add.num_records
    return pq.read_metadata(builder.storage.uri(add.decoded_path)).num_rows


def _selected_rows(builder: TableBuilder, add: AddFile, selection: Selection) -> list[int]:
    """The row indexes of ``add``'s parquet file that ``selection`` picks."""
    if isinstance(selection, Mapping):
        rows = selection.get(add.path)
        if rows is None:
            rows = selection.get(add.decoded_path)
        return row_index_list(rows) if rows is not None else []
    table = _file_table(builder, add)
    for name, value in (add.partitionValues or {}).items():
        if name not in table.column_names:
            table = table.append_column(name, pa.array([value] * table.num_rows, pa.string()))
    if isinstance(selection, pc.Expression):
        indexed = table.append_column("__row_index", pa.array(range(table.num_rows), pa.int64()))
        return indexed.filter(selection).column("__row_index").to_pylist()
    return [i for i, row in enumerate(table.to_pylist()) if selection(row)]


def _wide_stats(stats: str | None, num_records: int) -> str:
    """The add's statistics with ``tightBounds`` false; ``numRecords`` stays the physical count."""
    try:
        obj = json.loads(stats) if stats else {}
    except ValueError:
        obj = {}
    obj["numRecords"] = num_records
    obj["tightBounds"] = False
    return json.dumps(obj, separators=(",", ":"))


def deletion_vector_actions(builder: TableBuilder, selection: Selection, *, inline: bool = False,
                            shared_file: bool = False, prefix: str = "") -> list[AnyAction]:
    """The ``remove`` + ``add`` pairs that mark the rows ``selection`` picks as deleted (DV files
    are written now, nothing is committed); empty when nothing new would be deleted.

    For callers whose commit holds more than the DVs, as an ``UPDATE`` or ``MERGE`` on a DV
    table does (the DVs of the old rows plus the file with the new ones, in one commit).
    ``selection``: ``{add path: row indexes}``, a pyarrow compute expression over the file's
    columns (partition values added as strings), or a Python predicate on a row dict.
    """
    snapshot = builder.log.refresh().snapshot(check_read=False)
    if DV_FEATURE not in snapshot.protocol.features:
        raise ValueError(f"the table's protocol {snapshot.protocol} does not support deletion vectors")
    state = snapshot.state()
    reader = DvFileReader(builder.storage)
    plans: list[tuple[AddFile, list[int]]] = []
    for add in sorted(state.files.values(), key=lambda a: a.path):
        new_rows = _selected_rows(builder, add, selection)
        if not new_rows:
            continue
        old = add.dv
        old_rows = row_index_list(reader.read(old, data_file=add.path)) if old is not None else []
        merged = sorted(set(old_rows) | set(new_rows))
        if len(merged) == len(old_rows):
            continue
        total = _num_records(builder, add)
        if merged[-1] >= total:
            raise ValueError(f"row index {merged[-1]} is past the end of {add.path} ({total} rows)")
        plans.append((add, merged))
    if not plans:
        return []

    if inline:
        descriptors = [inline_descriptor(rows) for _, rows in plans]
    elif shared_file:
        descriptors = write_dv_file(builder.storage, [rows for _, rows in plans], prefix=prefix)
    else:
        descriptors = [write_dv_file(builder.storage, [rows], prefix=prefix)[0] for _, rows in plans]

    now = builder.clock.now_ms()
    actions: list[AnyAction] = []
    for (add, rows), dv in zip(plans, descriptors):
        total = _num_records(builder, add)
        actions.append(RemoveFile(
            path=add.path, deletionTimestamp=now, dataChange=True, extendedFileMetadata=True,
            partitionValues=add.partitionValues, size=add.size, stats=add.stats, tags=add.tags,
            deletionVector=add.deletionVector, baseRowId=add.baseRowId,
            defaultRowCommitVersion=add.defaultRowCommitVersion))
        actions.append(AddFile(
            path=add.path, partitionValues=add.partitionValues, size=add.size,
            modificationTime=add.modificationTime, dataChange=True,
            stats=_wide_stats(add.stats, total), tags=add.tags,
            deletionVector=_descriptor_obj(dv), baseRowId=add.baseRowId,
            defaultRowCommitVersion=add.defaultRowCommitVersion,
            clusteringProvider=add.clusteringProvider, extra=dict(add.extra)))
    return actions


def delete_rows(builder: TableBuilder, selection: Selection, *, inline: bool = False,
                shared_file: bool = False, prefix: str = "", operation: str = "DELETE",
                predicate: str | None = None) -> int | None:
    """Mark rows deleted with deletion vectors and commit it; returns the version, or None when
    nothing new was deleted.

    ``selection``: ``{add path: row indexes}``, a pyarrow compute expression over the file's
    columns (partition values added as strings), or a Python predicate on a row dict.
    """
    actions = deletion_vector_actions(builder, selection, inline=inline, shared_file=shared_file,
                                      prefix=prefix)
    if not actions:
        return None
    params = {"predicate": json.dumps([predicate or "<delete_rows>"])}
    return builder.commit(actions, operation, params)


def _descriptor_obj(dv: DeletionVectorDescriptor) -> dict[str, Any]:
    return dv.to_obj()


__all__ = ["DV_PROTOCOL", "create_dv_table", "delete_rows", "deletion_vector_actions"]
