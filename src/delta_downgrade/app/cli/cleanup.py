"""Subcommands of the later operations, registered into ``delta-downgrade`` by :mod:`delta_downgrade.app.cli`.

One small ``_register_<name>`` function (and its runner) per subcommand; :func:`register` calls
them all. Imports of the operations stay inside the runners so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable

Command = Callable[[argparse.Namespace], int]


def register(subparsers: Any, commands: dict[str, Command]) -> None:
    from delta_downgrade.operations.vacuum import register_vacuum

    _register_cleanup(subparsers, commands)
    register_vacuum(subparsers, commands)


# --- cleanup ---------------------------------------------------------------------------------------

def _register_cleanup(subparsers: Any, commands: dict[str, Command]) -> None:
    p = subparsers.add_parser(
        "cleanup", help="delete expired log files (metadata cleanup, Checkpoint Protection rules a-d)",
        description="Delete commits, checkpoints and checksum files older than the newest expired "
                    "checkpoint (PROTOCOL.md Metadata Cleanup), obeying the Checkpoint Protection "
                    "RFC. A cleanup the rules forbid is skipped, not an error.")
    p.add_argument("table", help="table path")
    p.add_argument("--retention", default=None,
                   help="log retention as a Delta interval ('interval 30 days', '12 hours'); "
                        "default: the table's delta.logRetentionDuration")
    p.add_argument("--granularity", choices=("day", "hour", "minute"), default="day",
                   help="truncate the cutoff to this unit (default: day, as delta.logRetentionDuration)")
    p.add_argument("--dry-run", action="store_true", help="show the plan, delete nothing")
    p.add_argument("--json", action="store_true", help="print the plan and result as JSON")
    commands["cleanup"] = _run_cleanup


def _run_cleanup(args: argparse.Namespace) -> int:
    from delta_downgrade.log.delta_log import DeltaLog
    from delta_downgrade.operations.cleanup import cleanup_expired_logs
    from delta_downgrade.protocol.table_config import parse_interval_ms

    retention = parse_interval_ms(args.retention, key="--retention") if args.retention else None
    log = DeltaLog(args.table)
    result = cleanup_expired_logs(log, retention_ms=retention, granularity=args.granularity,
                                  dry_run=args.dry_run)
    if args.json:
        doc = {"table": args.table, "dry_run": args.dry_run, **result.to_dict()}
        print(json.dumps(doc, indent=2))
    else:
        print(render_cleanup(args.table, result, dry_run=args.dry_run))
    return 0


def _versions(paths: list[str]) -> str:
    from delta_downgrade.log.files import classify

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


def render_cleanup(table: str, result: Any, *, dry_run: bool) -> str:
    """The plan for people: what goes, what stays, and the gate's decision with its rule."""
    from delta_downgrade.clock import to_utc_iso

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
    return "\n".join(lines)
