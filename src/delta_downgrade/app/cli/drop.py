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
    from delta_downgrade.app.table_ref import parse_table_ref
    from delta_downgrade.app.render.drop import render_summary
    from delta_downgrade.app.render.result import drop_result

    client = getattr(args, "for_client", None)
    if client is not None or args.feature is None:
        return _drop_for_client(args, client)
    ref = parse_table_ref(args.table)  # the one parse: the engine and the drop take the ref
    engine = select_engine(args.engine, ref)
    if engine.name == "native":
        _pyarrow_without_numpy()
    # Its steps are logged; main prints them (unless --quiet) as "  {step}" lines on stderr.
    outcome = engine.drop_feature(ref, args.feature, truncate_history=args.truncate_history,
                                  dry_run=args.dry_run, storage_options=args.storage_options)
    return finish(args, drop_result(outcome), text=render_summary(outcome))


def _drop_for_client(args: argparse.Namespace, client: str | None) -> int:
    """``drop-feature TABLE --for CLIENT``: every feature that blocks the client, in one run."""
    from delta_downgrade.app.cli.output import finish
    from delta_downgrade.app.engines import drop_for_client
    from delta_downgrade.app.render.drop import render_client_summary
    from delta_downgrade.app.render.result import client_drop_result
    from delta_downgrade.errors import BadInputError

    if client is None or args.feature is not None:  # the caller comes here with one of them
        raise BadInputError("drop-feature takes either a FEATURE or --for CLIENT (a client of the "
                            "catalogue, e.g. duckdb or deltalake-0.18), not both"
                            if client is not None else
                            "drop-feature needs a FEATURE to drop, or --for CLIENT to drop every feature "
                            "that keeps that client from the table", table=args.table)
    if args.truncate_history:
        raise BadInputError("--for drops each feature on the fast path (checkpoint protection); "
                            "--truncate-history waits between its phases and is not available with it: "
                            "run truncate-history after the retention instead", table=args.table)
    if args.engine != "delta-sql":  # the native engine (drop_for_client refuses a catalog name)
        _pyarrow_without_numpy()
    outcome = drop_for_client(args.engine, args.table, client, dry_run=args.dry_run,
                              storage_options=args.storage_options)
    return finish(args, client_drop_result(outcome), text=render_client_summary(outcome))


def _pyarrow_without_numpy() -> None:
    """The native engine loads pyarrow without numpy (``lean_imports``), also where a drop
    rewrites data files with Spark: the package hands Spark Arrow tables (Arrow IPC, classic and
    Connect alike) and reads back rows, never a numpy array, so nothing of pyarrow's numpy side
    is used. The delta-sql engine keeps numpy: its session is the user's SQL, not ours."""
    from delta_downgrade.app.cli.lean_imports import pyarrow_without_numpy

    pyarrow_without_numpy()


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
    p.add_argument("feature", nargs="?", help="feature name (bare, 'quoted' or `backticked`)")
    p.add_argument("--for", dest="for_client", metavar="CLIENT",
                   help="instead of FEATURE: drop every feature that keeps CLIENT (a client catalogue id, "
                        "alias, or product and version, e.g. duckdb, deltalake==0.18.2, 'trino 447'; "
                        "`compat --list-clients` lists them) from reading the table, or from writing "
                        "it when it reads, in order, in one run (see `compat`)")
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
