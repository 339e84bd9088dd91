"""``delta-downgrade drop-feature`` and ``truncate-history``: the same operations as the tasks,
with positional arguments. Each prints its steps and a readable summary on stderr, and on stdout
the RESULT line (``--json``: one JSON document of the same fields), see :mod:`.output`."""

from __future__ import annotations

import argparse
from typing import Callable

from delta_downgrade.app.cli.storage_option import add_storage_option_argument


def _drop(args: argparse.Namespace) -> int:
    from delta_downgrade.app.cli.output import finish
    from delta_downgrade.app.engines import select_engine
    from delta_downgrade.app.render.drop import render_summary
    from delta_downgrade.app.render.result import drop_result

    engine = select_engine(args.engine, args.table)
    # Its steps are logged; main prints them (unless --quiet) as "  {step}" lines on stderr.
    outcome = engine.drop_feature(args.table, args.feature, truncate_history=args.truncate_history,
                                  dry_run=args.dry_run, storage_options=args.storage_options)
    return finish(args, drop_result(outcome), text=render_summary(outcome))


def _output_flags(p: argparse.ArgumentParser) -> None:
    """How much of the drop's log main prints: --quiet none of its steps, --verbose DEBUG too;
    --json: stdout is one JSON document of the RESULT's fields instead of the RESULT line."""
    p.add_argument("--json", action="store_true",
                   help="print one JSON document of the RESULT fields on stdout (steps and summary stay on stderr)")
    loudness = p.add_mutually_exclusive_group()
    loudness.add_argument("--quiet", action="store_true", help="do not print the steps")
    loudness.add_argument("--verbose", action="store_true", help="also print debugging records")


def register(sub: argparse._SubParsersAction, commands: dict[str, Callable[[argparse.Namespace], int]]) -> None:
    p = sub.add_parser("drop-feature", help="drop a table feature and lower the protocol")
    p.add_argument("table")
    p.add_argument("feature", help="feature name (bare, 'quoted' or `backticked`)")
    p.add_argument("--truncate-history", action="store_true",
                   help="the two-phase TRUNCATE HISTORY path instead of checkpoint protection")
    p.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    p.add_argument("--engine", default="auto", choices=["auto", "native", "delta-sql"],
                   help="auto: native for a path, delta-sql for a catalog name (default)")
    _output_flags(p)
    add_storage_option_argument(p)
    commands["drop-feature"] = _drop

    t = sub.add_parser("truncate-history",
                       help="drop checkpointProtection by truncating history before the boundary")
    t.add_argument("table")
    t.add_argument("--dry-run", action="store_true")
    t.add_argument("--engine", default="auto", choices=["auto", "native", "delta-sql"],
                   help="auto: native for a path, delta-sql for a catalog name (default)")
    _output_flags(t)
    add_storage_option_argument(t)
    t.set_defaults(feature="checkpointProtection", truncate_history=True)
    commands["truncate-history"] = _drop
