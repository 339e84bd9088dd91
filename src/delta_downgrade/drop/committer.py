"""Where a drop's steps go: the seam between the drop's procedure (``operations/drop_feature``,
the features' pre-downgrades, the rewrites) and the log. The procedure is the same for a plan and
for a real run; only the committer a :class:`~delta_downgrade.drop.run.DropRun` holds differs.

- :class:`LogCommitter` writes: each commit through :func:`delta_downgrade.log.commit.commit`
  (put-if-absent, the step's conflict resolver), each checkpoint through the checkpoint engine.
- :class:`PlanRecorder` writes nothing: each commit is applied to the planned table
  (``Snapshot.with_commits``), so that a later step is decided on the table the earlier ones
  leave, and each checkpoint is noted with the kind the planned version's policy gives
  (PROTOCOL.md "V2 Checkpoint Table Feature"). Its steps are what ``--dry-run`` prints, and the
  plan a real run follows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Mapping, Sequence

from msgspec import Struct
from delta_downgrade.clock import Clock
from delta_downgrade.drop.plan import CHECKPOINT, COMMIT, DropStep
from delta_downgrade.log.checkpoint.engine import prepare_checkpoint, write_checkpoint
from delta_downgrade.log.checkpoint.on_driver import discard_prepared_checkpoint, uses_v2_checkpoint
from delta_downgrade.log.commit import ConflictResolver, commit
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol.actions import AnyAction


class Taken(Struct, frozen=True):
    """One step as a committer took it: the step, the line that tells it, and the files it wrote
    (a checkpoint's; none for a commit or a planned step)."""

    step: DropStep
    message: str
    paths: tuple[str, ...] = ()


class Committer(ABC):
    """Takes a drop's steps: :meth:`commit` and :meth:`checkpoint`, on top of :meth:`latest`."""

    #: Whether the steps land in the table (False: a plan; nothing is written, no data file either).
    writes: ClassVar[bool]

    @abstractmethod
    def latest(self, log: DeltaLog) -> Snapshot:
        """The table the next step goes on top of."""

    @abstractmethod
    def commit(self, log: DeltaLog, actions: Sequence[AnyAction], *, operation: str,
               parameters: Mapping[str, object], resolve: ConflictResolver, read_version: int | None,
               clock: Clock, row_tracking_preserved: bool) -> Taken:
        """One commit of ``actions``: ``read_version`` is the version they were derived from (None:
        they depend on nothing and go on top of the latest version); ``resolve`` decides a lost
        race."""

    @abstractmethod
    def checkpoint(self, log: DeltaLog, version: int | None, *, engine: str | None, clock: Clock) -> Taken:
        """One checkpoint at ``version`` (None: the latest)."""

    @abstractmethod
    def prepare_checkpoint(self, log: DeltaLog, expected: Snapshot, *, engine: str | None, clock: Clock) -> None:
        """The checkpoint of ``expected`` (the table after steps still to come) begun ahead of
        them, where that saves time (:mod:`delta_downgrade.log.checkpoint.prepared`); not a step."""

    @abstractmethod
    def discard_prepared(self, log: DeltaLog) -> None:
        """A checkpoint :meth:`prepare_checkpoint` began and no step took, discarded."""


class LogCommitter(Committer):
    """Every step written to the table's log."""

    writes = True

    def latest(self, log: DeltaLog) -> Snapshot:
        log.refresh(Refresh.NEW_COMMITS)
        return log.snapshot(check_read=False)

    def commit(self, log: DeltaLog, actions: Sequence[AnyAction], *, operation: str,
               parameters: Mapping[str, object], resolve: ConflictResolver, read_version: int | None,
               clock: Clock, row_tracking_preserved: bool) -> Taken:
        if read_version is None:
            read_version = log.refresh(Refresh.NEW_COMMITS).latest_version()
        version = commit(log, read_version, actions, operation=operation, operation_parameters=parameters,
                         clock=clock, resolve_conflict=resolve, row_tracking_preserved=row_tracking_preserved)
        return Taken(DropStep(COMMIT, version, operation), f"committed v{version}: {operation}")

    def checkpoint(self, log: DeltaLog, version: int | None, *, engine: str | None, clock: Clock) -> Taken:
        result = write_checkpoint(log, version, engine=engine, clock=clock)
        v2 = result.checkpoint_kind == "v2"
        return Taken(DropStep(CHECKPOINT, result.version, "v2" if v2 else "classic"),
                     f"checkpoint at v{result.version}" + (" (v2)" if v2 else "") + f": {', '.join(result.paths)}",
                     tuple(result.paths))

    def prepare_checkpoint(self, log: DeltaLog, expected: Snapshot, *, engine: str | None, clock: Clock) -> None:
        prepare_checkpoint(log, expected, engine=engine, clock=clock)

    def discard_prepared(self, log: DeltaLog) -> None:
        discard_prepared_checkpoint(log)


class PlanRecorder(Committer):
    """Every step recorded on the planned table, nothing written. ``start``: the table the plan
    begins from (the snapshot the drop was validated on, or the table an earlier plan leaves);
    None: the latest version."""

    writes = False

    def __init__(self, start: Snapshot | None = None) -> None:
        self.planned = start

    def latest(self, log: DeltaLog) -> Snapshot:
        if self.planned is None:
            log.refresh(Refresh.NEW_COMMITS)
            return log.snapshot(check_read=False)
        return self.planned

    def commit(self, log: DeltaLog, actions: Sequence[AnyAction], *, operation: str,
               parameters: Mapping[str, object], resolve: ConflictResolver, read_version: int | None,
               clock: Clock, row_tracking_preserved: bool) -> Taken:
        self.planned = self.latest(log).with_commits([actions])
        version = self.planned.version
        return Taken(DropStep(COMMIT, version, operation), f"commit v{version}: {operation} ({len(actions)} action(s))")

    def checkpoint(self, log: DeltaLog, version: int | None, *, engine: str | None, clock: Clock) -> Taken:
        latest = self.latest(log)
        target = version if version is not None else latest.version
        v2 = uses_v2_checkpoint(latest.protocol, latest.metadata)
        return Taken(DropStep(CHECKPOINT, target, "v2" if v2 else "classic"),
                     f"checkpoint at v{target}" + (" (v2)" if v2 else ""))

    def prepare_checkpoint(self, log: DeltaLog, expected: Snapshot, *, engine: str | None, clock: Clock) -> None:
        """Nothing: a plan writes no checkpoint."""

    def discard_prepared(self, log: DeltaLog) -> None:
        """Nothing: a plan prepares none."""


__all__ = ["Committer", "LogCommitter", "PlanRecorder", "Taken"]
