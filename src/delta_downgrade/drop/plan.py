"""What a drop will write, decided before its first write: :class:`DropStep` (one commit, one
checkpoint, or the truncation of history), :class:`DropPlan` (the ordered steps and how the drop
ends), and :class:`PlannedSnapshot`, the table as it will be after the steps planned so far.

The plan is made by running the drop's own procedure (``operations/drop_feature``: the feature's
pre-downgrade on its feature object, the barriers, the downgrade commit, the TRUNCATE HISTORY and
checkpointProtection paths) on a planning :class:`~delta_downgrade.drop.run.DropRun`:
each commit it would write is applied to a :class:`PlannedSnapshot` instead of the log, so that a
step that depends on an earlier one sees its effect — the Deletion Vector Tombstones commit is
decided from the removes the purge will write (PROTOCOL.md "Deletion Vectors", delta-spark's
``DeletionVectorsPreDowngradeCommand``), a checkpoint's kind from the policy the pre-downgrade
leaves (PROTOCOL.md "V2 Checkpoint Table Feature"), the boundary from the downgrade commit's own
version (Checkpoint Protection RFC). ``--dry-run`` reports that plan; the real run makes the same
plan first (its refusals come before the first write), then performs each step and reports what
it planned next to what it wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from delta_downgrade.log.replay.reconcile import TableState
from delta_downgrade.log.read.segment import LogSegment
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol.actions import (
    AddCDCFile, AddFile, AnyAction, DomainMetadata, Metadata, ProtocolAction, RemoveFile, Txn,
)

if TYPE_CHECKING:
    from delta_downgrade.errors import DeltaDowngradeError
    from delta_downgrade.log.replay.arrow_replay import ArrowState
    from delta_downgrade.protocol import Protocol

COMMIT, CHECKPOINT, TRUNCATE = "commit", "checkpoint", "truncate"


@dataclass(frozen=True)
class DropStep:
    """One step of a drop: a commit (``detail`` is ``commitInfo.operation``), a checkpoint
    (``detail`` is its kind, ``classic`` or ``v2``; a multi-part checkpoint is classic), or the
    truncation of the history before ``version`` (``detail`` empty)."""

    kind: str
    version: int
    detail: str = ""

    def describe(self) -> str:
        if self.kind == COMMIT:
            return f"v{self.version} {self.detail}"
        if self.kind == CHECKPOINT:
            return f"checkpoint at v{self.version}" + (" (v2)" if self.detail == "v2" else "")
        return f"truncate history before v{self.version}"


def describe_steps(steps: Sequence[DropStep]) -> str:
    return ", ".join(s.describe() for s in steps) or "no step"


@dataclass
class DropPlan:
    """Every step a drop will take, in order, and how it ends: ``ending`` is the wait the drop
    ends with after its steps (a :class:`~delta_downgrade.errors.RetentionWaitError`, exit 3:
    the TRUNCATE HISTORY path's first run, checkpointProtection before its retention), None when
    it drops the feature."""

    table: str
    feature: str
    steps: list[DropStep]
    protocol_before: "Protocol"
    protocol_after: "Protocol"
    ending: "DeltaDowngradeError | None" = None
    messages: list[str] = field(default_factory=list)
    #: The table after the planned steps (a :class:`PlannedSnapshot` when a commit is planned):
    #: where the next drop of a chain is planned from (``plan_drop(after=)``).
    snapshot_after: "Snapshot | None" = None

    @property
    def commits(self) -> list[DropStep]:
        return [s for s in self.steps if s.kind == COMMIT]

    @property
    def checkpoints(self) -> list[DropStep]:
        return [s for s in self.steps if s.kind == CHECKPOINT]


_FILE_ACTIONS = (AddFile, RemoveFile, AddCDCFile)


class PlannedSnapshot(Snapshot):
    """``base`` with one more commit of ``actions`` that exists only in the plan: version, protocol,
    metadata and the reconciled state (PROTOCOL.md "Action Reconciliation", the same
    ``TableState.apply_commit`` as a derived snapshot) are those the commit leaves. A chain of
    them is the table after every step planned so far. Commit files and timestamps of planned
    versions do not exist: nothing asks for them while planning."""

    def __init__(self, base: Snapshot, actions: Sequence[AnyAction]) -> None:
        version = base.version + 1
        super().__init__(base.storage, base.table, LogSegment(version, base.segment.checkpoint, ()))
        self._planned_base = base
        self._actions = list(actions)
        protocol = next((a for a in reversed(self._actions) if isinstance(a, ProtocolAction)), None)
        metadata = next((a for a in reversed(self._actions) if isinstance(a, Metadata)), None)
        # The cached property of Snapshot, set once: no commit file is read for a planned version.
        self.__dict__["_protocol_and_metadata"] = (protocol or base.protocol_action, metadata or base.metadata)

    @property
    def planned_actions(self) -> list[AnyAction]:
        return list(self._actions)

    def _derived_state(self) -> TableState:
        # The nearest snapshot of the chain with a state (or the read one), copied once, and
        # every planned commit after it applied in order: a plan of many purge batches costs
        # one copy of the file state, not one per batch.
        chain: list[PlannedSnapshot] = [self]
        base = self._planned_base
        while isinstance(base, PlannedSnapshot) and base._state is None:
            chain.append(base)
            base = base._planned_base
        state = base.state()
        for planned in reversed(chain):
            state.apply_commit(planned._actions)
        protocol, metadata = self._protocol_and_metadata
        state.version = self.version
        state.protocol_action, state.metadata = protocol, metadata
        return state

    def _derived_arrow(self) -> "ArrowState | None":
        if self._arrow is not None:
            return self._arrow
        if any(isinstance(a, _FILE_ACTIONS) for a in self._actions):
            return None  # built from the planned state (_replayed_arrow)
        known = self._planned_base.arrow_state()
        txns = {t.appId: t for t in known.txns}
        domains = {d.domain: d for d in known.domains}
        for action in self._actions:
            if isinstance(action, Txn):
                txns[action.appId] = action
            elif isinstance(action, DomainMetadata):
                domains[action.domain] = action
        protocol, metadata = self._protocol_and_metadata
        return known.advanced(self.version, protocol, metadata, list(txns.values()), list(domains.values()))

    def _replayed_arrow(self) -> "ArrowState":
        from delta_downgrade.log.replay.arrow_replay import arrow_state_of

        return arrow_state_of(self.state())

    def domain(self, name: str) -> DomainMetadata | None:
        found = self.state().domains.get(name)
        return found if found is not None and not found.removed else None

    def commit_info(self, version: int | None = None) -> None:
        return None


__all__ = ["CHECKPOINT", "COMMIT", "TRUNCATE", "DropPlan", "DropStep", "PlannedSnapshot", "describe_steps"]
