"""``add.stats_parsed`` and ``add.partitionValues_parsed`` for a checkpoint of a table with
``delta.checkpoint.writeStatsAsStruct=true`` (PROTOCOL.md "Checkpoints", "Checkpoint Schema").

"``stats_parsed``: ... needs to be written when ``delta.checkpoint.writeStatsAsStruct`` is true";
likewise ``partitionValues_parsed`` for a partitioned table. Both are typed from the table schema,
keyed by the physical names the data files (and the JSON stats, and ``partitionValues``) use under
column mapping (PROTOCOL.md "Column Mapping"):

* ``stats_parsed``: ``numRecords`` (long), ``minValues``/``maxValues`` (the column's type, for the
  types Delta keeps bounds of: numbers, decimals, strings, dates, timestamps), ``nullCount`` (long
  per leaf), ``tightBounds`` (boolean) - each part, and each leaf, only when some file's stats
  have it, as delta-spark prunes the struct to the columns it collected stats for.
* ``partitionValues_parsed``: one field per partition column, the ``partitionValues`` string cast
  to the column's type (PROTOCOL.md "Partition Value Serialization").

The JSON is parsed in bulk by ``pyarrow.json`` with an explicit schema, never row by row. When it
cannot be parsed as the schema says (a spelling Arrow does not read, a value of another type), or
a partition value does not cast, the struct is not written and the JSON ``stats`` are kept even
under ``writeStatsAsJson=false``: a checkpoint that drops statistics or writes wrong ones is worse
than one that ignores a writer hint (readers fall back to the JSON; :mod:`checkpoint_stats`).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Mapping

import pyarrow as pa
from delta_downgrade import arrow_compute as ac
import pyarrow.json as pajson

from delta_downgrade.log.format.stats_json import STATS_PARSED
from delta_downgrade.protocol.actions import Metadata
from delta_downgrade.protocol.json_nesting import check_nesting
from delta_downgrade.protocol.schema import COLUMN_MAPPING_PHYSICAL_NAME_KEY, delta_type_to_arrow

_log = logging.getLogger(__name__)

WRITE_STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"
WRITE_STATS_AS_JSON = "delta.checkpoint.writeStatsAsJson"
PARTITION_VALUES_PARSED = "partitionValues_parsed"
_LONG = pa.int64()
_STR = pa.string()
# Big enough for any one stats line: pyarrow.json fails on a row longer than its block.
_BLOCK_SIZE = 64 << 20


def _flag(metadata: Metadata, key: str, default: bool) -> bool:
    raw = (metadata.configuration or {}).get(key)
    return default if raw is None else str(raw).strip().lower() == "true"


def writes_stats_as_struct(metadata: Metadata) -> bool:
    return _flag(metadata, WRITE_STATS_AS_STRUCT, False)


def writes_stats_as_json(metadata: Metadata) -> bool:
    return _flag(metadata, WRITE_STATS_AS_JSON, True)


def _physical(field: Mapping[str, Any], mapped: bool) -> str:
    if mapped:
        return str((field.get("metadata") or {}).get(COLUMN_MAPPING_PHYSICAL_NAME_KEY) or field["name"])
    return str(field["name"])


def _arrow_type(delta_type: Any) -> pa.DataType | None:
    try:
        return delta_type_to_arrow(delta_type)
    except (ValueError, KeyError, TypeError):  # a type this package does not map (variant, ...)
        return None


def _has_bounds(typ: pa.DataType) -> bool:
    return bool(pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
                or pa.types.is_string(typ) or pa.types.is_date(typ) or pa.types.is_timestamp(typ))


def _section_types(fields: list[Mapping[str, Any]], mapped: bool) -> tuple[pa.StructType | None, pa.StructType | None]:
    """The types of ``minValues``/``maxValues`` and of ``nullCount`` for ``fields``."""
    bounds: list[pa.Field] = []
    counts: list[pa.Field] = []
    for f in fields:
        name = _physical(f, mapped)
        t = f["type"]
        if isinstance(t, Mapping) and t.get("type") == "struct":
            b, c = _section_types(list(t["fields"]), mapped)
            if b is not None:
                bounds.append(pa.field(name, b))
            if c is not None:
                counts.append(pa.field(name, c))
            continue
        typ = _arrow_type(t)
        if typ is None:
            continue
        if _has_bounds(typ):
            bounds.append(pa.field(name, typ))
        counts.append(pa.field(name, _LONG))
    return (pa.struct(bounds) if bounds else None), (pa.struct(counts) if counts else None)


def stats_parsed_type(metadata: Metadata) -> pa.StructType:
    """The widest ``stats_parsed`` type of the table: every data (non-partition) column."""
    schema = json.loads(metadata.schemaString)
    mapped = (metadata.configuration or {}).get("delta.columnMapping.mode", "none").strip().lower() in ("name", "id")
    partitions = set(metadata.partitionColumns or ())
    data = [f for f in schema.get("fields", []) if f["name"] not in partitions]
    bounds, counts = _section_types(data, mapped)
    fields = [pa.field("numRecords", _LONG)]
    if bounds is not None:
        fields += [pa.field("minValues", bounds), pa.field("maxValues", bounds)]
    if counts is not None:
        fields.append(pa.field("nullCount", counts))
    fields.append(pa.field("tightBounds", pa.bool_()))
    return pa.struct(fields)


def _as_read(typ: pa.DataType) -> pa.DataType:
    """``typ`` as ``pyarrow.json`` can read it: dates as strings (cast after)."""
    if pa.types.is_struct(typ):
        return pa.struct([pa.field(f.name, _as_read(f.type)) for f in typ])
    return _STR if pa.types.is_date(typ) else typ


def _parse_chunk(stats: pa.Array, typ: pa.StructType) -> pa.StructArray:
    """``stats`` (JSON strings, nulls for none) parsed as ``typ``, null where ``stats`` is."""
    n = len(stats)
    # one object per line; a fresh array's value buffer is exactly the newline-joined text
    lines = ac.binary_join_element_wise(ac.fill_null(stats, "{}"), "\n", "")
    data = lines.buffers()[2].slice(0, int(ac.sum(ac.binary_length(lines)).as_py() or 0))
    try:  # pyarrow.json's parser recurses: a deep stats string must never reach it
        check_nesting(memoryview(data))
    except ValueError as exc:
        raise pa.ArrowInvalid(f"a stats string is not usable: {exc}") from None
    table = pajson.read_json(pa.BufferReader(data),
                             read_options=pajson.ReadOptions(block_size=_BLOCK_SIZE, use_threads=True),
                             parse_options=pajson.ParseOptions(explicit_schema=pa.schema(list(_as_read(typ))),
                                                               unexpected_field_behavior="ignore"))
    if table.num_rows != n:  # a stats string spanning lines: not the one-object-per-row we wrote
        raise pa.ArrowInvalid(f"{table.num_rows} stats objects parsed for {n} files")
    parsed = ac.with_validity(pa.StructArray.from_arrays([table.column(f.name).combine_chunks() for f in typ],
                                                         fields=[pa.field(f.name, _as_read(f.type)) for f in typ]),
                              ac.is_valid(stats) if stats.null_count else None)
    return ac.cast(parsed, typ)


def _present(column: pa.ChunkedArray, typ: pa.DataType) -> pa.DataType | None:
    """``typ`` pruned to the leaves with a value in some row of ``column``; None if none."""
    if not pa.types.is_struct(typ):
        return typ if column.null_count < len(column) else None
    kept = []
    for i, f in enumerate(typ):
        child = pa.chunked_array([c.field(i) for c in column.chunks], f.type)
        sub = _present(child, f.type)
        if sub is not None:
            kept.append(pa.field(f.name, sub))
    return pa.struct(kept) if kept else None


def _select(s: pa.StructArray, typ: pa.StructType) -> pa.StructArray:
    """The fields of ``typ`` (a pruned type of ``s``) out of ``s``, recursively."""
    children = []
    for f in typ:
        child = s.field(s.type.get_field_index(f.name))
        children.append(_select(child, f.type) if pa.types.is_struct(f.type) else child)
    return ac.with_validity(pa.StructArray.from_arrays(children, fields=list(typ)),
                            ac.is_valid(s) if s.null_count else None)


def stats_parsed(stats: pa.ChunkedArray, metadata: Metadata) -> pa.ChunkedArray | None:
    """The ``stats_parsed`` column of the adds whose JSON stats are ``stats``; None when the JSON
    does not parse as the table's types or no file has stats."""
    full = stats_parsed_type(metadata)
    try:
        chunks = [_parse_chunk(c, full) for c in stats.chunks if len(c)]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        _log.warning("stats_parsed not written: the JSON stats do not parse as the table schema (%s)", exc)
        return None
    column = pa.chunked_array(chunks, full)
    pruned = _present(column, full)
    if pruned is None:
        return None
    return pa.chunked_array([_select(c, pruned) for c in column.chunks], pruned)


