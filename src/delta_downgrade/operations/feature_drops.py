"""Per-feature DROP FEATURE behaviour: delta-spark's ``RemovableFeature`` contract
(``preDowngradeCommand``, ``validateDropInvariants``, ``actionUsesFeature``) as one small class
per feature.

- ``remove_traces`` — the pre-downgrade: first disable the feature (so concurrent writers cannot
  add traces), then clean up; returns whether it changed anything ("performedChanges").
- ``traces`` — what is left in the latest state (empty = ``validateDropInvariants`` holds).
- ``properties_to_remove`` / ``actions_at_downgrade`` — applied in the downgrade commit itself.
- ``action_uses_feature`` — the history scan of the TRUNCATE HISTORY path (never protocol actions).
"""

from __future__ import annotations

import json
from typing import Callable
from urllib.parse import quote

from delta_downgrade.protocol.actions import (
    AddCDCFile, AddFile, AnyAction, CheckpointMetadata, DomainMetadata, Metadata, RemoveFile, Sidecar,
)
from delta_downgrade.errors import (
    CheckConstraintsPresentError, GeospatialColumnsPresentError, NotSupportedYetError,
    UnsupportedClientFeatureError,
)
from delta_downgrade.log.commit import rebase_over_blind_appends
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY, Snapshot
from delta_downgrade.operations.drop_run import DropRun
from delta_downgrade.operations.traces import TraceContext, constraint_names, feature_traces
from delta_downgrade.protocol.schema import TYPE_CHANGES_KEY, iter_fields, type_change_fields
from delta_downgrade.protocol.table_config import TableConfig


class FeatureDrop:
    """Default behaviour: no traces, nothing to clean, nothing used in history."""

    feature: str = ""

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        """Every refusal this feature's drop can meet, checked before the drop's first write (a
        plan that cannot finish is refused up front, and ``--dry-run`` says the same)."""

    def property_updates(self, snapshot: Snapshot) -> dict[str, str | None]:
        """The table properties the pre-downgrade will set (None: unset), so that the plan's
        checks see the configuration the later steps (checkpoints) will run under."""
        return {}

    def remove_traces(self, run: DropRun) -> bool:
        return False

    def traces(self, snapshot: Snapshot) -> list[str]:
        return feature_traces(self.feature, TraceContext(snapshot))

    def properties_to_remove(self) -> tuple[str, ...]:
        return ()

    def actions_at_downgrade(self, snapshot: Snapshot) -> list[AnyAction]:
        return []

    def action_uses_feature(self, action: AnyAction) -> bool:
        return False


def require_hook(run: DropRun, name: str, why: str) -> Callable[[DropRun], bool]:
    """The data-rewrite step ``name``, or a clear refusal before anything is written."""
    hook = run.hooks.get(name)
    if hook is not None:
        return hook
    try:
        import pyspark  # noqa: F401
        reason = "this installation has no Spark rewrite for it"
    except ImportError:
        reason = ("PySpark is not installed: on Databricks it comes with the runtime; locally install "
                  "delta-downgrade[local] (pyspark 4.2)")
    raise NotSupportedYetError(
        f"dropping {run.feature} needs a Spark data rewrite ({why}), but {reason}. Nothing was written",
        table=run.table, feature=run.feature)


def commit_properties(run: DropRun, snapshot: Snapshot, updates: dict[str, str | None],
                      operation: str, *, allow_deletion_vectors: bool = True) -> int:
    """One metadata-only commit of ``updates`` (None unsets a key) on top of ``snapshot``.

    It depends only on the metadata it read, so blind appends that land first do not change what
    it means: it is retried on top of them (``rebase_over_blind_appends``); anything else, and
    unless ``allow_deletion_vectors`` a winner writing deletion vectors, is a real conflict.
    Parameters as Delta records them: UNSET lists the keys, SET the key/value map."""
    actions = [snapshot.metadata.with_configuration(updates)]
    keys: object = sorted(updates) if operation.startswith("UNSET") else updates
    return run.commit(actions, operation, {"properties": keys}, read_version=snapshot.version,
                      resolve=rebase_over_blind_appends(actions, operation=operation,
                                                        allow_deletion_vectors=allow_deletion_vectors))


