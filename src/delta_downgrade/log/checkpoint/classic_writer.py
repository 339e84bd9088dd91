"""Write classic and multi-part checkpoints (PROTOCOL.md "Checkpoints", "Last Checkpoint File";
"Requirements for Writers" > "Checkpoints").

The caller passes the reconciled state at a version - as action objects
(:class:`CheckpointContent`, :func:`write_checkpoint`) or with the file actions as Arrow columns
already (:func:`write_checkpoint_arrow`, fed by ``arrow_replay``); this module only lays it out,
the same way for both, in the schema of :mod:`~delta_downgrade.log.format.checkpoint_schema` with the
columns of :mod:`~delta_downgrade.log.format.checkpoint_columns`:

* **Values** - ``dataChange`` is false in every checkpointed ``add`` and ``remove``, as delta-spark
  writes them. Domain-metadata tombstones (``removed=true``) are dropped: "Domain Metadata that
  have not been removed (i.e. excluding tombstones with removed=true)".
* **Rows** - protocol, metaData, txns, domains, adds, removes, in the caller's order.
* **Parquet** - snappy, row groups of :data:`BATCH_ROWS` rows or more, dictionary encoding for
  the low-cardinality strings, column statistics for every column but ``add.stats``.
* **Parts** - a classic ``%020d.checkpoint.parquet``, or a multi-part checkpoint when the file
  actions (adds + removes) exceed the part size (delta-spark counts the same:
  ``numParts = ceil((numFiles + numRemoves) / partSize)``). Multi-part checkpoints are never
  written for tables that support ``v2Checkpoint`` (forbidden there); they get a classic one.
  Rows are spread over the parts by Spark's hash partitioning of the file path
  (:mod:`~delta_downgrade.log.checkpoint.spark_hash`). Parts may be empty: each is still a complete parquet
  file with the full schema.
* **Order of writes** - every parquet file via :meth:`Storage.write_atomic` (never a partial
  file under its final name), then ``_last_checkpoint``. A multi-part checkpoint counts only
  once all its parts exist, so readers cannot take a half-written one as complete.
  ``_last_checkpoint`` is never moved backwards (:func:`write_last_checkpoint`).

The caller guarantees what the spec asks of checkpoint writers before the call: the commit of
``version`` exists, tombstones are those not yet expired, adds are unique per ``(path, dvId)``.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Iterable, Iterator, Literal, Sequence

from msgspec import Struct, field
from msgspec.structs import replace
import pyarrow as pa
from delta_downgrade import arrow_compute as ac
from delta_downgrade.arrow_parquet import ParquetWriter

from delta_downgrade.log.format.arrow_columns import chunked_field
from delta_downgrade.log.format.checkpoint_columns import (BUILDERS, action_batch, add_array, metadata_array,
                                                    protocol_array, remove_array)
from delta_downgrade.log.format.checkpoint_schema import ADD_TYPE, CHECKPOINT_SCHEMA, REMOVE_TYPE, with_add_type
from delta_downgrade.log.format.stats_struct import with_parsed_columns, writes_stats_as_struct
from delta_downgrade.log.format.file_names import classic_checkpoint_path, multipart_checkpoint_path
from delta_downgrade.log.format.last_checkpoint import write_last_checkpoint
from delta_downgrade.log.replay.memory_pool import MEMORY_POOL
from delta_downgrade.log.checkpoint.spark_hash import spark_partition_ids, spark_partition_of, spark_partitions_of
from delta_downgrade.protocol.actions import AddFile, DomainMetadata, Metadata, ProtocolAction, RemoveFile, Txn
from delta_downgrade.storage import Storage

_BOOL = pa.bool_()

#: Part size (file actions per part) when neither the call nor the table says otherwise. Large on
#: purpose: multi-part checkpoints are deprecated (PROTOCOL.md "Problems with multi-part
#: checkpoints"), a single file is the default, as in delta-spark (no part size unless set).
DEFAULT_PART_SIZE = 1_000_000
#: Table property read for the part size when ``part_size`` is not given. (delta-spark takes it
#: from the session conf ``spark.databricks.delta.checkpoint.partSize`` instead.)
PART_SIZE_PROPERTY = "delta.checkpoint.partSize"
#: Rows per record batch / parquet row group.
BATCH_ROWS = 50_000

# Low-cardinality string columns get dictionary encoding; unique ones (paths, stats) do not.
_DICTIONARY_COLUMNS = frozenset([
    f"{col}.{name}" for col in ("add", "remove")
    for name in ("partitionValues.key_value.key", "partitionValues.key_value.value",
                 "deletionVector.storageType")
] + ["add.clusteringProvider", "add.tags.key_value.key"])


def _leaf_columns(prefix: str, typ: pa.DataType) -> list[str]:
    if pa.types.is_struct(typ):
        return [c for f in typ for c in _leaf_columns(f"{prefix}.{f.name}", f.type)]
    if pa.types.is_map(typ):
        return [f"{prefix}.key_value.key", f"{prefix}.key_value.value"]
    if pa.types.is_list(typ):
        return [f"{prefix}.list.element"]
    return [prefix]


def _encoding_columns(schema: pa.Schema) -> tuple[list[str], list[str]]:
    """The leaf columns of ``schema`` with dictionary encoding, and those with statistics: every
    column but ``add.stats`` (min/max of JSON strings serve no reader, and computing them is a
    tenth of the write time of a large checkpoint)."""
    leaves = [c for f in schema for c in _leaf_columns(f.name, f.type)]
    return [c for c in leaves if c in _DICTIONARY_COLUMNS], [c for c in leaves if c != "add.stats"]


# --- inputs and outputs ---------------------------------------------------------------------------

class CheckpointContent(Struct, frozen=True):
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


class CheckpointResult(Struct, frozen=True):
    """What :func:`write_checkpoint` (or the V2 writer,
    :func:`~delta_downgrade.log.checkpoint.v2_writer.write_v2_checkpoint_arrow`) wrote."""

    version: int
    # Every file written, table-root relative: the parts in part order, or a V2 checkpoint's
    # top-level file then its sidecars (what a caller lists as written / to protect).
    paths: tuple[str, ...]
    num_actions: int                # rows over all files (``size`` in _last_checkpoint)
    num_add_files: int
    size_in_bytes: int              # sum of the files' sizes
    parts: int | None               # number of parts for a multi-part checkpoint, else None
    last_checkpoint_updated: bool   # False when _last_checkpoint already named a newer version
    created_ms: int
    part_rows: tuple[int, ...] = field(default=())   # rows per file of ``paths``
    part_sizes: tuple[int, ...] = ()  # bytes per file of ``paths``, where the writer knows them
    sidecars: tuple[str, ...] = ()  # the V2 checkpoint's sidecar files (also in ``paths``)
    #: The ``v2Checkpoint`` field of ``_last_checkpoint`` for a V2 checkpoint, else None.
    v2_checkpoint: dict[str, Any] | None = None

    @property
    def checkpoint_kind(self) -> str:
        """"v2" (UUID-named, PROTOCOL.md "V2 Spec"), "multipart" or "classic"."""
        if self.v2_checkpoint is not None:
            return "v2"
        return "multipart" if self.parts is not None else "classic"

    @property
    def checkpoint_files(self) -> tuple[str, ...]:
        """The files named as the checkpoint in ``_delta_log`` (what a listing finds, without the
        sidecars below ``_delta_log/_sidecars``)."""
        return tuple(p for p in self.paths if p not in self.sidecars)

    def last_checkpoint_info(self) -> dict[str, Any]:
        """The ``_last_checkpoint`` fields for this checkpoint (without the checksum)."""
        info: dict[str, Any] = {"version": self.version, "size": self.num_actions}
        if self.parts is not None:
            info["parts"] = self.parts
        info["sizeInBytes"] = self.size_in_bytes
        info["numOfAddFiles"] = self.num_add_files
        if self.v2_checkpoint is not None:
            info["v2Checkpoint"] = self.v2_checkpoint
        return info


class _PartContent(Struct):
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
        yield action_batch("protocol", protocol_array(part.protocol))
    if part.metadata is not None:
        yield action_batch("metaData", metadata_array(part.metadata))
    for column, actions in (("txn", part.txns), ("domainMetadata", part.domains),
                            ("add", part.adds), ("remove", part.removes)):
        for start in range(0, len(actions), BATCH_ROWS):
            yield action_batch(column, BUILDERS[column](actions[start:start + BATCH_ROWS]))


def checkpoint_parquet_bytes(batches: Iterable[pa.RecordBatch | pa.Table],
                             schema: pa.Schema = CHECKPOINT_SCHEMA) -> bytes:
    """A checkpoint parquet file of ``batches`` (record batches or tables of ``schema``: the
    checkpoint schema, or the V2 top-level or sidecar schema), in row groups of at least
    :data:`BATCH_ROWS` rows, snappy, with the dictionary and statistics columns above."""
    sink = pa.BufferOutputStream(memory_pool=MEMORY_POOL)
    with checkpoint_parquet_writer(sink, schema) as writer:
        write_row_groups(writer, batches)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def checkpoint_parquet_writer(sink: Any, schema: pa.Schema = CHECKPOINT_SCHEMA) -> ParquetWriter:
    """A parquet writer of a checkpoint file to ``sink`` (a path or a stream): snappy, with the
    dictionary and statistics columns above, and a CRC of every page (the parquet format's page
    checksum, which parquet-mr writes by default too): a damaged page is then an error for every
    reader that checks it (this package does, :func:`~.checkpoint_reader.open_checkpoint_parquet`),
    never a silently different action."""
    dictionary, statistics = _encoding_columns(schema)
    return ParquetWriter(sink, schema, compression="snappy", use_dictionary=dictionary,
                         write_statistics=statistics, write_page_checksum=True, memory_pool=MEMORY_POOL)


def write_row_groups(writer: ParquetWriter, batches: Iterable[pa.RecordBatch | pa.Table]) -> None:
    """``batches`` into ``writer`` in row groups of at least :data:`BATCH_ROWS` rows (small
    batches are gathered; only one row group's rows are held at a time)."""
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


# --- part size and layout -----------------------------------------------------------------------

def resolve_part_size(metadata: Metadata, part_size: int | None = None, *,
                      default: int = DEFAULT_PART_SIZE) -> int:
    """``part_size`` if given, else the table property ``delta.checkpoint.partSize`` if it is a
    positive integer, else ``default`` (:data:`DEFAULT_PART_SIZE`)."""
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
    return default


#: PROTOCOL.md "V2 Checkpoint Table Feature".
V2_CHECKPOINT_FEATURE = "v2Checkpoint"


def supports_v2_checkpoint(protocol: ProtocolAction) -> bool:
    return V2_CHECKPOINT_FEATURE in (protocol.writerFeatures or ()) or \
        V2_CHECKPOINT_FEATURE in (protocol.readerFeatures or ())


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


class NewCheckpointFiles:
    """The checkpoint files one call creates under their final names, removed (best effort) when
    the call fails before it is done: they would form an incomplete multi-part checkpoint, which
    readers ignore (PROTOCOL.md "Multi-part checkpoint") but nothing would ever delete. A file
    that existed before belongs to another writer's (possibly complete) checkpoint and stays."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.created: list[str] = []

    def publish(self, path: str, write: Callable[[], object]) -> None:
        """Run ``write`` (which puts the file at ``path``), remembering ``path`` if it is new."""
        existed = self.storage.exists(path)
        write()
        if not existed:
            self.created.append(path)

    def __enter__(self) -> "NewCheckpointFiles":
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> Literal[False]:
        if exc_type is not None:
            for path in self.created:
                try:
                    self.storage.delete(path)
                except Exception:  # noqa: BLE001 - best effort; the original failure is what matters
                    pass
        return False


def _write_parts(storage: Storage, version: int, parts: Sequence[tuple[int, Iterable[pa.RecordBatch]]],
                 *, num_add_files: int, created_ms: int,
                 update_last_checkpoint: bool, schema: pa.Schema = CHECKPOINT_SCHEMA) -> CheckpointResult:
    """Write each part (its row count and its batches) under its checkpoint name, in part order,
    then ``_last_checkpoint``."""
    num_parts = len(parts)
    paths: list[str] = []
    sizes: list[int] = []
    # a part that fails (disk full, read-only, killed) takes the ones written before it along
    with NewCheckpointFiles(storage) as new:
        for i, (_, batches) in enumerate(parts, start=1):
            path = (classic_checkpoint_path(version) if num_parts == 1
                    else multipart_checkpoint_path(version, i, num_parts))
            data = checkpoint_parquet_bytes(batches, schema)
            new.publish(path, lambda: storage.write_atomic(path, data))  # noqa: B023 - called at once
            paths.append(path)
            sizes.append(len(data))

    result = CheckpointResult(
        version=version, paths=tuple(paths), num_actions=sum(rows for rows, _ in parts),
        num_add_files=num_add_files, size_in_bytes=sum(sizes),
        parts=num_parts if num_parts > 1 else None, last_checkpoint_updated=False,
        created_ms=created_ms, part_rows=tuple(rows for rows, _ in parts), part_sizes=tuple(sizes))
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
    if writes_stats_as_struct(state.metadata):  # typed stats are built from Arrow columns
        return write_checkpoint_arrow(storage, version, state.protocol, state.metadata,
                                      add_array(state.adds), remove_array(state.removes), state.txns,
                                      state.domains, part_size=part_size, now_ms=now_ms,
                                      update_last_checkpoint=update_last_checkpoint)
    created_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
    num_parts = plan_num_parts(state, resolve_part_size(state.metadata, part_size))
    parts = split_into_parts(state, num_parts)
    return _write_parts(storage, version, [(p.num_rows, _batches(p)) for p in parts],
                        num_add_files=len(state.adds), created_ms=created_ms,
                        update_last_checkpoint=update_last_checkpoint)


# --- entry point for a state already in Arrow -------------------------------------------------------

def file_action_column(values: pa.StructArray | pa.ChunkedArray | None, typ: pa.StructType,
                       what: str) -> pa.ChunkedArray:
    """``values`` as chunks of exactly ``typ``, non-null, with ``dataChange`` false (as
    delta-spark writes every checkpointed ``add`` and ``remove``)."""
    if values is None:
        return pa.chunked_array([], typ)
    if isinstance(values, pa.Array):
        values = pa.chunked_array([values], values.type)
    if not isinstance(values, pa.ChunkedArray):
        raise TypeError(f"{what} must be a pyarrow StructArray or ChunkedArray, got {type(values).__name__}")
    if values.type != typ:
        values = ac.cast(values, typ)
    if values.null_count:
        raise ValueError(f"{what} must not hold null rows")
    data_change = typ.get_field_index("dataChange")
    chunks = []
    for chunk in values.chunks:
        if len(chunk) == 0:
            continue
        children = [chunk.field(i) for i in range(typ.num_fields)]
        if children[data_change].null_count or ac.any(children[data_change]).as_py():
            children[data_change] = pa.repeat(pa.scalar(False, _BOOL), len(chunk))
            chunk = pa.StructArray.from_arrays(children, fields=list(typ))
        chunks.append(chunk)
    return pa.chunked_array(chunks, typ)


def struct_tables(column: str, values: pa.ChunkedArray,
                  schema: pa.Schema = CHECKPOINT_SCHEMA) -> Iterator[pa.Table]:
    """Tables of ``schema`` of :data:`BATCH_ROWS` rows whose ``column`` holds ``values``
    (however they are chunked: no copy) and whose other columns are null."""
    for start in range(0, len(values), BATCH_ROWS):
        part = values.slice(start, BATCH_ROWS)
        n = len(part)
        yield pa.Table.from_arrays(
            [part if f.name == column else pa.nulls(n, f.type) for f in schema], schema=schema)


def arrow_part_batches(protocol: ProtocolAction | None, metadata: Metadata | None,
                        txns: Sequence[Txn], domains: Sequence[DomainMetadata],
                        adds: pa.ChunkedArray, removes: pa.ChunkedArray,
                        schema: pa.Schema = CHECKPOINT_SCHEMA) -> Iterator[pa.RecordBatch | pa.Table]:
    """The rows of one part, in the order :func:`_batches` gives them."""
    if protocol is not None:
        yield action_batch("protocol", protocol_array(protocol), schema)
    if metadata is not None:
        yield action_batch("metaData", metadata_array(metadata), schema)
    for column, actions in (("txn", txns), ("domainMetadata", domains)):
        for start in range(0, len(actions), BATCH_ROWS):
            yield action_batch(column, BUILDERS[column](actions[start:start + BATCH_ROWS]), schema)
    yield from struct_tables("add", adds, schema)
    yield from struct_tables("remove", removes, schema)


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
    add_col = file_action_column(adds, ADD_TYPE, "adds")
    remove_col = file_action_column(removes, REMOVE_TYPE, "removes")
    # delta.checkpoint.writeStatsAsStruct: add.stats_parsed / partitionValues_parsed
    add_col = with_parsed_columns(add_col, metadata)
    schema = with_add_type(CHECKPOINT_SCHEMA, add_col.type)
    txns = list(txns)
    live = [d for d in domains if not d.removed]
    n_files = len(add_col) + len(remove_col)
    size = resolve_part_size(metadata, part_size)
    num_parts = 1 if supports_v2_checkpoint(protocol) else max(1, math.ceil(n_files / size))
    if num_parts == 1:
        rows = 2 + len(txns) + len(live) + n_files
        parts = [(rows, arrow_part_batches(protocol, metadata, txns, live, add_col, remove_col, schema))]
    else:
        home = spark_partition_of(None, num_parts)
        add_ids = spark_partition_ids(chunked_field(add_col, "path"), num_parts)
        remove_ids = spark_partition_ids(chunked_field(remove_col, "path"), num_parts)
        parts = []
        for i in range(num_parts):
            part_adds = ac.filter(add_col, ac.equal(add_ids, i))
            part_removes = ac.filter(remove_col, ac.equal(remove_ids, i))
            rows = len(part_adds) + len(part_removes)
            if i == home:
                rows += 2 + len(txns) + len(live)
                batches = arrow_part_batches(protocol, metadata, txns, live, part_adds, part_removes, schema)
            else:
                batches = arrow_part_batches(None, None, (), (), part_adds, part_removes, schema)
            parts.append((rows, batches))
    return _write_parts(storage, version, parts, num_add_files=len(add_col), created_ms=created_ms,
                        update_last_checkpoint=update_last_checkpoint, schema=schema)

