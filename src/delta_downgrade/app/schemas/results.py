"""The ``RESULT {json}`` line of every command and task, one model per kind of outcome
(``app/render/result.py`` builds them, ``app/cli/output.py`` and ``app/tasks/entrypoints.py``
print them).

Every RESULT has ``status`` and ``exit_code``; a table's RESULT has ``table``; a summary line
(a fleet) has ``summary: true`` instead. The CLI adds ``command`` (null when argparse refused a
command line that names none); a task's RESULT has no ``command``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from delta_downgrade.app.schemas.base import (
    Document,
    ProtocolAction,
    VerdictValue,
    when_present,
)

__all__ = [
    "CLEANUP_DECISIONS",
    "CatalogInspectResult",
    "CleanupResult",
    "ClientDropResult",
    "ClientListResult",
    "CompatFleetSummary",
    "CompatReportPaths",
    "CompatResult",
    "DropResult",
    "ErrorResult",
    "InspectResult",
    "TaskFleetSummary",
    "VacuumResult",
    "VerifyCheck",
    "VerifyResult",
]

#: ``cleanup``'s machine-readable decisions (operations/cleanup.py, CleanupPlan.decision).
CleanupDecision = Literal[
    "no-cutoff-checkpoint", "nothing-to-delete", "no-checkpoint-protection", "all-before-boundary-at-once",
    "supported-range-checkpoints-kept", "skipped-unsupported-protocol", "skipped-partial-cleanup"]
CLEANUP_DECISIONS: tuple[str, ...] = get_args(CleanupDecision)


class ResultFields(Document):
    """What every RESULT has."""

    command: str | None = when_present("the CLI's command (null: argparse refused a command line naming "
                                       "none); absent in a task's RESULT")
    status: str
    exit_code: int


class TableResult(ResultFields):
    table: str


class ProtocolFields(Document):
    """The protocol a RESULT reports, flat: versions and sorted feature lists (null: not listed)."""

    min_reader_version: int
    min_writer_version: int
    reader_features: list[str] | None
    writer_features: list[str] | None


class ErrorFields(Document):
    """A :class:`DeltaDowngradeError` as a RESULT shows it (``errors.py`` ``to_dict``)."""

    error_class: str
    sqlstate: str = when_present("the error's SQLSTATE (absent for an unexpected exception)")
    message: str
    params: dict[str, Any] = when_present("the error's parameters, when it has any")


class CompatReportPaths(Document):
    """Where ``--report DIR`` / ``compat_report=DIR`` wrote the compat report."""

    # ``json`` is a method of pydantic's models: the field is declared under another name.
    json_path: str = Field(alias="json")
    html: str


# --- drop-feature, truncate-history, drop_feature_task, truncate_task ----------------------------

class DropResult(TableResult, ProtocolFields):
    """One drop (``render/result.py`` ``drop_result``); the protocol fields are the protocol after
    it. A dry run (``planned``) carries the planned values and ``plan``."""

    feature: str
    status: Literal["dropped", "already_absent", "planned"]
    protocol_before: ProtocolAction
    boundary_version: int | None
    protected_checkpoints: list[str] = Field(description="the protected checkpoints' files; a planned V2 "
                                                         "checkpoint's name shows <uuid>")
    needs_truncate: bool
    truncate_after: str | None = Field(description="UTC time after which truncate-history may run")
    commits: list[int]
    checkpoints_written: list[str]
    plan: list[str] = when_present("a dry run's steps, in order")
    unavailable: list[str] = when_present("a catalog name's outcome: the fields SQL cannot give")
    # already_absent after a concurrent drop (or Delta SQL's "feature not present") names its error
    error_class: str = when_present()
    sqlstate: str = when_present()
    message: str = when_present()
    params: dict[str, Any] = when_present()


class ClientDropResult(TableResult, ProtocolFields):
    """``drop-feature --for CLIENT`` / ``drop_feature_task --for_client`` (``client_drop_result``)."""

    client: str
    feature: str | None = Field(description="the features dropped, comma-joined in order (null: none)")
    features_dropped: list[str]
    features_planned: list[str]
    status: Literal["dropped", "planned", "already_compatible"]
    protocol_before: ProtocolAction
    boundary_version: int | None
    protected_checkpoints: list[str]
    needs_truncate: bool
    truncate_after: str | None
    commits: list[int]
    checkpoints_written: list[str]
    read_before: VerdictValue
    write_before: VerdictValue
    read_after: VerdictValue
    write_after: VerdictValue
    truncate_history_before_write: bool
    notes: list[str]
    plan: list[str] = when_present("a dry run's steps, each prefixed with its drop")


# --- verify_task ----------------------------------------------------------------------------------

class VerifyCheck(Document):
    check: str
    ok: bool
    detail: str


class VerifyResult(TableResult, ProtocolFields):
    """``verify_task`` for one table (``verify_result``)."""

    feature: str | None
    status: Literal["verified", "failed"]
    version: int
    boundary_version: int | None
    protected_checkpoints: list[str]
    needs_truncate: bool
    checks: list[VerifyCheck]
    failed_checks: list[str]
    drop_commits: list[dict[str, Any]] = when_present("a catalog name: its DROP FEATURE commits (DESCRIBE "
                                                      "HISTORY)")
    unavailable: list[str] = when_present("a catalog name: what SQL cannot show")
    compat_report: CompatReportPaths | None = when_present("compat_report=DIR (one table): the report's "
                                                           "files; null when it could not be written")
    compat_report_error: str = when_present("the error class of a compat report that was not written")


# --- inspect --------------------------------------------------------------------------------------

class InspectResult(TableResult, ProtocolFields):
    """``inspect`` of a path (``inspect_result``)."""

    status: Literal["inspected"]
    version: int
    latest_version: int
    boundary_version: int | None
    protected_checkpoint_versions: list[int]
    droppable_features: list[str]


class CatalogInspectResult(TableResult, ProtocolFields):
    """``inspect`` of a catalog name (``catalog_inspect_result``): the fields SQL gives."""

    status: Literal["inspected"]
    version: int | None
    latest_version: int | None
    boundary_version: int | None
    droppable_features: list[str]


# --- compat ---------------------------------------------------------------------------------------

class CompatResult(TableResult, ProtocolFields):
    """One table's ``compat`` (``render/compat.py`` ``compat_result``)."""

    status: Literal["compatible", "blocked"]
    version: int
    clients: list[str]
    blocked_read: list[str]
    blocked_write: list[str]
    compat_report: CompatReportPaths = when_present("with --report DIR")


