"""What a drop will write, decided before its first write: :class:`DropStep` (one commit, one
checkpoint, or the truncation of history) and :class:`DropPlan` (the ordered steps and how the
drop ends).

The plan is made by running the drop's own procedure (``operations/drop_feature``: the feature's
pre-downgrade on its feature object, the barriers, the downgrade commit, the TRUNCATE HISTORY and
checkpointProtection paths) on a planning :class:`~delta_downgrade.drop.run.DropRun`: each
commit it would write is applied to the planned table (``Snapshot.with_commits``) instead of the
log, so that a step that depends on an earlier one sees its effect — the Deletion Vector
Tombstones commit is decided from the removes the purge will write (PROTOCOL.md "Deletion
Vectors", delta-spark's ``DeletionVectorsPreDowngradeCommand``), a checkpoint's kind from the
policy the pre-downgrade leaves (PROTOCOL.md "V2 Checkpoint Table Feature"), the boundary from
the downgrade commit's own version (Checkpoint Protection RFC). ``--dry-run`` reports that plan;
the real run makes the same plan first (its refusals come before the first write), then performs
each step and reports what it planned next to what it wrote.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from msgspec import Struct, field

if TYPE_CHECKING:
    from delta_downgrade.errors import DeltaDowngradeError
    from delta_downgrade.log.snapshot import Snapshot
    from delta_downgrade.protocol import Protocol

COMMIT, CHECKPOINT, TRUNCATE = "commit", "checkpoint", "truncate"


class DropStep(Struct, frozen=True):
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


class DropPlan(Struct):
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
    #: The table after the planned steps (``Snapshot.with_commits`` when a commit is planned):
    #: where the next drop of a chain is planned from (``plan_drop(after=)``).
    snapshot_after: "Snapshot | None" = None

    @property
    def commits(self) -> list[DropStep]:
        return [s for s in self.steps if s.kind == COMMIT]

    @property
    def checkpoints(self) -> list[DropStep]:
        return [s for s in self.steps if s.kind == CHECKPOINT]


__all__ = ["CHECKPOINT", "COMMIT", "TRUNCATE", "DropPlan", "DropStep", "describe_steps"]
