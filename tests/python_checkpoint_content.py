"""The content of a checkpoint from the Python view of the replay (:meth:`Snapshot.state`): the
second way to the same checkpoint, against which the tests compare what ``checkpoint_table`` writes
from the replay's Arrow columns."""

from __future__ import annotations

from delta_downgrade.log.checkpoint.classic_writer import CheckpointContent
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol.table_config import TableConfig


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
