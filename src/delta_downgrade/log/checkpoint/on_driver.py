"""Checkpoint a table at a version: reconcile its state, ask the writer rules, write the files.

The rules are decided in :mod:`delta_downgrade.protocol`: Checkpoint Protection rule (b) (no
checkpoint before the boundary unless this package supports *that version's* protocol) by
:func:`~delta_downgrade.protocol.checkpoint_protection.rule_b`, and the package's own stricter
demand (never a checkpoint of a protocol it cannot fully read and write, at any version) by the
``Operation.CHECKPOINT`` gate. This module finds the version, its protocol and the boundary,
and which kind of checkpoint the version gets (:func:`uses_v2_checkpoint`): a UUID-named V2
checkpoint (:mod:`~delta_downgrade.log.checkpoint.v2_writer`) under ``delta.checkpointPolicy=v2``,
else a classic one (:mod:`~delta_downgrade.log.checkpoint.classic_writer`).
"""

from __future__ import annotations

import logging

from delta_downgrade.protocol.actions import AddCDCFile, AddFile, Metadata, ProtocolAction, RemoveFile
from delta_downgrade.clock import SYSTEM_CLOCK, Clock
from delta_downgrade.errors import CorruptLogError, DeltaDowngradeError, UnsupportedFeaturesError
from delta_downgrade.log.replay.arrow_replay import ArrowState
from delta_downgrade.log.checkpoint.copy_forward import WrittenCheckpoint, copy_checkpoint
from delta_downgrade.log.checkpoint.classic_writer import V2_CHECKPOINT_FEATURE, CheckpointResult
from delta_downgrade.log.delta_log import DeltaLog, Refresh, check_protocol
from delta_downgrade.log.checkpoint.from_state import classic_part_count, write_state_checkpoint
from delta_downgrade.log.checkpoint.prepared import PreparedCheckpoint
from delta_downgrade.log.checkpoint.v2_writer import DEFAULT_V2_FORMAT
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY, Snapshot
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from delta_downgrade.protocol.checkpoint_protection import rule_b
from delta_downgrade.protocol.support import Operation, ensure_supported
from delta_downgrade.protocol.table_config import TableConfig

_log = logging.getLogger(__name__)


def _boundary(protocol: Protocol, metadata: Metadata) -> int | None:
    """V of a version with this protocol and metadata (see :func:`current_boundary`)."""
    if CHECKPOINT_PROTECTION not in protocol.features:
        return None
    value = metadata.configuration.get(BOUNDARY_PROPERTY)
    return int(value) if value not in (None, "") else None


def current_boundary(log: DeltaLog, latest: Snapshot | None = None) -> int | None:
    """V of the latest table: only meaningful while checkpointProtection is in the protocol.
    ``latest``: the caller's snapshot of the latest version, if it has one (saves a log scan)."""
    if latest is None:
        latest = log.snapshot(check_read=False)
    if CHECKPOINT_PROTECTION not in latest.protocol.features:
        return None
    return latest.boundary_version


