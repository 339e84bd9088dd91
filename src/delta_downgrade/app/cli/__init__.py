"""The ``delta-downgrade`` command.

One module of this package per subcommand (:mod:`.inspect`, :mod:`.cleanup`, :mod:`.vacuum`,
:mod:`.drop` for ``drop-feature`` and ``truncate-history``), each with a
``register(subparsers, commands)`` function, registered below in the order ``--help`` lists them;
then those that installed distributions declare in :data:`COMMAND_GROUP`. Subcommands are thin:
parse arguments, call one operation, render its result (``delta_downgrade.app.render``). The
command modules import only ``argparse`` at module level, so ``--help`` loads no operation.

Every error is a :class:`DeltaDowngradeError` printed as one line with its Delta error class, and
the process exits with the contract's code (0 done, 2 bad input, 3 wait, 4 conflict, 1 anything
else).

``--storage-option KEY=VALUE`` items (:mod:`.storage_option`) are parsed here, once, into
``args.storage_options``; their values are masked in everything printed (error lines, log
records, a command's output), see :mod:`delta_downgrade.app.storage_options`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from delta_downgrade import __version__
from delta_downgrade.app.cli import cleanup, drop, inspect, storage_option, vacuum
from delta_downgrade.errors import EXIT_FAILURE, DeltaDowngradeError

Command = Callable[[argparse.Namespace], int]
Register = Callable[[argparse._SubParsersAction, dict[str, Command]], None]
_COMMANDS: dict[str, Command] = {}

# The subcommands of this package, in the order of ``--help``.
BUILTIN: tuple[Register, ...] = (inspect.register, cleanup.register, vacuum.register, drop.register)

# Entry-point group of subcommands that other installed distributions add (the repository's
# tools: run-job, validate-bundle); each value is a register(subparsers, commands) function.
COMMAND_GROUP = "delta_downgrade.commands"


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand. When ``argv`` names one of this package's own commands, the
    installed distributions' commands are not looked up: reading every distribution's entry
    points is the slowest part of the CLI's start-up, and such a command line cannot use them."""
    parser = argparse.ArgumentParser(
        prog="delta-downgrade",
        description="Drop Delta Lake table features and lower the protocol (Checkpoint Protection RFC).")
    parser.add_argument("--version", action="version", version=f"delta-downgrade {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for register in BUILTIN:
        register(sub, _COMMANDS)
    if argv is None or _command_word(argv) not in sub.choices:
        for register in _installed_commands():
            register(sub, _COMMANDS)
    return parser


def _command_word(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def _installed_commands() -> list[Register]:
    """The subcommands installed distributions declare in :data:`COMMAND_GROUP`, by name: the
    wheel a job installs has none, so it never refers to the repository-only tools."""
    from importlib.metadata import entry_points

    return [ep.load() for ep in sorted(entry_points(group=COMMAND_GROUP), key=lambda ep: ep.name)]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    # Imported once a command runs (``--help`` and bad arguments exit in parse_args): ``logging``
    # is a good part of the start-up time of ``--help``.
    from delta_downgrade.app.console_logging import CLI_STEP_FORMAT, console_logging, level_for
    from delta_downgrade.app.storage_options import parse_storage_option_items, redact_output

    args.storage_options = {}
    # The one place the CLI configures logging: operations log, main decides what is printed.
    level = level_for(quiet=getattr(args, "quiet", False), verbose=getattr(args, "verbose", False))
    try:
        args.storage_options = parse_storage_option_items(getattr(args, storage_option.DEST, None))
        with console_logging(CLI_STEP_FORMAT, level, secrets=args.storage_options):
            return _COMMANDS[args.command](args)
    except DeltaDowngradeError as exc:
        # A store's message may quote the request it refused: its secrets are masked.
        print(redact_output(f"error: {exc}", args.storage_options), file=sys.stderr)
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
