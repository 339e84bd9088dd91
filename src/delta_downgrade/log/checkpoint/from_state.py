"""Write the checkpoint of a reconciled :class:`~delta_downgrade.log.replay.arrow_replay.ArrowState`
part by part, so that the driver holds one part of the state (and one row group of the file)
at a time, never the whole table nor the whole parquet file as bytes.

The content and layout are those of :mod:`~delta_downgrade.log.checkpoint.classic_writer` (classic and
multi-part) and :mod:`~delta_downgrade.log.checkpoint.v2_writer` (V2): same schema, values, part
count, Spark's hash placement of multi-part rows, sidecar size, order of writes and
``_last_checkpoint``. What differs is only the order of the file-action rows, which PROTOCOL.md
"Checkpoints" leaves free: a state in hash parts is written part after part.

* **Classic** - one parquet file, streamed to a local file row group by row group
  (:meth:`Storage.atomic_file`) and published by an atomic rename under its final name.
* **Multi-part** - every part's file open at once, each state part read once and its rows sent
  to the part Spark's hash of their path places them in; then all published. A failure removes
  the parts this call created (an incomplete multi-part checkpoint is never completed). A state
  in memory (one part) is written by the in-memory writer, as before.
* **V2** - the sidecars are cut from each state part in turn (at most the sidecar size each), then
  the top-level file names them all.

A table that writes ``stats_parsed`` (``delta.checkpoint.writeStatsAsStruct``) gets an ``add`` type
that depends on the statistics present in all its adds; its classic and multi-part checkpoints
are written from the whole state at once (as before: its memory is not bounded by the parts),
its V2 sidecars per state part.
"""

from __future__ import annotations

import math
import os
import shutil
import time
import weakref
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from msgspec.structs import replace
import pyarrow as pa
from delta_downgrade import arrow_compute as ac

from delta_downgrade.log.format.arrow_columns import chunked_field
from delta_downgrade.log.format.checkpoint_schema import ADD_TYPE, CHECKPOINT_SCHEMA, REMOVE_TYPE, with_add_type
from delta_downgrade.log.format.stats_struct import with_parsed_columns, writes_stats_as_struct
from delta_downgrade.log.checkpoint.classic_writer import (BATCH_ROWS, CheckpointResult, arrow_part_batches,
                                                   checkpoint_parquet_writer, file_action_column, resolve_part_size,
                                                   struct_tables, supports_v2_checkpoint, write_checkpoint_arrow,
                                                   write_row_groups)
from delta_downgrade.log.format.file_names import classic_checkpoint_path, multipart_checkpoint_path
from delta_downgrade.log.format.last_checkpoint import write_last_checkpoint
from delta_downgrade.log.checkpoint.spark_hash import spark_partition_ids, spark_partition_of
from delta_downgrade.log.replay.state_parts import release_memory, tombstones_after
from delta_downgrade.log.checkpoint.v2_writer import (DEFAULT_V2_FORMAT, check_v2_request, resolve_sidecar_actions,
                                                      sidecar_slices, write_v2_sidecars_and_top)
from delta_downgrade.protocol.actions import DomainMetadata
from delta_downgrade.storage import Storage

if TYPE_CHECKING:
    from delta_downgrade.log.replay.arrow_replay import ArrowState


def _parts(state: "ArrowState", cutoff_ms: int) -> Iterator[tuple[pa.ChunkedArray, pa.ChunkedArray]]:
    """Each state part's file actions as written: ``dataChange`` false, unexpired tombstones."""
    last = state.parts.count - 1
    for i, (adds, removes) in enumerate(state.file_parts()):
        yield (file_action_column(adds, ADD_TYPE, "adds"),
               file_action_column(tombstones_after(removes, cutoff_ms), REMOVE_TYPE, "removes"))
        del adds, removes
        if i < last:  # between parts only: after the last there is no next part to make room for
            release_memory()


