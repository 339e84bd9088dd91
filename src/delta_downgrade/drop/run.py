"""One drop run and what it returns: :class:`DropRun` (the table, the clock, the steps written or
planned) and :class:`DropOutcome` (filled in by :mod:`delta_downgrade.operations.drop_outcome`).
The drop paths, the per-feature pre-downgrades and the data rewrites all write through a
``DropRun``; they import it from here, below all of them.

Every step a run writes or plans, and every message of the rewrites it carries, is a record of
the one logger :data:`LOGGER` (``delta_downgrade.drop``), with the run's table as the record's
``table`` attribute: the steps are one story told to whoever runs the drop, whichever module
(this one, a rewrite, the delta-sql engine) takes the step, so an entry point shows them by
configuring that logger alone, without listing modules and without reformatting other records
of the package. Library code never configures handlers; the CLI and the task entry points do."""

from __future__ import annotations

import logging
from typing import Any, Mapping, Sequence

from msgspec import Struct, field
from delta_downgrade.clock import SYSTEM_CLOCK, Clock
from delta_downgrade.errors import ConcurrentWriteError, DeltaDowngradeError
from delta_downgrade.drop.committer import Committer, LogCommitter
from delta_downgrade.log.commit import ConflictResolver, WinningCommit, fail_on_any_conflict
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from delta_downgrade.drop.plan import TRUNCATE, DropStep
from delta_downgrade.protocol.actions import AnyAction, ProtocolAction

# delta-spark's DROP FEATURE: snapshotLoading.maxRetries (2) + 1, so that old readers give up
# before they could fall back to a checkpoint from before the drop.
NUMBER_OF_BARRIER_CHECKPOINTS = 3

# The drop's steps (see the module docstring). INFO: a step of a drop that an entry point runs;
# DEBUG: a step of a run nobody asked to hear (the plan a real run makes first, a run built by hand).
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


class DropRun(Struct, dict=True):
    """State of one drop run: the table, the clock, and the steps it wrote (or, planning, would
    write). (``dict=True``: a run is an object with behaviour, which a caller may wrap or patch
    per instance, as it could a plain class's.)

    Its :class:`~delta_downgrade.drop.committer.Committer` decides where the steps go: the log
    (:class:`~delta_downgrade.drop.committer.LogCommitter`, the default) or the plan
    (:class:`~delta_downgrade.drop.committer.PlanRecorder`: nothing is written, each commit is
    applied to the planned table, which :meth:`latest` returns, so that later steps are decided on
    the table the earlier ones leave). A real run given the
    plan (``expected``) says so when a written step differs from the planned one (a concurrent
    writer took a version in between); it stays correct either way (each commit revalidates and
    resolves conflicts as it always does)."""

    log: DeltaLog
    feature: str
    clock: Clock = SYSTEM_CLOCK
    committer: Committer = field(default_factory=LogCommitter)
    # Whether this run's steps are the story of the drop (INFO) or only a debugging detail
    # (DEBUG): ``drop_feature`` announces its run (the plan of a dry run, the steps of a real
    # one); the plan a real run makes first, and runs built directly, do not.
    announce: bool = False
    commits: list[int] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    #: The steps taken in order: planned (a plan) or written (a real run).
    steps: list[DropStep] = field(default_factory=list)
    #: The plan a real run performs (None: a run without one).
    expected: list[DropStep] | None = None
    deviation: str | None = None
    _operations: list[str] = field(default_factory=list)
    #: Every file of each checkpoint this run wrote (a V2 checkpoint's sidecars too), by the
    #: path of its top-level file: what :func:`protected_checkpoint_paths` reports without
    #: reading those checkpoints back.
    written_checkpoint_files: dict[str, list[str]] = field(default_factory=dict)
    #: The checkpoint engine (``log/checkpoint_engine``): None takes the environment's or ``auto``.
    checkpoint_engine: str | None = None

    @property
    def table(self) -> str:
        return self.log.table

    @property
    def writes(self) -> bool:
        """Whether this run's steps land in the table (its committer's answer); False for a
        plan, which writes nothing at all - no commit, no checkpoint, no data file."""
        return self.committer.writes

    def latest(self) -> Snapshot:
        """The latest version; in a plan, the table after the steps planned so far."""
        return self.committer.latest(self.log)

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

    def record(self, step: DropStep, message: str) -> None:
        """One step taken (planned or written), told once; a real run compares it with its plan."""
        index = len(self.steps)
        self.steps.append(step)
        self._say(message)
        if self.expected is None or not self.writes or self.deviation is not None:
            return
        planned = self.expected[index] if index < len(self.expected) else None
        if planned != step:
            self.deviation = (f"step {index + 1} differs from the plan: planned "
                              f"{planned.describe() if planned else 'nothing more'}, wrote {step.describe()}"
                              f" (another writer committed in between, or the table changed since the "
                              f"plan); every step was revalidated as it was written")
            self.progress(self.deviation)

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

    def commit(self, actions: Sequence[AnyAction], operation: str, parameters: Mapping[str, object] | None = None,
               resolve: ConflictResolver | None = None, *, read_version: int | None = None,
               row_tracking_preserved: bool = True) -> int:
        """One commit (or, planning, its place in the plan).

        ``read_version``: the version the actions were derived from, so that anything committed
        since goes through ``resolve``; None for commits that depend on nothing (empty commits),
        which go on top of the latest version. ``row_tracking_preserved``: the commit's
        ``delta.rowTracking.preserved`` tag when row tracking is enabled (``log.commit.commit``)."""
        taken = self.committer.commit(self.log, actions, operation=operation, parameters=parameters or {},
                                      resolve=self._guard(resolve or fail_on_any_conflict),
                                      read_version=read_version, clock=self.clock,
                                      row_tracking_preserved=row_tracking_preserved)
        if self.writes:
            self.commits.append(taken.step.version)
            self._operations.append(operation)
        self.record(taken.step, taken.message)
        return taken.step.version

    def checkpoint(self, version: int | None = None) -> list[str]:
        """One checkpoint (None: of the latest version; planning: its place in the plan); the
        files written, a V2 checkpoint's sidecars included. A V2 checkpoint's step says so
        ("(v2)"), in the plan as in the run: the policy of the version decides
        (:func:`~delta_downgrade.log.checkpoint.on_driver.uses_v2_checkpoint`)."""
        taken = self.committer.checkpoint(self.log, version, engine=self.checkpoint_engine, clock=self.clock)
        self.checkpoints.extend(taken.paths)
        if self.writes:
            for path in taken.paths:
                if "/_sidecars/" not in path:
                    self.written_checkpoint_files[path] = list(taken.paths)
        self.record(taken.step, taken.message)
        return list(taken.paths)

    def prepare_checkpoint(self, expected: Snapshot) -> None:
        """Begin the checkpoint of ``expected`` (the table after this run's next commits, given
        by value) ahead of those commits; :meth:`checkpoint` of its version publishes it when the
        log holds that very table, :meth:`discard_prepared` discards it
        (:mod:`delta_downgrade.log.checkpoint.prepared`). Nothing is recorded: it is not a step."""
        self.committer.prepare_checkpoint(self.log, expected, engine=self.checkpoint_engine, clock=self.clock)

    def discard_prepared(self) -> None:
        """Discard a checkpoint :meth:`prepare_checkpoint` began that no step took."""
        self.committer.discard_prepared(self.log)

    def truncated(self, before: int, message: str) -> None:
        """The history before ``before`` truncated (or, planning, to be)."""
        self.record(DropStep(TRUNCATE, before), message)

    def written_so_far(self) -> str:
        """What this run has written, from its own record of its commits and checkpoints: the
        one source of every message that says what a failed or interrupted run left behind."""
        if not (self.commits or self.checkpoints):
            return "Nothing of this run was written."
        landed = ", ".join(f"v{v} ({op})" for v, op in zip(self.commits, self._operations))
        done = f"This run had already committed {landed}" if landed else "This run had written no commit"
        if self.checkpoints:
            done += f" and written {len(self.checkpoints)} checkpoint file(s)"
        return f"{done}; they stay, the table is consistent, and rerunning the drop resumes from there."

    def conflict_error(self, exc: ConcurrentWriteError) -> ConcurrentWriteError:
        """``exc`` (raised by one step) told about the whole run: which of this run's commits
        landed before the conflict, so that exit 4 never claims that nothing was written."""
        params = {**exc.params, "landedVersions": list(self.commits)}
        return exc.amended(f"{exc.message} {self.written_so_far()}", table=self.table, feature=self.feature,
                           params=params)

    def failure_error(self, exc: DeltaDowngradeError) -> DeltaDowngradeError:
        """``exc``, raised by a step after this run wrote something, told what was written (a
        message about the table never guesses at what landed); unchanged when nothing was."""
        if not (self.commits or self.checkpoints) or "landedVersions" in exc.params:
            return exc
        params = {**exc.params, "landedVersions": list(self.commits)}
        return exc.amended(f"{exc.message} {self.written_so_far()}", table=self.table, feature=self.feature,
                           params=params)


