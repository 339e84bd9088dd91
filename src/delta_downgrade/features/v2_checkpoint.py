"""v2Checkpoint (PROTOCOL.md "V2 Checkpoint Table Feature"): set ``delta.checkpointPolicy=classic``
so that later checkpoints are classic (delta-spark's ``V2CheckpointPreDowngradeCommand``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_downgrade.features.base import RemovableFeature, TraceContext, commit_properties
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol.actions import AnyAction, CheckpointMetadata, Metadata, Sidecar
from delta_downgrade.protocol.table_config import TableConfig

if TYPE_CHECKING:  # imported where a run is built: a trace check needs no commit machinery
    from delta_downgrade.drop.run import DropRun

POLICY_PROPERTY = "delta.checkpointPolicy"


class V2Checkpoint(RemovableFeature):
    name = "v2Checkpoint"

    def property_updates(self, snapshot: Snapshot) -> dict[str, str | None]:
        policy = TableConfig(snapshot.metadata.configuration).checkpoint_policy
        checkpoint = snapshot.segment.checkpoint
        if policy == "v2" or (checkpoint is not None and checkpoint.kind == "v2"):
            return {POLICY_PROPERTY: "classic"}
        return {}

    def remove_traces(self, run: DropRun) -> bool:
        snapshot = run.latest()
        updates = self.property_updates(snapshot)
        if updates:
            commit_properties(run, snapshot, updates, "SET TBLPROPERTIES")
            # The current checkpoint must be classic too; the barriers provide it on the fast
            # path, the legacy path checkpoints right after its empty commit.
            return True
        return False

    def traces(self, ctx: TraceContext) -> list[str]:
        out = []
        policy = ctx.configuration.get(POLICY_PROPERTY)
        if policy and policy.lower() == "v2":
            out.append(f"{POLICY_PROPERTY}=v2")
        checkpoint = ctx.snapshot.segment.checkpoint
        if checkpoint is not None and checkpoint.kind == "v2":
            out.append(f"the current checkpoint (version {checkpoint.version}) is a v2 checkpoint")
        return out

    def action_uses_feature(self, action: AnyAction) -> bool:
        if isinstance(action, Metadata):
            return action.configuration.get(POLICY_PROPERTY, "").lower() == "v2"
        return isinstance(action, (CheckpointMetadata, Sidecar))

    def checkpoint_uses_feature(self, checkpoint: CheckpointInstance | None) -> bool:
        # A v2 checkpoint's checkpointMetadata and sidecars are not part of the replayed state.
        return checkpoint is not None and checkpoint.kind == "v2"


V2_CHECKPOINT = V2Checkpoint()
