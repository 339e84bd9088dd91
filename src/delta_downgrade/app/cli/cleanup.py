"""``delta-downgrade cleanup TABLE [--retention INTERVAL] [--granularity UNIT] [--dry-run] [--json]``."""

from __future__ import annotations

import argparse
from typing import Callable

from delta_downgrade.app.cli.storage_option import add_storage_option_argument

Command = Callable[[argparse.Namespace], int]


def register(sub: argparse._SubParsersAction, commands: dict[str, Command]) -> None:
    p = sub.add_parser(
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
    p.add_argument("--json", action="store_true",
                   help="print one JSON document (the plan, what was deleted, the RESULT fields)")
    add_storage_option_argument(p)
    commands["cleanup"] = _run


def _run(args: argparse.Namespace) -> int:
    from delta_downgrade.app.cli.lean_imports import pyarrow_without_numpy

    pyarrow_without_numpy()  # first: a path, whose every use of pyarrow is ours (app/cli/lean_imports.py)
    from delta_downgrade.app.cli.output import finish
    from delta_downgrade.app.render.cleanup import cleanup_document, render_text
    from delta_downgrade.app.render.result import cleanup_result
    from delta_downgrade.log.delta_log import DeltaLog
    from delta_downgrade.operations.cleanup import cleanup_expired_logs
    from delta_downgrade.protocol.table_config import parse_interval_ms

    retention = parse_interval_ms(args.retention, key="--retention") if args.retention else None
    log = DeltaLog(args.table, storage_options=args.storage_options)
    result = cleanup_expired_logs(log, retention_ms=retention, granularity=args.granularity,
                                  dry_run=args.dry_run)
    return finish(args, cleanup_result(args.table, result, dry_run=args.dry_run),
                  document=cleanup_document(args.table, result, dry_run=args.dry_run) if args.json else None,
                  text=None if args.json else render_text(args.table, result, dry_run=args.dry_run),
                  text_on_stdout=True)
