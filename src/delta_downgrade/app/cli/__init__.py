"""The ``delta-downgrade`` command.

One module of this package per subcommand (:mod:`.inspect`, :mod:`.cleanup`, :mod:`.vacuum`,
:mod:`.drop` for ``drop-feature`` and ``truncate-history``, :mod:`.compat`), each with a
``register(subparsers, commands)`` function, registered below in the order ``--help`` lists them;
then those that installed distributions declare in :data:`COMMAND_GROUP`. Subcommands are thin:
parse arguments, call one operation, render its result (``delta_downgrade.app.render``). The
command modules import only ``argparse`` at module level, so ``--help`` loads no operation.

Every outcome follows one output contract (:mod:`.output`): ``RESULT {json}`` on stdout, or with
``--json`` one JSON document holding the same fields; people's text on stderr. An error is a
:class:`DeltaDowngradeError` printed as one line with its Delta error class on stderr, plus its
RESULT (``status`` ``error`` or ``waiting``); an argument argparse refuses is one too
(``DELTA_DOWNGRADE_BAD_INPUT``, with the usage), and so is an unexpected exception (its traceback on
stderr, ``DELTA_DOWNGRADE_INTERNAL_ERROR``). The process exits with the contract's code (0 done,
2 bad input, 3 wait, 4 conflict, 1 anything else).

``--storage-option KEY=VALUE`` items (:mod:`.storage_option`) are parsed here, once, into
``args.storage_options``; their values are masked in everything printed (error lines, log
records, a command's output), see :mod:`delta_downgrade.app.storage_options`.
"""

from __future__ import annotations

import argparse
import gc
import sys
from typing import Callable, NoReturn, Sequence

from delta_downgrade import __version__
from delta_downgrade.app.cli import cleanup, compat, drop, inspect, storage_option, vacuum
from delta_downgrade.errors import BadInputError, DeltaDowngradeError

Command = Callable[[argparse.Namespace], int]
Register = Callable[[argparse._SubParsersAction, dict[str, Command]], None]
_COMMANDS: dict[str, Command] = {}

# The subcommands of this package, in the order of ``--help``.
BUILTIN: tuple[Register, ...] = (inspect.register, compat.register, cleanup.register, vacuum.register,
                                  drop.register)

# Entry-point group of subcommands that other installed distributions add (the repository's
# tools: run-job, validate-bundle); each value is a register(subparsers, commands) function.
COMMAND_GROUP = "delta_downgrade.commands"


class _Refused(Exception):
    """Control flow, never shown: argparse refused the command line; the message and the usage
    of the (sub)command that refused it. ``main`` reports it as a :class:`BadInputError`."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.message, self.usage = message, usage


class _Parser(argparse.ArgumentParser):
    """argparse that raises :class:`_Refused` instead of printing and exiting, so that a refused
    command line gets its RESULT too (subparsers are made of the same class). ``--help`` and
    ``--version`` still print and exit 0: they are no outcome."""

    def error(self, message: str) -> NoReturn:
        raise _Refused(message, self.format_usage())


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand. When ``argv`` names one of this package's own commands, the
    installed distributions' commands are not looked up: reading every distribution's entry
    points is the slowest part of the CLI's start-up, and such a command line cannot use them."""
    parser = _Parser(
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
    try:
        args = build_parser(argv).parse_args(argv)
    except _Refused as refused:
        from delta_downgrade.app.cli.output import fail
        from delta_downgrade.app.storage_options import command_line_secrets, redact_output

        # argparse quotes the words it refuses: a storage option's value (a misspelt flag, a
        # stray KEY=SECRET) is masked by its flag and by its key before anything is printed.
        secrets = command_line_secrets(argv)
        error = BadInputError(f"{refused.message}; see --help")
        print(redact_output(refused.usage + f"error: {error}", secrets), file=sys.stderr)
        words = argv[:argv.index("--")] if "--" in argv else argv
        command = _command_word(argv)
        return fail(command if command in _COMMANDS else None, error, table=None, as_json="--json" in words,
                    secrets=secrets)
    # pyarrow without pandas in this process, unless something needs pandas (lean_imports)
    from delta_downgrade.app.cli import lean_imports

    lean_imports.install()
    # Imported once a command runs (``--help`` exits in parse_args): ``logging`` is a good part of
    # the start-up time of ``--help``.
    from delta_downgrade.app.console_logging import CLI_STEP_FORMAT, console_logging, level_for
    from delta_downgrade.app.progress import progress_mode
    from delta_downgrade.app.storage_options import parse_storage_option_items, redact_output

    # What every output masks: the values the command line gives by flag position and key shape
    # (until the items parse, and whatever else it holds: run-job's --param KEY=SECRET), then the
    # options themselves. ``storage_options`` is what the operations get.
    from delta_downgrade.app.storage_options import command_line_secrets

    args.secrets = command_line_secrets(argv)
    args.storage_options = {}
    # The one place the CLI configures logging: operations log, main decides what is printed.
    level = level_for(quiet=getattr(args, "quiet", False), verbose=getattr(args, "verbose", False))
    try:
        args.storage_options = parse_storage_option_items(getattr(args, storage_option.DEST, None))
        args.secrets.update(args.storage_options)
        with console_logging(CLI_STEP_FORMAT, level, secrets=args.secrets,
                             progress=progress_mode(sys.stderr, task=False)):
            return _COMMANDS[args.command](args)
    except BrokenPipeError:  # output piped into `head`: not an error
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (DeltaDowngradeError, KeyboardInterrupt, Exception) as exc:
        from delta_downgrade.app.cli.output import fail

        if isinstance(exc, DeltaDowngradeError):
            given = getattr(args, "table", None)
            exc = exc.naming(given if isinstance(given, str) else None)  # the table the user named
            # A store's message may quote the request it refused: its secrets are masked.
            print(redact_output(f"error: {exc}", args.secrets), file=sys.stderr)
        elif isinstance(exc, KeyboardInterrupt):
            print("interrupted", file=sys.stderr)
        else:  # a bug: the traceback is for the report, the RESULT says it failed
            import traceback

            print(redact_output(traceback.format_exc(), args.secrets), end="", file=sys.stderr)
        return fail(args.command, exc, table=getattr(args, "table", None),
                    feature=getattr(args, "feature", None), as_json=bool(getattr(args, "json", False)),
                    secrets=args.secrets)


def run_as_command() -> NoReturn:
    """The ``delta-downgrade`` command (and ``python -m delta_downgrade.app.cli``): :func:`main` in a
    process of its own, which ends when main returns.

    Before the interpreter exits, every object the process still holds goes to the collector's
    permanent generation (``gc.freeze``). The interpreter's finalization runs full collections,
    and each walks every tracked object - the modules', pyarrow's, a long log's listing - only for
    all of it to be freed with the process: 5 % of the instructions of an ``inspect`` of a
    10,000-commit log. Nothing this command must do at exit is left to the collector: what it
    wrote is durable when main returns, exit handlers (``atexit``; ``weakref.finalize``, which
    removes the spill directories) still run, and the standard streams are still flushed. Not
    done in :func:`main`, which tests and embedding processes call and keep running after."""
    status = main()
    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    run_as_command()
