"""Write classic and multi-part checkpoints (PROTOCOL.md "Checkpoints", "Checkpoint Schema",
"Last Checkpoint File"; "Requirements for Writers" > "Checkpoints").

The caller passes the reconciled state at a version - as action objects
(:class:`CheckpointContent`, :func:`write_checkpoint`) or with the file actions as Arrow columns
already (:func:`write_checkpoint_arrow`, fed by ``arrow_replay``); this module only lays it out,
the same way for both:

* **Schema** - the V1 spec, as delta-spark writes it: top-level struct columns ``txn``, ``add``,
  ``remove``, ``metaData``, ``protocol``, ``domainMetadata``, in that order, every field nullable
  (:data:`CHECKPOINT_SCHEMA`). One action per row; the other columns of that row are null.
  ``add.stats`` stays a JSON string, also when ``delta.checkpoint.writeStatsAsJson=false`` (files
  with a DV need ``numRecords`` and we write no struct stats). Neither ``stats_parsed`` nor
  ``partitionValues_parsed`` is written, whatever ``delta.checkpoint.writeStatsAsStruct`` says:
  readers use the ``partitionValues`` map and the JSON stats, and typed copies parsed wrongly
  would be worse than none. ``remove`` has no ``stats`` and ``tags`` (its rows "are tombstones
  used only by VACUUM"). Fields an action keeps in ``extra`` are *not*
  written: the checkpoint schema is fixed, and a checkpoint is a cache of the log, which keeps
  them.
* **Values** - like delta-spark, ``dataChange`` is false in every checkpointed ``add`` and
  ``remove``. Domain-metadata tombstones (``removed=true``) are dropped: "Domain Metadata that
  have not been removed (i.e. excluding tombstones with removed=true)".
* **Rows** - protocol, metaData, txns, domains, adds, removes, in the caller's order.
* **Parquet** - snappy, row groups of :data:`BATCH_ROWS` rows or more, dictionary encoding for
  the low-cardinality strings, column statistics for every column but ``add.stats``.
* **Parts** - a classic ``%020d.checkpoint.parquet``, or a multi-part checkpoint when the file
  actions (adds + removes) exceed the part size (delta-spark counts the same:
  ``numParts = ceil((numFiles + numRemoves) / partSize)``). Multi-part checkpoints are never
  written for tables that support ``v2Checkpoint`` (forbidden there); they get a classic one.
  Rows are spread over the parts by Spark-style hash partitioning of the file path ("multi-part
  checkpoints MUST be clustered by spark-style hash partitioning"): part =
  ``pmod(murmur3_32(path, seed=42), numParts) + 1``, exactly what delta-spark's
  ``repartition(numParts, coalesce(add.path, remove.path))`` gives. Non-file actions hash as
  null, i.e. to ``42 % numParts + 1``. So a Spark writer racing us on the same version and part
  count writes the same content into every part file. (The spec names ``(path, dvId)`` as key
  for DV tables; delta-spark hashes the path alone and we follow it.) Parts may be empty: each
  is still a complete parquet file with the full schema.
* **Order of writes** - every parquet file via :meth:`Storage.write_atomic` (never a partial
  file under its final name), then ``_last_checkpoint``. A multi-part checkpoint counts only
  once all its parts exist, so readers cannot take a half-written one as complete.
  ``_last_checkpoint`` is never moved backwards (:func:`write_last_checkpoint`).

The caller guarantees what the spec asks of checkpoint writers before the call: the commit of
``version`` exists, tombstones are those not yet expired, adds are unique per ``(path, dvId)``.
"""

from __future__ import annotations

import math
import struct
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_downgrade.protocol.actions import (AddFile, DeletionVectorDescriptor, DomainMetadata, Metadata,
                                     ProtocolAction, RemoveFile, Txn)
from delta_downgrade.log.files import classic_checkpoint_path, multipart_checkpoint_path
from delta_downgrade.log.last_checkpoint import write_last_checkpoint
from delta_downgrade.storage import Storage

#: Part size (file actions per part) when neither the call nor the table says otherwise. Large on
#: purpose: multi-part checkpoints are deprecated (PROTOCOL.md "Problems with multi-part
#: checkpoints"), a single file is the default, as in delta-spark (no part size unless set).
DEFAULT_PART_SIZE = 1_000_000
#: Table property read for the part size when ``part_size`` is not given. (delta-spark takes it
#: from the session conf ``spark.databricks.delta.checkpoint.partSize`` instead.)
PART_SIZE_PROPERTY = "delta.checkpoint.partSize"
#: Rows per record batch / parquet row group.
BATCH_ROWS = 50_000


