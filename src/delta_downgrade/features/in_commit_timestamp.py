"""inCommitTimestamp (PROTOCOL.md "In-Commit Timestamps"): disable it and remove its enablement
provenance (delta-spark's ``InCommitTimestampsPreDowngradeCommand``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_downgrade.features.base import RemovableFeature, TraceContext, commit_properties
from delta_downgrade.log.snapshot import Snapshot

if TYPE_CHECKING:  # imported where a run is built: a trace check needs no commit machinery
    from delta_downgrade.drop.run import DropRun

ENABLE_PROPERTY = "delta.enableInCommitTimestamps"
# Where and when the feature was enabled: removed, not just disabled.
PROVENANCE_PROPERTIES = ("delta.inCommitTimestampEnablementVersion",
                         "delta.inCommitTimestampEnablementTimestamp")


class InCommitTimestamp(RemovableFeature):
    name = "inCommitTimestamp"

    def property_updates(self, snapshot: Snapshot) -> dict[str, str | None]:
        conf = snapshot.metadata.configuration
        updates: dict[str, str | None] = {k: None for k in PROVENANCE_PROPERTIES if k in conf}
        if conf.get(ENABLE_PROPERTY, "").lower() == "true":
            updates[ENABLE_PROPERTY] = "false"
        return updates

    def remove_traces(self, run: DropRun) -> bool:
        snapshot = run.latest()
        updates = self.property_updates(snapshot)
        if not updates:
            return False
        commit_properties(run, snapshot, updates, "UNSET TBLPROPERTIES")
        return True

    def traces(self, ctx: TraceContext) -> list[str]:
        out = []
        if ctx.prop_true(ENABLE_PROPERTY):
            out.append(f"{ENABLE_PROPERTY}=true")
        for key in PROVENANCE_PROPERTIES:
            if key in ctx.configuration:
                out.append(f"{key} is set")
        return out


IN_COMMIT_TIMESTAMP = InCommitTimestamp()
