"""DROP FEATURE: the fast path with protected checkpoints (Checkpoint Protection RFC) and the
TRUNCATE HISTORY path (PROTOCOL.md "Table Features"), for tables this package writes itself.

Every step is a separate commit or checkpoint, and every step can be repeated: a crash at any
point leaves a readable table, and rerunning the drop finishes it. A rerun after the downgrade
commit finds the feature gone, completes the checkpoint at the boundary if it is missing, and
reports ``already_absent``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from msgspec import Struct
from delta_downgrade.clock import SYSTEM_CLOCK, Clock, to_utc_iso
from delta_downgrade.errors import (
    ConcurrentWriteError, DeltaDowngradeError, DropCheckpointFailedError, DropConflictError,
    FeatureDropError, FeatureNotPresentError, HistoricalVersionsExistError,
    InvalidProtocolDowngradeError, RetentionWaitError, naming_table,
)
from delta_downgrade.features import RemovableFeature, TraceContext, removable
from delta_downgrade.log.checkpoint.engine import validate_engine
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table, uses_v2_checkpoint
from delta_downgrade.log.commit import WinningCommit, rebase_unless_protocol_changed, require_atomic_commits
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY, Snapshot
from delta_downgrade.drop.committer import Committer, LogCommitter, PlanRecorder
from delta_downgrade.drop.plan import DropPlan
from delta_downgrade.drop.run import (
    NUMBER_OF_BARRIER_CHECKPOINTS, STATUS_ALREADY_ABSENT, STATUS_DROPPED, DropOutcome, DropRun,
    _DroppedConcurrently, protected_checkpoint_paths,
)
from delta_downgrade.drop.validation import clean_feature_name, validate_drop, validate_plan
from delta_downgrade.operations.drop_outcome import finish, truncate_after_ms
from delta_downgrade.operations.truncate import drop_checkpoint_protection
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol, TableFeature
from delta_downgrade.protocol.actions import (
    AddCDCFile, AddFile, AnyAction, CommitInfo, Metadata, ProtocolAction, RemoveFile, Txn,
)
from delta_downgrade.protocol.support import Operation, ensure_supported
from delta_downgrade.protocol.table_config import MINUTE_MS, TableConfig

MAX_CHECKPOINT_RETRIES = 3

__all__ = ["DropOutcome", "DropPlan", "DropRun", "drop_feature", "plan_drop", "protected_checkpoint_paths"]


def _ensure_writable(snapshot: Snapshot, feature: str) -> None:
    """Every other feature of the protocol must be writable by this package (the drop removes
    ``feature`` itself, so it needs no support for it)."""
    ensure_supported(snapshot.protocol, Operation.WRITE, ignore={feature},
                     purpose=f"drop {feature}")


class _Drop(Struct):
    """A drop that passed every check made before its first write."""

    log: DeltaLog
    name: str
    spec: TableFeature
    behaviour: RemovableFeature
    before: Protocol
    truncate_history: bool
    clock: Clock
    checkpoint_engine: str | None
    start: Snapshot | None = None


def _planning_run(log: DeltaLog, feature: str, clock: Clock, start: Snapshot | None, *,
                  announce: bool = False, recorder: PlanRecorder | None = None) -> DropRun:
    """A planning run from ``start``: the snapshot the drop was validated on, or a planned table
    (an earlier drop's plan), so that this drop's steps are decided on the table the checks
    passed for and the earlier steps leave. Never from a newer version than the one validated:
    a concurrent drop that lands in between would otherwise be planned over (its protocol no
    longer holds the feature) and fail as an invalid downgrade instead of being found by the
    real run (``already_absent``). ``recorder``: the caller's, which then holds the planned table."""
    recorder = recorder or PlanRecorder()
    recorder.planned = start
    return DropRun(log, feature, clock=clock, committer=recorder, announce=announce)


def _prepare(log: DeltaLog, feature: str, *, truncate_history: bool, clock: Clock,
             rewrites: Mapping[str, Callable[[DropRun], Any]] | None,
             checkpoint_engine: str | None, start: Snapshot | None = None) -> _Drop | FeatureNotPresentError:
    """Validation in delta-spark's order, then everything the steps will need (pure checks and
    reads): the drop, or the not-present error of a feature that is already gone. ``start``: the
    table the drop begins from when it is not the latest version (the table an earlier plan
    leaves, derived by ``Snapshot.with_commits``)."""
    location = log.table
    # A drop replays the whole log when it writes its checkpoints: every commit and the
    # checkpoint's rows are read and checked now, before its first write (a dry run the same).
    start = start if start is not None else log.validated_snapshot()
    name = clean_feature_name(feature)
    before = start.protocol
    try:
        spec = validate_drop(before, name, truncate_history=truncate_history)
    except FeatureNotPresentError as exc:
        return exc
    behaviour = removable(spec.name, rewrites=rewrites)
    # Everything the plan needs is checked before its first write, the same way for a dry run.
    _ensure_writable(start, spec.name)
    engine = validate_engine(checkpoint_engine, location)
    planned_updates = behaviour.property_updates(start)
    plan = validate_plan(start, spec, planned_updates=planned_updates, truncate_history=truncate_history)
    if TableConfig(plan.metadata.configuration).in_commit_timestamps_enabled:
        # PROTOCOL.md "In-Commit Timestamps": the drop's first commit must carry a timestamp
        # greater than the latest commit's, so the latest commit must state its own.
        start.in_commit_timestamp()
    behaviour.preflight(_planning_run(log, spec.name, clock, start), start)
    return _Drop(log, name, spec, behaviour, before, truncate_history, clock, engine, start)


def _perform(run: DropRun, drop: _Drop) -> DropOutcome:
    """The drop's procedure, the same for the plan (a planning run) and for the real run. A real
    run first looks at the latest version: a concurrent drop of the same feature that landed
    after the checks (and the plan) makes it ``already_absent`` before it writes anything."""
    try:
        if run.writes:
            run.require_present(run.latest())
        if drop.spec.name == CHECKPOINT_PROTECTION:
            return drop_checkpoint_protection(run, drop.before)
        if drop.truncate_history:
            return _drop_with_history_truncation(run, drop.spec, drop.behaviour, drop.before)
        return _fast_drop(run, drop.spec, drop.behaviour, drop.before)
    except _DroppedConcurrently:
        return _dropped_by_another_writer(run, drop.name, drop.before)
    except ConcurrentWriteError as exc:
        raise run.conflict_error(exc) from exc
    except RetentionWaitError:
        raise
    except DeltaDowngradeError as exc:
        raise run.failure_error(exc) from exc
    except Exception as exc:
        if not (run.commits or run.checkpoints):
            raise
        # an internal failure after the run wrote: exit 1 all the same, with what landed
        raise run.failure_error(DeltaDowngradeError(f"{type(exc).__name__}: {exc}", table=run.table)) from exc


def _plan(drop: _Drop, *, announce: bool, recorder: PlanRecorder | None = None) -> tuple[DropPlan, DropOutcome | None]:
    """Every step of the drop, decided on a planning run (``drop/plan``); a refusal
    raises here, before anything is written. A wait the drop ends with (RetentionWaitError) is
    part of the plan."""
    run = _planning_run(drop.log, drop.spec.name, drop.clock, drop.start, announce=announce, recorder=recorder)
    run.checkpoint_engine = drop.checkpoint_engine
    outcome: DropOutcome | None = None
    ending: RetentionWaitError | None = None
    try:
        outcome = _perform(run, drop)
    except RetentionWaitError as exc:
        ending = exc
    after = outcome.protocol_after if outcome is not None else drop.before
    return DropPlan(drop.log.table, drop.spec.name, list(run.steps), drop.before, after, ending,
                    messages=list(run.plan), snapshot_after=run.latest()), outcome


@naming_table("location")
def plan_drop(location: str, feature: str, *, truncate_history: bool = False, clock: Clock = SYSTEM_CLOCK,
              rewrites: Mapping[str, Callable[[DropRun], Any]] | None = None, log: DeltaLog | None = None,
              checkpoint_engine: str | None = None,
              storage_options: Mapping[str, str] | None = None, after: DropPlan | None = None) -> DropPlan:
    """The plan of ``drop_feature(location, feature, …)`` with the same arguments: every commit
    (version, ``commitInfo.operation``) and checkpoint (version, kind) in order, and the wait it
    ends with, if any. Nothing is written. Raises what the drop would refuse with; a feature that
    is already gone plans no step. ``after``: plan this drop on the table that plan leaves (its
    ``snapshot_after``), as when several drops run one after the other."""
    log = log or DeltaLog(location, storage_options=storage_options)
    start = after.snapshot_after if after is not None else None
    drop = _prepare(log, feature, truncate_history=truncate_history, clock=clock, rewrites=rewrites,
                    checkpoint_engine=checkpoint_engine, start=start)
    if isinstance(drop, FeatureNotPresentError):
        table = start if start is not None else log.snapshot()
        return DropPlan(log.table, clean_feature_name(feature), [], table.protocol, table.protocol,
                        snapshot_after=start)
    plan, _ = _plan(drop, announce=False)
    return plan


@naming_table("location")
def drop_feature(location: str, feature: str, *, truncate_history: bool = False,
                 committer: Committer | None = None,
                 clock: Clock = SYSTEM_CLOCK, rewrites: Mapping[str, Callable[[DropRun], Any]] | None = None,
                 log: DeltaLog | None = None, checkpoint_engine: str | None = None,
                 storage_options: Mapping[str, str] | None = None) -> DropOutcome:
    """Drop ``feature`` from the table at ``location``: plan every step (:func:`plan_drop`), then
    perform them through ``committer``. The outcome carries the planned steps and, after a real
    run, the written ones (``deviation`` says where a concurrent writer moved them).

    ``committer`` (``drop/committer.py``): None or a :class:`LogCommitter` writes the steps to
    the log; a :class:`PlanRecorder` (``--dry-run``) writes nothing: the outcome is the plan
    (status ``planned``) and the recorder holds the planned table.

    Each step is logged at INFO on ``delta_downgrade.drop`` (:data:`drop.run.LOGGER`) once: as
    it is planned in a dry run, as it is written in a real one.

    Raises FeatureDropError (validation, exit 2), RetentionWaitError (exit 3; a dry run raises
    the wait the run would end with, after telling its steps), ConcurrentWriteError (exit 4).
    Dropping a feature that is already gone returns status ``already_absent``.
    ``rewrites`` replaces the data rewrite of the feature it names (``{feature: rewrite(run)}``).
    ``checkpoint_engine``: who writes the drop's checkpoints (``log/checkpoint_engine``: ``auto``,
    ``arrow`` or ``spark``; None: the environment's setting, else ``auto``).
    ``storage_options``: credentials and endpoint of the table's store (``storage/options.py``).
    """
    committer = committer or LogCommitter()
    log = log or DeltaLog(location, storage_options=storage_options)
    drop = _prepare(log, feature, truncate_history=truncate_history, clock=clock, rewrites=rewrites,
                    checkpoint_engine=checkpoint_engine)
    if isinstance(drop, FeatureNotPresentError):
        # Not present means already done (exit 0): reruns of a job stay green, and the RESULT
        # still carries the error class.
        return _already_absent(log, clean_feature_name(feature), log.snapshot().protocol, drop, clock,
                               writes=committer.writes)
    if isinstance(committer, PlanRecorder):
        plan, planned = _plan(drop, announce=True, recorder=committer)
        if plan.ending is not None:
            raise plan.ending
        assert planned is not None
        return planned
    plan, _ = _plan(drop, announce=False)
    # Last of the checks, and the only one that touches the store (an object store is probed
    # with a conditional create): every step of a drop is a commit, so a storage that cannot
    # create a commit atomically is refused before the first of them (or a rewrite's files).
    require_atomic_commits(log)
    run = DropRun(log, drop.spec.name, clock=clock, committer=committer, announce=True, expected=plan.steps)
    run.checkpoint_engine = drop.checkpoint_engine
    return _perform(run, drop)


def _dropped_by_another_writer(run: DropRun, name: str, before: Protocol) -> DropOutcome:
    """Another drop of the same feature won the race: report ``already_absent`` (exit 0), with
    whatever this run wrote on the way (empty commits, checkpoints: harmless)."""
    latest = run.latest()
    try:
        validate_drop(latest.protocol, name, truncate_history=False)
    except FeatureDropError as exc:
        if not isinstance(exc, FeatureNotPresentError):
            raise
        outcome = _already_absent(run.log, name, latest.protocol, exc, run.clock, writes=run.writes)
        outcome.protocol_before = before
        outcome.commits = list(run.commits)
        outcome.checkpoints_written = list(run.checkpoints) + outcome.checkpoints_written
        return outcome
    raise AssertionError(f"{name} is still in the protocol {latest.protocol}")


def _already_absent(log: DeltaLog, name: str, protocol: Protocol, exc: FeatureDropError, clock: Clock, *,
                    writes: bool) -> DropOutcome:
    """Idempotent rerun: finish a fast drop that crashed before its boundary checkpoint."""
    snapshot = log.snapshot()
    boundary = snapshot.boundary_version if CHECKPOINT_PROTECTION in protocol.features else None
    written: list[str] = []
    if boundary is not None:
        # It may write the boundary checkpoint and reads the truncate retention.
        TableConfig(snapshot.metadata.configuration).validate()
    if boundary is not None and writes:
        has_boundary_checkpoint = any(c.complete and c.version == boundary for c in log.checkpoint_inventory())
        if not has_boundary_checkpoint and boundary <= snapshot.version:
            written = list(checkpoint_table(log, boundary, clock=clock).paths)
    truncate_after = None
    if boundary is not None:
        when = truncate_after_ms(log, boundary, clock)
        truncate_after = to_utc_iso(when) if when is not None else None
    return DropOutcome(log.table, name, STATUS_ALREADY_ABSENT, protocol, protocol, boundary,
                       protected_checkpoint_paths(log, boundary), [], written, truncate_after, error=exc)


# --- fast path (Checkpoint Protection RFC) ------------------------------------------------------------

def _fast_drop(run: DropRun, spec: TableFeature, behaviour: RemovableFeature, before: Protocol) -> DropOutcome:
    history_protection = spec.requires_history_protection
    # 1. Pre-downgrade: disable, then remove the feature's traces.
    behaviour.remove_traces(run)
    try:
        # 2. Barriers: empty commit + checkpoint, three times (history-protected features only).
        #    The checkpoint of step 4 is begun ahead, unpublished: a single file beside the
        #    first barrier's, a multi-part one after it (it copies that one's parts of files).
        if history_protection:
            def prepare() -> None:
                _prepare_downgrade_checkpoint(run, spec, behaviour, NUMBER_OF_BARRIER_CHECKPOINTS - 1)

            for barrier in range(NUMBER_OF_BARRIER_CHECKPOINTS):
                _barrier(run, before_checkpoint=prepare if barrier == 0 else None)
                if barrier == 0:
                    prepare()
        # 3. The downgrade commit, with checkpointProtection and the boundary for HistProt features.
        version, after = _downgrade_commit(run, spec, behaviour, with_checkpoint_protection=history_protection)
        # 4. A checkpoint at the downgrade version; Spark ignores its failure, a rerun completes it.
        if history_protection:
            try:
                run.checkpoint(version)
            except DeltaDowngradeError as exc:
                run.progress(f"checkpoint at the downgrade version failed ({exc}); rerun to complete it")
    finally:
        run.discard_prepared()  # begun and not taken (a failure, a lost race): never published
    return finish(run, before, after, STATUS_DROPPED)


def _prepare_downgrade_checkpoint(run: DropRun, spec: TableFeature, behaviour: RemovableFeature,
                                  barriers_left: int) -> None:
    """Begin the checkpoint at the downgrade version ahead (``DropRun.prepare_checkpoint``): the
    table after the barriers still to come (empty commits) and the downgrade commit as it will
    be if no other writer commits in between. If one does, the checkpoint's version or rows
    differ from the prepared ones and it is written from the log's state as always."""
    if not run.writes:
        return
    # The log as this run's own commits left it, without listing it again: a commit of another
    # writer since then only makes the prepared checkpoint be discarded.
    snapshot = run.log.snapshot(check_read=False)
    before_downgrade = snapshot.with_commits([[]] * barriers_left)
    try:
        actions, _ = _downgrade_actions(before_downgrade, spec, behaviour, with_checkpoint_protection=True,
                                        commit_version=before_downgrade.version + 1)
    except DeltaDowngradeError:
        return  # the downgrade commit refuses it, with the error
    run.prepare_checkpoint(before_downgrade.with_commits([actions]))


def _barrier(run: DropRun, before_checkpoint: Callable[[], None] | None = None) -> None:
    last_error: Exception | None = None
    for _attempt in range(MAX_CHECKPOINT_RETRIES):
        version = run.commit([], "Empty Commit", {}, resolve=rebase_unless_protocol_changed([]))
        if before_checkpoint is not None:
            before_checkpoint()
        try:
            run.checkpoint(version)
            return
        except DeltaDowngradeError as exc:
            last_error = exc
    raise DropCheckpointFailedError(
        f"could not create a barrier checkpoint after {MAX_CHECKPOINT_RETRIES} attempts ({last_error}). "
        f"{run.written_so_far()}", table=run.table, feature=run.feature,
        params={"landedVersions": list(run.commits)})


def _downgrade_actions(snapshot: Snapshot, spec: TableFeature, behaviour: RemovableFeature, *,
                       with_checkpoint_protection: bool, commit_version: int) -> tuple[list[AnyAction], Protocol]:
    protocol = snapshot.protocol
    new_protocol = protocol.downgrade_for_drop(spec.name, checkpoint_protection=with_checkpoint_protection)
    if not protocol.can_downgrade_to(new_protocol, spec.name):
        raise InvalidProtocolDowngradeError(
            f"refusing the protocol transition {protocol} -> {new_protocol} for dropping {spec.name}",
            table=snapshot.table, feature=spec.name)
    updates: dict[str, str | None] = {k: None for k in behaviour.properties_to_remove()}
    if with_checkpoint_protection:
        # The boundary always moves to the latest drop (an earlier value is overwritten).
        updates[BOUNDARY_PROPERTY] = str(commit_version)
    actions: list[AnyAction] = [ProtocolAction.of(new_protocol)]
    metadata: Metadata = snapshot.metadata
    if any(metadata.configuration.get(k) != v for k, v in updates.items()):
        actions.append(metadata.with_configuration(updates))
    actions += behaviour.actions_at_downgrade(snapshot)
    return actions, new_protocol


def _revalidate(snapshot: Snapshot, spec: TableFeature, behaviour: RemovableFeature, concurrent: str | None) -> None:
    traces = behaviour.traces(TraceContext(snapshot))
    if traces:
        where = f" by the concurrent commit {concurrent}" if concurrent else ""
        raise DropConflictError(
            f"traces of {spec.name} were reintroduced{where}: {'; '.join(traces)}. Nothing was "
            f"downgraded; rerun the drop", table=snapshot.table, feature=spec.name,
            params={"feature": spec.name, "concurrentCommit": concurrent or ""})


_FILE_ONLY = (AddFile, RemoveFile, AddCDCFile, CommitInfo, Txn)


def _downgrade_commit(run: DropRun, spec: TableFeature, behaviour: RemovableFeature, *,
                      with_checkpoint_protection: bool) -> tuple[int, Protocol]:
    snapshot = run.latest()
    if not run.writes:
        # Planning: the table after the planned pre-downgrade and barriers; the boundary is the
        # version this commit takes there (Checkpoint Protection RFC).
        actions, after = _downgrade_actions(snapshot, spec, behaviour,
                                            with_checkpoint_protection=with_checkpoint_protection,
                                            commit_version=snapshot.version + 1)
        version = run.commit(actions, "DROP FEATURE", {"featureName": spec.name, "truncateHistory": False})
        return version, after
    run.require_present(snapshot)
    _revalidate(snapshot, spec, behaviour, None)
    actions, after = _downgrade_actions(snapshot, spec, behaviour,
                                        with_checkpoint_protection=with_checkpoint_protection,
                                        commit_version=snapshot.version + 1)

    # Every winner since ``snapshot``, over all retries (each retry's winners follow the last).
    since_read: list[WinningCommit] = []

    def resolve(winners: list[WinningCommit], log: DeltaLog) -> Sequence[AnyAction]:
        # Every concurrent write conflicts with a drop: re-validate against the winner, and move
        # the boundary to the version this commit will now get (Checkpoint Protection RFC: the
        # boundary is the downgrade commit's version). (A winner that dropped the feature itself
        # was handled by the run's guard.)
        since_read.extend(winners)
        described = ", ".join(w.describe() for w in winners)
        if any(w.changes_metadata or w.changes_protocol for w in winners):
            raise DropConflictError(
                f"a concurrent commit ({described}) changed the table's metadata or protocol while "
                f"{spec.name} was being dropped; nothing was downgraded, rerun the drop",
                table=log.table, feature=spec.name, params={"concurrentCommit": described})
        if all(isinstance(a, _FILE_ONLY) for w in winners for a in w.actions):
            # Data-file winners only (blind appends, deletes …): traces can only come back through
            # their files, and protocol and metadata are the ones read. The table read, moved
            # forward over the winners by value: no listing and no replay of the log per retry.
            _revalidate(snapshot.with_commits([w.actions for w in since_read]), spec, behaviour, described)
            rebased, _ = _downgrade_actions(snapshot, spec, behaviour,
                                            with_checkpoint_protection=with_checkpoint_protection,
                                            commit_version=winners[-1].version + 1)
            return rebased
        latest = log.refresh().snapshot(check_read=False)  # domains, …: the full state decides
        _revalidate(latest, spec, behaviour, described)
        rebased, _ = _downgrade_actions(latest, spec, behaviour,
                                        with_checkpoint_protection=with_checkpoint_protection,
                                        commit_version=latest.version + 1)
        return rebased

    version = run.commit(actions, "DROP FEATURE", {"featureName": spec.name, "truncateHistory": False},
                         resolve=resolve, read_version=snapshot.version)
    return version, after


# --- TRUNCATE HISTORY path ------------------------------------------------------------------------

def _retention_params(snapshot: Snapshot, feature: str) -> dict[str, str]:
    config = TableConfig(snapshot.metadata.configuration)
    return {"feature": feature, "logRetentionPeriodKey": "delta.logRetentionDuration",
            "logRetentionPeriod": config.log_retention_display,
            "truncateHistoryLogRetentionPeriod": config.truncate_history_retention_display}


def _wait_time_after(run: DropRun, version: int) -> str:
    """When commits up to ``version`` will have expired under the truncate retention (a minute
    past it, since the cutoff is truncated to the minute)."""
    snapshot = run.latest()
    retention = TableConfig(snapshot.metadata.configuration).truncate_history_retention_ms
    status = run.log.listing(from_version=version).commit_status(version)
    written = status.modification_time_ms if status is not None else run.clock.now_ms()
    return to_utc_iso(((written + retention) // MINUTE_MS + 1) * MINUTE_MS)


def _drop_with_history_truncation(run: DropRun, spec: TableFeature, behaviour: RemovableFeature,
                                  before: Protocol) -> DropOutcome:
    performed = behaviour.remove_traces(run)
    if spec.requires_history_protection:
        empty = run.commit([], "Empty Commit", {}, resolve=rebase_unless_protocol_changed([]))
        run.checkpoint(empty)
        if performed:
            # The plan ends here as the run does: traces removed now, history still uses them.
            snapshot = run.latest()
            params = _retention_params(snapshot, spec.name)
            raise RetentionWaitError(
                f"dropping {spec.name} was partially successful: its traces were removed from the "
                f"current version, but older versions still use it. Rerun after the retention period "
                f"{params['truncateHistoryLogRetentionPeriod']} "
                f"(delta.dropFeatureTruncateHistory.retentionDuration) has passed",
                retry_after=_wait_time_after(run, empty - 1), table=run.table, feature=spec.name,
                params=params)
    snapshot = run.latest()
    if run.writes:
        _revalidate(snapshot, spec, behaviour, None)
    if spec.requires_history_protection:
        config = TableConfig(snapshot.metadata.configuration)
        if not run.writes:
            still_used = _planned_history_uses_feature(run, behaviour, config.truncate_history_retention_ms)
        else:
            from delta_downgrade.operations.cleanup import cleanup_expired_logs

            cleanup_expired_logs(run.log, retention_ms=config.truncate_history_retention_ms,
                                 granularity="minute", clock=run.clock)
            run.log.refresh()
            still_used = history_uses_feature(run.log, behaviour)
        if still_used:
            params = _retention_params(snapshot, spec.name)
            newest = run.log.latest_version()
            raise HistoricalVersionsExistError(
                f"cannot drop {spec.name} yet: retained history still uses it. Rerun after the "
                f"retention period {params['truncateHistoryLogRetentionPeriod']} has passed",
                retry_after=_wait_time_after(run, max(0, newest - 1)), table=run.table,
                feature=spec.name, params=params)
    snapshot = run.latest()
    if run.writes:
        run.require_present(snapshot)
    new_protocol = snapshot.protocol.without_feature(spec.name)
    if not snapshot.protocol.can_downgrade_to(new_protocol, spec.name):
        raise InvalidProtocolDowngradeError(
            f"refusing the protocol transition {snapshot.protocol} -> {new_protocol}", table=run.table)
    actions: list[AnyAction] = [ProtocolAction.of(new_protocol)]
    removals = {k: None for k in behaviour.properties_to_remove() if k in snapshot.metadata.configuration}
    if removals:
        actions.append(snapshot.metadata.with_configuration(removals))
    actions += behaviour.actions_at_downgrade(snapshot)
    run.commit(actions, "DROP FEATURE", {"featureName": spec.name, "truncateHistory": True},
               read_version=snapshot.version)
    return finish(run, before, new_protocol, STATUS_DROPPED)


def history_uses_feature(log: DeltaLog, behaviour: RemovableFeature, since: int | None = None,
                         planned: Sequence[Sequence[AnyAction]] = ()) -> bool:
    """delta-spark's ``historyContainsFeature``: the state at the earliest retained
    checkpoint (without tombstones) or any action of any retained commit uses the feature.
    ``since``: the history as it will start after a planned truncation (None: as it is);
    ``planned``: commits a plan adds after the latest version."""
    earliest = log.earliest_version() if since is None else max(since, log.earliest_version())
    base = log.snapshot(earliest, check_read=False)
    state = base.state()
    if behaviour.action_uses_feature(state.metadata):
        return True
    if any(behaviour.action_uses_feature(f) for f in state.files.values()):
        return True
    if behaviour.checkpoint_uses_feature(base.segment.checkpoint):
        return True
    listing = log.whole_listing()  # every retained commit
    from delta_downgrade.log.read.segment import read_commit_actions

    for version in sorted(listing.commits):
        if since is not None and version < earliest:
            continue  # the cleanup deletes the commits before its checkpoint
        for action in read_commit_actions(log.storage, listing.commits[version]):
            if behaviour.action_uses_feature(action):
                return True
    return any(behaviour.action_uses_feature(a) for actions in planned for a in actions)


def _planned_history_uses_feature(run: DropRun, behaviour: RemovableFeature, retention_ms: int) -> bool:
    """What :func:`history_uses_feature` will answer after the run's cleanup, predicted by the
    plan: the cleanup truncates at the newest checkpoint whose preceding commit is older than
    ``truncate(now - retention)`` (``operations/cleanup.select_cutoff_checkpoint``). The barrier
    checkpoint this plan writes (at the latest planned version) qualifies when the commit before
    it does: an existing commit by its time in the listing, a planned one by the wall clock (a
    commit file's time is when it is written). Otherwise the cleanup of the log as it is decides."""
    import time

    from delta_downgrade.log.read.listing import CheckpointInstance
    from delta_downgrade.operations.cleanup import cutoff_timestamp_ms, monotonic_commit_times, plan_cleanup

    barrier = run.latest()  # the planned empty commit; the barrier checkpoint is at its version
    listing = run.log.whole_listing()
    times = monotonic_commit_times(listing.commits)
    previous = barrier.version - 1
    if previous in times:
        reference = times[previous]
    else:
        reference = max([int(time.time() * 1000), *(t + 1 for t in times.values())])
    if reference <= cutoff_timestamp_ms(run.clock.now_ms(), retention_ms, "minute"):
        # History starts at the barrier checkpoint: its state, and the kind of checkpoint it is.
        kind = "v2" if uses_v2_checkpoint(barrier.protocol, barrier.metadata) else "classic"
        state = barrier.state()
        return (behaviour.action_uses_feature(state.metadata)
                or any(behaviour.action_uses_feature(f) for f in state.files.values())
                or behaviour.checkpoint_uses_feature(CheckpointInstance(barrier.version, kind, ())))
    cleanup = plan_cleanup(run.log, retention_ms=retention_ms, granularity="minute", clock=run.clock)
    since = cleanup.truncates_before if cleanup.allowed else None
    return history_uses_feature(run.log, behaviour, since, run.latest().derived_commits)