def _partition_value(values: pa.Array, typ: pa.DataType) -> pa.Array:
    """Serialized partition values (PROTOCOL.md "Partition Value Serialization") as ``typ``;
    an empty string is null for every type but string."""
    if pa.types.is_string(typ):
        return values
    values = ac.if_else(ac.equal(values, ""), pa.scalar(None, _STR), values)
    if pa.types.is_timestamp(typ) and typ.tz is not None:
        # "{year}-{month}-{day} {hour}:{minute}:{second}" (UTC) or ISO-8601 with a zone
        try:
            return ac.cast(values, typ)
        except pa.ArrowInvalid:
            return ac.cast(ac.cast(values, pa.timestamp(typ.unit)), typ)
    return ac.cast(values, typ)


def partition_values_parsed(partition_values: pa.ChunkedArray, metadata: Metadata) -> pa.ChunkedArray | None:
    """The ``partitionValues_parsed`` column of adds with these ``partitionValues`` maps; None for
    an unpartitioned table or when a value does not cast to its column's type."""
    columns = list(metadata.partitionColumns or ())
    if not columns:
        return None
    schema = json.loads(metadata.schemaString)
    mapped = (metadata.configuration or {}).get("delta.columnMapping.mode", "none").strip().lower() in ("name", "id")
    by_name = {f["name"]: f for f in schema.get("fields", [])}
    fields = []
    for name in columns:
        f = by_name.get(name)
        typ = _arrow_type(f["type"]) if f is not None else None
        if f is None or typ is None:
            return None
        fields.append(pa.field(_physical(f, mapped), typ))
    typ = pa.struct(fields)
    chunks = []
    try:
        for chunk in partition_values.chunks:
            children = [_partition_value(ac.map_lookup(chunk, f.name, "first"), f.type) for f in fields]
            chunks.append(pa.StructArray.from_arrays(children, fields=fields))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        _log.warning("partitionValues_parsed not written: a partition value does not cast (%s)", exc)
        return None
    return pa.chunked_array(chunks, typ)


