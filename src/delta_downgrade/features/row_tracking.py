"""rowTracking (PROTOCOL.md "Row Tracking"): disable and suspend, then recommit the files without
row IDs ("unbackfill"); the downgrade commit removes the feature's properties and its
``delta.rowTracking`` domain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_downgrade.features.base import RemovableFeature, TraceContext, commit_properties
from delta_downgrade.log.replay.file_summary import live_files_with
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol.actions import AnyAction, DomainMetadata

if TYPE_CHECKING:  # imported where a run is built: a trace check needs no commit machinery
    from delta_downgrade.drop.run import DropRun

ENABLE_PROPERTY = "delta.enableRowTracking"
SUSPENDED_PROPERTY = "delta.rowTrackingSuspended"
DOMAIN = "delta.rowTracking"
# The fields of ``add`` that carry row tracking (PROTOCOL.md "Row Tracking").
_ROW_ID_FIELDS = ("baseRowId", "defaultRowCommitVersion")


class RowTracking(RemovableFeature):
    name = "rowTracking"

    def remove_traces(self, run: DropRun) -> bool:
        from msgspec.structs import replace

        snapshot = run.latest()
        conf = snapshot.metadata.configuration
        performed = False
        if conf.get(ENABLE_PROPERTY, "").lower() == "true" or conf.get(SUSPENDED_PROPERTY, "").lower() != "true":
            updates: dict[str, str | None] = {ENABLE_PROPERTY: "false", SUSPENDED_PROPERTY: "true"}
            commit_properties(run, snapshot, updates, "SET TBLPROPERTIES")
            performed = True
        snapshot = run.latest()
        if live_files_with(snapshot.arrow_state(), *_ROW_ID_FIELDS):
            files = [f for f in snapshot.state().files.values()
                     if f.baseRowId is not None or f.defaultRowCommitVersion is not None]
            run.commit([replace(f, baseRowId=None, defaultRowCommitVersion=None, dataChange=False)
                        for f in files], "ROW TRACKING UNBACKFILL", {"numFiles": len(files)},
                       read_version=snapshot.version)
            performed = True
        return performed

    def traces(self, ctx: TraceContext) -> list[str]:
        out = []
        if ctx.prop_true(ENABLE_PROPERTY):
            out.append(f"{ENABLE_PROPERTY}=true")
        if not ctx.prop_true(SUSPENDED_PROPERTY):
            out.append(f"{SUSPENDED_PROPERTY} is not true")
        with_ids = live_files_with(ctx.arrow, *_ROW_ID_FIELDS)
        if with_ids:
            out.append(f"{with_ids} live file(s) carry baseRowId/defaultRowCommitVersion")
        return out

    def properties_to_remove(self) -> tuple[str, ...]:
        # Every property of the feature (its registry entry): enablement, suspension and the
        # names of the materialized row-id and row-commit-version columns.
        return self.spec.properties

    def actions_at_downgrade(self, snapshot: Snapshot) -> list[AnyAction]:
        domain = next((d for d in snapshot.arrow_state().domains if d.domain == DOMAIN), None)
        return [DomainMetadata(domain=DOMAIN,
                               configuration=domain.configuration if domain else "{}", removed=True)]


ROW_TRACKING = RowTracking()
