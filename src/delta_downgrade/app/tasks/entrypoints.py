"""Wheel entry points: ``drop_feature_task``, ``verify_task``, ``truncate_task``.

Each is thin: load typed settings, run the operation for every table (a fleet runs with bounded
parallelism; one bad table does not stop the others), print one ``RESULT`` line per table (plus a
summary for a fleet), set task values, and exit with the worst outcome.

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

from delta_downgrade.errors import (
    EXIT_BAD_INPUT, EXIT_CONFLICT, EXIT_FAILURE, EXIT_OK, EXIT_WAIT, BadSettingsError, DeltaDowngradeError,
    RetentionWaitError,
)
from delta_downgrade.app.console_logging import TASK_STEP_FORMAT, console_logging
from delta_downgrade.app.progress import progress_mode
from delta_downgrade.app.render.result import drop_result, emit_result, error_result, verify_result
from delta_downgrade.app.storage_options import command_line_secrets, redact_output
from delta_downgrade.app.tasks.settings import (
    STORAGE_OPTION_ITEM, DropFeatureSettings, TaskSettings, TruncateSettings, VerifySettings, load_settings,
    parse_cli_args,
)
from delta_downgrade.app.tasks.task_values import task_values_for

# Worst last: a wait is the mildest failure, an unexpected error the worst.
_SEVERITY = [EXIT_OK, EXIT_WAIT, EXIT_CONFLICT, EXIT_BAD_INPUT, EXIT_FAILURE]

# Keys set as task values for a single-table run: keys of the RESULT line that jobs read back
# (databricks.yml, resources/); set on every path, None when the outcome has no such key.
TASK_VALUE_KEYS = ("table", "feature", "status", "min_reader_version", "min_writer_version",
                   "reader_features", "writer_features", "boundary_version", "protected_checkpoints",
                   "needs_truncate", "truncate_after", "exit_code", "client", "features_dropped")

TableHandler = Callable[[TaskSettings, str], tuple[dict[str, Any], int]]
#: Run after every table is handled: values to add to the fleet summary / the task values, and
#: an exit code for them (a task's own output, e.g. verify's compat report).
AfterTables = Callable[[TaskSettings, list[str], dict[str, str]], tuple[dict[str, Any], int]]


def worst(codes: Sequence[int]) -> int:
    return max(codes, key=_SEVERITY.index, default=EXIT_OK)


def error_outcome(table: str | None, feature: str | None, exc: BaseException) -> tuple[dict[str, Any], int]:
    code = exc.exit_code if isinstance(exc, DeltaDowngradeError) else EXIT_FAILURE
    return error_result(table, feature, exc), code


#: The status of a table that must wait for a retention period (exit 0 in task mode).
STATUS_WAITING = "waiting"


def waiting_outcome(table: str, feature: str | None, exc: RetentionWaitError) -> tuple[dict[str, Any], int]:
    """A wait in task mode: status ``waiting``, ``needs_truncate=true``, ``truncate_after`` (None
    when the engine could not say, e.g. Delta's own error through ``--engine=delta-sql``), the
    error class and message kept for the run page, and exit 0."""
    result = error_result(table, feature, exc)
    result.update(status=STATUS_WAITING, needs_truncate=True, truncate_after=exc.retry_after)
    return result, EXIT_OK


def run_task(settings_cls: type[TaskSettings], handler: TableHandler, argv: Sequence[str] | None = None,
             *, after: AfterTables | None = None) -> int:
    """Load the settings, then run ``handler`` for every table with the task's log lines printed
    (secrets masked); the worst exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--help" in argv or "-h" in argv:
        from delta_downgrade.app.tasks.settings import task_help

        print(task_help(settings_cls))
        return EXIT_OK
    try:
        settings = load_settings(settings_cls, argv)
        tables = settings.table_list()
        if isinstance(settings, TruncateSettings) and settings.waiting_dir and not tables \
                and not settings.tables_from:
            from delta_downgrade.app.tasks.waiting_records import waiting_tables

            tables = waiting_tables(settings.waiting_dir)
            print(f"waiting_dir={settings.waiting_dir}: {len(tables)} table(s) waiting for their "
                  f"history truncation", file=sys.stderr)
            if not tables:
                return _nothing_waits(settings)
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
        return _run_tables(settings, handler, tables, secrets, after)


def _nothing_waits(settings: TruncateSettings) -> int:
    """A truncate run with no table recorded as waiting (a new deployment, or every table done):
    a green run that says so, its summary RESULT, its task values."""
    print(f"truncate: no table waits for its history truncation ({settings.waiting_dir} holds no "
          f"record): nothing to do", file=sys.stderr)
    # The keys of every fleet summary (README "The job": the lists next to their counts).
    summary = {"summary": True, "tables": 0, "by_status": {}, **_capped("failed_tables", []),
               **_capped("waiting_tables", []), "waiting_dir": settings.waiting_dir, "exit_code": EXIT_OK}
    emit_result(summary)
    values = task_values_for(settings.task_key or settings.TASK.removesuffix("_task"), settings.task_values_dir)
    values.set("summary", summary)
    for key in TASK_VALUE_KEYS:
        values.set(key, None)
    values.set("status", "nothing_waiting")
    values.set("exit_code", EXIT_OK)
    values.set("needs_truncate", False)
    return EXIT_OK


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

    def one(table: str) -> tuple[dict[str, Any], int]:
        try:
            return handler(settings, table)
        except RetentionWaitError as exc:
            print(redact_output(f"waiting: {exc}", secrets), file=sys.stderr)
            return waiting_outcome(table, feature, exc)
        except DeltaDowngradeError as exc:
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
    values = _MaskedTaskValues(
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
                   **_capped("failed_tables", failed), **_capped("waiting_tables", waiting),
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


def _capped(name: str, tables: list[str]) -> dict[str, Any]:
    """``name``: the first tables of ``tables`` (at most :data:`SUMMARY_LIST_ITEMS`, within
    :data:`SUMMARY_LIST_BYTES`), ``<name>_count``: how many there are, ``<name>_truncated``:
    whether some were left out."""
    shown: list[str] = []
    size = 2
    for table in tables[:SUMMARY_LIST_ITEMS]:
        size += len(json.dumps(table).encode("utf-8")) + 1
        if size > SUMMARY_LIST_BYTES:
            break
        shown.append(table)
    return {name: shown, f"{name}_count": len(tables), f"{name}_truncated": len(shown) < len(tables)}


def _set_values(values: _MaskedTaskValues, items: Mapping[str, Any]) -> None:
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


class _MaskedTaskValues:
    """Task values whose secrets (storage option values) are masked before they are set: the
    next task, the run's page and the local values file get the masked text."""

    def __init__(self, values: Any, secrets: dict[str, str]) -> None:
        self.values, self.secrets = values, secrets

    def set(self, key: str, value: Any) -> None:
        self.values.set(key, redact_output(value, self.secrets))


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


# --- verify -------------------------------------------------------------------------------------

def _verify_one(settings: TaskSettings, table: str) -> tuple[dict[str, Any], int]:
    from delta_downgrade.app.table_ref import parse_table_ref
    from delta_downgrade.operations.verify import Expectations, verify_table

    assert isinstance(settings, VerifySettings)
    secrets = settings.storage_option_values()
    expect = Expectations(
        absent_feature=settings.expect_absent_feature,
        min_reader_version=settings.expect_min_reader_version,
        min_writer_version=settings.expect_min_writer_version,
        boundary_version=settings.expect_boundary_version,
        protected_checkpoints=tuple(settings.expect_protected_checkpoints or ()),
    )
    ref = parse_table_ref(table)
    extra: dict[str, Any] = {}
    if ref.is_name:
        # A catalog table: DESCRIBE DETAIL / HISTORY and a read on the session, never its path.
        from delta_downgrade.app.engines import native_path
        from delta_downgrade.app.engines.sql_session import delta_sql_session
        from delta_downgrade.app.engines.sql_verify import verify_catalog_table

        if settings.engine == "native":
            native_path(table)  # exit 2: a catalog name is reached only through SQL
        report = verify_catalog_table(delta_sql_session(ref), ref, expect)
        extra = report.extra_result_fields()
    else:
        report = verify_table(ref.path or table, expect, storage_options=secrets or None)
    for check in report.failures:
        print(redact_output(f"verify: {table}: FAILED {check.name}: {check.detail}", secrets), file=sys.stderr)
    return {**verify_result(report), **extra}, EXIT_OK if report.ok else EXIT_FAILURE


def _verify_compat_report(settings: TaskSettings, tables: list[str],
                          secrets: dict[str, str]) -> tuple[dict[str, Any], int]:
    """``compat_report=DIR``: the client compatibility report of the tables verified (every
    catalogue client), written after the verification; its paths under ``compat_report`` in the
    summary and the task values. A report that cannot be written is ``compat_report_error`` and
    exit 2; the verification's own results stand."""
    assert isinstance(settings, VerifySettings)
    if not settings.compat_report:
        return {}, EXIT_OK
    from delta_downgrade.app.compat_report import write_compat_report
    from delta_downgrade.compat.catalogue import packaged_catalogue
    from delta_downgrade.operations.compat import fleet_compat

    try:
        document = fleet_compat(tables, packaged_catalogue(), storage_options=secrets or None).to_json()
        paths = write_compat_report(document, settings.compat_report, storage_options=secrets or None)
    except DeltaDowngradeError as exc:
        print(redact_output(f"error: compat report: {exc}", secrets), file=sys.stderr)
        return {"compat_report": None, "compat_report_error": exc.error_class}, exc.exit_code
    except Exception:  # noqa: BLE001 - the verification's results are printed all the same
        print(redact_output(traceback.format_exc(), secrets), end="", file=sys.stderr)
        return {"compat_report": None, "compat_report_error": "INTERNAL_ERROR"}, EXIT_FAILURE
    print(f"compat report: {paths.html}", file=sys.stderr)
    return {"compat_report": {"json": paths.json, "html": paths.html}}, EXIT_OK


def verify_task(argv: Sequence[str] | None = None) -> int:
    """Re-read each table and prove the outcome; exit 1 listing what failed. With
    ``compat_report=DIR``, also the client compatibility report of those tables."""
    return run_task(VerifySettings, _verify_one, argv, after=_verify_compat_report)


# --- drop and truncate ----------------------------------------------------------------------------

def _engine_for(settings: TaskSettings, table: str) -> Any:
    from delta_downgrade.app.engines import select_engine

    return select_engine(settings.engine, table)


def _drop_one(settings: TaskSettings, table: str) -> tuple[dict[str, Any], int]:
    assert isinstance(settings, DropFeatureSettings)
    if settings.for_client:
        return _drop_for_client_one(settings, table)
    if not settings.feature:
        raise BadSettingsError("drop_feature_task needs --feature=NAME (for example deletionVectors), "
                               "or --for_client=CLIENT", table=table)
    engine = _engine_for(settings, table)
    outcome = engine.drop_feature(table, settings.feature, truncate_history=settings.truncate_history,
                                  dry_run=settings.dry_run, storage_options=settings.storage_option_values())
    return _record_if_waiting(settings, table, drop_result(outcome)), EXIT_OK


def _record_if_waiting(settings: DropFeatureSettings, table: str, result: dict[str, Any]) -> dict[str, Any]:
    """A table left with ``checkpointProtection`` to truncate is recorded in ``waiting_dir`` for
    the daily truncate job (not on a dry run, which wrote nothing)."""
    if settings.waiting_dir and result.get("needs_truncate") and not settings.dry_run:
        from delta_downgrade.app.tasks.waiting_records import record_waiting

        path = record_waiting(settings.waiting_dir, table, result.get("truncate_after"))
        print(f"drop_feature: {table} waits for its history truncation: recorded in {path}", file=sys.stderr)
    return result


def _drop_for_client_one(settings: DropFeatureSettings, table: str) -> tuple[dict[str, Any], int]:
    """``--for_client``: the features that block the client, dropped in one run (RESULT keys of a
    drop, ``feature`` the comma-joined features dropped, plus ``client`` and ``features_dropped``)."""
    from delta_downgrade.app.engines import drop_for_client
    from delta_downgrade.app.render.result import client_drop_result

    assert settings.for_client is not None
    if settings.feature:
        # In the job, the feature parameter has a deploy-time default: a run for a client clears it.
        raise BadSettingsError(
            f"drop_feature_task was given both --feature={settings.feature} and "
            f"--for_client={settings.for_client}: give one (in the job, run with feature= empty, e.g. "
            f"--params table=...,for_client={settings.for_client},feature=)", table=table)
    if settings.truncate_history:
        raise BadSettingsError("--for_client drops each feature on the fast path; --truncate_history is "
                               "not available with it (truncate_task finishes after the retention)",
                               table=table)
    outcome = drop_for_client(settings.engine, table, settings.for_client, dry_run=settings.dry_run,
                              storage_options=settings.storage_option_values())
    return _record_if_waiting(settings, table, client_drop_result(outcome)), EXIT_OK


def _truncate_one(settings: TaskSettings, table: str) -> tuple[dict[str, Any], int]:
    assert isinstance(settings, TruncateSettings)
    engine = _engine_for(settings, table)
    outcome = engine.drop_feature(table, "checkpointProtection", truncate_history=True,
                                  dry_run=settings.dry_run, storage_options=settings.storage_option_values())
    result = drop_result(outcome)
    if settings.waiting_dir and not settings.dry_run and not result.get("needs_truncate"):
        from delta_downgrade.app.tasks.waiting_records import remove_record

        if remove_record(settings.waiting_dir, table):
            print(f"truncate: {table} is done: no longer recorded in {settings.waiting_dir}", file=sys.stderr)
    return result, EXIT_OK


def drop_feature_task(argv: Sequence[str] | None = None) -> int:
    """Drop one feature from one or many tables."""
    return run_task(DropFeatureSettings, _drop_one, argv)


def truncate_task(argv: Sequence[str] | None = None) -> int:
    """Drop checkpointProtection by truncating history before the boundary, once retention allows."""
    return run_task(TruncateSettings, _truncate_one, argv)