def rehearse(run: DropRun, hook: Callable[[DropRun], bool]) -> None:
    """Run a data-rewrite hook as a dry run of the same table before the drop's first write.
    Every rewrite checks what can stop it (unreadable DVs, unsupported tables, invalid column
    names, unreadable footers …) before its dry-run plan, so a refusal surfaces here, with nothing
    written, instead of after the drop's first commits."""
    hook(DropRun(run.log, run.feature, clock=run.clock, dry_run=True, hooks=run.hooks))


class DeletionVectorsDrop(FeatureDrop):
    """Disable, purge every file that has a DV, add DV tombstones (delta-spark's
    ``DeletionVectorsPreDowngradeCommand``)."""

    feature = "deletionVectors"

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        with_dv = [f for f in snapshot.state().files.values() if f.dv is not None]
        if not with_dv:
            return
        # The purge must be able to run before anything is written, so a refusal leaves no trace:
        # its dry run verifies every DV (deleted rows never return) and its own refusals.
        rehearse(run, require_hook(run, "purge_deletion_vectors",
                                   f"{len(with_dv)} live file(s) carry deletion vectors"))

    def property_updates(self, snapshot: Snapshot) -> dict[str, str | None]:
        if TraceContext(snapshot).prop_true("delta.enableDeletionVectors"):
            return {"delta.enableDeletionVectors": None}
        return {}

    def remove_traces(self, run: DropRun) -> bool:
        snapshot = run.latest()
        performed = False
        updates = self.property_updates(snapshot)
        if updates:
            # Blind appends that write DVs would bring the feature's traces back: no rebase over those.
            commit_properties(run, snapshot, updates, "UNSET TBLPROPERTIES", allow_deletion_vectors=False)
            performed = True
        if any(f.dv is not None for f in run.latest().state().files.values()):
            purge = require_hook(run, "purge_deletion_vectors", "live files carry deletion vectors")
            purge(run)
            performed = True
        self._add_tombstones(run)
        return performed

    def _add_tombstones(self, run: DropRun) -> None:
        """One ``remove`` per distinct relative, non-inline DV file still referenced by a remove
        within ``delta.deletedFileRetentionDuration``, so that a DV-unaware VACUUM keeps it."""
        from delta_downgrade.protocol.dv_paths import dv_relative_path

        snapshot = run.latest()
        state = snapshot.state()
        now = run.clock.now_ms()
        cutoff = now - TableConfig(snapshot.metadata.configuration, table=run.table).deleted_file_retention_ms
        already = {t.decoded_path for t in state.tombstones.values()}
        wanted: dict[str, None] = {}
        for tomb in state.tombstones.values():
            dv = tomb.dv
            if dv is None or dv.storageType != "u":  # inline and absolute-path DVs are skipped
                continue
            if tomb.deletionTimestamp is not None and tomb.deletionTimestamp <= cutoff:
                continue
            rel = dv_relative_path(dv)
            if rel and rel not in already:
                wanted.setdefault(rel, None)
        if wanted:
            actions = [RemoveFile(path=quote(p, safe="/"), deletionTimestamp=now, dataChange=False)
                       for p in wanted]
            # Retried on top of winners that neither touch these DV files nor write DVs.
            run.commit(actions, "Deletion Vector Tombstones", {}, read_version=snapshot.version,
                       resolve=rebase_over_blind_appends(actions, operation="Deletion Vector Tombstones",
                                                         touched=set(wanted)))

    def action_uses_feature(self, action: AnyAction) -> bool:
        if isinstance(action, Metadata):
            return action.configuration.get("delta.enableDeletionVectors", "").lower() == "true"
        if isinstance(action, (AddFile, RemoveFile, AddCDCFile)):
            return action.dv is not None
        return False


