"""Write UUID-named V2 checkpoints: a top-level file and parquet sidecars (PROTOCOL.md
"Checkpoints", "UUID-named checkpoint", "V2 Spec", "Sidecar Files", "Sidecar File Information",
"Checkpoint Metadata", "V2 Checkpoint Table Feature", "Last Checkpoint File Schema").

The caller passes the reconciled state at a version with the file actions as Arrow columns (from
``arrow_replay``, as for :func:`~delta_downgrade.log.checkpoint.classic_writer.write_checkpoint_arrow`),
and only calls this for a table whose protocol supports ``v2Checkpoint``: "A UUID-named v2
Checkpoint should only be created by clients if the v2 checkpoint table feature is enabled"
(which checkpoint a table gets is decided in :mod:`delta_downgrade.log.checkpoint.on_driver`).

* **Sidecars** - every ``add`` and ``remove`` goes into parquet sidecar files
  ``_delta_log/_sidecars/%020d.checkpoint.%010d.%010d.<uuid>.parquet`` (delta-spark's names),
  never some of them into the top-level file: "Having partial add and remove file actions in V2
  Checkpoint and partial entries in sidecar files is not allowed". A sidecar holds only the
  ``add`` and ``remove`` columns (:data:`~delta_downgrade.log.format.checkpoint_schema.SIDECAR_SCHEMA`),
  with ``dataChange`` false, in row groups like a classic checkpoint. Adds come first, then the
  removes, cut every :data:`DEFAULT_SIDECAR_ACTIONS` file actions (or the part size the caller or
  the table's ``delta.checkpoint.partSize`` gives): delta-spark splits V2 checkpoints at 50,000
  file actions per sidecar unless told otherwise. A state without file actions has no sidecar ("A
  V2 spec Checkpoint could reference zero or more sidecar file actions").
* **Top-level file** - ``n.checkpoint.<uuid>.parquet`` (the default) or ``.json``: exactly one
  ``checkpointMetadata`` ("Each v2 spec checkpoint includes exactly one Checkpoint Metadata
  action"; tags ``sidecarNumActions``, ``sidecarSizeInBytes``, ``numOfAddFiles``), one ``sidecar``
  action per sidecar (``path`` the file name only, as the spec encourages; its size and
  modification time as stored), then protocol, metaData, txns and the live domainMetadata ("All
  the non-file actions ... must be part of the v2 spec checkpoint itself"), delta-spark's order.
  The parquet form has the checkpoint schema plus ``checkpointMetadata`` and ``sidecar``
  (:data:`~delta_downgrade.log.format.checkpoint_schema.V2_CHECKPOINT_SCHEMA`).
* **_last_checkpoint** - version, ``size`` (rows of the top-level file and the sidecars),
  ``sizeInBytes`` (all of them), ``numOfAddFiles``, and ``v2Checkpoint``: the top-level file's
  name, size and modification time, its non-file actions (with ``checkpointMetadata``) and its
  sidecar files, each left out when longer than :data:`LAST_CHECKPOINT_EMBED_LIMIT` (delta-spark's
  thresholds), then the checksum. Never moved backwards
  (:func:`~delta_downgrade.log.format.last_checkpoint.write_last_checkpoint`).

**Order of writes** - each sidecar completely (:meth:`Storage.write_atomic`), then the top-level
file that names them, then ``_last_checkpoint``. A reader finds the checkpoint by the top-level
file only, so it sees either no checkpoint or a complete one. An interrupted write leaves only
sidecars no checkpoint references: this call deletes the ones it wrote when it fails before the
top-level file exists, and metadata cleanup deletes any left over once they are a day old.
"""

from __future__ import annotations

import time
import uuid
from itertools import chain
from typing import Any, Iterable, Iterator, Sequence

from msgspec.structs import replace
import pyarrow as pa

from delta_downgrade.log.format.checkpoint_columns import (BUILDERS, action_batch, add_array, checkpoint_metadata_array,
                                                    metadata_array, protocol_array, remove_array)
from delta_downgrade.log.format.checkpoint_schema import (ADD_TYPE, REMOVE_TYPE, SIDECAR_SCHEMA, V2_CHECKPOINT_SCHEMA,
                                                   with_add_type)
