"""The wheel's entry points: ``drop_feature_task``, ``verify_task``, ``truncate_task``.

Each is a :class:`~delta_downgrade.app.tasks.framework.Task`: its settings, what it does to one
table, and its hooks; ``app/tasks/framework.py`` loads the settings, runs the tables, prints the
RESULT lines and sets the task values the same way for all three.
"""

from __future__ import annotations

import sys
import traceback
from typing import TYPE_CHECKING, Sequence

from delta_downgrade.app.render.result import drop_result, emit_result, verify_result
from delta_downgrade.app.storage_options import redact_output
from delta_downgrade.app.tasks.framework import TASK_VALUE_KEYS, TableOutcome, Task, capped_list
from delta_downgrade.app.tasks.settings import DropFeatureSettings, TaskSettings, TruncateSettings, VerifySettings
from delta_downgrade.app.table_ref import parse_table_ref
from delta_downgrade.app.tasks.task_values import task_values_for
from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.errors import EXIT_FAILURE, EXIT_OK, BadSettingsError, DeltaDowngradeError

if TYPE_CHECKING:
    from delta_downgrade.app.engines import Engine
    from delta_downgrade.app.table_ref import TableRef
    from delta_downgrade.operations.verify import VerifyReport


def _waiting_tables(settings: TaskSettings) -> list[str] | int | None:
    """``truncate_task`` with a ``waiting_dir`` and no table named: the tables recorded as waiting
    for their history truncation (:mod:`.waiting_records`); when none waits, the run ends here."""
    assert isinstance(settings, TruncateSettings)
    if not settings.waiting_dir:
        return None
    from delta_downgrade.app.tasks.waiting_records import waiting_tables

    tables = waiting_tables(settings.waiting_dir)
    print(f"waiting_dir={settings.waiting_dir}: {len(tables)} table(s) waiting for their "
          f"history truncation", file=sys.stderr)
    return tables or _nothing_waits(settings)


def _nothing_waits(settings: TruncateSettings) -> int:
    """A truncate run with no table recorded as waiting (a new deployment, or every table done):
    a green run that says so, its summary RESULT, its task values."""
    print(f"truncate: no table waits for its history truncation ({settings.waiting_dir} holds no "
          f"record): nothing to do", file=sys.stderr)
    # The keys of every fleet summary (README "The job": the lists next to their counts).
    summary = {"summary": True, "tables": 0, "by_status": {}, **capped_list("failed_tables", []),
               **capped_list("waiting_tables", []), "waiting_dir": settings.waiting_dir, "exit_code": EXIT_OK}
    emit_result(summary)
    values = task_values_for(settings.task_key or settings.TASK.removesuffix("_task"), settings.task_values_dir)
    values.set("summary", summary)
    for key in TASK_VALUE_KEYS:
        values.set(key, None)
    values.set("status", "nothing_waiting")
    values.set("exit_code", EXIT_OK)
    values.set("needs_truncate", False)
    return EXIT_OK


# --- verify -------------------------------------------------------------------------------------

def _verify_one(settings: TaskSettings, table: str) -> TableOutcome:
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
    extra: JsonObject = {}
    report: VerifyReport  # a catalog table's is a CatalogVerifyReport
    if ref.is_name:
        # A catalog table: DESCRIBE DETAIL / HISTORY and a read on the session, never its path.
        from delta_downgrade.app.engines import native_path
        from delta_downgrade.app.engines.sql_session import delta_sql_session
        from delta_downgrade.app.engines.sql_verify import verify_catalog_table

        if settings.engine == "native":
            native_path(ref)  # exit 2: a catalog name is reached only through SQL
        report = verify_catalog_table(delta_sql_session(ref), ref, expect)
        extra = report.extra_result_fields()
    else:
        report = verify_table(ref.path or table, expect, storage_options=secrets or None)
    for check in report.failures:
        print(redact_output(f"verify: {table}: FAILED {check.name}: {check.detail}", secrets), file=sys.stderr)
    return {**verify_result(report), **extra}, EXIT_OK if report.ok else EXIT_FAILURE


