"""Checkpoint a table at a version: reconcile its state, apply the writer rules, write the files.

Checkpoint Protection rule (b) lives here: no checkpoint at a version below the boundary unless
this package supports every feature of *that version's* protocol. The package is stricter still:
it never writes a checkpoint for a protocol it cannot fully read and write, at any version, since
a checkpoint that silently drops what an unknown feature means corrupts the table for everyone.
"""

from __future__ import annotations

from delta_downgrade.clock import SYSTEM_CLOCK, Clock
from delta_downgrade.errors import BadInputError, UnsupportedFeaturesError
from delta_downgrade.log.checkpoint_writer import CheckpointContent, CheckpointResult, write_checkpoint
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol import CHECKPOINT_PROTECTION
from delta_downgrade.table_config import TableConfig


def rule_b_allows_checkpoint(snapshot: Snapshot, boundary_version: int | None) -> bool:
    """RFC Checkpoint Protection, writer rule (b)."""
    if boundary_version is None or snapshot.version >= boundary_version:
        return True
    protocol = snapshot.protocol
    return not (protocol.unsupported_for_read() or protocol.unsupported_for_write())


def current_boundary(log: DeltaLog, latest: Snapshot | None = None) -> int | None:
    """V of the latest table: only meaningful while checkpointProtection is in the protocol.
    ``latest``: the caller's snapshot of the latest version, if it has one (saves a log scan)."""
    if latest is None:
        latest = log.snapshot(check_read=False)
    if CHECKPOINT_PROTECTION not in latest.protocol.features:
        return None
    return latest.boundary_version


def checkpoint_content(snapshot: Snapshot, now_ms: int) -> CheckpointContent:
    """The reconciled state at ``snapshot.version``; tombstones older than
    ``delta.deletedFileRetentionDuration`` are left out (PROTOCOL.md "Checkpoints")."""
    state = snapshot.state()
    retention = TableConfig(snapshot.metadata.configuration).deleted_file_retention_ms
    cutoff = now_ms - retention
    removes = [r for r in state.tombstones.values()
               if r.deletionTimestamp is None or r.deletionTimestamp > cutoff]
    return CheckpointContent(
        protocol=state.protocol_action, metadata=state.metadata,
        adds=list(state.files.values()), removes=removes,
        txns=list(state.txns.values()), domains=list(state.live_domains.values()))


def checkpoint_table(log: DeltaLog, version: int | None = None, *, clock: Clock = SYSTEM_CLOCK,
                     part_size: int | None = None) -> CheckpointResult:
    """Write a classic (or multi-part) checkpoint at ``version`` (latest by default)."""
    log.refresh()
    snapshot = log.snapshot(version, check_read=False)
    protocol = snapshot.protocol
    boundary = current_boundary(log, snapshot if snapshot.version == log.latest_version() else None)
    if not rule_b_allows_checkpoint(snapshot, boundary):
        raise UnsupportedFeaturesError(
            f"checkpoint protection rule (b): version {snapshot.version} is below the boundary "
            f"{boundary} and its protocol {protocol} has features this package does not support; "
            f"no checkpoint was written", features=protocol.unsupported_for_read() | protocol.unsupported_for_write(),
            for_write=True, table=log.table)
    unsupported = protocol.unsupported_for_read() | protocol.unsupported_for_write()
    if unsupported:
        raise UnsupportedFeaturesError(
            f"version {snapshot.version} has protocol {protocol} with features this package cannot "
            f"write a checkpoint for; no checkpoint was written", features=unsupported,
            for_write=True, table=log.table)
    if TableConfig(snapshot.metadata.configuration).checkpoint_policy == "v2":
        raise BadInputError(
            f"version {snapshot.version} has delta.checkpointPolicy=v2; delta-downgrade writes classic "
            f"checkpoints only. Drop the v2Checkpoint feature (which sets the policy to classic) first",
            table=log.table, error_class="DELTA_DOWNGRADE_V2_CHECKPOINT_POLICY")
    content = checkpoint_content(snapshot, clock.now_ms())
    result = write_checkpoint(log.storage, snapshot.version, content, part_size=part_size, now_ms=clock.now_ms())
    log.refresh()
    return result