def _memory_pool() -> pa.MemoryPool:
    """jemalloc when pyarrow has it, else pyarrow's default pool. The default, mimalloc, backs
    large allocations with transparent huge pages; in a fresh process on a busy machine their
    first touch can stall in the kernel (compaction) for a tenth of a second or more (measured
    on the checkpoint of a 46 MB log). jemalloc's small pages cost a steady few tens of ms."""
    try:
        return pa.jemalloc_memory_pool()
    except (NotImplementedError, pa.ArrowException, AttributeError):
        return pa.default_memory_pool()


#: The pool for the large buffers of checkpoint writing and of the Arrow replay
#: (``arrow_replay``): commit buffers, what ``pyarrow.json`` reads, the parquet file.
MEMORY_POOL = _memory_pool()

# --- schema -------------------------------------------------------------------------------------

_STR = pa.string()
_LONG = pa.int64()
_INT = pa.int32()
_BOOL = pa.bool_()
_MAP = pa.map_(pa.string(), pa.string())
_STR_LIST = pa.list_(pa.field("element", pa.string()))

DV_TYPE = pa.struct([
    ("storageType", _STR), ("pathOrInlineDv", _STR), ("offset", _INT),
    ("sizeInBytes", _INT), ("cardinality", _LONG), ("maxRowIndex", _LONG),
])
TXN_TYPE = pa.struct([("appId", _STR), ("version", _LONG), ("lastUpdated", _LONG)])
ADD_TYPE = pa.struct([
    ("path", _STR), ("partitionValues", _MAP), ("size", _LONG), ("modificationTime", _LONG),
    ("dataChange", _BOOL), ("tags", _MAP), ("deletionVector", DV_TYPE), ("baseRowId", _LONG),
    ("defaultRowCommitVersion", _LONG), ("clusteringProvider", _STR), ("stats", _STR),
])
REMOVE_TYPE = pa.struct([
    ("path", _STR), ("deletionTimestamp", _LONG), ("dataChange", _BOOL),
    ("extendedFileMetadata", _BOOL), ("partitionValues", _MAP), ("size", _LONG),
    ("deletionVector", DV_TYPE), ("baseRowId", _LONG), ("defaultRowCommitVersion", _LONG),
])
FORMAT_TYPE = pa.struct([("provider", _STR), ("options", _MAP)])
METADATA_TYPE = pa.struct([
    ("id", _STR), ("name", _STR), ("description", _STR), ("format", FORMAT_TYPE),
    ("schemaString", _STR), ("partitionColumns", _STR_LIST), ("configuration", _MAP),
    ("createdTime", _LONG),
])
PROTOCOL_TYPE = pa.struct([
    ("minReaderVersion", _INT), ("minWriterVersion", _INT),
    ("readerFeatures", _STR_LIST), ("writerFeatures", _STR_LIST),
])
DOMAIN_TYPE = pa.struct([("domain", _STR), ("configuration", _STR), ("removed", _BOOL)])

#: The checkpoint's parquet schema (delta-spark's column and field order).
CHECKPOINT_SCHEMA = pa.schema([
    ("txn", TXN_TYPE), ("add", ADD_TYPE), ("remove", REMOVE_TYPE), ("metaData", METADATA_TYPE),
    ("protocol", PROTOCOL_TYPE), ("domainMetadata", DOMAIN_TYPE),
])

# Low-cardinality string columns get dictionary encoding; unique ones (paths, stats) do not.
_DICTIONARY_COLUMNS = [
    f"{col}.{name}" for col in ("add", "remove")
    for name in ("partitionValues.key_value.key", "partitionValues.key_value.value",
                 "deletionVector.storageType")
] + ["add.clusteringProvider", "add.tags.key_value.key"]


def _leaf_columns(prefix: str, typ: pa.DataType) -> list[str]:
    if pa.types.is_struct(typ):
        return [c for f in typ for c in _leaf_columns(f"{prefix}.{f.name}", f.type)]
    if pa.types.is_map(typ):
        return [f"{prefix}.key_value.key", f"{prefix}.key_value.value"]
    if pa.types.is_list(typ):
        return [f"{prefix}.list.element"]
    return [prefix]


# Column statistics for every column but ``add.stats``: min/max of JSON strings serve no reader,
# and computing them is a tenth of the write time of a large checkpoint.
_STATISTICS_COLUMNS = [c for f in CHECKPOINT_SCHEMA for c in _leaf_columns(f.name, f.type)
                       if c != "add.stats"]


