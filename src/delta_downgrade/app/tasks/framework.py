"""The task framework under the wheel's entry points (``app/tasks/entrypoints.py``).

A :class:`Task` is its settings class, a handler for one table, and optional hooks (choose the
tables, add something after every table). :func:`run_task` does the rest, the same for every
task: load typed settings (a bad one is a RESULT too), run the handler for every table (a fleet
with bounded parallelism; one bad table does not stop the others), print one ``RESULT`` line per
table (plus a summary for a fleet), set task values, and exit with the worst outcome.

A wait is a successful outcome here (README "Commands", exit codes): a table that must wait
for a retention period (:class:`RetentionWaitError`, exit 3 in the CLI) is status ``waiting``,
``needs_truncate=true`` with ``truncate_after``, and exit 0, because a job run whose task exits
non-zero is a failed run, and a scheduled job that finds a table still inside its retention has
done its work for the day. The wait stays visible in the RESULT line and the task values.

The settings' ``storage_options`` reach every operation; their values are masked in everything a
task prints or hands on: the RESULT lines, the task values, the log lines, error messages and
tracebacks (``app.storage_options.redact_output``).
"""

from __future__ import annotations

import json
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping, Sequence

from msgspec import Struct
from delta_downgrade.app.console_logging import TASK_STEP_FORMAT, console_logging
from delta_downgrade.app.progress import progress_mode
from delta_downgrade.app.render.result import emit_result, error_result
from delta_downgrade.app.storage_options import command_line_secrets, redact_output
from delta_downgrade.app.tasks.settings import (
    STORAGE_OPTION_ITEM, TaskSettings, load_settings, parse_cli_args,
)
from delta_downgrade.app.tasks.task_values import TaskValues, task_values_for
from delta_downgrade.protocol.json_values import JsonObject, JsonValue
from delta_downgrade.errors import (
    EXIT_BAD_INPUT, EXIT_CONFLICT, EXIT_FAILURE, EXIT_OK, EXIT_WAIT, BadSettingsError, DeltaDowngradeError,
    RetentionWaitError,
)

# Worst last: a wait is the mildest failure, an unexpected error the worst.
_SEVERITY = [EXIT_OK, EXIT_WAIT, EXIT_CONFLICT, EXIT_BAD_INPUT, EXIT_FAILURE]

# Keys set as task values for a single-table run: keys of the RESULT line that jobs read back
# (databricks.yml, resources/); set on every path, None when the outcome has no such key.
TASK_VALUE_KEYS = ("table", "feature", "status", "min_reader_version", "min_writer_version",
                   "reader_features", "writer_features", "boundary_version", "protected_checkpoints",
                   "needs_truncate", "truncate_after", "exit_code", "client", "features_dropped")

#: A table's RESULT and its exit code.
TableOutcome = tuple[JsonObject, int]
TableHandler = Callable[[TaskSettings, str], TableOutcome]
#: Run after every table is handled: values to add to the fleet summary / the task values, and
#: an exit code for them (a task's own output, e.g. verify's compat report).
AfterTables = Callable[[TaskSettings, list[str], dict[str, str]], TableOutcome]


def worst(codes: Sequence[int]) -> int:
    return max(codes, key=_SEVERITY.index, default=EXIT_OK)


def error_outcome(table: str | None, feature: str | None, exc: BaseException) -> TableOutcome:
    code = exc.exit_code if isinstance(exc, DeltaDowngradeError) else EXIT_FAILURE
    return error_result(table, feature, exc), code


#: The status of a table that must wait for a retention period (exit 0 in task mode).
STATUS_WAITING = "waiting"


def waiting_outcome(table: str, feature: str | None, exc: RetentionWaitError) -> TableOutcome:
    """A wait in task mode: status ``waiting``, ``needs_truncate=true``, ``truncate_after`` (None
    when the engine could not say, e.g. Delta's own error through ``--engine=delta-sql``), the
    error class and message kept for the run page, and exit 0."""
    result = error_result(table, feature, exc)
    result.update(status=STATUS_WAITING, needs_truncate=True, truncate_after=exc.retry_after)
    return result, EXIT_OK


class Task(Struct, frozen=True):
    """One task: its settings, what it does to one table, and optionally how it finds its tables
    when the settings name none and what it adds after every table is handled."""

    settings_cls: type[TaskSettings]
    handler: TableHandler
    after: AfterTables | None = None
    #: Tables for settings that name none (``truncate_task``: the waiting records): the tables,
    #: an exit code when the hook finished the run itself, or None when it has nothing to say.
    choose_tables: Callable[[TaskSettings], list[str] | int | None] | None = None

    def run(self, argv: Sequence[str] | None = None) -> int:
        return run_task(self, argv)


