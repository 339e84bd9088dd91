"""A checkpoint written again under a later version when its content would be the same bytes.

A drop's barrier checkpoints follow empty commits (Checkpoint Protection RFC): the state at each
barrier version is the state at the one before - same protocol, metadata, txns, domains and file
actions - and a checkpoint file records no version of its own (PROTOCOL.md "Checkpoints": the
version is in the file name). Writing the state again would encode the same rows into the same
bytes; copying the previous files under the new names is that result for a fraction of the cost.

Only classic and multi-part checkpoints are copied: a V2 checkpoint's top-level file names its
version (``checkpointMetadata``) and its sidecars, so it is always written afresh.

A drop's last checkpoint follows the commit that lowers the protocol: its file actions are still
the previous checkpoint's. Of a multi-part checkpoint, only the part that holds the protocol,
metadata, txns and domains then changes (Spark's hash places them in one part, and each file
action in the part of its path); the others are copied (:meth:`WrittenCheckpoint.same_file_rows`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from msgspec import Struct
from msgspec.structs import replace
from delta_downgrade.log.checkpoint.classic_writer import CheckpointResult, NewCheckpointFiles
from delta_downgrade.log.format.file_names import classic_checkpoint_path, multipart_checkpoint_path
from delta_downgrade.log.format.last_checkpoint import write_last_checkpoint
from delta_downgrade.log.format.stats_struct import writes_stats_as_struct
from delta_downgrade.storage import Storage

if TYPE_CHECKING:
    from delta_downgrade.log.replay.arrow_replay import ArrowState


def same_checkpoint_rows(state: ArrowState, other: ArrowState) -> bool:
    """Whether checkpoints of the two states hold the same rows, with the same tombstones kept:
    the very same file actions (one state carried from the other over commits that changed no
    file, ``ArrowState.advanced``), and equal protocol, metadata, txns and live domains."""
    return (state.same_files(other) and state.protocol == other.protocol and state.metadata == other.metadata
            and state.txns == other.txns and state.live_domains == other.live_domains)


class WrittenCheckpoint(Struct, frozen=True):
    """What one ``checkpoint_table`` call wrote, and from what: enough to tell whether a later
    checkpoint of the same log would hold the same rows."""

    state: ArrowState
    tombstones: int          # the tombstones written (those within retention)
    layout: tuple[object, ...]  # what decides the files' layout: part size, V2 format
    result: CheckpointResult

    def same_content(self, state: ArrowState, tombstones: int, layout: tuple[object, ...]) -> bool:
        """Whether a checkpoint of ``state`` would hold exactly the rows this one holds.

        The file actions are the same objects (a state carried over commits that changed no
        file); the tombstones kept are the same set when their number is (a later cutoff only
        ever drops more of the same tombstones); protocol, metadata, txns and live domains equal."""
        return (self.result.checkpoint_kind != "v2" and layout == self.layout
                and tombstones == self.tombstones and same_checkpoint_rows(state, self.state))

    def same_file_rows(self, state: ArrowState, tombstones: int, layout: tuple[object, ...]) -> bool:
        """Whether a checkpoint of ``state`` would hold exactly this one's file-action rows,
        whatever its protocol, metadata, txns and domains: the same file actions and tombstones
        (as :meth:`same_content` tells), the same layout, and the plain ``add`` type on both sides
        (a table writing ``stats_parsed`` types its adds by its metadata). Only a multi-part
        checkpoint whose part sizes are known is offered: the writer then copies its parts that
        hold file actions only (:func:`~delta_downgrade.log.checkpoint.from_state.write_state_checkpoint`)."""
        mine = self.state
        return (self.result.checkpoint_kind == "multipart"
                and len(self.result.part_sizes) == len(self.result.paths)
                and layout == self.layout and tombstones == self.tombstones and state.same_files(mine)
                and not writes_stats_as_struct(state.metadata) and not writes_stats_as_struct(mine.metadata))


class _SourceChanged(Exception):
    """A file to copy is gone or no longer of the size it was written with."""


def _copied(storage: Storage, source: str, path: str, size: int) -> None:
    if not storage.copy_file(source, path, size):
        raise _SourceChanged(source)


def copy_checkpoint(storage: Storage, previous: CheckpointResult, version: int, *,
                    now_ms: int | None = None) -> CheckpointResult | None:
    """Write ``previous``'s files again as the checkpoint of ``version`` (each part under its
    name, atomically), then ``_last_checkpoint``. None, with nothing written, when the previous
    files are no longer the bytes that were written (another writer replaced them, cleanup
    removed them): the caller then writes the checkpoint from the state."""
    parts = previous.parts
    targets = ([classic_checkpoint_path(version)] if parts is None else
               [multipart_checkpoint_path(version, i, parts) for i in range(1, parts + 1)])
    sizes = (previous.size_in_bytes,) if parts is None else previous.part_sizes
    if len(sizes) != len(targets):
        return None  # a multi-part result that does not know its parts' sizes: written afresh
    try:
        # a part that is no longer of its size takes the ones copied before it along
        with NewCheckpointFiles(storage) as new:
            for source, path, size in zip(previous.paths, targets, sizes):
                new.publish(path, lambda: _copied(storage, source, path, size))  # noqa: B023 - called at once
    except _SourceChanged:
        return None
    created_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
    result = replace(previous, version=version, paths=tuple(targets), created_ms=created_ms,
                     last_checkpoint_updated=False)
    return replace(result, last_checkpoint_updated=write_last_checkpoint(storage, result.last_checkpoint_info()))