def write_state_checkpoint(storage: Storage, state: "ArrowState", cutoff_ms: int, *, v2: bool,
                           part_size: int | None = None, v2_format: str = DEFAULT_V2_FORMAT,
                           now_ms: int | None = None, update_last_checkpoint: bool = True,
                           same_file_rows: CheckpointResult | None = None,
                           gate: Callable[[], None] | None = None) -> CheckpointResult:
    """Write the checkpoint of ``state`` at ``state.version`` - tombstones deleted at or before
    ``cutoff_ms`` left out - then point ``_last_checkpoint`` at it (unless it names a newer one).

    ``v2``: a UUID-named V2 checkpoint (``v2_format`` its top-level file, ``part_size`` file
    actions per sidecar), else a classic one, multi-part when the file actions exceed the part
    size (:func:`~delta_downgrade.log.checkpoint.classic_writer.resolve_part_size`).

    ``same_file_rows``: a multi-part checkpoint of the very same file-action rows
    (:meth:`~delta_downgrade.log.checkpoint.copy_forward.WrittenCheckpoint.same_file_rows`). When
    this one has as many parts, its parts of file actions only are copied from it (their sizes
    checked) and only the part with the other actions is written.

    ``gate``: called before any file is published; publishing waits for it to return, and
    nothing is published when it raises (:mod:`~delta_downgrade.log.checkpoint.prepared`). A
    classic checkpoint, and a multi-part one of a state in several parts, call it with every
    file encoded; the other writers (V2, the in-memory one) call it before they begin."""
    version = state.version
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"version must be a non-negative int, got {version!r}")
    created_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
    if v2:
        if gate is not None:
            gate()
        return _write_v2(storage, state, cutoff_ms, part_size, v2_format, now_ms, update_last_checkpoint)
    num_parts = classic_part_count(state, state.num_tombstones_after(cutoff_ms), part_size)
    live = [d for d in state.domains if not d.removed]
    if num_parts == 1:
        rows, path, nbytes = _write_classic(storage, state, cutoff_ms, live, gate)
        result = CheckpointResult(
            version=version, paths=(path,), num_actions=rows, num_add_files=state.num_adds,
            size_in_bytes=nbytes, parts=None, last_checkpoint_updated=False, created_ms=created_ms,
            part_rows=(rows,))
    elif state.num_parts > 1 and not writes_stats_as_struct(state.metadata):
        copies = _copyable_parts(storage, same_file_rows, num_parts)
        try:
            result = _write_multipart_one_pass(storage, state, cutoff_ms, live, num_parts, created_ms, copies,
                                               gate=gate)
        except _PartChanged:  # a part to copy changed since its size was checked: write them all
            result = _write_multipart_one_pass(storage, state, cutoff_ms, live, num_parts, created_ms, gate=gate)
    else:
        # A state in memory (one part), or a table writing stats_parsed, whose parsed columns
        # are built over all its adds (each part file gets the one type): the in-memory writer.
        if gate is not None:
            gate()
        return write_checkpoint_arrow(storage, version, state.protocol, state.metadata, state.adds,
                                      state.tombstones_after(cutoff_ms), state.txns, live, part_size=part_size,
                                      now_ms=created_ms, update_last_checkpoint=update_last_checkpoint)
    if update_last_checkpoint:
        updated = write_last_checkpoint(storage, result.last_checkpoint_info())
        result = replace(result, last_checkpoint_updated=updated)
    return result


def classic_part_count(state: "ArrowState", num_tombstones: int, part_size: int | None = None) -> int:
    """How many parts a classic checkpoint of ``state`` keeping ``num_tombstones`` removes has
    (1: a single file): one per ``part_size`` file actions, and always one for a protocol that
    supports V2 checkpoints (PROTOCOL.md "V2 Checkpoint Table Feature": such a table's classic
    checkpoint is one file)."""
    if supports_v2_checkpoint(state.protocol):
        return 1
    n_files = state.num_adds + num_tombstones
    return max(1, math.ceil(n_files / resolve_part_size(state.metadata, part_size)))