# --- inputs and outputs ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckpointContent:
    """The reconciled table state at one version (PROTOCOL.md "Action Reconciliation").

    ``removes`` are the tombstones still within retention (the caller filters); ``domains`` with
    ``removed=True`` are ignored.
    """

    protocol: ProtocolAction
    metadata: Metadata
    adds: Sequence[AddFile] = ()
    removes: Sequence[RemoveFile] = ()
    txns: Sequence[Txn] = ()
    domains: Sequence[DomainMetadata] = ()

    @property
    def live_domains(self) -> list[DomainMetadata]:
        return [d for d in self.domains if not d.removed]

    @property
    def num_actions(self) -> int:
        """Rows of the checkpoint: protocol + metadata + txns + live domains + adds + removes."""
        return 2 + len(self.txns) + len(self.live_domains) + len(self.adds) + len(self.removes)


@dataclass(frozen=True)
class CheckpointResult:
    """What :func:`write_checkpoint` wrote."""

    version: int
    paths: tuple[str, ...]          # table-root relative, part 1 first
    num_actions: int                # rows over all parts (``size`` in _last_checkpoint)
    num_add_files: int
    size_in_bytes: int              # sum of the parquet files' sizes
    parts: int | None               # number of parts for a multi-part checkpoint, else None
    last_checkpoint_updated: bool   # False when _last_checkpoint already named a newer version
    created_ms: int
    part_rows: tuple[int, ...] = field(default=())

    @property
    def checkpoint_kind(self) -> str:
        return "multipart" if self.parts is not None else "classic"

    def last_checkpoint_info(self) -> dict[str, Any]:
        """The ``_last_checkpoint`` fields for this checkpoint (without the checksum)."""
        info: dict[str, Any] = {"version": self.version, "size": self.num_actions}
        if self.parts is not None:
            info["parts"] = self.parts
        info["sizeInBytes"] = self.size_in_bytes
        info["numOfAddFiles"] = self.num_add_files
        return info


# --- Spark's hash partitioning ------------------------------------------------------------------

_M32 = 0xFFFFFFFF
_SPARK_HASH_SEED = 42


def spark_murmur3_hash(data: bytes, seed: int = _SPARK_HASH_SEED) -> int:
    """Spark's ``Murmur3Hash`` of a string/binary value (signed 32-bit result).

    This is Murmur3 x86_32 as Spark's ``Murmur3_x86_32.hashUnsafeBytes`` computes it: 4-byte
    little-endian words, then each trailing byte mixed on its own as a sign-extended int (not the
    reference tail handling), then the finaliser with the byte length.
    """
    h = seed & _M32
    n = len(data)
    aligned = n - n % 4
    for (k,) in struct.iter_unpack("<I", data[:aligned]):
        k = (k * 0xCC9E2D51) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        h ^= (k * 0x1B873593) & _M32
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + 0xE6546B64) & _M32
    for b in data[aligned:]:
        k = ((b - 256 if b >= 128 else b) * 0xCC9E2D51) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        h ^= (k * 0x1B873593) & _M32
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + 0xE6546B64) & _M32
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def spark_partition_of(path: str | None, num_parts: int) -> int:
    """0-based partition of a row keyed by ``path`` under Spark's ``HashPartitioning``
    (``pmod(murmur3(key, 42), n)``; a null key hashes to the seed)."""
    h = _SPARK_HASH_SEED if path is None else spark_murmur3_hash(path.encode("utf-8"))
    return h % num_parts  # Python's % on a positive modulus is Spark's pmod


_U32 = pa.uint32()


def _u32(value: int) -> pa.Scalar:
    return pa.scalar(value, _U32)


def _rotl(x: pa.Array, r: int) -> pa.Array:
    return pc.bit_wise_or(pc.shift_left(x, _u32(r)), pc.shift_right(x, _u32(32 - r)))


def _mix(h: pa.Array, k: pa.Array) -> pa.Array:
    k = pc.multiply(_rotl(pc.multiply(k, _u32(0xCC9E2D51)), 15), _u32(0x1B873593))
    h = _rotl(pc.bit_wise_xor(h, k), 13)
    return pc.add(pc.multiply(h, _u32(5)), _u32(0xE6546B64))


def _reinterpret(fixed: pa.Array, typ: pa.DataType) -> pa.Array:
    """The bytes of a fixed_size_binary array read as ``typ`` (same width, little endian)."""
    return pa.Array.from_buffers(typ, len(fixed), [None, fixed.buffers()[1]], offset=fixed.offset)


