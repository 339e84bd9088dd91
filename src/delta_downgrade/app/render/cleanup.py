"""``cleanup`` output: the plan and result of a metadata cleanup as text and as JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from delta_downgrade.clock import to_utc_iso
from delta_downgrade.log.format.file_names import classify
from delta_downgrade.protocol.json_values import JsonObject

if TYPE_CHECKING:
    from delta_downgrade.operations.cleanup import CleanupPlan, CleanupResult


def plan_document(plan: CleanupPlan) -> JsonObject:
    """The plan as JSON: every decision and every path, with the deletions in rule (d)'s order."""
    return {
        "cutoff_ms": plan.cutoff_ms,
        "cutoff": to_utc_iso(plan.cutoff_ms),
        "retention_ms": plan.retention_ms,
        "granularity": plan.granularity,
        "cutoff_checkpoint": plan.cutoff_checkpoint,
        "allowed": plan.allowed,
        "decision": plan.decision,
        "reason": plan.reason,
        "checkpoint_protection": plan.checkpoint_protection,
        "boundary_version": plan.boundary_version,
        "latest_version": plan.latest_version,
        "truncates_before": plan.truncates_before,
        "kept_checkpoints": list(plan.kept_checkpoints),
        "delete_commits": list(plan.delete_commits),
        "delete_checkpoints": list(plan.delete_checkpoints),
        "delete_other": list(plan.delete_other),
        "ordered_deletions": plan.ordered_deletions(),
        "delete_temps": list(plan.delete_temps),
        "compat_checkpoint": plan.compat_checkpoint,
        "compat_reason": plan.compat_reason,
    }


def cleanup_document(table: str, result: CleanupResult, *, dry_run: bool) -> JsonObject:
    """``cleanup --json``: the table, whether it was a dry run, what was deleted and the plan."""
    return {"table": table, "dry_run": dry_run, "deleted": list(result.deleted),
            "written": list(result.written), "plan": plan_document(result.plan)}


def render_json(table: str, result: CleanupResult, *, dry_run: bool) -> str:
    return json.dumps(cleanup_document(table, result, dry_run=dry_run), indent=2)


def _versions(paths: list[str]) -> str:
    """The versions of log files as runs: ``0..3, 5``; ``none`` when there are none."""
    versions = sorted({v for p in paths if (v := classify(p).version) is not None})
    if not versions:
        return "none"
    runs: list[list[int]] = []
    for v in versions:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in runs)


def _duration(ms: int) -> str:
    for unit, size in (("days", 86_400_000), ("hours", 3_600_000), ("minutes", 60_000), ("seconds", 1000)):
        if ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def render_text(table: str, result: CleanupResult, *, dry_run: bool) -> str:
    """The plan for people: what goes, what stays, and the gate's decision with its rule."""
    plan = result.plan
    lines = [f"cleanup of {table}" + (" (dry run)" if dry_run else "")]
    retention = _duration(plan.retention_ms) if plan.retention_ms is not None else "?"
    lines.append(f"  cutoff:             {to_utc_iso(plan.cutoff_ms)} (retention {retention}, "
                 f"granularity {plan.granularity})")
    if plan.cutoff_checkpoint is None:
        lines.append("  cutoff checkpoint:  none")
    else:
        lines.append(f"  cutoff checkpoint:  {plan.cutoff_checkpoint} (kept, with its commit and every "
                     f"later version)")
    if plan.checkpoint_protection:
        lines.append(f"  protection:         checkpointProtection, boundary V = {plan.boundary_version}")
    else:
        lines.append("  protection:         none (checkpointProtection is not in the protocol)")
    lines.append(f"  decision:           {'allowed' if plan.allowed else 'SKIPPED'} ({plan.decision})")
    lines.append(f"  reason:             {plan.reason}")
    lines.append(f"  delete commits:     {len(plan.delete_commits)} (versions {_versions(list(plan.delete_commits))})")
    lines.append(f"  delete checkpoints: {len(plan.delete_checkpoints)} files "
                 f"(versions {_versions(list(plan.delete_checkpoints))})")
    lines.append(f"  delete other:       {len(plan.delete_other)} files (.crc, compacted, staged, sidecars)")
    if plan.compat_checkpoint is not None:
        lines.append(f"  write first:        {plan.compat_checkpoint} (the classic-named copy of the "
                     f"UUID-named checkpoint {plan.compat_source.version if plan.compat_source else '?'}, "
                     f"for clients without V2 checkpoints)")
    kept = ", ".join(str(v) for v in plan.kept_checkpoints) or "none"
    lines.append(f"  kept checkpoints:   {kept}")
    lines.append(f"  delete temp files:  {len(plan.delete_temps)} (stale temporary files of "
                 f"delta-downgrade)")
    lines += [f"    {path}" for path in plan.delete_temps]
    if plan.truncates_before is not None and plan.latest_version is not None:
        lines.append(f"  history after:      versions {plan.truncates_before}..{plan.latest_version}")
    if dry_run:
        lines.append(f"  would delete:       "
                     f"{(plan.num_deletions if plan.allowed else 0) + len(plan.delete_temps)} files")
    else:
        lines.append(f"  deleted:            {len(result.deleted)} files")
        lines += [f"  written:            {path}" for path in result.written]
    return "\n".join(lines)