def _stream_file(storage: Storage, path: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch | pa.Table],
                 gate: Callable[[], None] | None = None) -> int:
    """One parquet file of ``batches`` written to local disk as they come and published
    atomically under ``path`` (once ``gate`` returns, if given); its size in bytes."""
    with storage.atomic_file(path) as local:
        with checkpoint_parquet_writer(local, schema) as writer:
            write_row_groups(writer, batches)
        if gate is not None:
            gate()
        return os.path.getsize(local)


def _write_classic(storage: Storage, state: "ArrowState", cutoff_ms: int, live: Sequence[DomainMetadata],
                   gate: Callable[[], None] | None = None) -> tuple[int, str, int]:
    path = classic_checkpoint_path(state.version)
    txns = list(state.txns)
    rows = 2 + len(txns) + len(live)
    if writes_stats_as_struct(state.metadata):
        # one file, one schema: the parsed columns' type follows the stats of all rows
        adds = with_parsed_columns(file_action_column(state.adds, ADD_TYPE, "adds"), state.metadata)
        removes = file_action_column(state.tombstones_after(cutoff_ms), REMOVE_TYPE, "removes")
        schema = with_add_type(CHECKPOINT_SCHEMA, adds.type)
        rows += len(adds) + len(removes)
        return rows, path, _stream_file(storage, path, schema,
                                        arrow_part_batches(state.protocol, state.metadata, txns, live, adds, removes,
                                                           schema), gate)
    counted = [0]

    def batches() -> Iterator[pa.RecordBatch | pa.Table]:
        yield from arrow_part_batches(state.protocol, state.metadata, txns, live,
                                      pa.chunked_array([], ADD_TYPE), pa.chunked_array([], REMOVE_TYPE))
        for adds, removes in _parts(state, cutoff_ms):
            counted[0] += len(adds) + len(removes)
            yield from arrow_part_batches(None, None, (), (), adds, removes)

    nbytes = _stream_file(storage, path, CHECKPOINT_SCHEMA, batches(), gate)
    return rows + counted[0], path, nbytes


#: Spark's partition id of each state part's adds, by parts object (weakly: the ids go with the
#: state) and ``(state part, number of checkpoint parts)``. A drop writes several checkpoints of
#: the very same file actions (its barrier states share their parts: ``ArrowState.advanced``),
#: and hashing a million paths is about a second each time; the ids cost 4 bytes a file.
_ADD_PART_IDS: "weakref.WeakKeyDictionary[object, dict[tuple[int, int], pa.Array]]" = weakref.WeakKeyDictionary()


def _add_partition_ids(state: "ArrowState", part: int, adds: pa.ChunkedArray, num_parts: int) -> pa.Array:
    """:func:`spark_partition_ids` of the paths of ``adds``, state part ``part``'s, computed
    once per parts object."""
    known = _ADD_PART_IDS.setdefault(state.parts, {})
    ids = known.get((part, num_parts))
    if ids is None:
        ids = known[(part, num_parts)] = ac.cast(spark_partition_ids(chunked_field(adds, "path"), num_parts),
                                                 pa.int32())
    return ids


#: Rows held back per output part before they are written as a row group, at most, by the one-pass
#: multi-part writer: :data:`BATCH_ROWS` unless the parts are many (memory: parts x rows held).
MULTIPART_BUFFER_ROWS = 400_000


class _PartChanged(Exception):
    """A part to copy is no longer the file its checkpoint wrote (its size differs)."""