def spark_murmur3_hashes(values: Sequence[str]) -> list[int]:
    """:func:`spark_murmur3_hash` of many UTF-8 strings at once, vectorised with pyarrow
    kernels (unsigned 32-bit arithmetic wraps): one pass per 4-byte word position instead of a
    Python loop per word of every string. Falls back to the scalar code on big-endian hosts."""
    if sys.byteorder != "little":
        return [spark_murmur3_hash(v.encode("utf-8")) for v in values]
    if len(values) == 0:
        return []
    return _murmur3_arrow(pa.array(values, _STR)).to_pylist()


def _murmur3_arrow(strings: pa.Array) -> pa.Array:
    """The vectorised hash of a non-null string array, as an int32 array (little-endian hosts)."""
    n = len(strings)
    data = strings.cast(pa.binary())
    if data.null_count:
        raise ValueError("file action paths must not be null")
    lengths = pc.binary_length(data).cast(_U32)
    words = pc.divide(lengths, _u32(4))  # integer division on unsigned ints
    h = pa.array([_SPARK_HASH_SEED] * n, _U32)
    zero_word, zero_byte = pa.scalar(b"\0\0\0\0", pa.binary()), pa.scalar(b"\0", pa.binary())
    for j in range(int(pc.max(words).as_py()) + 1):
        full = pc.greater(words, _u32(j))
        if pc.any(full).as_py():
            word = pc.if_else(full, pc.binary_slice(data, 4 * j, 4 * j + 4), zero_word)
            h = pc.if_else(full, _mix(h, _reinterpret(word.cast(pa.binary(4)), _U32)), h)
        # rows whose trailing bytes start at word j: mix each byte, sign-extended, on its own
        ends_here = pc.equal(words, _u32(j))
        remaining = pc.subtract(lengths, _u32(4 * j))
        for t in range(3):
            sel = pc.and_(ends_here, pc.greater(remaining, _u32(t)))
            if not pc.any(sel).as_py():
                break
            byte = pc.if_else(sel, pc.binary_slice(data, 4 * j + t, 4 * j + t + 1), zero_byte)
            signed = _reinterpret(byte.cast(pa.binary(1)), pa.int8()).cast(pa.int32())
            h = pc.if_else(sel, _mix(h, signed.cast(_U32, safe=False)), h)
    h = pc.bit_wise_xor(h, lengths)
    h = pc.bit_wise_xor(h, pc.shift_right(h, _u32(16)))
    h = pc.multiply(h, _u32(0x85EBCA6B))
    h = pc.bit_wise_xor(h, pc.shift_right(h, _u32(13)))
    h = pc.multiply(h, _u32(0xC2B2AE35))
    h = pc.bit_wise_xor(h, pc.shift_right(h, _u32(16)))
    return h.cast(pa.int32(), safe=False)


def spark_partitions_of(paths: Sequence[str], num_parts: int) -> list[int]:
    """:func:`spark_partition_of` for many non-null paths."""
    return [h % num_parts for h in spark_murmur3_hashes(paths)]


def spark_partition_ids(paths: pa.Array | pa.ChunkedArray, num_parts: int) -> pa.Array:
    """:func:`spark_partitions_of` for an Arrow string array, as an int64 array."""
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks()
    if len(paths) == 0:
        return pa.array([], _LONG)
    if sys.byteorder != "little":
        return pa.array(spark_partitions_of(paths.to_pylist(), num_parts), _LONG)
    h = _murmur3_arrow(paths).cast(_LONG)
    rem = pc.subtract(h, pc.multiply(pc.divide(h, num_parts), num_parts))  # truncating division
    return pc.if_else(pc.less(rem, 0), pc.add(rem, num_parts), rem)  # pmod


# --- column builders ----------------------------------------------------------------------------

def _zero_offsets(n: int) -> pa.Array:
    return pa.Array.from_buffers(_INT, n + 1, [None, pa.py_buffer(bytes(4 * (n + 1)))])


def _map_array(values: Sequence[Mapping[str, str | None] | None]) -> pa.Array:
    """map<string,string> from dicts (None = null map)."""
    values = list(values)
    n = len(values)
    nulls = values.count(None)
    if nulls == n:
        return pa.nulls(n, _MAP)
    if not nulls and not any(values):  # all empty: the common unpartitioned case
        return pa.MapArray.from_arrays(_zero_offsets(n), pa.array([], _STR), pa.array([], _STR),
                                       type=_MAP)
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
    mask = pa.array([v is None for v in values], _BOOL) if nulls else None
    return pa.MapArray.from_arrays(pa.array(offsets, _INT), pa.array(keys, _STR),
                                   pa.array(items, _STR), type=_MAP, mask=mask)


