"""The readable summary of a drop that ``drop-feature`` and ``truncate-history`` print on stderr
(the RESULT line on stdout is :func:`delta_downgrade.app.render.result.drop_result`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from delta_downgrade.operations.drop_run import DropOutcome


def render_summary(outcome: DropOutcome) -> str:
    from delta_downgrade.operations.drop_run import STATUS_PLANNED  # loaded with the outcome

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
