"""How every ``delta-downgrade`` command prints its outcome: one contract for all of them.

- stdout carries what a program reads: without ``--json``, the ``RESULT {json}`` line (last, one
  per command; ``inspect``, ``cleanup`` and ``vacuum`` print their report above it, since the
  report is what they are run for); with ``--json``, exactly one JSON document, which holds the
  RESULT's fields (``command``, ``table``, ``status``, ``exit_code``, ...) next to the command's
  own document (``inspect``'s stable document, ``cleanup``'s plan, ``vacuum``'s file lists).
- stderr carries what a person reads: the steps of a drop, its summary, progress, errors.
- every outcome has its RESULT, an error included: ``status`` ``error`` (``waiting`` for an error
  that says when to retry), the Delta ``error_class``, ``message``, ``exit_code``, the table when
  known. A command line argparse refuses is ``DELTA_DOWNGRADE_BAD_INPUT``, exit 2.
- the values of the storage options are masked in all of it (``app.storage_options``).

Imported once a command has run (``main`` imports it lazily): ``--help`` needs none of this.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Mapping

from delta_downgrade.app.render.result import emit_result, error_result
from delta_downgrade.app.storage_options import redact_output
from delta_downgrade.errors import EXIT_FAILURE, EXIT_OK, DeltaDowngradeError


def finish(args: argparse.Namespace, result: Mapping[str, object], *, document: Mapping[str, object] | None = None,
           text: str | None = None, text_on_stdout: bool = False, code: int = EXIT_OK) -> int:
    """Print one command's outcome by the contract above and return its exit code.

    ``result``: the RESULT fields; ``document``: the command's own ``--json`` document (the
    RESULT fields are added to it where it lacks them); ``text``: the readable rendering, printed
    on stdout above the RESULT line when ``text_on_stdout`` (a report) and never with --json,
    else on stderr (a summary for the person who ran the command)."""
    secrets = getattr(args, "secrets", None) or getattr(args, "storage_options", None) or {}
    result = {"command": args.command, **result, "exit_code": code}
    as_json = bool(getattr(args, "json", False))
    if text is not None and not (as_json and text_on_stdout):
        print(redact_output(text, secrets), file=sys.stdout if text_on_stdout else sys.stderr)
    if as_json:
        emit_document({**(document or {}), **{k: v for k, v in result.items() if k not in (document or {})}},
                      secrets)
    else:
        emit_result(result, secrets=secrets)
    return code


def fail(command: str | None, exc: BaseException, *, table: str | None, feature: str | None = None,
         as_json: bool = False, secrets: Mapping[str, str] | None = None) -> int:
    """The RESULT of a command that ended in ``exc`` (printed on stdout, as the contract says; the
    error line on stderr is the caller's); its exit code."""
    code = exc.exit_code if isinstance(exc, DeltaDowngradeError) else EXIT_FAILURE
    result = {"command": command, **error_result(table or getattr(exc, "table", None), feature, exc),
              "exit_code": code}
    if as_json:
        emit_document(result, secrets)
    else:
        emit_result(result, secrets=secrets)
    return code


def emit_document(document: Mapping[str, object], secrets: Mapping[str, str] | None) -> None:
    """The one ``--json`` document on stdout, indented by two; secrets masked value by value
    after one JSON round trip (what ``default=str`` turns into text is masked too)."""
    plain = json.loads(json.dumps(document, default=str))
    sys.stdout.write(json.dumps(redact_output(plain, secrets or {}), indent=2) + "\n")
    sys.stdout.flush()