def _str_list_array(values: Sequence[Sequence[str] | None]) -> pa.Array:
    return pa.array([None if v is None else list(v) for v in values], _STR_LIST)


def _dv_fields(dv: Any) -> tuple | None:
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


def _dv_array(values: Sequence[Any]) -> pa.Array:
    values = list(values)
    n = len(values)
    if values.count(None) == n:
        return pa.nulls(n, DV_TYPE)
    rows = [_dv_fields(v) for v in values]
    columns = []
    for i, f in enumerate(DV_TYPE):
        columns.append(pa.array([None if r is None else r[i] for r in rows], f.type))
    mask = pa.array([r is None for r in rows], _BOOL)
    return pa.StructArray.from_arrays(columns, fields=list(DV_TYPE), mask=mask)


def _column(values: list, typ: pa.DataType) -> pa.Array:
    return pa.array(values, typ)


def _false(n: int) -> pa.Array:
    return pa.array([False] * n, _BOOL)


def _add_array(adds: Sequence[AddFile]) -> pa.StructArray:
    n = len(adds)
    return pa.StructArray.from_arrays([
        _column([a.path for a in adds], _STR),
        _map_array([a.partitionValues for a in adds]),
        _column([a.size for a in adds], _LONG),
        _column([a.modificationTime for a in adds], _LONG),
        _false(n),
        _map_array([a.tags for a in adds]),
        _dv_array([a.deletionVector for a in adds]),
        _column([a.baseRowId for a in adds], _LONG),
        _column([a.defaultRowCommitVersion for a in adds], _LONG),
        _column([a.clusteringProvider for a in adds], _STR),
        _column([a.stats for a in adds], _STR),
    ], fields=list(ADD_TYPE))


def _remove_array(removes: Sequence[RemoveFile]) -> pa.StructArray:
    n = len(removes)
    return pa.StructArray.from_arrays([
        _column([r.path for r in removes], _STR),
        _column([r.deletionTimestamp for r in removes], _LONG),
        _false(n),
        _column([r.extendedFileMetadata for r in removes], _BOOL),
        _map_array([r.partitionValues for r in removes]),
        _column([r.size for r in removes], _LONG),
        _dv_array([r.deletionVector for r in removes]),
        _column([r.baseRowId for r in removes], _LONG),
        _column([r.defaultRowCommitVersion for r in removes], _LONG),
    ], fields=list(REMOVE_TYPE))


def _txn_array(txns: Sequence[Txn]) -> pa.StructArray:
    return pa.StructArray.from_arrays([
        _column([t.appId for t in txns], _STR),
        _column([t.version for t in txns], _LONG),
        _column([t.lastUpdated for t in txns], _LONG),
    ], fields=list(TXN_TYPE))


def _domain_array(domains: Sequence[DomainMetadata]) -> pa.StructArray:
    return pa.StructArray.from_arrays([
        _column([d.domain for d in domains], _STR),
        _column([d.configuration for d in domains], _STR),
        _column([bool(d.removed) for d in domains], _BOOL),
    ], fields=list(DOMAIN_TYPE))


def _metadata_array(md: Metadata) -> pa.StructArray:
    fmt = md.format or {}
    format_array = pa.StructArray.from_arrays(
        [_column([fmt.get("provider", "parquet")], _STR), _map_array([fmt.get("options") or {}])],
        fields=list(FORMAT_TYPE))
    return pa.StructArray.from_arrays([
        _column([md.id], _STR),
        _column([md.name], _STR),
        _column([md.description], _STR),
        format_array,
        _column([md.schemaString], _STR),
        _str_list_array([list(md.partitionColumns or [])]),
        _map_array([md.configuration or {}]),
        _column([md.createdTime], _LONG),
    ], fields=list(METADATA_TYPE))


def _protocol_array(p: ProtocolAction) -> pa.StructArray:
    return pa.StructArray.from_arrays([
        _column([p.minReaderVersion], _INT),
        _column([p.minWriterVersion], _INT),
        _str_list_array([p.readerFeatures]),
        _str_list_array([p.writerFeatures]),
    ], fields=list(PROTOCOL_TYPE))


_BUILDERS = {"txn": _txn_array, "add": _add_array, "remove": _remove_array,
             "domainMetadata": _domain_array}


