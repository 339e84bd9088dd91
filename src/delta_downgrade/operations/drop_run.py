"""One drop run and what it returns: :class:`DropRun` (the table, the clock, the steps written or
planned) and :class:`DropOutcome`. The drop paths, the per-feature pre-downgrades and the data
rewrites all write through a ``DropRun``; they import it from here, below all of them.

Every step a run writes or plans, and every message of the rewrites it carries, is a record of
the one logger :data:`LOGGER` (``delta_downgrade.drop``), with the run's table as the record's
``table`` attribute: the steps are one story told to whoever runs the drop, whichever module
(this one, a rewrite, the delta-sql engine) takes the step, so an entry point shows them by
configuring that logger alone, without listing modules and without reformatting other records
of the package. Library code never configures handlers; the CLI and the task entry points do."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Sequence

from delta_downgrade.clock import SYSTEM_CLOCK, Clock, to_utc_iso
from delta_downgrade.errors import ConcurrentWriteError, DeltaDowngradeError
from delta_downgrade.log.checkpoint_engine import write_checkpoint
from delta_downgrade.log.checkpoints import uses_v2_checkpoint
from delta_downgrade.log.commit import ConflictResolver, WinningCommit, commit, fail_on_any_conflict
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from delta_downgrade.protocol.actions import AnyAction, Metadata, ProtocolAction
from delta_downgrade.protocol.table_config import TableConfig

# delta-spark's DROP FEATURE: snapshotLoading.maxRetries (2) + 1, so that old readers give up
# before they could fall back to a checkpoint from before the drop.
NUMBER_OF_BARRIER_CHECKPOINTS = 3

# The drop's steps (see the module docstring). INFO: a step of a drop that an entry point runs;
# DEBUG: a step of a run nobody asked to hear (a rehearsal, a run built by hand).
LOGGER = logging.getLogger("delta_downgrade.drop")

STATUS_DROPPED = "dropped"
STATUS_ALREADY_ABSENT = "already_absent"
STATUS_PLANNED = "planned"


class _DroppedConcurrently(Exception):
    """Control flow, never shown: another writer's commit removed the feature this run is
    dropping (two drops of the same feature at once). The run ends as ``already_absent``."""

    def __init__(self, version: int | None) -> None:
        super().__init__(f"dropped concurrently at version {version}")
        self.version = version


@dataclass
class DropRun:
    """State of one drop run: the table, the clock, and what this run wrote (or would write)."""

    log: DeltaLog
    feature: str
    clock: Clock = SYSTEM_CLOCK
    dry_run: bool = False
    # Whether this run's steps are the story of the drop (INFO) or only a debugging detail
    # (DEBUG): ``drop_feature`` announces its run; the dry-run rehearsal of a data rewrite and
    # runs built directly do not, so that their steps never show at the default level.
    announce: bool = False
    commits: list[int] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    _planned_version: int | None = None
    # A dry run's view of the protocol and metadata its planned commits leave (None: as latest),
    # so that its planned checkpoints say the kind the real run writes.
    _planned_protocol: Protocol | None = None
    _planned_metadata: Metadata | None = None
    _operations: list[str] = field(default_factory=list)
    #: The checkpoint engine (``log/checkpoint_engine``): None takes the environment's or ``auto``.
    checkpoint_engine: str | None = None

    @property
    def table(self) -> str:
        return self.log.table

    def latest(self) -> Snapshot:
        self.log.catch_up()
        return self.log.snapshot(check_read=False)

    def progress(self, message: str, *, step: str | None = None, done: int | None = None,
                 total: int | None = None, unit: str = "files", done_bytes: int | None = None,
                 total_bytes: int | None = None) -> None:
        """Tell one step (or a rewrite's progress) on :data:`LOGGER`, tagged with the table.

        A long rewrite also gives its counts: ``step`` names the work being counted (the same name
        on every record of it), ``done`` of ``total`` ``unit`` and optionally bytes. They travel on
        the record as its ``progress`` attribute (a dict of those keys), so that an entry point can
        draw a progress bar or emit progress events (``app/progress.py``) instead of the line."""
        extra: dict[str, Any] = {"table": self.table}
        if step is not None and done is not None and total is not None:
            extra["progress"] = {"step": step, "done": done, "total": total, "unit": unit,
                                 "done_bytes": done_bytes, "total_bytes": total_bytes}
        LOGGER.log(logging.INFO if self.announce else logging.DEBUG, message, extra=extra)

    def _say(self, message: str) -> None:
        self.plan.append(message)
        self.progress(message)

    def require_present(self, snapshot: Snapshot) -> None:
        """Stop (as ``already_absent``) when the feature has left the protocol under this run."""
        if self.feature not in snapshot.protocol.features:
            raise _DroppedConcurrently(snapshot.version)

    def _guard(self, resolve: ConflictResolver) -> ConflictResolver:
        """Every conflict of a drop first asks whether a winner dropped the feature itself: then
        this run has nothing left to do (it must not fail, nor try the same downgrade again)."""
        def guarded(winners: list[WinningCommit], log: DeltaLog) -> Sequence[AnyAction]:
            protocols = [a for w in winners for a in w.actions if isinstance(a, ProtocolAction)]
            if protocols and self.feature not in protocols[-1].protocol.features:
                raise _DroppedConcurrently(next(w.version for w in reversed(winners)
                                                if any(isinstance(a, ProtocolAction) for a in w.actions)))
            return resolve(winners, log)
        return guarded

    def commit(self, actions: Sequence[AnyAction], operation: str, parameters: dict[str, Any] | None = None,
               resolve: ConflictResolver | None = None, *, read_version: int | None = None,
               row_tracking_preserved: bool = True) -> int:
        """One commit (or, in a dry run, its description).

        ``read_version``: the version the actions were derived from, so that anything committed
        since goes through ``resolve``; None for commits that depend on nothing (empty commits),
        which go on top of the latest version. ``row_tracking_preserved``: the commit's
        ``delta.rowTracking.preserved`` tag when row tracking is enabled (``log.commit.commit``)."""
        if self.dry_run:
            base = self._planned_version if self._planned_version is not None else self.latest().version
            self._planned_version = base + 1
            for action in actions:
                if isinstance(action, ProtocolAction):
                    self._planned_protocol = action.protocol
                elif isinstance(action, Metadata):
                    self._planned_metadata = action
            self._say(f"commit v{base + 1}: {operation} ({len(actions)} action(s))")
            return base + 1
        if read_version is None:
            read_version = self.log.catch_up().latest_version()
        version = commit(self.log, read_version, actions, operation=operation,
                         operation_parameters=parameters or {}, clock=self.clock,
                         resolve_conflict=self._guard(resolve or fail_on_any_conflict),
                         row_tracking_preserved=row_tracking_preserved)
        self.commits.append(version)
        self._operations.append(operation)
        self._say(f"committed v{version}: {operation}")
        return version

    def checkpoint(self, version: int | None = None) -> list[str]:
        """One checkpoint (or, in a dry run, its description); the files written, a V2
        checkpoint's sidecars included. A V2 checkpoint's step says so ("(v2)"), in the plan as
        in the run: the policy of the version decides (:func:`uses_v2_checkpoint`)."""
        if self.dry_run:
            target = version if version is not None else (self._planned_version or self.latest().version)
            latest = self.latest() if self._planned_protocol is None or self._planned_metadata is None else None
            protocol = self._planned_protocol or latest.protocol  # type: ignore[union-attr]
            metadata = self._planned_metadata or latest.metadata  # type: ignore[union-attr]
            kind = " (v2)" if uses_v2_checkpoint(protocol, metadata, self.table) else ""
            self._say(f"checkpoint at v{target}{kind}")
            return []
        result = write_checkpoint(self.log, version, engine=self.checkpoint_engine, clock=self.clock)
        self.checkpoints.extend(result.paths)
        kind = " (v2)" if result.checkpoint_kind == "v2" else ""
        self._say(f"checkpoint at v{result.version}{kind}: {', '.join(result.paths)}")
        return list(result.paths)

    def conflict_error(self, exc: ConcurrentWriteError) -> ConcurrentWriteError:
        """``exc`` (raised by one step) told about the whole run: which of this run's commits
        landed before the conflict, so that exit 4 never claims that nothing was written."""
        if self.commits or self.checkpoints:
            landed = ", ".join(f"v{v} ({op})" for v, op in zip(self.commits, self._operations))
            done = (f"This run had already committed {landed}" if landed else "This run had written no commit")
            if self.checkpoints:
                done += f" and written {len(self.checkpoints)} checkpoint file(s)"
            context = (f"{done}; they stay, the table is consistent, and rerunning the drop resumes "
                       f"from there.")
        else:
            context = "Nothing of this run was written."
        params = {**exc.params, "landedVersions": list(self.commits)}
        return exc.amended(f"{exc.message} {context}", table=self.table, feature=self.feature,
                           params=params)


@dataclass
class DropOutcome:
    table: str
    feature: str
    status: str
    protocol_before: Protocol
    protocol_after: Protocol
    boundary_version: int | None
    protected_checkpoints: list[str]
    commits: list[int]
    checkpoints_written: list[str]
    truncate_after: str | None = None
    plan: list[str] = field(default_factory=list)
    error: DeltaDowngradeError | None = None

    @property
    def needs_truncate(self) -> bool:
        return CHECKPOINT_PROTECTION in self.protocol_after.features


def protected_checkpoint_paths(log: DeltaLog, boundary: int | None, *, own_writes_only: bool = False) -> list[str]:
    """The barrier checkpoints and the one at the boundary: the newest
    ``NUMBER_OF_BARRIER_CHECKPOINTS + 1`` complete checkpoints at or below the boundary, every
    file of each (a V2 checkpoint's sidecars too: without them it cannot be read)."""
    if boundary is None:
        return []
    # One checkpoint per version (the inventory is sorted by version); the newest ones win.
    by_version: dict[int, Any] = {}
    # own_writes_only: the log knows the checkpoints this run wrote (DeltaLog.note_written), so
    # no listing is needed; a concurrent writer's checkpoint is then missing from this report
    # only - the boundary protects it all the same (Checkpoint Protection RFC)
    for c in (log.catch_up() if own_writes_only else log.refresh()).checkpoint_inventory():
        if c.complete and c.version <= boundary:
            by_version.setdefault(c.version, c)
    chosen = list(by_version.values())[-(NUMBER_OF_BARRIER_CHECKPOINTS + 1):]
    out: list[str] = []
    for c in chosen:
        try:
            out += log.checkpoint_files(c)
        except (DeltaDowngradeError, OSError):  # its sidecar list cannot be read: its own files
            out += c.paths
    return out


def truncate_after_ms(log: DeltaLog, boundary: int, clock: Clock) -> int | None:
    """When history before ``boundary`` can be truncated in one go (the truncate retention)."""
    from delta_downgrade.operations.cleanup import earliest_truncation_time_ms

    retention = TableConfig(log.snapshot(check_read=False).metadata.configuration,
                            table=log.table).truncate_history_retention_ms
    return earliest_truncation_time_ms(log, boundary, retention, "minute")


def finish(run: DropRun, before: Protocol, after: Protocol, status: str) -> DropOutcome:
    if run.dry_run:
        return DropOutcome(run.table, run.feature, STATUS_PLANNED, before, after, None, [], [], [],
                           plan=list(run.plan))
    snapshot = run.latest()
    boundary = snapshot.boundary_version if CHECKPOINT_PROTECTION in snapshot.protocol.features else None
    truncate_after = None
    if boundary is not None:
        when = truncate_after_ms(run.log, boundary, run.clock)
        truncate_after = to_utc_iso(when) if when is not None else None
    return DropOutcome(run.table, run.feature, status, before, snapshot.protocol, boundary,
                       protected_checkpoint_paths(run.log, boundary, own_writes_only=True), list(run.commits),
                       list(run.checkpoints), truncate_after, plan=list(run.plan))
