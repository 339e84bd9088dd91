"""The classic-named copy of a UUID-named V2 checkpoint, for clients that know no V2 checkpoint
(PROTOCOL.md "Handling Backward compatibility while moving to UUID-named v2 Checkpoints").

"Writers should occasionally create a v2 Classic Checkpoint to maintain compatibility with older
clients which do not support v2 checkpoint table feature and so do not recognize UUID-named
checkpoints. These classic checkpoints have the same content as the UUID-named v2 checkpoint, but
older clients will recognize the classic file name, allowing them to extract Protocol and fail
gracefully." Metadata cleanup is when it matters: once the history before a UUID-named checkpoint
is deleted, an older client that finds no commit 0 and no checkpoint it can name cannot even read
the protocol that would tell it why (:mod:`delta_downgrade.operations.cleanup` decides when).

The copy is ``n.checkpoint.parquet`` holding the rows of the top-level file of the V2 checkpoint
at ``n`` - its ``checkpointMetadata``, its ``sidecar`` actions (which name sidecars relative to
``_delta_log/_sidecars`` whatever the top-level file is called, PROTOCOL.md "Sidecar File
Information"), protocol, metaData, txns, domains, and its add and remove actions when it embeds
them: a classic checkpoint following the V2 spec (PROTOCOL.md "Classic checkpoint", "V2 Spec"),
the sidecars shared with the UUID-named one. A parquet top-level file is copied byte for byte; a
JSON one is written as parquet with the V2 checkpoint schema (a classic checkpoint is parquet).
``_last_checkpoint`` is left alone: it names the UUID-named checkpoint, the one V2 readers prefer.

The copy is written atomically (readers see no file or the whole one); "if two checkpoint
writers race to create the same classic checkpoint, the latest writer wins", as both hold the
same rows.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from delta_downgrade.errors import CheckpointUnreadableError
from delta_downgrade.log.checkpoint.classic_writer import BATCH_ROWS, checkpoint_parquet_bytes
from delta_downgrade.log.format.checkpoint_columns import (BUILDERS, action_batch, checkpoint_metadata_array,
                                                           metadata_array, protocol_array)
from delta_downgrade.log.format.checkpoint_schema import V2_CHECKPOINT_SCHEMA
from delta_downgrade.log.format.file_names import classic_checkpoint_path
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.protocol.actions import parse_commit
from delta_downgrade.storage import Storage

__all__ = ["classic_copy_bytes", "classic_copy_path", "write_classic_copy"]

#: The order of the rows, as the top-level file of a V2 checkpoint has them (its JSON form).
_ORDER = ("checkpointMetadata", "sidecar", "protocol", "metaData", "txn", "domainMetadata", "add", "remove")
_SINGLE: dict[str, Callable[[Any], pa.StructArray]] = {
    "checkpointMetadata": checkpoint_metadata_array, "protocol": protocol_array, "metaData": metadata_array}


def classic_copy_path(v2: CheckpointInstance) -> str:
    """Where the copy of ``v2`` goes: the classic name of its version."""
    return classic_checkpoint_path(v2.version)


def _json_top_level_as_parquet(data: bytes, source: str) -> bytes:
    try:
        actions = parse_commit(data)
    except ValueError as exc:
        raise CheckpointUnreadableError(f"cannot parse V2 checkpoint {source}: {exc}") from exc
    by_key: dict[str, list[Any]] = {key: [] for key in _ORDER}
    for action in actions:
        key = getattr(action, "KEY", None)
        if key in by_key:
            by_key[key].append(action)
    if len(by_key["checkpointMetadata"]) != 1 or len(by_key["protocol"]) != 1 or len(by_key["metaData"]) != 1:
        raise CheckpointUnreadableError(
            f"V2 checkpoint {source} does not hold exactly one checkpointMetadata, protocol and metaData "
            f"action (PROTOCOL.md 'V2 Spec'); no classic copy is made of it")

    def batches() -> Iterator[pa.RecordBatch]:
        for key in _ORDER:
            values: Sequence[Any] = by_key[key]
            if key in _SINGLE:
                yield action_batch(key, _SINGLE[key](values[0]), V2_CHECKPOINT_SCHEMA)
                continue
            for start in range(0, len(values), BATCH_ROWS):
                yield action_batch(key, BUILDERS[key](values[start:start + BATCH_ROWS]), V2_CHECKPOINT_SCHEMA)

    return checkpoint_parquet_bytes(batches(), V2_CHECKPOINT_SCHEMA)


def classic_copy_bytes(storage: Storage, v2: CheckpointInstance) -> bytes:
    """The bytes of the classic copy of the UUID-named checkpoint ``v2`` (module docstring)."""
    if v2.kind != "v2" or len(v2.files) != 1:
        raise ValueError(f"a classic copy is made of a UUID-named V2 checkpoint, not {v2.paths}")
    top = v2.files[0].path
    data = storage.read_bytes(top)
    if top.endswith(".json"):
        return _json_top_level_as_parquet(data, top)
    return data


def write_classic_copy(storage: Storage, v2: CheckpointInstance) -> str:
    """Write the classic copy of ``v2`` (atomically) and return its path."""
    path = classic_copy_path(v2)
    storage.write_atomic(path, classic_copy_bytes(storage, v2))
    return path
