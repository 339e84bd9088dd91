"""The readable summary of a drop that ``drop-feature`` and ``truncate-history`` print on stderr
(the RESULT line on stdout is :func:`delta_downgrade.app.render.result.drop_result`, for
``--for CLIENT`` :func:`~delta_downgrade.app.render.result.client_drop_result`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from delta_downgrade.operations.drop_for_client import ClientDropOutcome
    from delta_downgrade.drop.run import DropOutcome


def render_summary(outcome: DropOutcome) -> str:
    from delta_downgrade.drop.run import STATUS_PLANNED  # loaded with the outcome

    lines = [f"{outcome.feature}: {outcome.status} on {outcome.table}",
             f"  protocol {outcome.protocol_before} -> {outcome.protocol_after}"]
    if outcome.boundary_version is not None:
        lines.append(f"  checkpoint protection boundary: version {outcome.boundary_version}")
    if outcome.protected_checkpoints:
        lines.append(f"  protected checkpoints: {len(outcome.protected_checkpoints)} file(s)")
    if outcome.needs_truncate and outcome.truncate_after:
        lines.append(f"  run truncate-history after {outcome.truncate_after} to drop checkpointProtection")
    # The steps themselves are told once, as they are planned or written (the drop's log
    # records); the summary only counts them, and says where the run left its plan.
    steps = outcome.planned if outcome.status == STATUS_PLANNED else outcome.written
    if steps:
        commits = sum(1 for s in steps if s.kind == "commit")
        checkpoints = sum(1 for s in steps if s.kind == "checkpoint")
        verb = "planned" if outcome.status == STATUS_PLANNED else "written"
        lines.append(f"  {verb}: {commits} commit(s), {checkpoints} checkpoint(s)"
                     + (", history truncated" if any(s.kind == "truncate" for s in steps) else ""))
    if outcome.deviation:
        lines.append(f"  {outcome.deviation}")
    return "\n".join(lines)


def render_client_summary(outcome: ClientDropOutcome) -> str:
    """The summary of ``drop-feature --for CLIENT``: the client, each feature's drop (as
    :func:`render_summary`), and what the client can do now."""
    client = outcome.client
    lines = [f"for {client.id} ({client.name}): {outcome.status} on {outcome.table}",
             f"  before: read {outcome.verdict.read.verdict.value}, write {outcome.verdict.write.verdict.value}",
             f"  protocol {outcome.protocol_before} -> {outcome.protocol_after}"]
    if outcome.features_planned:
        lines.append(f"  features in order: {', '.join(outcome.features_planned)}")
    lines += ["  " + line for drop in outcome.drops for line in render_summary(drop).splitlines()]
    lines.append(f"  after: read {outcome.read_after.verdict.value}, write {outcome.write_after.verdict.value}")
    if outcome.truncate_history_before_write:
        lines.append(f"  {client.id} may write once checkpointProtection is gone: run truncate-history "
                     f"after the truncate retention (delta.dropFeatureTruncateHistory.retentionDuration)")
    lines += [f"  note: {n}" for n in outcome.notes]
    return "\n".join(lines)