def _batch(column: str, values: pa.StructArray) -> pa.RecordBatch:
    """A batch whose ``column`` holds ``values`` and whose other columns are null."""
    n = len(values)
    arrays = [values if f.name == column else pa.nulls(n, f.type) for f in CHECKPOINT_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=CHECKPOINT_SCHEMA)


@dataclass
class _PartContent:
    protocol: ProtocolAction | None = None
    metadata: Metadata | None = None
    txns: Sequence[Txn] = ()
    domains: Sequence[DomainMetadata] = ()
    adds: Sequence[AddFile] = ()
    removes: Sequence[RemoveFile] = ()

    @property
    def num_rows(self) -> int:
        return ((self.protocol is not None) + (self.metadata is not None) + len(self.txns)
                + len(self.domains) + len(self.adds) + len(self.removes))


def _batches(part: _PartContent) -> Iterator[pa.RecordBatch]:
    if part.protocol is not None:
        yield _batch("protocol", _protocol_array(part.protocol))
    if part.metadata is not None:
        yield _batch("metaData", _metadata_array(part.metadata))
    for column, actions in (("txn", part.txns), ("domainMetadata", part.domains),
                            ("add", part.adds), ("remove", part.removes)):
        for start in range(0, len(actions), BATCH_ROWS):
            yield _batch(column, _BUILDERS[column](actions[start:start + BATCH_ROWS]))


def _parquet_bytes_of(batches: Iterable[pa.RecordBatch | pa.Table]) -> bytes:
    """A checkpoint parquet file of ``batches`` (record batches or tables of the checkpoint
    schema), in row groups of at least :data:`BATCH_ROWS` rows."""
    sink = pa.BufferOutputStream(memory_pool=MEMORY_POOL)
    with pq.ParquetWriter(sink, CHECKPOINT_SCHEMA, compression="snappy",
                          use_dictionary=_DICTIONARY_COLUMNS,
                          write_statistics=_STATISTICS_COLUMNS, memory_pool=MEMORY_POOL) as writer:
        pending: list[pa.Table] = []
        rows = 0
        for batch in batches:
            pending.append(pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch)
            rows += batch.num_rows
            if rows >= BATCH_ROWS:
                writer.write_table(pa.concat_tables(pending), row_group_size=rows)
                pending, rows = [], 0
        if pending:
            writer.write_table(pa.concat_tables(pending), row_group_size=max(rows, 1))
    return sink.getvalue().to_pybytes()


# --- part size and layout -----------------------------------------------------------------------

def resolve_part_size(metadata: Metadata, part_size: int | None = None) -> int:
    """``part_size`` if given, else the table property ``delta.checkpoint.partSize`` if it is a
    positive integer, else :data:`DEFAULT_PART_SIZE`."""
    if part_size is not None:
        if isinstance(part_size, bool) or not isinstance(part_size, int) or part_size < 1:
            raise ValueError(f"part_size must be a positive int, got {part_size!r}")
        return part_size
    raw = (metadata.configuration or {}).get(PART_SIZE_PROPERTY)
    if raw is not None:
        try:
            value = int(str(raw).strip())
        except ValueError:
            value = 0
        if value > 0:
            return value
    return DEFAULT_PART_SIZE


def supports_v2_checkpoint(protocol: ProtocolAction) -> bool:
    return "v2Checkpoint" in (protocol.writerFeatures or ()) or \
        "v2Checkpoint" in (protocol.readerFeatures or ())


def plan_num_parts(state: CheckpointContent, part_size: int) -> int:
    """Number of parquet files: ``ceil((adds + removes) / part_size)``, at least 1, and 1 when
    the table supports ``v2Checkpoint`` (multi-part is forbidden there)."""
    if supports_v2_checkpoint(state.protocol):
        return 1
    return max(1, math.ceil((len(state.adds) + len(state.removes)) / part_size))


def split_into_parts(state: CheckpointContent, num_parts: int) -> list[_PartContent]:
    """The content of each part, by Spark's hash partitioning of the file path."""
    domains = state.live_domains
    if num_parts == 1:
        return [_PartContent(state.protocol, state.metadata, state.txns, domains,
                             state.adds, state.removes)]
    parts = [_PartContent() for _ in range(num_parts)]
    home = parts[spark_partition_of(None, num_parts)]
    home.protocol, home.metadata, home.txns, home.domains = (state.protocol, state.metadata,
                                                             state.txns, domains)
    add_buckets: list[list[AddFile]] = [[] for _ in range(num_parts)]
    for a, i in zip(state.adds, spark_partitions_of([a.path for a in state.adds], num_parts)):
        add_buckets[i].append(a)
    remove_buckets: list[list[RemoveFile]] = [[] for _ in range(num_parts)]
    for r, i in zip(state.removes,
                    spark_partitions_of([r.path for r in state.removes], num_parts)):
        remove_buckets[i].append(r)
    for part, adds, removes in zip(parts, add_buckets, remove_buckets):
        part.adds, part.removes = adds, removes
    return parts


