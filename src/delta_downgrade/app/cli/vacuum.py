"""``delta-downgrade vacuum TABLE [--retention-hours=N] [--dry-run] [--override-retention-check]
[--json]``."""

from __future__ import annotations

import argparse
from typing import Callable

from delta_downgrade.app.cli.storage_option import add_storage_option_argument

Command = Callable[[argparse.Namespace], int]


def register(sub: argparse._SubParsersAction, commands: dict[str, Command]) -> None:
    p = sub.add_parser(
        "vacuum", help="delete files no retained version needs (checks the write protocol first)")
    p.add_argument("table", help="table path")
    p.add_argument("--retention-hours", type=float, default=None,
                   help="keep files removed within this many hours (default: the table's "
                        "delta.deletedFileRetentionDuration, 1 week)")
    p.add_argument("--dry-run", action="store_true", help="list the files; delete nothing")
    p.add_argument("--override-retention-check", action="store_true",
                   help="allow a retention shorter than delta.deletedFileRetentionDuration "
                        "(only when no writer is active)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document (the files found, deleted and kept; the RESULT fields)")
    add_storage_option_argument(p)
    commands["vacuum"] = _run


def _run(args: argparse.Namespace) -> int:
    from delta_downgrade.app.cli.lean_imports import pyarrow_without_numpy

    pyarrow_without_numpy()  # first: a path, whose every use of pyarrow is ours (app/cli/lean_imports.py)
    from delta_downgrade.app.cli.output import finish
    from delta_downgrade.app.render.result import vacuum_result
    from delta_downgrade.app.render.vacuum import render_text, vacuum_document
    from delta_downgrade.errors import EXIT_FAILURE, EXIT_OK
    from delta_downgrade.operations.vacuum import vacuum

    result = vacuum(args.table, retention_hours=args.retention_hours, dry_run=args.dry_run,
                    enforce_retention_check=not args.override_retention_check,
                    storage_options=args.storage_options)
    return finish(args, vacuum_result(result), document=vacuum_document(result) if args.json else None,
                  text=None if args.json else render_text(result), text_on_stdout=True,
                  code=EXIT_OK if result.ok else EXIT_FAILURE)