def _verify_compat_report(settings: TaskSettings, tables: list[str],
                          secrets: dict[str, str]) -> TableOutcome:
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


VERIFY = Task(VerifySettings, _verify_one, after=_verify_compat_report)


def verify_task(argv: Sequence[str] | None = None) -> int:
    """Re-read each table and prove the outcome; exit 1 listing what failed. With
    ``compat_report=DIR``, also the client compatibility report of those tables."""
    return VERIFY.run(argv)


# --- drop and truncate ----------------------------------------------------------------------------

def _engine_for(settings: TaskSettings, ref: TableRef) -> Engine:
    from delta_downgrade.app.engines import select_engine

    return select_engine(settings.engine, ref)


def _drop_one(settings: TaskSettings, table: str) -> TableOutcome:
    assert isinstance(settings, DropFeatureSettings)
    if settings.for_client:
        return _drop_for_client_one(settings, table)
    if not settings.feature:
        raise BadSettingsError("drop_feature_task needs --feature=NAME (for example deletionVectors), "
                               "or --for_client=CLIENT", table=table)
    ref = parse_table_ref(table)  # the one parse of this table's argument
    engine = _engine_for(settings, ref)
    outcome = engine.drop_feature(ref, settings.feature, truncate_history=settings.truncate_history,
                                  dry_run=settings.dry_run, storage_options=settings.storage_option_values())
    return _record_if_waiting(settings, table, drop_result(outcome)), EXIT_OK


def _record_if_waiting(settings: DropFeatureSettings, table: str, result: JsonObject) -> JsonObject:
    """A table left with ``checkpointProtection`` to truncate is recorded in ``waiting_dir`` for
    the daily truncate job (not on a dry run, which wrote nothing)."""
    if settings.waiting_dir and result.get("needs_truncate") and not settings.dry_run:
        from delta_downgrade.app.tasks.waiting_records import record_waiting

        path = record_waiting(settings.waiting_dir, table, result.get("truncate_after"))
        print(f"drop_feature: {table} waits for its history truncation: recorded in {path}", file=sys.stderr)
    return result


def _drop_for_client_one(settings: DropFeatureSettings, table: str) -> TableOutcome:
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
    outcome = drop_for_client(settings.engine, parse_table_ref(table), settings.for_client, dry_run=settings.dry_run,
                              storage_options=settings.storage_option_values())
    return _record_if_waiting(settings, table, client_drop_result(outcome)), EXIT_OK


def _truncate_one(settings: TaskSettings, table: str) -> TableOutcome:
    assert isinstance(settings, TruncateSettings)
    ref = parse_table_ref(table)  # the one parse of this table's argument
    engine = _engine_for(settings, ref)
    outcome = engine.drop_feature(ref, "checkpointProtection", truncate_history=True,
                                  dry_run=settings.dry_run, storage_options=settings.storage_option_values())
    result = drop_result(outcome)
    if settings.waiting_dir and not settings.dry_run and not result.get("needs_truncate"):
        from delta_downgrade.app.tasks.waiting_records import remove_record

        if remove_record(settings.waiting_dir, table):
            print(f"truncate: {table} is done: no longer recorded in {settings.waiting_dir}", file=sys.stderr)
    return result, EXIT_OK


DROP_FEATURE = Task(DropFeatureSettings, _drop_one)
TRUNCATE = Task(TruncateSettings, _truncate_one, choose_tables=_waiting_tables)


def drop_feature_task(argv: Sequence[str] | None = None) -> int:
    """Drop one feature from one or many tables."""
    return DROP_FEATURE.run(argv)


def truncate_task(argv: Sequence[str] | None = None) -> int:
    """Drop checkpointProtection by truncating history before the boundary, once retention allows."""
    return TRUNCATE.run(argv)

