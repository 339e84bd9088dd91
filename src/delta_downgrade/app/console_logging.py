"""How the entry points (the CLI's ``main``, the wheel tasks) show the package's log records on
stderr, for the duration of one call.

The drop's steps are records of one logger, ``delta_downgrade.drop`` (``drop.run``
says why): each entry point prints them in its own line format, ``"  {message}"`` for the CLI
and ``"[{table}] {message}"`` for a task, whose tables may run in parallel threads. Nothing else
is configured at the default level: any other record of the package (a warning) still goes to
``logging``'s last-resort handler, printed as its bare message, as it always was. ``--verbose``
adds the DEBUG records, of the drop logger (a rewrite's rehearsal) and of every other logger of
the package, as ``LEVEL logger: message`` lines. While an entry point runs, the drop logger does
not propagate: its lines are printed once, in the entry point's format, even where the host
process (a Databricks driver, a notebook) has handlers on the root logger.

Everything is restored on exit, so that a program (or a test) calling ``main`` twice gets no
doubled lines, and the handlers write to the ``sys.stderr`` of the call (``contextlib``'s
``redirect_stderr``, pytest's capture). Library modules never configure handlers.

The drop logger's records that carry a rewrite's progress counts are drawn as the entry point
asks (``progress``, see :mod:`delta_downgrade.app.progress`): bars with rate and ETA at a
terminal, ``PROGRESS {json}`` events in a task, the plain lines otherwise.

Every line these handlers print passes through ``app.storage_options.redact_output`` with the
storage options of the call (given up front, or later through the yielded :class:`ConsoleLog`
once a task has read its settings): a record that quotes a secret (an error message of the store
client, a traceback) prints it masked.
"""

from __future__ import annotations

import logging
import sys
from contextlib import contextmanager
from typing import Iterator, Mapping, overload

# The logger of drop.run.LOGGER, by name: importing that module here would cost the CLI
# its start-up time (it pulls the log reader and Arrow) for commands that never drop anything.
DROP_LOGGER = "delta_downgrade.drop"
PACKAGE_LOGGER = "delta_downgrade"

CLI_STEP_FORMAT = "  %(message)s"
TASK_STEP_FORMAT = "[%(table)s] %(message)s"
DEBUG_FORMAT = "%(levelname)s %(name)s: %(message)s"

# Levels of the entry points' flags: --quiet hides the steps (INFO), --verbose adds DEBUG.
QUIET, DEFAULT, VERBOSE = logging.WARNING, logging.INFO, logging.DEBUG


def level_for(*, quiet: bool = False, verbose: bool = False) -> int:
    return VERBOSE if verbose else QUIET if quiet else DEFAULT


class ConsoleLog:
    """What an entry point may still tell the handlers after they are installed: the storage
    options whose values every printed line masks."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self.secrets: dict[str, str] = dict(secrets or {})

    def hide(self, secrets: Mapping[str, str] | None) -> None:
        self.secrets.update(secrets or {})

    @overload
    def mask(self, value: str) -> str: ...

    @overload
    def mask(self, value: object) -> object: ...

    def mask(self, value: object) -> object:
        """``value`` (text, or dicts and lists of it) with the secrets masked (and, with no
        options given, the query strings of URLs and the secret-named environment variables)."""
        from delta_downgrade.app.storage_options import redact_output

        return redact_output(value, self.secrets)


class _RedactingFormatter(logging.Formatter):
    """A formatter whose whole output (message, arguments, traceback) has the secrets of its
    :class:`ConsoleLog` masked."""

    def __init__(self, fmt: str, console: ConsoleLog) -> None:
        super().__init__(fmt, defaults={"table": "-"})
        self.console = console

    def format(self, record: logging.LogRecord) -> str:
        return self.console.mask(super().format(record))


@contextmanager
def console_logging(step_format: str, level: int = DEFAULT,
                    secrets: Mapping[str, str] | None = None, *,
                    progress: str | None = None) -> Iterator[ConsoleLog]:
    """Print the drop's steps at ``level`` and above on stderr as ``step_format`` (a
    :class:`logging.Formatter` format); at DEBUG, every other record of the package too. The
    values of ``secrets`` (storage options) and of those given to the yielded
    :meth:`ConsoleLog.hide` are masked in every line. ``progress`` is how a rewrite's progress
    shows (``app.progress.MODES``); None prints it as plain step lines."""
    drop, package = logging.getLogger(DROP_LOGGER), logging.getLogger(PACKAGE_LOGGER)
    saved = [(logger, logger.level, logger.propagate) for logger in (drop, package)]
    installed: list[tuple[logging.Logger, logging.Handler]] = []
    console = ConsoleLog(secrets)

    def print_to_stderr(fmt: str, *loggers: logging.Logger, mode: str | None = None) -> logging.Handler:
        if mode is None:
            stderr = logging.StreamHandler(sys.stderr)
        else:
            from delta_downgrade.app.progress import progress_handler

            stderr = progress_handler(mode, sys.stderr, console.mask)
        # Every record of the drop logger carries its table; a default keeps a stray one printable.
        stderr.setFormatter(_RedactingFormatter(fmt, console))
        for logger in loggers:
            logger.setLevel(level)
            logger.addHandler(stderr)
            installed.append((logger, stderr))
        return stderr

    drop.propagate = False
    print_to_stderr(step_format, drop, mode=progress).setLevel(logging.INFO)
    if level <= logging.DEBUG:
        # The drop's DEBUG records (a rehearsal's steps) print as DEBUG lines, not as steps.
        print_to_stderr(DEBUG_FORMAT, drop, package).addFilter(
            lambda record: record.levelno < logging.INFO or record.name != DROP_LOGGER)
    else:
        # The package's warnings (a damaged checkpoint set aside, ...) as bare lines, through the
        # masking formatter: without a handler here they reached stderr only through logging's
        # last-resort handler, unmasked, and not at all where the host process has handlers.
        warnings_handler = logging.StreamHandler(sys.stderr)
        warnings_handler.setLevel(logging.WARNING)
        warnings_handler.setFormatter(_RedactingFormatter("%(message)s", console))
        package.addHandler(warnings_handler)
        installed.append((package, warnings_handler))
    try:
        yield console
    finally:
        for logger, handler in installed:
            logger.removeHandler(handler)
            handler.close()
        for logger, old_level, old_propagate in saved:
            logger.setLevel(old_level)
            logger.propagate = old_propagate