def _copyable_parts(storage: Storage, previous: CheckpointResult | None,
                    num_parts: int) -> dict[int, tuple[str, int, int]]:
    """The parts of ``previous`` (a checkpoint of the same file-action rows) that a new
    checkpoint of ``num_parts`` parts may copy: ``{part index: (path, size, rows)}`` for every
    part but the one that holds the non-file actions, each still of the size it was written
    with; empty when the part count differs or a part is missing or changed (a cleanup, another
    writer)."""
    if previous is None or previous.parts != num_parts or len(previous.part_sizes) != num_parts:
        return {}
    home = spark_partition_of(None, num_parts)
    out = {}
    for i, (path, size, rows) in enumerate(zip(previous.paths, previous.part_sizes, previous.part_rows)):
        if i == home:
            continue
        try:
            if storage.status(path).size != size:
                return {}
        except OSError:
            return {}
        out[i] = (path, size, rows)
    return out


def _write_multipart_one_pass(storage: Storage, state: "ArrowState", cutoff_ms: int,
                              live: Sequence[DomainMetadata], num_parts: int, created_ms: int,
                              copies: dict[int, tuple[str, int, int]] | None = None, *,
                              gate: Callable[[], None] | None = None) -> CheckpointResult:
    """:func:`_write_multipart` for a state in several parts and the plain checkpoint schema: all
    parts' files open at once (local temporary files), each state part read once and its rows
    sent to the files Spark's hash of their path places them in, in row groups of up to
    :data:`BATCH_ROWS` rows (fewer when the parts are many, so that the rows held back stay under
    :data:`MULTIPART_BUFFER_ROWS`); then every file is published. Reads the state once, where
    gathering part by part would read it once per checkpoint part.

    ``copies`` (:func:`_copyable_parts`): parts whose rows an earlier checkpoint's file already
    holds; that file is copied under this part's name (in the same publishing step) and the
    rows are not encoded again. Raises :class:`_PartChanged`, having published nothing, when
    one is no longer of its size. ``gate``: called with every file written, before the first
    is published."""
    copies = copies or {}
    home = spark_partition_of(None, num_parts)
    assert home not in copies, "the part with the protocol and metadata is always written"
    group_rows = max(1, min(BATCH_ROWS, MULTIPART_BUFFER_ROWS // num_parts))
    txns = list(state.txns)
    paths = [multipart_checkpoint_path(state.version, i + 1, num_parts) for i in range(num_parts)]
    existed = [storage.exists(p) for p in paths]
    rows = [copies[i][2] if i in copies else 0 for i in range(num_parts)]
    written = [i for i in range(num_parts) if i not in copies]
    published: list[str] = []
    sizes: list[int] = []
    try:
        with ExitStack() as stack:
            locals_ = {i: stack.enter_context(_published(storage, paths[i], published)) for i in written}
            writers = {i: stack.enter_context(checkpoint_parquet_writer(local, CHECKPOINT_SCHEMA))
                       for i, local in locals_.items()}
            pending: list[list[pa.Table]] = [[] for _ in range(num_parts)]
            held = [0] * num_parts

            def flush(i: int) -> None:
                if pending[i]:
                    writers[i].write_table(pa.concat_tables(pending[i]), row_group_size=max(held[i], 1))
                    pending[i], held[i] = [], 0

            def place(i: int, column: str, actions: pa.ChunkedArray) -> None:
                """``actions`` (of ``column``) into part ``i``, a row group written each time
                enough rows are held."""
                for table in struct_tables(column, actions):
                    pending[i].append(table)
                    held[i] += table.num_rows
                    if held[i] >= group_rows:
                        flush(i)
                rows[i] += len(actions)

            write_row_groups(writers[home], arrow_part_batches(state.protocol, state.metadata, txns, live,
                                                               pa.chunked_array([], ADD_TYPE),
                                                               pa.chunked_array([], REMOVE_TYPE)))
            rows[home] += 2 + len(txns) + len(live)
            for part, (adds, removes) in enumerate(_parts(state, cutoff_ms)):
                for column, col in (("add", adds), ("remove", removes)):
                    if len(col) == 0:
                        continue
                    ids = (_add_partition_ids(state, part, col, num_parts) if column == "add" else
                           spark_partition_ids(chunked_field(col, "path"), num_parts))
                    if copies:  # only the home part is written: its rows, in state order
                        place(home, column, ac.filter(col, ac.equal(ids, pa.scalar(home, ids.type))))
                        continue
                    order = ac.sort_indices(ids)
                    counts = ac.value_counts(ids)
                    placed = ac.take(col, order)
                    start = 0
                    for i, n in sorted(zip(counts.field(0).to_pylist(), counts.field(1).to_pylist())):
                        place(i, column, placed.slice(start, n))
                        start += n
                    del placed
            for i in written:
                flush(i)
            for writer in writers.values():
                writer.close()
            for i, (source, size, _) in sorted(copies.items()):
                local = stack.enter_context(_published(storage, paths[i], published))
                _copy_to_local(storage, source, local)
                if os.path.getsize(local) != size:
                    raise _PartChanged(source)
            sizes = [copies[i][1] if i in copies else os.path.getsize(locals_[i]) for i in range(num_parts)]
            if gate is not None:
                gate()
    except BaseException:
        # Some files may be published already when a later one failed: an incomplete multi-part
        # checkpoint, ignored by readers (PROTOCOL.md "Multi-part checkpoint") but never deleted
        # by anyone; remove the ones this call created.
        for path, was in zip(paths, existed):
            if path in published and not was:
                try:
                    storage.delete(path)
                except Exception:  # noqa: BLE001 - best effort; the original failure is what matters
                    pass
        raise
    return CheckpointResult(
        version=state.version, paths=tuple(paths), num_actions=sum(rows), num_add_files=state.num_adds,
        size_in_bytes=sum(sizes), parts=num_parts, last_checkpoint_updated=False, created_ms=created_ms,
        part_rows=tuple(rows), part_sizes=tuple(sizes))


def _copy_to_local(storage: Storage, source: str, local: str) -> None:
    """The file ``source`` of ``storage`` copied to the local path ``local``, streamed."""
    path = storage.local_file(source)
    if path is not None:
        shutil.copyfile(path, local)
        return
    with storage.open_input(source) as src, open(local, "wb") as dst:
        shutil.copyfileobj(src, dst, 8 << 20)


@contextmanager
def _published(storage: Storage, path: str, published: list[str]) -> Iterator[str]:
    """:meth:`Storage.atomic_file`, noting ``path`` in ``published`` once it is."""
    with storage.atomic_file(path) as local:
        yield local
    published.append(path)


def _write_v2(storage: Storage, state: "ArrowState", cutoff_ms: int, part_size: int | None, fmt: str,
              now_ms: int | None, update_last_checkpoint: bool) -> CheckpointResult:
    """Sidecars of at most the sidecar size cut from each state part in turn, their number known
    before the first is written (it is in their names)."""
    check_v2_request(state.protocol, fmt)
    per_sidecar = resolve_sidecar_actions(state.metadata, part_size)
    if state.num_parts == 1:
        adds, removes = next(_parts(state, cutoff_ms))
        sliced = sidecar_slices(with_parsed_columns(adds, state.metadata), removes, per_sidecar)
        count = len(sliced)
        slices: list[Any] | Iterator[Any] = sliced
    else:
        tombstones = state.tombstones_after_per_part(cutoff_ms)
        count = sum(math.ceil((p + t) / per_sidecar) for (p, _), t in zip(state.parts.sizes, tombstones))

        def stream() -> Iterator[tuple[pa.ChunkedArray, pa.ChunkedArray]]:
            for adds, removes in _parts(state, cutoff_ms):
                yield from sidecar_slices(with_parsed_columns(adds, state.metadata), removes, per_sidecar)

        slices = stream()
    return write_v2_sidecars_and_top(storage, state.version, state.protocol, state.metadata, state.txns,
                                     state.domains, slices, count, fmt=fmt, now_ms=now_ms,
                                     update_last_checkpoint=update_last_checkpoint)