def with_parsed_columns(adds: pa.ChunkedArray, metadata: Metadata) -> pa.ChunkedArray:
    """``adds`` with ``stats_parsed`` (and ``partitionValues_parsed``) appended when the table
    asks for them, and without ``stats`` when it also sets ``writeStatsAsJson=false`` and the
    struct holds them; ``adds`` unchanged otherwise."""
    if not writes_stats_as_struct(metadata) or len(adds) == 0:
        return adds
    combined = adds.combine_chunks() if adds.num_chunks != 1 else adds.chunk(0)
    extra: list[tuple[str, pa.ChunkedArray]] = []
    parsed = stats_parsed(pa.chunked_array([combined.field("stats")], _STR), metadata)
    if parsed is not None:
        extra.append((STATS_PARSED, parsed))
    partitions = partition_values_parsed(pa.chunked_array([combined.field("partitionValues")]), metadata)
    if partitions is not None:
        extra.append((PARTITION_VALUES_PARSED, partitions))
    if not extra:
        return adds
    drop_json = parsed is not None and not writes_stats_as_json(metadata)
    fields = [f for f in combined.type if not (drop_json and f.name == "stats")]
    children = [combined.field(f.name) for f in fields]
    for name, column in extra:
        fields.append(pa.field(name, column.type))
        children.append(column.combine_chunks())
    return pa.chunked_array([pa.StructArray.from_arrays(children, fields=fields)])
