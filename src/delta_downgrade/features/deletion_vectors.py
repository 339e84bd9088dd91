"""deletionVectors (PROTOCOL.md "Deletion Vectors"): disable, purge every file that carries a DV,
then add DV tombstones (delta-spark's ``DeletionVectorsPreDowngradeCommand``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from urllib.parse import quote

from delta_downgrade.features.base import (
    RemovableFeature, RewriteFootprint, TraceContext, commit_properties, require_rewrite,
)
from delta_downgrade.log.replay.file_summary import (
    deletion_vector_file_refs, deletion_vector_files, file_counts, live_paths_with_deletion_vectors, tombstone_paths,
    tombstones_with_relative_dvs,
)
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol.actions import AddCDCFile, AddFile, AnyAction, Metadata, RemoveFile
from delta_downgrade.protocol.table_config import TableConfig

if TYPE_CHECKING:  # imported where a run is built: a trace check needs no commit machinery
    from delta_downgrade.drop.run import DropRun

ENABLE_PROPERTY = "delta.enableDeletionVectors"


def _require_dv_files(snapshot: Snapshot) -> None:
    """Every on-disk DV file of the live files exists (PROTOCOL.md "Deletion Vector Descriptor
    Schema": ``u`` relative to the table, ``p`` absolute): one status call per distinct DV file.
    The purge's own planning reads each DV, but a drop planned after another feature's (``--for``
    chains several) only reaches it after the earlier drops were written; a missing DV file must
    refuse the run before its first write."""
    from delta_downgrade.deletion_vectors.reader import DeletionVectorNotFoundError, DvFileReader
    from delta_downgrade.protocol.actions import DeletionVectorDescriptor
    from delta_downgrade.rewrite.data_files import storage_options_of

    reader = DvFileReader(snapshot.storage, storage_options=storage_options_of(snapshot.storage))
    missing = []
    for kind, where in deletion_vector_file_refs(snapshot.arrow_state()):
        dv = DeletionVectorDescriptor(storageType=kind, pathOrInlineDv=where, sizeInBytes=0, cardinality=0)
        if not reader.file_exists(dv):
            missing.append(reader.location(dv))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise DeletionVectorNotFoundError(
            f"{len(missing)} deletion vector file(s) of live data files do not exist: {shown}. Without "
            f"them the rows they delete cannot be told apart, so nothing was written. Restore the DV "
            f"files (or remove the data files that reference them) and run the drop again",
            table=snapshot.table, params={"missing": missing})


def _require_data_files(snapshot: Snapshot) -> None:
    """Every live file that carries a DV exists: the purge reads each one whole, and one that is
    gone would fail the purge after the drop's first commit (the property's UNSET). A status call
    per file, or one listing of a directory holding many of them (``DataFiles.missing``); the purge
    reads far more of each file than that."""
    from delta_downgrade.rewrite.data_files import DataFiles

    DataFiles(snapshot.storage).require_present(live_paths_with_deletion_vectors(snapshot.arrow_state()))


class DeletionVectors(RemovableFeature):
    name = "deletionVectors"
    rewrite = "delta_downgrade.rewrite.dv_purge:purge_deletion_vectors"

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        with_dv = file_counts(snapshot.arrow_state()).files_with_deletion_vectors
        if not with_dv:
            return
        # The purge must be able to run before anything is written, so a refusal leaves no trace:
        # its planning run (the drop's plan) verifies every DV (deleted rows never return) and
        # makes its own refusals.
        require_rewrite(run, self.rewrite, f"{with_dv} live file(s) carry deletion vectors")
        _require_dv_files(snapshot)
        _require_data_files(snapshot)

    def property_updates(self, snapshot: Snapshot) -> dict[str, str | None]:
        if TraceContext(snapshot).prop_true(ENABLE_PROPERTY):
            return {ENABLE_PROPERTY: None}
        return {}

    def remove_traces(self, run: DropRun) -> bool:
        snapshot = run.latest()
        performed = False
        updates = self.property_updates(snapshot)
        if updates:
            # Blind appends that write DVs would bring the feature's traces back: no rebase over those.
            commit_properties(run, snapshot, updates, "UNSET TBLPROPERTIES", allow_deletion_vectors=False)
            performed = True
        if file_counts(run.latest().arrow_state()).files_with_deletion_vectors:
            purge = require_rewrite(run, self.rewrite, "live files carry deletion vectors")
            purge(run)
            performed = True
        self._add_tombstones(run)
        return performed

    def _add_tombstones(self, run: DropRun) -> None:
        """One ``remove`` per distinct relative, non-inline DV file still referenced by a remove
        within ``delta.deletedFileRetentionDuration``, so that a DV-unaware VACUUM keeps it."""
        from delta_downgrade.log.commit import rebase_over_blind_appends  # a drop's: see base.py
        from delta_downgrade.protocol.dv_paths import dv_relative_path

        snapshot = run.latest()
        state = snapshot.arrow_state()
        now = run.clock.now_ms()
        cutoff = TableConfig(snapshot.metadata.configuration).tombstone_cutoff_ms(now)
        wanted: dict[str, None] = {}
        # inline and absolute-path DVs are skipped: only the relative ones ("u") name a file here
        for tomb in tombstones_with_relative_dvs(state, cutoff):
            rel = dv_relative_path(tomb.dv)  # type: ignore[arg-type]  # the tombstones chosen carry a relative DV
            if rel:
                wanted.setdefault(rel, None)
        if wanted:
            already = tombstone_paths(state, wanted)
            wanted = {p: None for p in wanted if p not in already}
        if wanted:
            actions = [RemoveFile(path=quote(p, safe="/"), deletionTimestamp=now, dataChange=False)
                       for p in wanted]
            # Retried on top of winners that neither touch these DV files nor write DVs.
            run.commit(actions, "Deletion Vector Tombstones", {}, read_version=snapshot.version,
                       resolve=rebase_over_blind_appends(actions, operation="Deletion Vector Tombstones",
                                                         touched=set(wanted)))

    def traces(self, ctx: TraceContext) -> list[str]:
        out = []
        if ctx.prop_true(ENABLE_PROPERTY):
            out.append(f"{ENABLE_PROPERTY}=true")
        files, rows = ctx.deletion_vector_counts()
        if files:
            out.append(f"{files} live file(s) carry deletion vectors ({rows} deleted rows)")
        return out

    def rewrite_footprint(self, ctx: TraceContext) -> RewriteFootprint:
        """Exactly the live files with a DV: the purge replaces each (a file whose rows are all
        deleted is removed without a new file, PROTOCOL.md "Deletion Vectors")."""
        files, size = deletion_vector_files(ctx.arrow)
        return RewriteFootprint(files, size)

    def action_uses_feature(self, action: AnyAction) -> bool:
        if isinstance(action, Metadata):
            return action.configuration.get(ENABLE_PROPERTY, "").lower() == "true"
        if isinstance(action, (AddFile, RemoveFile, AddCDCFile)):
            return action.dv is not None
        return False


DELETION_VECTORS = DeletionVectors()