class DropOutcome(Struct):
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
    #: The steps the plan decided before the first write, and (a real run) the steps written;
    #: ``deviation`` says where they differ (a concurrent writer), None when they are the same.
    planned: list[DropStep] = field(default_factory=list)
    written: list[DropStep] = field(default_factory=list)
    deviation: str | None = None

    @property
    def needs_truncate(self) -> bool:
        return CHECKPOINT_PROTECTION in self.protocol_after.features


def protected_checkpoint_paths(log: DeltaLog, boundary: int | None, *, own_writes_only: bool = False,
                               written: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The barrier checkpoints and the one at the boundary: the newest
    ``NUMBER_OF_BARRIER_CHECKPOINTS + 1`` complete checkpoints at or below the boundary, every
    file of each (a V2 checkpoint's sidecars too: without them it cannot be read).
    ``written``: the files of checkpoints this process wrote, by top-level path
    (:attr:`DropRun.written_checkpoint_files`): those are not read back for their sidecars."""
    if boundary is None:
        return []
    # One checkpoint per version; the newest ones win. own_writes_only: the log knows the
    # checkpoints this run wrote (DeltaLog.note_written), so no listing is needed
    # (Refresh.NEW_COMMITS); a concurrent writer's checkpoint is then missing from this report only - the boundary protects it all
    # the same (Checkpoint Protection RFC). A listing from _last_checkpoint serves when it holds
    # that many checkpoints at or below the boundary: the others are older.
    listing = log.refresh(Refresh.NEW_COMMITS if own_writes_only else Refresh.TAIL).listing()
    chosen = listing.newest_checkpoints(boundary, NUMBER_OF_BARRIER_CHECKPOINTS + 1)
    if chosen is None:  # the listed tail holds fewer: older checkpoints count
        chosen = log.whole_listing().newest_checkpoints(boundary, NUMBER_OF_BARRIER_CHECKPOINTS + 1) or []
    out: list[str] = []
    for c in chosen:
        own = written.get(c.paths[0]) if written and len(c.paths) == 1 else None
        if own is not None:
            out += [*c.paths, *(p for p in own if p not in c.paths)]
            continue
        try:
            out += log.checkpoint_files(c)
        except (DeltaDowngradeError, OSError):  # its sidecar list cannot be read: its own files
            out += c.paths
    return out