class V2CheckpointDrop(FeatureDrop):
    """Set ``delta.checkpointPolicy=classic``; later checkpoints are classic."""

    feature = "v2Checkpoint"

    def property_updates(self, snapshot: Snapshot) -> dict[str, str | None]:
        policy = TableConfig(snapshot.metadata.configuration, table=snapshot.table).checkpoint_policy
        checkpoint = snapshot.segment.checkpoint
        if policy == "v2" or (checkpoint is not None and checkpoint.kind == "v2"):
            return {"delta.checkpointPolicy": "classic"}
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

    def action_uses_feature(self, action: AnyAction) -> bool:
        if isinstance(action, Metadata):
            return action.configuration.get("delta.checkpointPolicy", "").lower() == "v2"
        return isinstance(action, (CheckpointMetadata, Sidecar))


class CheckConstraintsDrop(FeatureDrop):
    """Constraints are never dropped automatically (delta-spark's
    ``DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE``)."""

    feature = "checkConstraints"

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        names = constraint_names(snapshot.metadata.configuration)
        if names:
            listed = ", ".join(f"`{n}`" for n in names)
            raise CheckConstraintsPresentError(
                f"cannot drop checkConstraints: the following constraints must be dropped first: "
                f"{listed} (ALTER TABLE … DROP CONSTRAINT). delta-downgrade never drops constraints",
                table=run.table, feature=self.feature, params={"constraints": listed})


ICT_PROPERTIES = ("delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp")


class InCommitTimestampDrop(FeatureDrop):
    feature = "inCommitTimestamp"

    def property_updates(self, snapshot: Snapshot) -> dict[str, str | None]:
        conf = snapshot.metadata.configuration
        updates: dict[str, str | None] = {k: None for k in ICT_PROPERTIES if k in conf}
        if conf.get("delta.enableInCommitTimestamps", "").lower() == "true":
            updates["delta.enableInCommitTimestamps"] = "false"
        return updates

    def remove_traces(self, run: DropRun) -> bool:
        snapshot = run.latest()
        updates = self.property_updates(snapshot)
        if not updates:
            return False
        commit_properties(run, snapshot, updates, "UNSET TBLPROPERTIES")
        return True


class DomainMetadataDrop(FeatureDrop):
    feature = "domainMetadata"

    def remove_traces(self, run: DropRun) -> bool:
        snapshot = run.latest()
        domains = snapshot.state().live_domains
        if not domains:
            return False
        run.commit([DomainMetadata(domain=d.domain, configuration=d.configuration, removed=True)
                    for d in domains.values()], "DOMAIN METADATA CLEANUP", {}, read_version=snapshot.version)
        return True


ROW_TRACKING_PROPERTIES = ("delta.enableRowTracking", "delta.rowTrackingSuspended",
                           "delta.rowTracking.materializedRowIdColumnName",
                           "delta.rowTracking.materializedRowCommitVersionColumnName")


class RowTrackingDrop(FeatureDrop):
    """Disable and suspend, then recommit files without row IDs ("unbackfill")."""

    feature = "rowTracking"

    def remove_traces(self, run: DropRun) -> bool:
        from dataclasses import replace

        snapshot = run.latest()
        conf = snapshot.metadata.configuration
        performed = False
        if conf.get("delta.enableRowTracking", "").lower() == "true" or conf.get("delta.rowTrackingSuspended", "").lower() != "true":
            updates = {"delta.enableRowTracking": "false", "delta.rowTrackingSuspended": "true"}
            commit_properties(run, snapshot, updates, "SET TBLPROPERTIES")
            performed = True
        snapshot = run.latest()
        files = [f for f in snapshot.state().files.values()
                 if f.baseRowId is not None or f.defaultRowCommitVersion is not None]
        if files:
            run.commit([replace(f, baseRowId=None, defaultRowCommitVersion=None, dataChange=False)
                        for f in files], "ROW TRACKING UNBACKFILL", {"numFiles": len(files)},
                       read_version=snapshot.version)
            performed = True
        return performed

    def properties_to_remove(self) -> tuple[str, ...]:
        return ROW_TRACKING_PROPERTIES

    def actions_at_downgrade(self, snapshot: Snapshot) -> list[AnyAction]:
        domain = snapshot.state().domains.get("delta.rowTracking")
        return [DomainMetadata(domain="delta.rowTracking",
                               configuration=domain.configuration if domain else "{}", removed=True)]