def uses_v2_checkpoint(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether a checkpoint of a version with this protocol and metadata is a UUID-named V2
    checkpoint: ``delta.checkpointPolicy=v2`` and the protocol supports ``v2Checkpoint``.

    PROTOCOL.md "V2 Checkpoint Table Feature": a table with the feature "could use uuid-named V2
    spec Checkpoints" or classic ones; the policy says which (delta-spark's
    ``getV2CheckpointFormatOpt``: V2 when the policy needs V2 support). UUID-named checkpoints
    "should only be created by clients if the v2 checkpoint table feature is enabled", so a v2
    policy without the feature gets a classic checkpoint. Raises
    :class:`~delta_downgrade.errors.InvalidTablePropertyError` for a policy that is neither."""
    policy = TableConfig(metadata.configuration).checkpoint_policy
    return policy == "v2" and V2_CHECKPOINT_FEATURE in protocol.features


def check_checkpoint_writable(version: int, protocol: Protocol, metadata: Metadata,
                              boundary: int | None) -> None:
    """Raise unless this package may write a checkpoint of ``version`` with this protocol and
    metadata: rule (b), the checkpoint gate, and a checkpoint policy it can read (which decides
    between a classic and a V2 checkpoint, :func:`uses_v2_checkpoint`). No I/O, so that an
    operation can ask before its first write whether the checkpoints it plans can be written (a
    plan that cannot finish is refused up front)."""
    allowed = rule_b(version, protocol, boundary=boundary)
    if not allowed.allowed:
        raise UnsupportedFeaturesError(f"{allowed.reason}; no checkpoint was written",
                                       features=allowed.features, for_write=True)
    ensure_supported(protocol, Operation.CHECKPOINT, version=version)
    uses_v2_checkpoint(protocol, metadata)


def _refuse_unwritable(log: DeltaLog, version: int, protocol_action: ProtocolAction,
                       metadata: Metadata) -> None:
    """Raise unless this package may write a checkpoint of ``version`` with this protocol and
    metadata (rule (b), features, a readable checkpoint policy)."""
    protocol = protocol_action.protocol
    if version == log.latest_version():
        boundary = _boundary(protocol, metadata)
    else:
        boundary = current_boundary(log)
    check_checkpoint_writable(version, protocol, metadata, boundary)


def _carried_state(log: DeltaLog, version: int | None) -> ArrowState:
    """The Arrow state of ``version`` from the log's snapshot (carried forward from a cached
    snapshot over commits that changed no file, :meth:`Snapshot.arrow_state`), with the errors
    of the snapshot: an unreadable checkpoint is skipped for an older one when
    ``DeltaLog.snapshot`` skips it, and a broken log is refused for its protocol first when the
    protocol says so."""
    snapshot = log.snapshot(version, check_read=False)
    try:
        return snapshot.arrow_state()
    except CorruptLogError:
        _refuse_unwritable(log, snapshot.version, snapshot.protocol_action, snapshot.metadata)
        raise


def checkpoint_table(log: DeltaLog, version: int | None = None, *, clock: Clock = SYSTEM_CLOCK,
                     part_size: int | None = None, v2_format: str = DEFAULT_V2_FORMAT) -> CheckpointResult:
    """Write the checkpoint of ``version`` (latest by default): a UUID-named V2 checkpoint with
    sidecars when :func:`uses_v2_checkpoint` says so (``v2_format``: its top-level file, parquet
    or json; ``part_size``: file actions per sidecar), else a classic (or multi-part) one.

    The state comes from the Arrow replay (:mod:`delta_downgrade.log.replay.arrow_replay`); it is checked
    (protocol valid, rule (b), features, policy) before anything is written."""
    log.refresh(Refresh.NEW_COMMITS)
    state = _carried_state(log, version)
    check_protocol(state.protocol.protocol, log.table, state.version, check_read=False)
    _refuse_unwritable(log, state.version, state.protocol, state.metadata)
    cutoff = TableConfig(state.metadata.configuration).tombstone_cutoff_ms(clock.now_ms())
    num_tombstones = state.num_tombstones_after(cutoff)
    layout = (part_size, v2_format)
    previous = log.written_checkpoint
    result = None
    prepared = log.prepared_checkpoint
    if prepared is not None and prepared.version == state.version:
        log.prepared_checkpoint = None
        if prepared.matches(state, num_tombstones, layout):
            result = prepared.publish(clock.now_ms())
        else:
            prepared.discard()
    if result is None and previous is not None and previous.same_content(state, num_tombstones, layout):
        result = copy_checkpoint(log.storage, previous.result, state.version, now_ms=clock.now_ms())
    if result is None:
        same_rows = (previous.result if previous is not None
                     and previous.same_file_rows(state, num_tombstones, layout) else None)
        result = write_state_checkpoint(log.storage, state, cutoff,
                                        v2=uses_v2_checkpoint(state.protocol.protocol, state.metadata),
                                        part_size=part_size, v2_format=v2_format, now_ms=clock.now_ms(),
                                        same_file_rows=same_rows)
    log.written_checkpoint = WrittenCheckpoint(state, num_tombstones, layout, result)
    log.note_written(result.checkpoint_files)
    return result


def prepare_checkpoint(log: DeltaLog, expected: Snapshot, *, clock: Clock = SYSTEM_CLOCK,
                       part_size: int | None = None, v2_format: str = DEFAULT_V2_FORMAT) -> PreparedCheckpoint | None:
    """Begin encoding the checkpoint :func:`checkpoint_table` will write at ``expected.version``
    (not committed yet: ``expected`` is the table after the commits the caller is about to
    write, given by value, :meth:`Snapshot.with_commits`), in a thread, unpublished
    (:mod:`~delta_downgrade.log.checkpoint.prepared`); it is held by the log until
    :func:`checkpoint_table` is asked for that version, or :func:`discard_prepared_checkpoint`.

    Only where it saves a whole encode and costs the caller nothing more:
    - the expected commits hold no file action, so the state is carried from the latest
      snapshot's (the caller is about to checkpoint that one, or has: no further replay);
    - the checkpoint would be classic or multi-part (not V2), and not a copy of the log's last
      written one;
    - it may be written (rule (b), the checkpoint gate);
    - a multi-part one only once a checkpoint of the same file actions is written, whose parts
      of file actions it copies (encoding them again would double the work).

    None otherwise, with nothing started."""
    if log.prepared_checkpoint is not None:
        return None
    if any(isinstance(a, (AddFile, RemoveFile, AddCDCFile)) for actions in expected.derived_commits for a in actions):
        return None
    try:
        state = expected.arrow_state()
        protocol = state.protocol.protocol
        check_checkpoint_writable(state.version, protocol, state.metadata, _boundary(protocol, state.metadata))
        if uses_v2_checkpoint(protocol, state.metadata):
            return None  # its top-level file names its version and sidecars: written at the time
    except DeltaDowngradeError:
        return None  # the checkpoint itself meets the error, if its version gets there
    cutoff = TableConfig(state.metadata.configuration).tombstone_cutoff_ms(clock.now_ms())
    tombstones = state.num_tombstones_after(cutoff)
    layout = (part_size, v2_format)
    previous = log.written_checkpoint
    same_rows = None
    if previous is not None and state.same_files(previous.state):
        if previous.same_content(state, tombstones, layout):
            return None  # copied forward, not encoded
        same_rows = previous.result if previous.same_file_rows(state, tombstones, layout) else None
    elif classic_part_count(state, tombstones, part_size) > 1:
        return None
    prepared = PreparedCheckpoint(log.storage, state, cutoff, tombstones, layout, part_size=part_size,
                                  v2_format=v2_format, now_ms=clock.now_ms(), same_file_rows=same_rows)
    log.prepared_checkpoint = prepared
    return prepared


def discard_prepared_checkpoint(log: DeltaLog) -> None:
    """Discard the log's prepared checkpoint, if one is held (its version was not reached, or
    another engine wrote it): its files are never published."""
    prepared, log.prepared_checkpoint = log.prepared_checkpoint, None
    if prepared is not None:
        prepared.discard()