from delta_downgrade.log.format.stats_struct import with_parsed_columns
from delta_downgrade.log.checkpoint.classic_writer import (BATCH_ROWS, CheckpointContent, CheckpointResult,
                                                   checkpoint_parquet_bytes, file_action_column,
                                                   resolve_part_size, struct_tables,
                                                   supports_v2_checkpoint)
from delta_downgrade.log.format.file_names import sidecar_name, sidecar_path, v2_checkpoint_path
from delta_downgrade.log.format.last_checkpoint import write_last_checkpoint
from delta_downgrade.protocol.actions import (CheckpointMetadata, DomainMetadata, Metadata, ProtocolAction,
                                              Sidecar, Txn, serialize_commit)
from delta_downgrade.storage import Storage

#: The formats of the top-level file (PROTOCOL.md "UUID-named checkpoint": JSON or parquet).
V2_FORMATS = ("parquet", "json")
#: Parquet by default: the same reader path as the sidecars and classic checkpoints, and projected
#: reads of protocol and metaData. (delta-spark defaults to JSON; both are in the spec.)
DEFAULT_V2_FORMAT = "parquet"
#: File actions per sidecar when neither the call nor the table's ``delta.checkpoint.partSize``
#: says otherwise: delta-spark's part size for V2 checkpoints (``Checkpoints.writeCheckpoint``:
#: ``DELTA_CHECKPOINT_PART_SIZE`` or else 50,000 when v2 checkpoints are enabled).
DEFAULT_SIDECAR_ACTIONS = 50_000
#: delta-spark embeds the non-file actions and the sidecar list in ``_last_checkpoint`` only up to
#: 30 entries each (``lastCheckpoint.nonFileActions.threshold``, ``lastCheckpoint.sidecars.threshold``);
#: above, the field is left out and readers read the top-level file.
LAST_CHECKPOINT_EMBED_LIMIT = 30


def resolve_sidecar_actions(metadata: Metadata, sidecar_actions: int | None = None) -> int:
    """``sidecar_actions`` if given, else the table's ``delta.checkpoint.partSize`` if it is a
    positive integer, else :data:`DEFAULT_SIDECAR_ACTIONS`."""
    return resolve_part_size(metadata, sidecar_actions, default=DEFAULT_SIDECAR_ACTIONS)


def sidecar_slices(adds: pa.ChunkedArray, removes: pa.ChunkedArray, per_sidecar: int
                    ) -> list[tuple[pa.ChunkedArray, pa.ChunkedArray]]:
    """The adds and removes of each sidecar: the adds then the removes, cut every
    ``per_sidecar`` rows (slices, no copy)."""
    n_adds, total = len(adds), len(adds) + len(removes)
    out = []
    for start in range(0, total, per_sidecar):
        end = min(start + per_sidecar, total)
        a_start = min(start, n_adds)
        a_end = min(end, n_adds)
        r_start = max(start, n_adds) - n_adds
        r_end = max(end, n_adds) - n_adds
        out.append((adds.slice(a_start, a_end - a_start), removes.slice(r_start, r_end - r_start)))
    return out


def _sidecar_bytes(adds: pa.ChunkedArray, removes: pa.ChunkedArray) -> bytes:
    """A sidecar file; its ``add`` column has the adds' type (with ``stats_parsed`` when the
    table writes stats as structs)."""
    schema = with_add_type(SIDECAR_SCHEMA, adds.type)
    return checkpoint_parquet_bytes(chain(struct_tables("add", adds, schema),
                                          struct_tables("remove", removes, schema)),
                                    schema)


def _top_level_batches(checkpoint_metadata: CheckpointMetadata, sidecars: Sequence[Sidecar],
                       protocol: ProtocolAction, metadata: Metadata, txns: Sequence[Txn],
                       domains: Sequence[DomainMetadata]) -> Iterator[pa.RecordBatch]:
    """The rows of the top-level parquet file, in the order of the JSON form."""
    schema = V2_CHECKPOINT_SCHEMA
    yield action_batch("checkpointMetadata", checkpoint_metadata_array(checkpoint_metadata), schema)
    yield from _action_batches("sidecar", sidecars)
    yield action_batch("protocol", protocol_array(protocol), schema)
    yield action_batch("metaData", metadata_array(metadata), schema)
    yield from _action_batches("txn", txns)
    yield from _action_batches("domainMetadata", domains)