def run_task(task: Task, argv: Sequence[str] | None = None) -> int:
    """Load the settings, then run the task's handler for every table with the task's log lines
    printed (secrets masked); the worst exit code."""
    settings_cls = task.settings_cls
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--help" in argv or "-h" in argv:
        from delta_downgrade.app.tasks.settings import task_help

        print(task_help(settings_cls))
        return EXIT_OK
    try:
        settings = load_settings(settings_cls, argv)
        tables = settings.table_list()
        chosen = (task.choose_tables(settings) if task.choose_tables is not None and not tables
                  and not settings.tables_from else None)
        if isinstance(chosen, int):
            return chosen
        if chosen is not None:
            tables = chosen
        elif settings.tables_from:
            from delta_downgrade.app.unity_catalog import list_delta_tables

            # Listed before anything runs: a refused listing is one error and nothing is touched.
            listed = list_delta_tables(settings.tables_from)
            print(f"tables_from={settings.tables_from}: {len(listed)} Delta table(s)", file=sys.stderr)
            tables += [t for t in listed if t not in tables]
        elif not tables:
            # In a job, an empty --table= is the run parameter `table` left out (it has no
            # deploy-time default: resources/*.yml).
            raise BadSettingsError(
                f"{settings_cls.TASK} was given no table: pass --table=TABLE (or --tables=a,b / "
                f"--tables_file=FILE / --tables_from=CATALOG[.SCHEMA]); in a job, run it with the job "
                f"parameter table, e.g. `databricks bundle run <job> --params table=main.sales.events`")
    except DeltaDowngradeError as exc:
        return _settings_failed(settings_cls, argv, exc)
    # What the options hold, and whatever else the command line gives by flag or key shape.
    secrets = {**command_line_secrets(argv), **settings.storage_option_values()}
    with console_logging(TASK_STEP_FORMAT, secrets=secrets, progress=progress_mode(sys.stderr, task=True)):
        return _run_tables(settings, task.handler, tables, secrets, task.after)


def _settings_failed(settings_cls: type[TaskSettings], argv: Sequence[str], exc: DeltaDowngradeError) -> int:
    """Settings that do not load are an outcome too: the error line on stderr and a RESULT
    (``status`` error, the error class, ``exit_code``, the table when the command line names
    one). The settings never loaded, so the storage options' values are taken from the command
    line as given to mask them all the same (the settings' messages never quote them anyway)."""
    cli = parse_cli_args(argv)
    secrets = {**command_line_secrets(argv), **argv_secrets(cli)}
    print(redact_output(f"error: {exc}", secrets), file=sys.stderr)
    table = cli.get("table") if isinstance(cli.get("table"), str) else None
    feature = cli.get("feature") or getattr(settings_cls, "FEATURE", None) or cli.get("expect_absent_feature")
    result, code = error_outcome(table, feature if isinstance(feature, str) else None, exc)
    result["exit_code"] = code
    emit_result(result, secrets=secrets)
    return code


def argv_secrets(cli: Mapping[str, Any]) -> dict[str, str]:
    """The storage options' values a command line gives (``--storage_option KEY=VALUE`` items and
    a ``--storage_options`` JSON object), as well as they can be read: what to mask in the output
    of settings that did not load."""
    # Keys as given: whether a value is a secret is decided by its key (storage/options.py); an
    # item without a key, or JSON that does not parse, is masked whole under a secret-looking key.
    found: dict[str, str] = {}
    for item in cli.get(STORAGE_OPTION_ITEM) or ():
        key, sep, value = str(item).partition("=")
        if sep and key.strip():
            found[key.strip()] = value
        else:
            found[f"UNREADABLE_SECRET_{len(found)}"] = str(item)
    text = cli.get("storage_options")
    if isinstance(text, str):
        try:
            given = json.loads(text)
        except ValueError:
            given = None
        if isinstance(given, dict):
            found.update({str(k): str(v) for k, v in given.items()})
        else:
            found[f"UNREADABLE_SECRET_{len(found)}"] = text
    return found