class MaterializePartitionColumnsDrop(FeatureDrop):
    feature = "materializePartitionColumns"

    def properties_to_remove(self) -> tuple[str, ...]:
        return ("delta.enableMaterializePartitionColumnsFeature",)


class GeospatialDrop(FeatureDrop):
    feature = "geospatial"

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        cols = [f["name"] for f in iter_fields(snapshot.schema)
                if isinstance(f.get("type"), str) and f["type"].split("(")[0] in ("geometry", "geography")]
        if cols:
            raise GeospatialColumnsPresentError(
                f"cannot drop {self.feature}: drop or recreate the geometry/geography column(s) "
                f"{', '.join(cols)} first", table=run.table, feature=self.feature)


class NeedsRewriteDrop(FeatureDrop):
    """Features whose traces live in the data files; the Spark rewrite comes with the rewrite
    package. Until it is wired, a table that still has traces is refused, never half-dropped."""

    def __init__(self, feature: str, uses: Callable[[AnyAction], bool]) -> None:
        self.feature = feature
        self._uses = uses

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        traces = self.traces(snapshot)
        if traces:
            rehearse(run, require_hook(run, f"remove_{self.feature}", "; ".join(traces)))

    def remove_traces(self, run: DropRun) -> bool:
        traces = self.traces(run.latest())
        if not traces:
            return False
        hook = require_hook(run, f"remove_{self.feature}", "; ".join(traces))
        return bool(hook(run))

    def action_uses_feature(self, action: AnyAction) -> bool:
        return self._uses(action)


class VacuumProtocolCheckDrop(FeatureDrop):
    """No traces and no pre-downgrade; on the fast path it still gets barriers (HistProt)."""

    feature = "vacuumProtocolCheck"


class CheckpointProtectionDrop(FeatureDrop):
    """Handled by the truncate operation (Checkpoint Protection RFC); traces = the boundary property."""

    feature = "checkpointProtection"


class UnsupportedClientDrop(FeatureDrop):
    """Features whose log this package cannot write (catalog-managed, coordinated commits, …)."""

    def __init__(self, feature: str) -> None:
        self.feature = feature

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        raise UnsupportedClientFeatureError(
            f"cannot drop {self.feature}: its commits are governed by a catalog or a commit "
            f"coordinator that delta-downgrade cannot write through. Use the engine that owns the "
            f"table (--engine=delta-sql on Databricks)", table=run.table, feature=self.feature)


def _cm_uses(action: AnyAction) -> bool:
    return isinstance(action, Metadata) and action.configuration.get("delta.columnMapping.mode", "none").lower() != "none"


def _tw_uses(action: AnyAction) -> bool:
    return isinstance(action, Metadata) and bool(type_change_fields(json.loads(action.schemaString)))


DROPS: dict[str, FeatureDrop] = {d.feature: d for d in (
    DeletionVectorsDrop(), V2CheckpointDrop(), CheckConstraintsDrop(), InCommitTimestampDrop(),
    DomainMetadataDrop(), RowTrackingDrop(), MaterializePartitionColumnsDrop(), GeospatialDrop(),
    CheckpointProtectionDrop(), VacuumProtocolCheckDrop(),
    NeedsRewriteDrop("columnMapping", _cm_uses),
    NeedsRewriteDrop("typeWidening", _tw_uses),
    NeedsRewriteDrop("typeWidening-preview", _tw_uses),
    UnsupportedClientDrop("catalogManaged"), UnsupportedClientDrop("coordinatedCommits-preview"),
    UnsupportedClientDrop("redirectReaderWriter-preview"), UnsupportedClientDrop("redirectWriterOnly-preview"),
)}
DROPS["geospatial-dev"] = GeospatialDrop()


def drop_for(feature: str) -> FeatureDrop:
    """The behaviour of ``feature``; test-only features (no registry entry) get the default."""
    found = DROPS.get(feature)
    if found is not None:
        return found
    generic = FeatureDrop()
    generic.feature = feature
    return generic


__all__ = ["DROPS", "FeatureDrop", "drop_for", "BOUNDARY_PROPERTY", "TYPE_CHANGES_KEY"]

