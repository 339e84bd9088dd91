"""How a drop run ends: :func:`finish` turns a :class:`~delta_downgrade.drop.run.DropRun` into its
:class:`~delta_downgrade.drop.run.DropOutcome`, with the values the outcome reports - the
boundary, the checkpoints it protects, and when the history before the boundary may be truncated.
That last answer is the cleanup's (rule (c) of the Checkpoint Protection RFC,
:func:`~delta_downgrade.operations.cleanup.earliest_truncation_time_ms`), which is why this lives
above ``drop/``, beside the operations that end a run (``drop_feature``, ``truncate``)."""

from __future__ import annotations

from typing import Sequence

from delta_downgrade.clock import Clock, to_utc_iso
from delta_downgrade.drop.plan import CHECKPOINT, DropStep, describe_steps
from delta_downgrade.drop.run import (
    NUMBER_OF_BARRIER_CHECKPOINTS, STATUS_PLANNED, DropOutcome, DropRun, protected_checkpoint_paths,
)
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.operations.cleanup import earliest_truncation_time_ms
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from delta_downgrade.protocol.table_config import MINUTE_MS, TableConfig


def truncate_after_ms(log: DeltaLog, boundary: int, clock: Clock) -> int | None:
    """When history before ``boundary`` can be truncated in one go (the truncate retention)."""
    retention = TableConfig(log.snapshot(check_read=False).metadata.configuration).truncate_history_retention_ms
    return earliest_truncation_time_ms(log, boundary, retention, "minute")


def planned_checkpoint_path(step: DropStep) -> str:
    """The file a planned checkpoint step will write: a classic checkpoint's name is its version;
    a V2 checkpoint's holds a UUID chosen when it is written, shown as ``<uuid>`` (PROTOCOL.md
    "V2 Spec": ``n.checkpoint.u.parquet``)."""
    if step.detail == "v2":
        return f"_delta_log/{step.version:020d}.checkpoint.<uuid>.parquet"
    return f"_delta_log/{step.version:020d}.checkpoint.parquet"


def planned_protected_checkpoints(log: DeltaLog, steps: Sequence[DropStep], boundary: int | None) -> list[str]:
    """What :func:`protected_checkpoint_paths` will say once the plan is written: the newest
    ``NUMBER_OF_BARRIER_CHECKPOINTS + 1`` checkpoints at or below the boundary, among those that
    exist and those the plan writes (a planned V2 checkpoint without its sidecars, not yet named)."""
    if boundary is None:
        return []
    by_version: dict[int, list[str]] = {}
    planned = {step.version for step in steps if step.kind == CHECKPOINT and step.version <= boundary}
    # the planned ones come after every existing one: only the newest existing ones that can
    # still be among those chosen are looked up (a listing from _last_checkpoint serves when it
    # holds that many: LogListing.newest_checkpoints)
    wanted = NUMBER_OF_BARRIER_CHECKPOINTS + 1 - len(planned)
    newest = log.listing().newest_checkpoints(boundary, wanted)
    if newest is None:  # the listed tail holds fewer: older checkpoints count
        newest = log.whole_listing().newest_checkpoints(boundary, wanted) or []
    for c in newest:
        by_version.setdefault(c.version, list(c.paths))
    for step in steps:
        if step.kind == CHECKPOINT and step.version <= boundary:
            by_version[step.version] = [planned_checkpoint_path(step)]
    chosen = sorted(by_version)[-(NUMBER_OF_BARRIER_CHECKPOINTS + 1):]
    return [path for version in chosen for path in by_version[version]]


def planned_truncate_after(planned: Snapshot, boundary: int | None, clock: Clock) -> str | None:
    """When a planned boundary's history may be truncated: the truncate retention from now (the
    boundary commit is written no earlier), to the minute as for a written boundary."""
    if boundary is None:
        return None
    retention = TableConfig(planned.metadata.configuration).truncate_history_retention_ms
    return to_utc_iso(-(-clock.now_ms() // MINUTE_MS) * MINUTE_MS + retention)


def finish(run: DropRun, before: Protocol, after: Protocol, status: str) -> DropOutcome:
    if not run.writes:
        # The planned outcome carries the planned values: the boundary the plan's downgrade commit
        # sets, the checkpoints it protects, and when the truncation may follow (counted from now,
        # the earliest the boundary commit can be written).
        planned = run.latest()
        boundary = planned.boundary_version if CHECKPOINT_PROTECTION in planned.protocol.features else None
        truncate_after = planned_truncate_after(planned, boundary, run.clock)
        return DropOutcome(run.table, run.feature, STATUS_PLANNED, before, after, boundary,
                           planned_protected_checkpoints(run.log, run.steps, boundary), [], [], truncate_after,
                           plan=list(run.plan), planned=list(run.steps))
    snapshot = run.latest()
    boundary = snapshot.boundary_version if CHECKPOINT_PROTECTION in snapshot.protocol.features else None
    truncate_after = None
    if boundary is not None:
        when = truncate_after_ms(run.log, boundary, run.clock)
        truncate_after = to_utc_iso(when) if when is not None else None
    deviation = run.deviation
    if deviation is None and run.expected is not None and len(run.steps) != len(run.expected):
        deviation = (f"the run wrote {len(run.steps)} step(s) where the plan had {len(run.expected)}: "
                     f"planned {describe_steps(run.expected)}; wrote {describe_steps(run.steps)}")
        run.progress(deviation)
    return DropOutcome(run.table, run.feature, status, before, snapshot.protocol, boundary,
                       protected_checkpoint_paths(run.log, boundary, own_writes_only=True,
                                                  written=run.written_checkpoint_files), list(run.commits),
                       list(run.checkpoints), truncate_after, plan=list(run.plan),
                       planned=list(run.expected or []), written=list(run.steps), deviation=deviation)