def _run_tables(settings: TaskSettings, handler: TableHandler, tables: list[str],
                secrets: dict[str, str], after: AfterTables | None = None) -> int:
    settings_cls = type(settings)
    feature = (getattr(settings, "feature", None) or getattr(settings_cls, "FEATURE", None)
               or getattr(settings, "expect_absent_feature", None))

    def one(table: str) -> TableOutcome:
        try:
            return handler(settings, table)
        except RetentionWaitError as exc:
            exc = exc.naming(table)
            print(redact_output(f"waiting: {exc}", secrets), file=sys.stderr)
            return waiting_outcome(table, feature, exc)
        except DeltaDowngradeError as exc:
            exc = exc.naming(table)
            print(redact_output(f"error: {exc}", secrets), file=sys.stderr)
            return error_outcome(table, feature, exc)
        except Exception as exc:  # noqa: BLE001 - a fleet must survive one broken table
            print(redact_output(traceback.format_exc(), secrets), end="", file=sys.stderr)
            return error_outcome(table, feature, exc)

    if len(tables) == 1:
        outcomes = [one(tables[0])]
    else:
        with ThreadPoolExecutor(max_workers=max(1, settings.parallelism)) as pool:
            outcomes = list(pool.map(one, tables))
    added, added_code = after(settings, tables, secrets) if after is not None else ({}, EXIT_OK)
    if len(outcomes) == 1 and added:
        # one table: what the task added is part of its RESULT line (a fleet's is in the summary)
        result, table_code = outcomes[0]
        outcomes = [({**result, **added}, worst([table_code, added_code]))]
    for result, code in outcomes:
        result.setdefault("exit_code", code)
        emit_result(result, secrets=secrets)
    code = worst([c for _, c in outcomes] + [added_code])
    values = MaskedTaskValues(
        task_values_for(settings.task_key or settings_cls.TASK.removesuffix("_task"), settings.task_values_dir),
        secrets)
    if len(outcomes) == 1:
        # Every key on every path: a downstream reference to a value never set is undefined.
        _set_values(values, {**{key: outcomes[0][0].get(key) for key in TASK_VALUE_KEYS}, **added})
    else:
        # Waiting tables are successes (exit 0), listed apart so the run page shows them. The
        # lists are capped (a task value holds at most 48 KiB of JSON; the RESULT line of each
        # table names it anyway): the first ones, their count, and whether more were left out.
        failed = [r["table"] for r, c in outcomes if c not in (EXIT_OK,)]
        waiting = [r["table"] for r, _ in outcomes if r.get("status") == STATUS_WAITING]
        summary = {"summary": True, "tables": len(outcomes),
                   "by_status": _count(r.get("status", "?") for r, _ in outcomes),
                   **capped_list("failed_tables", failed), **capped_list("waiting_tables", waiting),
                   **added, "exit_code": code}
        emit_result(summary, secrets=secrets)
        # Per-table values live in the summary for a fleet.
        _set_values(values, {"status": "fleet", "exit_code": code,
                             "needs_truncate": any(bool(r.get("needs_truncate")) for r, _ in outcomes),
                             **{key: None for key in TASK_VALUE_KEYS if key not in ("status", "exit_code",
                                                                                    "needs_truncate")},
                             "summary": summary, **added})
    return code


#: How many tables a summary's list names, and in how many bytes of JSON at most: two such lists
#: and the rest of the summary stay well inside a task value's 48 KiB.
SUMMARY_LIST_ITEMS = 50
SUMMARY_LIST_BYTES = 12 * 1024


def capped_list(name: str, tables: Sequence[JsonValue]) -> JsonObject:
    """``name``: the first tables of ``tables`` (at most :data:`SUMMARY_LIST_ITEMS`, within
    :data:`SUMMARY_LIST_BYTES`), ``<name>_count``: how many there are, ``<name>_truncated``:
    whether some were left out."""
    shown: list[JsonValue] = []
    size = 2
    for table in tables[:SUMMARY_LIST_ITEMS]:
        size += len(json.dumps(table).encode("utf-8")) + 1
        if size > SUMMARY_LIST_BYTES:
            break
        shown.append(table)
    return {name: shown, f"{name}_count": len(tables), f"{name}_truncated": len(shown) < len(tables)}


def _set_values(values: MaskedTaskValues, items: Mapping[str, JsonValue]) -> None:
    """Set each task value on its own, in order: one that cannot be set (over 48 KiB, refused by
    the store) is said on stderr and set as null instead, and never keeps the others (``status``,
    ``exit_code``, ``needs_truncate``, set first) from being set."""
    for key, value in items.items():
        try:
            values.set(key, value)
        except Exception as exc:  # noqa: BLE001 - the table's outcome stands; the value is lost
            print(redact_output(f"warning: task value {key} not set: {exc}", values.secrets), file=sys.stderr)
            try:
                values.set(key, None)
            except Exception:  # noqa: BLE001 - the store refuses everything: said above
                pass


class MaskedTaskValues:
    """Task values whose secrets (storage option values) are masked before they are set: the
    next task, the run's page and the local values file get the masked text."""

    def __init__(self, values: TaskValues, secrets: dict[str, str]) -> None:
        self.values, self.secrets = values, secrets

    def set(self, key: str, value: JsonValue) -> None:
        self.values.set(key, redact_output(value, self.secrets))


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out