def _action_batches(column: str, actions: Sequence[Any]) -> Iterator[pa.RecordBatch]:
    for start in range(0, len(actions), BATCH_ROWS):
        yield action_batch(column, BUILDERS[column](actions[start:start + BATCH_ROWS]), V2_CHECKPOINT_SCHEMA)


def _top_level_bytes(fmt: str, checkpoint_metadata: CheckpointMetadata, sidecars: Sequence[Sidecar],
                     protocol: ProtocolAction, metadata: Metadata, txns: Sequence[Txn],
                     domains: Sequence[DomainMetadata]) -> bytes:
    if fmt == "json":  # one action per line, as a commit file (PROTOCOL.md "V2 Spec" example)
        return serialize_commit([checkpoint_metadata, *sidecars, protocol, metadata, *txns, *domains])
    return checkpoint_parquet_bytes(
        _top_level_batches(checkpoint_metadata, sidecars, protocol, metadata, txns, domains),
        V2_CHECKPOINT_SCHEMA)


def _delete_quietly(storage: Storage, paths: Sequence[str]) -> None:
    for path in paths:
        try:
            storage.delete(path)
        except Exception:  # noqa: BLE001 - best effort; the original failure is what matters
            pass


def write_v2_checkpoint_arrow(storage: Storage, version: int, protocol: ProtocolAction, metadata: Metadata,
                              adds: pa.StructArray | pa.ChunkedArray | None,
                              removes: pa.StructArray | pa.ChunkedArray | None = None,
                              txns: Sequence[Txn] = (), domains: Sequence[DomainMetadata] = (), *,
                              fmt: str = DEFAULT_V2_FORMAT, sidecar_actions: int | None = None,
                              now_ms: int | None = None,
                              update_last_checkpoint: bool = True) -> CheckpointResult:
    """Write the V2 checkpoint of a reconciled state at ``version`` (see the module docstring),
    then point ``_last_checkpoint`` at it (unless that already names a newer version, or
    ``update_last_checkpoint`` is False).

    ``adds`` of :data:`ADD_TYPE`, ``removes`` of :data:`REMOVE_TYPE` (the unexpired tombstones),
    as arrays or chunked arrays without null rows; ``domains`` with ``removed=True`` are left out.
    ``fmt``: the top-level file's format, ``"parquet"`` or ``"json"``. The result's ``paths`` are
    the top-level file then the sidecars; ``part_rows`` the rows of each."""
    check_v2_request(protocol, fmt)
    add_col = file_action_column(adds, ADD_TYPE, "adds")
    remove_col = file_action_column(removes, REMOVE_TYPE, "removes")
    # delta.checkpoint.writeStatsAsStruct: add.stats_parsed / partitionValues_parsed in the sidecars
    add_col = with_parsed_columns(add_col, metadata)
    slices = sidecar_slices(add_col, remove_col, resolve_sidecar_actions(metadata, sidecar_actions))
    return write_v2_sidecars_and_top(storage, version, protocol, metadata, txns, domains, slices, len(slices),
                                     fmt=fmt, now_ms=now_ms, update_last_checkpoint=update_last_checkpoint)


def check_v2_request(protocol: ProtocolAction, fmt: str) -> None:
    """Raise ``ValueError`` for a top-level format that is not one, or a protocol without the
    feature (PROTOCOL.md "Handling Backward compatibility while moving to UUID-named v2
    Checkpoints")."""
    if fmt not in V2_FORMATS:
        raise ValueError(f"fmt must be one of {V2_FORMATS}, got {fmt!r}")
    if not supports_v2_checkpoint(protocol):
        raise ValueError(f"a UUID-named checkpoint needs the v2Checkpoint feature; the protocol is {protocol}")


