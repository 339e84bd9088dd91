"""Arrow columns of the checkpoint schema from action objects
(:mod:`delta_downgrade.log.format.checkpoint_schema`).

Like delta-spark, ``dataChange`` is false in every ``add`` and ``remove`` row a checkpoint holds.
A deletion vector given as a dict or a :class:`DeletionVectorDescriptor` without ``storageType`` is
no deletion vector.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa

from delta_downgrade import arrow_compute as ac

from delta_downgrade.log.format.checkpoint_schema import (
    ADD_TYPE, BOOL, CHECKPOINT_METADATA_TYPE, CHECKPOINT_SCHEMA, DOMAIN_TYPE, DV_TYPE, FORMAT_TYPE, INT,
    LONG, METADATA_TYPE, PROTOCOL_TYPE, REMOVE_TYPE, SIDECAR_TYPE, STRING, STRING_LIST, STRING_MAP,
    TXN_TYPE,
)
from delta_downgrade.protocol.actions import (AddFile, CheckpointMetadata, DeletionVectorDescriptor,
                                              DomainMetadata, Metadata, ProtocolAction, RemoveFile,
                                              Sidecar, Txn)



def _zero_offsets(n: int) -> pa.Array:
    return pa.Array.from_buffers(INT, n + 1, [None, pa.py_buffer(bytes(4 * (n + 1)))])


def map_array(values: Sequence[Mapping[str, str | None] | None]) -> pa.Array:
    """map<string,string> from dicts (None = null map)."""
    values = list(values)
    n = len(values)
    nulls = values.count(None)
    if nulls == n:
        return pa.nulls(n, STRING_MAP)
    if not nulls and not any(values):  # all empty: the common unpartitioned case
        return pa.MapArray.from_arrays(_zero_offsets(n), pa.array([], STRING), pa.array([], STRING),
                                       type=STRING_MAP)
    offsets = [0] * (n + 1)
    keys: list[str] = []
    items: list[str | None] = []
    pos = 0
    for i, value in enumerate(values):
        if value:
            keys.extend(value.keys())
            items.extend(value.values())
            pos += len(value)
        offsets[i + 1] = pos
    valid = pa.array([v is not None for v in values], BOOL) if nulls else None
    return ac.with_validity(pa.MapArray.from_arrays(pa.array(offsets, INT), pa.array(keys, STRING),
                                                    pa.array(items, STRING), type=STRING_MAP), valid)


def str_list_array(values: Sequence[Sequence[str] | None]) -> pa.Array:
    return pa.array([None if v is None else list(v) for v in values], STRING_LIST)


def _dv_fields(dv: Any) -> tuple[Any, ...] | None:
    if dv is None:
        return None
    if isinstance(dv, DeletionVectorDescriptor):
        return (dv.storageType, dv.pathOrInlineDv, dv.offset, dv.sizeInBytes, dv.cardinality,
                dv.maxRowIndex)
    if isinstance(dv, Mapping):
        if dv.get("storageType") is None:
            return None
        return (dv["storageType"], dv.get("pathOrInlineDv"), dv.get("offset"),
                dv.get("sizeInBytes"), dv.get("cardinality"), dv.get("maxRowIndex"))
    raise TypeError(f"deletionVector must be a dict or DeletionVectorDescriptor, got {dv!r}")


def dv_array(values: Sequence[Any]) -> pa.Array:
    values = list(values)
    n = len(values)
    if values.count(None) == n:
        return pa.nulls(n, DV_TYPE)
    rows = [_dv_fields(v) for v in values]
    columns = []
    for i, f in enumerate(DV_TYPE):
        columns.append(pa.array([None if r is None else r[i] for r in rows], f.type))
    valid = pa.array([r is not None for r in rows], BOOL)
    return ac.with_validity(pa.StructArray.from_arrays(columns, fields=list(DV_TYPE)), valid)


def _column(values: list[Any], typ: pa.DataType) -> pa.Array:
    return pa.array(values, typ)


def _false(n: int) -> pa.Array:
    return pa.array([False] * n, BOOL)


def add_array(adds: Sequence[AddFile]) -> pa.StructArray:
    n = len(adds)
    return pa.StructArray.from_arrays([
        _column([a.path for a in adds], STRING),
        map_array([a.partitionValues for a in adds]),
        _column([a.size for a in adds], LONG),
        _column([a.modificationTime for a in adds], LONG),
        _false(n),
        map_array([a.tags for a in adds]),
        dv_array([a.deletionVector for a in adds]),
        _column([a.baseRowId for a in adds], LONG),
        _column([a.defaultRowCommitVersion for a in adds], LONG),
        _column([a.clusteringProvider for a in adds], STRING),
        _column([a.stats for a in adds], STRING),
    ], fields=list(ADD_TYPE))


def remove_array(removes: Sequence[RemoveFile]) -> pa.StructArray:
    n = len(removes)
    return pa.StructArray.from_arrays([
        _column([r.path for r in removes], STRING),
        _column([r.deletionTimestamp for r in removes], LONG),
        _false(n),
        _column([r.extendedFileMetadata for r in removes], BOOL),
        map_array([r.partitionValues for r in removes]),
        _column([r.size for r in removes], LONG),
        dv_array([r.deletionVector for r in removes]),
        _column([r.baseRowId for r in removes], LONG),
        _column([r.defaultRowCommitVersion for r in removes], LONG),
    ], fields=list(REMOVE_TYPE))


def txn_array(txns: Sequence[Txn]) -> pa.StructArray:
    return pa.StructArray.from_arrays([
        _column([t.appId for t in txns], STRING),
        _column([t.version for t in txns], LONG),
        _column([t.lastUpdated for t in txns], LONG),
    ], fields=list(TXN_TYPE))


def domain_array(domains: Sequence[DomainMetadata]) -> pa.StructArray:
    return pa.StructArray.from_arrays([
        _column([d.domain for d in domains], STRING),
        _column([d.configuration for d in domains], STRING),
        _column([bool(d.removed) for d in domains], BOOL),
    ], fields=list(DOMAIN_TYPE))


def metadata_array(md: Metadata) -> pa.StructArray:
    fmt = md.format or {}
    format_array = pa.StructArray.from_arrays(
        [_column([fmt.get("provider", "parquet")], STRING), map_array([fmt.get("options") or {}])],
        fields=list(FORMAT_TYPE))
    return pa.StructArray.from_arrays([
        _column([md.id], STRING),
        _column([md.name], STRING),
        _column([md.description], STRING),
        format_array,
        _column([md.schemaString], STRING),
        str_list_array([list(md.partitionColumns or [])]),
        map_array([md.configuration or {}]),
        _column([md.createdTime], LONG),
    ], fields=list(METADATA_TYPE))


def protocol_array(p: ProtocolAction) -> pa.StructArray:
    return pa.StructArray.from_arrays([
        _column([p.minReaderVersion], INT),
        _column([p.minWriterVersion], INT),
        str_list_array([p.readerFeatures]),
        str_list_array([p.writerFeatures]),
    ], fields=list(PROTOCOL_TYPE))


def checkpoint_metadata_array(cm: CheckpointMetadata) -> pa.StructArray:
    return pa.StructArray.from_arrays([
        _column([cm.version], LONG),
        map_array([cm.tags]),
    ], fields=list(CHECKPOINT_METADATA_TYPE))


def sidecar_array(sidecars: Sequence[Sidecar]) -> pa.StructArray:
    return pa.StructArray.from_arrays([
        _column([s.path for s in sidecars], STRING),
        _column([s.sizeInBytes for s in sidecars], LONG),
        _column([s.modificationTime for s in sidecars], LONG),
        map_array([s.tags for s in sidecars]),
    ], fields=list(SIDECAR_TYPE))


BUILDERS: dict[str, Callable[[Sequence[Any]], pa.Array]] = {"txn": txn_array, "add": add_array, "remove": remove_array,
            "domainMetadata": domain_array, "sidecar": sidecar_array}


def action_batch(column: str, values: pa.StructArray, schema: pa.Schema = CHECKPOINT_SCHEMA) -> pa.RecordBatch:
    """A batch of ``schema`` whose ``column`` holds ``values`` and whose other columns are null."""
    n = len(values)
    arrays = [values if f.name == column else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)

