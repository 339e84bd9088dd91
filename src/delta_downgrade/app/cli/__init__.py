"""The ``delta-downgrade`` command.

Subcommands are thin: parse arguments, call one operation, render its result. Every error is a
:class:`DeltaDowngradeError` printed as one line with its Delta error class, and the process exits
with the contract's code (0 done, 2 bad input, 3 wait, 4 conflict, 1 anything else).
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import entry_points
from typing import Callable, Sequence

from delta_downgrade import __version__
from delta_downgrade.app.console_logging import CLI_STEP_FORMAT, console_logging, level_for
from delta_downgrade.errors import EXIT_FAILURE, DeltaDowngradeError

Command = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, Command] = {}


def _inspect(args: argparse.Namespace) -> int:
    from delta_downgrade.operations.inspect import inspect_table, render_text

    doc = inspect_table(args.table, args.version, history=not args.no_history)
    print(json.dumps(doc, indent=2, sort_keys=False, default=str) if args.json else render_text(doc))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="delta-downgrade",
        description="Drop Delta Lake table features and lower the protocol (Checkpoint Protection RFC).")
    parser.add_argument("--version", action="version", version=f"delta-downgrade {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("inspect", help="show a table's protocol, features, checkpoints and boundary")
    p.add_argument("table", help="table path")
    p.add_argument("--version", dest="version", type=int, default=None, help="version to inspect (latest)")
    p.add_argument("--json", action="store_true", help="print the stable JSON document")
    p.add_argument("--no-history", action="store_true", help="skip the protocol history (faster)")
    _COMMANDS["inspect"] = _inspect

    for register in _extra_commands():
        register(sub, _COMMANDS)
    return parser


# Entry-point group of subcommands that other installed distributions add (the repository's
# tools: run-job, validate-bundle); each value is a register(subparsers, commands) function.
COMMAND_GROUP = "delta_downgrade.commands"


def _extra_commands() -> list[Callable[[argparse._SubParsersAction, dict[str, Command]], None]]:
    """Subcommands of later operations register themselves here (kept import-light), then those
    that installed distributions declare in :data:`COMMAND_GROUP`, by name: the wheel a job
    installs has none, so it never refers to the repository-only tools."""
    found = []
    for module_name in ("delta_downgrade.app.cli.cleanup", "delta_downgrade.app.cli.drop"):
        try:
            module = __import__(module_name, fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        found.append(module.register)
    found.extend(ep.load() for ep in sorted(entry_points(group=COMMAND_GROUP), key=lambda ep: ep.name))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # The one place the CLI configures logging: operations log, main decides what is printed.
    level = level_for(quiet=getattr(args, "quiet", False), verbose=getattr(args, "verbose", False))
    try:
        with console_logging(CLI_STEP_FORMAT, level):
            return _COMMANDS[args.command](args)
    except DeltaDowngradeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # output piped into `head`: not an error
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