def write_v2_sidecars_and_top(storage: Storage, version: int, protocol: ProtocolAction, metadata: Metadata,
                              txns: Sequence[Txn], domains: Sequence[DomainMetadata],
                              slices: Iterable[tuple[pa.ChunkedArray, pa.ChunkedArray]], num_sidecars: int, *,
                              fmt: str, now_ms: int | None,
                              update_last_checkpoint: bool) -> CheckpointResult:
    """Write the sidecars - one per ``(adds, removes)`` of ``slices`` (``num_sidecars`` of them,
    in their names; the slices may be produced one at a time, so that only one is in memory),
    file actions ready to write (``dataChange`` false, parsed columns added) - then the top-level
    file and ``_last_checkpoint``, in that order (see the module docstring)."""
    top = v2_checkpoint_path(version, str(uuid.uuid4()), fmt)  # validates the version
    created_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
    txns = list(txns)
    live = [d for d in domains if not d.removed]
    sidecar_paths: list[str] = []
    sidecars: list[Sidecar] = []
    sidecar_rows: list[int] = []
    num_add_files = 0
    try:
        for part, (part_adds, part_removes) in enumerate(slices, start=1):
            name = sidecar_name(version, part, num_sidecars, str(uuid.uuid4()))
            path = sidecar_path(name)
            storage.write_atomic(path, _sidecar_bytes(part_adds, part_removes))
            sidecar_paths.append(path)
            status = storage.status(path)
            sidecars.append(Sidecar(path=name, sizeInBytes=status.size,
                                    modificationTime=status.modification_time_ms))
            sidecar_rows.append(len(part_adds) + len(part_removes))
            num_add_files += len(part_adds)
        if len(sidecars) != num_sidecars:
            raise AssertionError(f"{len(sidecars)} sidecars written, {num_sidecars} planned")
        sidecar_bytes = sum(s.sizeInBytes for s in sidecars)
        checkpoint_metadata = CheckpointMetadata(version=version, tags={
            "sidecarNumActions": str(sum(sidecar_rows)), "sidecarSizeInBytes": str(sidecar_bytes),
            "numOfAddFiles": str(num_add_files)})
        storage.write_atomic(top, _top_level_bytes(fmt, checkpoint_metadata, sidecars, protocol, metadata,
                                                   txns, live))
    except BaseException:
        # No top-level file names these sidecars: nobody can use them. Remove the ones written
        # here, unless the top-level file exists after all (then they belong to a checkpoint).
        try:
            referenced = storage.exists(top)
        except Exception:  # noqa: BLE001 - cannot tell: leave them to metadata cleanup
            referenced = True
        if not referenced:
            _delete_quietly(storage, sidecar_paths)
        raise
    top_status = storage.status(top)
    non_file: list[Any] = [protocol, metadata, *txns, *live, checkpoint_metadata]
    top_rows = 1 + len(sidecars) + 2 + len(txns) + len(live)
    v2_info: dict[str, Any] = {"path": top.rsplit("/", 1)[-1], "sizeInBytes": top_status.size,
                               "modificationTime": top_status.modification_time_ms}
    if len(non_file) <= LAST_CHECKPOINT_EMBED_LIMIT:
        v2_info["nonFileActions"] = [{a.KEY: a.to_obj()} for a in non_file]
    if len(sidecars) <= LAST_CHECKPOINT_EMBED_LIMIT:
        v2_info["sidecarFiles"] = [s.to_obj() for s in sidecars]
    result = CheckpointResult(
        version=version, paths=(top, *sidecar_paths), num_actions=top_rows + sum(sidecar_rows),
        num_add_files=num_add_files, size_in_bytes=top_status.size + sidecar_bytes, parts=None,
        last_checkpoint_updated=False, created_ms=created_ms, part_rows=(top_rows, *sidecar_rows),
        sidecars=tuple(sidecar_paths), v2_checkpoint=v2_info)
    if update_last_checkpoint:
        updated = write_last_checkpoint(storage, result.last_checkpoint_info())
        result = replace(result, last_checkpoint_updated=updated)
    return result


def write_v2_checkpoint(storage: Storage, version: int, state: CheckpointContent, *,
                        fmt: str = DEFAULT_V2_FORMAT, sidecar_actions: int | None = None,
                        now_ms: int | None = None, update_last_checkpoint: bool = True) -> CheckpointResult:
    """:func:`write_v2_checkpoint_arrow` for a state given as action objects (the Python replay's
    :class:`CheckpointContent`): the same files for the same state."""
    return write_v2_checkpoint_arrow(
        storage, version, state.protocol, state.metadata, add_array(state.adds), remove_array(state.removes),
        state.txns, state.domains, fmt=fmt, sidecar_actions=sidecar_actions, now_ms=now_ms,
        update_last_checkpoint=update_last_checkpoint)