# --- entry point --------------------------------------------------------------------------------

def _check_version(version: int) -> None:
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"version must be a non-negative int, got {version!r}")


def _write_parts(storage: Storage, version: int, parts: Sequence[tuple[int, Iterable[pa.RecordBatch]]],
                 *, num_add_files: int, created_ms: int,
                 update_last_checkpoint: bool) -> CheckpointResult:
    """Write each part (its row count and its batches) under its checkpoint name, in part order,
    then ``_last_checkpoint``."""
    num_parts = len(parts)
    paths: list[str] = []
    created: list[str] = []
    total_bytes = 0
    try:
        for i, (_, batches) in enumerate(parts, start=1):
            path = (classic_checkpoint_path(version) if num_parts == 1
                    else multipart_checkpoint_path(version, i, num_parts))
            data = _parquet_bytes_of(batches)
            existed = storage.exists(path)
            storage.write_atomic(path, data)
            if not existed:
                created.append(path)
            paths.append(path)
            total_bytes += len(data)
    except BaseException:
        # A part failed (disk full, read-only, killed): the parts written so far form an
        # incomplete multi-part checkpoint, which readers ignore (PROTOCOL.md "Multi-part
        # checkpoint") but nothing would ever delete. Remove the ones this call created; parts
        # that existed before belong to another writer's (possibly complete) checkpoint.
        for path in created:
            try:
                storage.delete(path)
            except Exception:  # noqa: BLE001 - best effort; the original failure is what matters
                pass
        raise

    result = CheckpointResult(
        version=version, paths=tuple(paths), num_actions=sum(rows for rows, _ in parts),
        num_add_files=num_add_files, size_in_bytes=total_bytes,
        parts=num_parts if num_parts > 1 else None, last_checkpoint_updated=False,
        created_ms=created_ms, part_rows=tuple(rows for rows, _ in parts))
    if update_last_checkpoint:
        updated = write_last_checkpoint(storage, result.last_checkpoint_info())
        result = replace(result, last_checkpoint_updated=updated)
    return result


def write_checkpoint(storage: Storage, version: int, state: CheckpointContent, *,
                     part_size: int | None = None, now_ms: int | None = None,
                     update_last_checkpoint: bool = True) -> CheckpointResult:
    """Write the checkpoint of ``state`` at ``version``, then point ``_last_checkpoint`` at it
    (unless that already names a newer version, or ``update_last_checkpoint`` is False).

    A classic single file unless the file actions exceed the part size (see
    :func:`resolve_part_size`, :func:`plan_num_parts`). An existing checkpoint file of the same
    name is replaced atomically ("if two checkpoint writers race to create the same classic
    checkpoint, the latest writer wins"; both hold the same state).
    """
    _check_version(version)
    created_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
    num_parts = plan_num_parts(state, resolve_part_size(state.metadata, part_size))
    parts = split_into_parts(state, num_parts)
    return _write_parts(storage, version, [(p.num_rows, _batches(p)) for p in parts],
                        num_add_files=len(state.adds), created_ms=created_ms,
                        update_last_checkpoint=update_last_checkpoint)


# --- entry point for a state already in Arrow -------------------------------------------------------

def _file_action_column(values: pa.StructArray | pa.ChunkedArray | None, typ: pa.StructType,
                        what: str) -> pa.ChunkedArray:
    """``values`` as chunks of exactly ``typ``, non-null, with ``dataChange`` false."""
    if values is None:
        return pa.chunked_array([], typ)
    if isinstance(values, pa.Array):
        values = pa.chunked_array([values], values.type)
    if not isinstance(values, pa.ChunkedArray):
        raise TypeError(f"{what} must be a pyarrow StructArray or ChunkedArray, got {type(values).__name__}")
    if values.type != typ:
        values = values.cast(typ)
    if values.null_count:
        raise ValueError(f"{what} must not hold null rows")
    data_change = typ.get_field_index("dataChange")
    chunks = []
    for chunk in values.chunks:
        if len(chunk) == 0:
            continue
        children = [chunk.field(i) for i in range(typ.num_fields)]
        if children[data_change].null_count or pc.any(children[data_change]).as_py():
            children[data_change] = pa.repeat(pa.scalar(False, _BOOL), len(chunk))
            chunk = pa.StructArray.from_arrays(children, fields=list(typ))
        chunks.append(chunk)
    return pa.chunked_array(chunks, typ)


