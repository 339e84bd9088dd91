"""Dropping ``checkpointProtection``: truncate all history before the boundary in one go, unset
the boundary, remove the feature (Checkpoint Protection RFC, "Dropping the feature"; what
``truncate_task`` runs).

Stricter than delta-spark in one way: while the retention has not passed, nothing is written
(delta-spark adds an empty commit and a checkpoint on every attempt). A checkpoint at or after
the boundary is the only thing truncation needs, and the fast drop already wrote one; only when
none exists does this write an empty commit and a checkpoint, so that a later run can succeed.
"""

from __future__ import annotations

from delta_downgrade.protocol.actions import ProtocolAction
from delta_downgrade.clock import to_utc_iso
from delta_downgrade.errors import (
    CheckpointProtectionTruncationBlockedError, CheckpointProtectionWaitError, InvalidProtocolDowngradeError,
    RetentionWaitError,
)
from delta_downgrade.log.checkpoint.on_driver import check_checkpoint_writable
from delta_downgrade.log.format.file_names import SIDECAR_DIR
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY
from delta_downgrade.drop.run import STATUS_DROPPED, DropOutcome, DropRun
from delta_downgrade.operations.drop_outcome import finish
from delta_downgrade.operations.cleanup import (
    damaged_checkpoints_from, earliest_truncation_time_ms, execute_cleanup, history_truncated_before,
    plan_cleanup,
)
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from delta_downgrade.protocol.table_config import TableConfig


def _wait(run: DropRun, boundary: int, retention_display: str, when_ms: int | None) -> RetentionWaitError:
    when = to_utc_iso(when_ms) if when_ms is not None else None
    return CheckpointProtectionWaitError(
        f"history before the checkpoint-protection boundary (version {boundary}) cannot be truncated "
        f"yet: delta.dropFeatureTruncateHistory.retentionDuration ({retention_display}) has not passed"
        + (f"; rerun after {when}" if when else ""),
        retry_after=when, table=run.table, feature=CHECKPOINT_PROTECTION,
        params={"truncateHistoryLogRetentionPeriod": retention_display})


def drop_checkpoint_protection(run: DropRun, before: Protocol) -> DropOutcome:
    snapshot = run.latest()
    boundary = snapshot.boundary_version or 0
    config = TableConfig(snapshot.metadata.configuration)
    retention = config.truncate_history_retention_ms
    display = config.truncate_history_retention_display

    if not history_truncated_before(run.log, boundary):
        plan = plan_cleanup(run.log, retention_ms=retention, granularity="minute", clock=run.clock)
        truncates_all = plan.allowed and plan.truncates_before is not None and plan.truncates_before >= boundary
        if not truncates_all:
            when = earliest_truncation_time_ms(run.log, boundary, retention, "minute")
            damaged = damaged_checkpoints_from(run.log, boundary) if when is None else []
            if damaged:
                # A checkpoint at or after the boundary that cannot serve as the cutoff (damaged,
                # or not the one its writer recorded) would leave the wait below passed and the
                # truncation never possible: a sound checkpoint is written instead.
                run.progress(f"the checkpoint(s) at version(s) {', '.join(map(str, damaged))} at or after "
                             f"the boundary (version {boundary}) are damaged and cannot be the cutoff of "
                             f"the truncation; writing a new checkpoint")
            if when is not None and when <= run.clock.now_ms():
                # the wait has passed and cleanup still cannot truncate: waiting again would be
                # waiting forever
                raise CheckpointProtectionTruncationBlockedError(
                    f"history before the checkpoint-protection boundary (version {boundary}) cannot be "
                    f"truncated although its retention passed at {to_utc_iso(when)}: {plan.reason}. "
                    f"Nothing was written", table=run.table, feature=CHECKPOINT_PROTECTION,
                    params={"boundaryVersion": boundary, "reason": plan.reason})
            if when is None:
                # No checkpoint at or after the boundary: cleanup can only reach a checkpoint.
                # Whether one can be written is known now, before the empty commit (and a dry run
                # says the same).
                check_checkpoint_writable(snapshot.version + 1, snapshot.protocol, snapshot.metadata, None)
            if when is None:
                empty = run.commit([], "Empty Commit", {})
                run.checkpoint(empty)
                if run.writes:
                    when = earliest_truncation_time_ms(run.log, boundary, retention, "minute")
            raise _wait(run, boundary, display, when)
        assert plan.truncates_before is not None
        if not run.writes:
            sidecars = sum(1 for p in plan.delete_other if p.startswith(SIDECAR_DIR + "/"))
            run.truncated(plan.truncates_before,
                          f"truncate history before version {plan.truncates_before}: delete "
                          f"{len(plan.delete_commits)} commit(s), {len(plan.delete_checkpoints)} "
                          f"checkpoint file(s)" + (f", {sidecars} sidecar(s)" if sidecars else "")
                          + ", commits first (rule d)"
                          + (f"; first write {plan.compat_checkpoint}, the classic-named copy of the "
                             f"UUID-named checkpoint for clients without V2 checkpoints"
                             if plan.compat_checkpoint else ""))
        else:
            execute_cleanup(run.log, plan)
            run.log.refresh()
            if not history_truncated_before(run.log, boundary):
                raise _wait(run, boundary, display,
                            earliest_truncation_time_ms(run.log, boundary, retention, "minute"))
            run.truncated(plan.truncates_before, f"truncated history before version {plan.truncates_before}")

    snapshot = run.latest()
    if run.writes:
        run.require_present(snapshot)
    if BOUNDARY_PROPERTY in snapshot.metadata.configuration:
        run.commit([snapshot.metadata.with_configuration({BOUNDARY_PROPERTY: None})],
                   "UNSET TBLPROPERTIES", {"properties": [BOUNDARY_PROPERTY]}, read_version=snapshot.version)
    snapshot = run.latest()
    if run.writes:
        run.require_present(snapshot)
    new_protocol = snapshot.protocol.without_feature(CHECKPOINT_PROTECTION)
    if not snapshot.protocol.can_downgrade_to(new_protocol, CHECKPOINT_PROTECTION):
        raise InvalidProtocolDowngradeError(
            f"refusing the protocol transition {snapshot.protocol} -> {new_protocol}", table=run.table)
    run.commit([ProtocolAction.of(new_protocol)], "DROP FEATURE",
               {"featureName": CHECKPOINT_PROTECTION, "truncateHistory": True}, read_version=snapshot.version)
    return finish(run, before, new_protocol, STATUS_DROPPED)
