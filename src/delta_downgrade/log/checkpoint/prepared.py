"""A checkpoint encoded before its version is committed, published only once that version holds
the very state it was encoded from.

A fast drop knows, as soon as its first barrier checkpoint is written, what its last checkpoint
will hold: the barriers and the downgrade commit change no file action, so the file actions are
the first barrier's, and the protocol and metadata are those the downgrade commit will carry.
Encoding that checkpoint is the largest cost of a drop after the first checkpoint. Arrow's
Parquet encoder releases the GIL, so it runs in a thread of its own while the main thread writes
the barrier commits and copies their checkpoints, which is mostly waiting on the disk or the store.

Nothing is published early. PROTOCOL.md "Checkpoints": a checkpoint holds the state of its version,
and before the commit lands another writer may take that version with other actions. So the files
are written under temporary names (:meth:`Storage.atomic_file`, which removes them when the block
raises) and held there. :func:`~delta_downgrade.log.checkpoint.on_driver.checkpoint_table` decides
when it is asked for that version:
- if the state read from the log has the same rows (:func:`same_checkpoint_rows`, the rule by which a
  checkpoint is copied forward), the files are published;
- otherwise they are discarded, and the checkpoint is written from the state as always.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from msgspec.structs import replace
from delta_downgrade.log.checkpoint.classic_writer import CheckpointResult
from delta_downgrade.log.checkpoint.copy_forward import same_checkpoint_rows
from delta_downgrade.log.checkpoint.from_state import write_state_checkpoint
from delta_downgrade.storage import Storage

if TYPE_CHECKING:
    from delta_downgrade.log.replay.arrow_replay import ArrowState

_log = logging.getLogger(__name__)


class _Discarded(Exception):
    """Raised at the gate of a prepared checkpoint that is not to be published."""


class PreparedCheckpoint:
    """The checkpoint of ``state`` (of a version not committed yet), encoded in a thread and held
    unpublished until :meth:`publish` or :meth:`discard`; exactly one of them must be called
    (``DeltaLog.prepared_checkpoint`` holds it until then)."""

    def __init__(self, storage: Storage, state: ArrowState, cutoff_ms: int, tombstones: int,
                 layout: tuple[object, ...], *, part_size: int | None, v2_format: str, now_ms: int,
                 same_file_rows: CheckpointResult | None) -> None:
        self.version = state.version
        self.state = state
        self.tombstones = tombstones
        self.layout = layout
        self._verdict = threading.Event()
        self._publish = False
        self._gate_reached = False
        self._result: CheckpointResult | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._write, name=f"prepared-checkpoint-v{state.version}", daemon=True,
            args=(storage, state, cutoff_ms, part_size, v2_format, now_ms, same_file_rows))
        self._thread.start()

    def _write(self, storage: Storage, state: ArrowState, cutoff_ms: int, part_size: int | None,
               v2_format: str, now_ms: int, same_file_rows: CheckpointResult | None) -> None:
        try:
            self._result = write_state_checkpoint(storage, state, cutoff_ms, v2=False, part_size=part_size,
                                                  v2_format=v2_format, now_ms=now_ms,
                                                  same_file_rows=same_file_rows, gate=self._gate)
        except _Discarded:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that decides
            self._error = exc

    def _gate(self) -> None:
        """Called by the writer with every file encoded and none published: waits for the verdict."""
        self._gate_reached = True
        self._verdict.wait()
        if not self._publish:
            raise _Discarded()

    def matches(self, state: ArrowState, tombstones: int, layout: tuple[object, ...]) -> bool:
        """Whether a checkpoint of ``state`` (read from the log at this version) holds exactly
        the rows prepared: the same file actions and tombstones, protocol, metadata, txns and
        domains, in the same layout."""
        return (state.version == self.version and layout == self.layout and tombstones == self.tombstones
                and same_checkpoint_rows(state, self.state))

    def publish(self, created_ms: int) -> CheckpointResult | None:
        """Publish the files (and ``_last_checkpoint``), once the encode has finished. None, with
        nothing published, when the encode failed before it reached the gate: the caller then
        writes the checkpoint itself (and meets the failure, if it lasts, as its own). A failure
        while publishing is raised, as the writer raises it."""
        self._publish = True
        self._verdict.set()
        self._thread.join()
        if self._error is not None:
            if not self._gate_reached:
                _log.info("the prepared checkpoint of v%s failed (%s); writing it afresh", self.version, self._error)
                return None
            raise self._error
        assert self._result is not None
        return replace(self._result, created_ms=created_ms)

    def discard(self) -> None:
        """Remove the unpublished files (after the encode has finished: the writer removes them
        as it leaves)."""
        self._publish = False
        self._verdict.set()
        self._thread.join()
        if self._error is not None:
            _log.debug("the discarded checkpoint of v%s had failed: %s", self.version, self._error)


__all__ = ["PreparedCheckpoint"]