class BlockedSides(Document):
    read: list[str]
    write: list[str]


class CompatFleetSummary(ResultFields):
    """The summary line of ``compat --tables-file`` (``fleet_summary``)."""

    summary: Literal[True]
    tables: int
    status: Literal["compatible", "blocked", "error"]
    blocked_tables: list[str]
    failed_tables: list[str]
    blocked_by_client: dict[str, BlockedSides]
    compat_report: CompatReportPaths = when_present("with --report DIR")


class ClientListResult(ResultFields):
    """``compat --list-clients``."""

    status: Literal["listed"]
    entries: int


# --- cleanup, vacuum ------------------------------------------------------------------------------

class CleanupResult(TableResult):
    """``cleanup`` (``cleanup_result``): counts, not paths."""

    status: Literal["planned", "cleaned", "skipped"]
    dry_run: bool
    decision: CleanupDecision
    allowed: bool
    cutoff_checkpoint: int | None
    boundary_version: int | None
    deletions_planned: int
    deleted_count: int


class VacuumResult(TableResult):
    """``vacuum`` (``vacuum_result``): counts, not paths."""

    status: Literal["planned", "vacuumed", "failed"]
    version: int
    dry_run: bool
    retention_ms: int
    files_to_delete_count: int
    bytes_to_delete: int
    deleted_count: int
    failed_count: int


# --- errors and waits -----------------------------------------------------------------------------

class ErrorResult(ResultFields, ErrorFields):
    """Any command or task that ended in an error (``error_result``): ``waiting`` when the error
    says when to retry (a retention wait: exit 3 in the CLI, exit 0 in a task)."""

    table: str | None = Field(description="the table, null when not known (a refused command line)")
    feature: str | None = when_present()
    status: Literal["error", "waiting"]
    truncate_after: str | None = when_present("a wait: when to retry (null: the runtime did not say)")
    needs_truncate: bool = when_present("a task's wait: true")


# --- a task's fleet -------------------------------------------------------------------------------

class TaskFleetSummary(Document):
    """The summary line of a task run over many tables (``app/tasks/entrypoints.py``); the lists
    name the first tables only (a task value holds at most 48 KiB), next to their counts."""

    summary: Literal[True]
    tables: int
    by_status: dict[str, int]
    failed_tables: list[str]
    failed_tables_count: int
    failed_tables_truncated: bool
    waiting_tables: list[str]
    waiting_tables_count: int
    waiting_tables_truncated: bool
    exit_code: int
    waiting_dir: str = when_present("truncate_task with nothing recorded as waiting: the directory read")
    compat_report: CompatReportPaths | None = when_present("verify_task compat_report=DIR")
    compat_report_error: str = when_present()
