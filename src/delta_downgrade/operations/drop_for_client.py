"""``drop-feature --for CLIENT``: drop every feature that keeps a catalogue client from the table,
in one run, one feature after the other through the single-feature drop (``drop_feature``: its
validation, its plan-then-perform, its fast path with protected checkpoints).

What to drop is the client's verdict on the table as it is now (``compat.verdict.client_verdict``:
the features that block reading, or when it reads, writing; each feature's dependents first).
Everything is decided before the first write: the plan of every drop, each planned on the table
the previous ones leave (``plan_drop(after=)``), so a feature whose drop cannot finish (no Spark
for a rewrite, a property it cannot honour) refuses the whole run with nothing written.

A rerun after a crash recomputes the verdict from the table's current state: features already
dropped no longer block and are skipped, and the half-done one is finished by its own drop, which
is resumable (``operations/drop_feature``).

checkpointProtection, which every fast drop of a history-protected feature adds, is never dropped
here: only ``truncate-history`` after the truncate retention removes it (Checkpoint Protection RFC,
"Dropping the feature"). When it is all that keeps the client from writing, the outcome says so
(``truncate_history_before_write``).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from msgspec import Struct, field
from delta_downgrade.clock import SYSTEM_CLOCK, Clock
from delta_downgrade.compat.catalogue import Client
from delta_downgrade.compat.verdict import Access, ClientVerdict, Verdict, client_verdict, read_verdict, write_verdict
from delta_downgrade.errors import (
    ClientCannotBeUnblockedError, ClientDropIncompleteError, DeltaDowngradeError, naming_table,
)
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.operations.drop_feature import drop_feature, plan_drop
from delta_downgrade.drop.committer import Committer, LogCommitter
from delta_downgrade.drop.plan import DropPlan
from delta_downgrade.drop.run import LOGGER, DropOutcome, DropRun
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol

__all__ = ["ClientDropOutcome", "STATUS_ALREADY_COMPATIBLE", "drop_for_client", "plan_for_client"]

#: Nothing to drop: the client reads (and, if it writes, writes) the table, or only
#: ``truncate-history`` is left before it may write.
STATUS_ALREADY_COMPATIBLE = "already_compatible"

_BLOCKED = (Verdict.NO, Verdict.MISREADS)
_DELETION_VECTORS = "deletionVectors"


class ClientDropOutcome(Struct):
    """The outcome of one ``--for`` run: ``drops`` are the single-feature outcomes in order (a dry
    run: their plans, status ``planned``); ``features_dropped`` the features this run dropped;
    ``verdict`` the client's verdict on the table before the run, ``read_after``/``write_after``
    the verdicts on the table as the run leaves it (a dry run: as planned)."""

    table: str
    client: Client
    status: str
    features_planned: list[str]
    protocol_before: Protocol
    protocol_after: Protocol
    verdict: ClientVerdict
    read_after: Access
    write_after: Access
    drops: list[DropOutcome] = field(default_factory=list)
    plans: list[DropPlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: With no drop in this run: the table's checkpoint protection as it is (a rerun of a
    #: finished run says what the run that finished said).
    boundary_version: int | None = None
    protected_checkpoints: list[str] = field(default_factory=list)
    truncate_after: str | None = None

    @property
    def features_dropped(self) -> list[str]:
        return [d.feature for d in self.drops if d.status == "dropped"]

    @property
    def truncate_history_before_write(self) -> bool:
        """Only checkpointProtection keeps the client from writing: ``truncate-history`` (after
        the truncate retention) completes the job."""
        return self.write_after.blocked_only_by_checkpoint_protection


class _ClientPlan(Struct, frozen=True):
    verdict: ClientVerdict
    features: list[str]
    plans: list[DropPlan]
    notes: list[str]


def _features_to_drop(table: str, client: Client, verdict: ClientVerdict) -> tuple[list[str], list[str]]:
    """The features to drop, in order, and notes; or the refusal (nothing written yet)."""
    read, write = verdict.read, verdict.write
    plan = verdict.plan
    notes: list[str] = []
    if plan is None:
        if read.verdict in _BLOCKED:
            raise _cannot(table, client, [b.reason for b in read.blockers],
                          "what blocks it is not a table feature, so no drop removes it")
        if read.verdict is Verdict.UNKNOWN:
            raise _cannot(table, client, list(read.notes),
                          "the catalogue does not know whether this client reads the table; "
                          "nothing is dropped on a guess")
        if write.verdict is Verdict.NO:
            # A writer-version blocker no feature owns (legacy writer versions 3-6 refused).
            raise _cannot(table, client, [b.reason for b in write.blockers],
                          f"{client.id} reads the table already; what keeps it from writing is not "
                          "a table feature, so no drop removes it")
        if write.verdict is Verdict.UNKNOWN:
            notes.append(f"the catalogue does not know whether {client.id} can write this table")
        return [], notes
    if plan.undroppable:
        raise _cannot(table, client, [f"{u.feature}: {u.reason}" for u in plan.undroppable],
                      "a feature that blocks it cannot be dropped")
    unowned = [n for n in plan.notes if n.startswith("no feature drop removes")]
    if unowned:
        raise _cannot(table, client, unowned, "a blocker is not a table feature")
    features = [s.feature for s in plan.steps if s.feature != CHECKPOINT_PROTECTION]
    if len(features) < len(plan.steps):
        notes.append("checkpointProtection is dropped by truncate-history once its retention has passed, "
                     "not by this run")
    return features, notes


def _cannot(table: str, client: Client, reasons: list[str], summary: str) -> ClientCannotBeUnblockedError:
    listed = "; ".join(reasons) if reasons else "no reason given by the catalogue"
    return ClientCannotBeUnblockedError(
        f"cannot make {table} usable by {client.id} ({client.name}) by dropping features: {summary} "
        f"({listed}). Nothing was written. `delta-downgrade compat {table} --client {client.id}` "
        f"shows the verdict and its sources", table=table,
        params={"client": client.id, "reasons": reasons})


def _incomplete(table: str, client: Client, done: list[str], failed: str,
                exc: DeltaDowngradeError) -> ClientDropIncompleteError:
    return ClientDropIncompleteError(
        f"dropping {failed} for {client.id} failed after this run dropped {', '.join(done)} (they stay "
        f"dropped, the table is consistent): [{exc.error_class}] {exc.message}. Fix that, then rerun "
        f"`drop-feature {table} --for {client.id}`: it continues with what is left", table=table,
        feature=failed, params={"client": client.id, "features_dropped": done, "cause_error_class": exc.error_class,
                                "cause_exit_code": exc.exit_code})


#: How many times the verdict is taken again on the planned table: each round drops what blocks
#: reading, then what blocks writing once the client reads (a round that finds nothing ends it).
MAX_PLAN_ROUNDS = 4


@naming_table("location")
def plan_for_client(location: str, client: Client, *, clock: Clock = SYSTEM_CLOCK,
                    rewrites: Mapping[str, Callable[[DropRun], Any]] | None = None,
                    log: DeltaLog | None = None, checkpoint_engine: str | None = None,
                    storage_options: Mapping[str, str] | None = None) -> _ClientPlan:
    """The client's verdict on the latest version and the plan of every drop that unblocks it,
    each planned on the table the previous ones leave. Raises the refusal of any of them (or
    :class:`ClientCannotBeUnblockedError`) before anything is written.

    The verdict is taken again on the table the plan leaves, until nothing more is to drop: a
    client that cannot read the table is not asked about writing it (a writer must read first),
    so the features that block its writes show only once the read blockers are planned away. Those
    are planned in the same run, so that a rerun of a run that finished finds nothing to do.
    Once the client reads (now, or on the planned table), what keeps it from writing and cannot
    be dropped (a feature no drop removes, or one whose drop refuses, e.g. checkConstraints while
    a constraint exists) is a note, not a refusal: the run's outcome is the same whether the read
    blockers were dropped by this run or an earlier one."""
    log = log or DeltaLog(location, storage_options=storage_options)
    snapshot = log.snapshot()
    verdict = client_verdict(client, snapshot.protocol, snapshot.schema)
    features: list[str] = []
    plans: list[DropPlan] = []
    notes: list[str] = []
    current = verdict
    for _round in range(MAX_PLAN_ROUNDS):
        reads = current.read.verdict is Verdict.YES
        try:
            found, found_notes = _features_to_drop(log.table, client, current)
            found = [name for name in found if name not in features]
            # Fast path only: the TRUNCATE HISTORY path waits between its phases, which one run
            # dropping several features cannot do.
            found_plans: list[DropPlan] = []
            for name in found:
                found_plans.append(plan_drop(location, name, clock=clock, rewrites=rewrites, log=log,
                                             checkpoint_engine=checkpoint_engine,
                                             after=(found_plans or plans)[-1] if (found_plans or plans) else None))
        except DeltaDowngradeError as exc:
            if not reads or exc.exit_code != 2:
                raise
            # The client reads: what is left blocks writing only, and no drop removes it now.
            notes.append(f"{client.id} reads the table; writing stays blocked and this run does not "
                         f"unblock it: [{exc.error_class}] {exc.message}")
            break
        notes += [n for n in found_notes if n not in notes]
        if not found:
            break
        features += found
        plans += found_plans
        after = plans[-1].snapshot_after
        if after is None:
            break
        current = client_verdict(client, after.protocol, after.schema)
    _refuse_undeclared_deletion_vectors(log, snapshot, client)
    return _ClientPlan(verdict, features, plans, notes)


def _refuse_undeclared_deletion_vectors(log: DeltaLog, snapshot: Snapshot, client: Client) -> None:
    """Live files that carry deletion vectors under a protocol without ``deletionVectors`` (a
    writer broke PROTOCOL.md "Deletion Vectors": a file action may name one only when the table
    supports the feature). The verdict, taken on the protocol, would say that a client without
    deletion vectors reads the table, and it would return the rows they delete. Checked on the
    file state only for such a client and a table without the feature: with it, the verdict
    judges the client and the feature's drop purges the vectors; without it, no drop can (the
    deletionVectors drop refuses an absent feature), so the run is refused before its first
    write."""
    from delta_downgrade.features.base import TraceContext

    if _DELETION_VECTORS in snapshot.protocol.features:
        return
    supported = client.read_features()
    if supported is not None and _DELETION_VECTORS in supported:
        return
    files, rows = TraceContext(snapshot).deletion_vector_counts()
    if not files:
        return
    feature = _DELETION_VECTORS
    applies = "does not apply" if supported is not None else "is not known to apply"
    raise ClientCannotBeUnblockedError(
        f"cannot make {log.table} usable by {client.id} ({client.name}): {files} live file(s) carry deletion "
        f"vectors ({rows} deleted rows), but the protocol {snapshot.protocol} does not list the {feature} "
        f"feature, which PROTOCOL.md \"Deletion Vectors\" requires of a table whose files name one; "
        f"{client.id} {applies} deletion vectors, and without them returns the deleted rows. Nothing was "
        f"written. Declare the feature with a Delta writer (ALTER TABLE ... SET TBLPROPERTIES "
        f"('delta.feature.{feature}' = 'supported')), then run `drop-feature {log.table} --for {client.id}` "
        f"again: its drop of {feature} purges the vectors", table=log.table,
        params={"client": client.id, "reasons": [f"{files} live file(s) carry deletion vectors without the "
                                                 f"{feature} feature"]})


@naming_table("location")
def drop_for_client(location: str, client: Client, *, committer: Committer | None = None,
                    clock: Clock = SYSTEM_CLOCK,
                    rewrites: Mapping[str, Callable[[DropRun], Any]] | None = None,
                    checkpoint_engine: str | None = None,
                    storage_options: Mapping[str, str] | None = None) -> ClientDropOutcome:
    """Drop the features that keep ``client`` from the table at ``location`` (see the module
    docstring). Raises ClientCannotBeUnblockedError or a drop's refusal (exit 2) before the first
    write. A failure after some features of this run were dropped (a write conflict, a lost
    Spark session) is ClientDropIncompleteError (exit 1, the cause in
    its params): the features dropped so far stay dropped, and a rerun continues from there.
    ``committer``: None or a ``LogCommitter`` drops; a ``PlanRecorder`` (``--dry-run``) plans
    every drop and writes nothing (``drop/committer.py``)."""
    committer = committer or LogCommitter()
    log = DeltaLog(location, storage_options=storage_options)
    planned = plan_for_client(location, client, clock=clock, rewrites=rewrites, log=log,
                              checkpoint_engine=checkpoint_engine)
    verdict = planned.verdict
    before = log.snapshot().protocol
    notes = list(planned.notes)
    if not planned.features:
        outcome = ClientDropOutcome(log.table, client, STATUS_ALREADY_COMPATIBLE, [], before, before, verdict,
                                    verdict.read, verdict.write, notes=notes)
        if CHECKPOINT_PROTECTION in before.features:
            from delta_downgrade.clock import to_utc_iso
            from delta_downgrade.drop.run import protected_checkpoint_paths
            from delta_downgrade.operations.drop_outcome import truncate_after_ms

            outcome.boundary_version = log.snapshot().boundary_version
            outcome.protected_checkpoints = protected_checkpoint_paths(log, outcome.boundary_version)
            when = (truncate_after_ms(log, outcome.boundary_version, clock)
                    if outcome.boundary_version is not None else None)
            outcome.truncate_after = to_utc_iso(when) if when is not None else None
        return outcome
    drops: list[DropOutcome] = []
    if not committer.writes:
        for plan in planned.plans:
            # The plan already made, told as a single drop's dry run tells its steps.
            LOGGER.info("drop %s:", plan.feature, extra={"table": log.table})
            for message in plan.messages:
                LOGGER.info("  %s", message, extra={"table": log.table})
            drops.append(_planned_outcome(log, plan, [step for p in planned.plans for step in p.steps], clock))
        table_after = planned.plans[-1].snapshot_after or log.snapshot()
        dropped = list(planned.features)  # their field metadata goes with them (typeChanges)
    else:
        for name in planned.features:
            # A fresh log per drop: each plans again on the table the previous one left, and
            # performs its plan (the chained plan above was the check before the first write).
            try:
                drops.append(drop_feature(location, name, committer=committer, clock=clock, rewrites=rewrites,
                                          checkpoint_engine=checkpoint_engine, storage_options=storage_options))
            except DeltaDowngradeError as exc:
                done = [d.feature for d in drops if d.status == "dropped"]
                if not done:
                    raise  # nothing of this run written before it: the drop's own error and exit code
                raise _incomplete(log.table, client, done, name, exc) from exc
        table_after = DeltaLog(location, storage_options=storage_options).snapshot(check_read=False)
        dropped = []  # the verdict on the table as written, nothing assumed
    after = _verdict_after(client, table_after.protocol, table_after.schema, dropped)
    if after.read.verdict in _BLOCKED:
        notes.append(f"{client.id} still cannot read the table: "
                     + "; ".join(b.reason for b in after.read.blockers))
    elif after.write.verdict is Verdict.NO and not after.write.blocked_only_by_checkpoint_protection:
        notes.append(f"{client.id} reads the table now; writing stays blocked: "
                     + "; ".join(b.reason for b in after.write.blockers))
    return ClientDropOutcome(log.table, client, "dropped" if committer.writes else "planned", list(planned.features),
                             before, table_after.protocol, verdict, after.read, after.write, drops,
                             list(planned.plans), notes)


def _verdict_after(client: Client, protocol: Protocol, schema: Any, dropped: list[str]) -> ClientVerdict:
    return ClientVerdict(client, read_verdict(client, protocol, schema, dropped=dropped),
                         write_verdict(client, protocol, schema, dropped=dropped))


def _planned_outcome(log: DeltaLog, plan: DropPlan, steps: list, clock: Clock) -> DropOutcome:
    """A drop of the chain as planned, with the boundary its plan leaves and the checkpoints that
    boundary will protect (among those that exist and those the chain's ``steps`` write)."""
    from delta_downgrade.drop.run import STATUS_PLANNED
    from delta_downgrade.operations.drop_outcome import planned_protected_checkpoints, planned_truncate_after

    after = plan.snapshot_after
    boundary = (after.boundary_version if after is not None and CHECKPOINT_PROTECTION in after.protocol.features
                else None)
    return DropOutcome(plan.table, plan.feature, STATUS_PLANNED, plan.protocol_before, plan.protocol_after,
                       boundary, planned_protected_checkpoints(log, steps, boundary), [], [],
                       planned_truncate_after(after, boundary, clock) if after is not None else None,
                       plan=list(plan.messages), planned=list(plan.steps))