def _struct_tables(column: str, values: pa.ChunkedArray) -> Iterator[pa.Table]:
    """Tables of :data:`BATCH_ROWS` rows whose ``column`` holds ``values`` (however they are
    chunked: no copy) and whose other columns are null."""
    for start in range(0, len(values), BATCH_ROWS):
        part = values.slice(start, BATCH_ROWS)
        n = len(part)
        yield pa.Table.from_arrays(
            [part if f.name == column else pa.nulls(n, f.type) for f in CHECKPOINT_SCHEMA],
            schema=CHECKPOINT_SCHEMA)


def _arrow_part_batches(protocol: ProtocolAction | None, metadata: Metadata | None,
                        txns: Sequence[Txn], domains: Sequence[DomainMetadata],
                        adds: pa.ChunkedArray, removes: pa.ChunkedArray
                        ) -> Iterator[pa.RecordBatch | pa.Table]:
    """The rows of one part, in the order :func:`_batches` gives them."""
    if protocol is not None:
        yield _batch("protocol", _protocol_array(protocol))
    if metadata is not None:
        yield _batch("metaData", _metadata_array(metadata))
    for column, actions in (("txn", txns), ("domainMetadata", domains)):
        for start in range(0, len(actions), BATCH_ROWS):
            yield _batch(column, _BUILDERS[column](actions[start:start + BATCH_ROWS]))
    yield from _struct_tables("add", adds)
    yield from _struct_tables("remove", removes)


def write_checkpoint_arrow(storage: Storage, version: int, protocol: ProtocolAction,
                           metadata: Metadata,
                           adds: pa.StructArray | pa.ChunkedArray | None,
                           removes: pa.StructArray | pa.ChunkedArray | None = None,
                           txns: Sequence[Txn] = (), domains: Sequence[DomainMetadata] = (), *,
                           part_size: int | None = None, now_ms: int | None = None,
                           update_last_checkpoint: bool = True) -> CheckpointResult:
    """:func:`write_checkpoint` for a reconciled state whose file actions are Arrow columns
    already: ``adds`` of :data:`ADD_TYPE`, ``removes`` of :data:`REMOVE_TYPE` (the unexpired
    tombstones), as arrays or chunked arrays without null rows; ``dataChange`` is written false
    whatever they hold. Same files, layout, part split and ``_last_checkpoint`` as
    :func:`write_checkpoint` gives for the same state; ``domains`` with ``removed=True`` are left
    out."""
    _check_version(version)
    created_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
    add_col = _file_action_column(adds, ADD_TYPE, "adds")
    remove_col = _file_action_column(removes, REMOVE_TYPE, "removes")
    txns = list(txns)
    live = [d for d in domains if not d.removed]
    n_files = len(add_col) + len(remove_col)
    size = resolve_part_size(metadata, part_size)
    num_parts = 1 if supports_v2_checkpoint(protocol) else max(1, math.ceil(n_files / size))
    if num_parts == 1:
        rows = 2 + len(txns) + len(live) + n_files
        parts = [(rows, _arrow_part_batches(protocol, metadata, txns, live, add_col, remove_col))]
    else:
        home = spark_partition_of(None, num_parts)
        add_ids = spark_partition_ids(pa.chunked_array([c.field("path") for c in add_col.chunks], _STR),
                                      num_parts)
        remove_ids = spark_partition_ids(
            pa.chunked_array([c.field("path") for c in remove_col.chunks], _STR), num_parts)
        parts = []
        for i in range(num_parts):
            part_adds = add_col.filter(pc.equal(add_ids, i))
            part_removes = remove_col.filter(pc.equal(remove_ids, i))
            rows = len(part_adds) + len(part_removes)
            if i == home:
                rows += 2 + len(txns) + len(live)
                batches = _arrow_part_batches(protocol, metadata, txns, live, part_adds, part_removes)
            else:
                batches = _arrow_part_batches(None, None, (), (), part_adds, part_removes)
            parts.append((rows, batches))
    return _write_parts(storage, version, parts, num_add_files=len(add_col), created_ms=created_ms,
                        update_last_checkpoint=update_last_checkpoint)
