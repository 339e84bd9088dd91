"""The ``--json`` documents of ``inspect``, ``cleanup`` and ``vacuum`` (``app/render/inspect.py``,
``catalog_inspect.py``, ``cleanup.py``, ``vacuum.py``; ``app/cli/output.py`` adds the RESULT
fields a document lacks), and a task's ``PROGRESS`` line (``app/progress.py``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from delta_downgrade.app.schemas.base import Document, ProtocolDocument, when_present
from delta_downgrade.app.schemas.results import (
    CatalogInspectResult,
    CleanupDecision,
    CleanupResult,
    InspectResult,
    VacuumResult,
)

__all__ = ["CatalogInspectDocument", "CatalogInspectOutput", "CleanupDocument", "CleanupOutput",
           "InspectDocument", "InspectOutput", "ProgressEvent", "VacuumDocument", "VacuumOutput"]


# --- inspect --------------------------------------------------------------------------------------

class Feature(Document):
    name: str
    known: bool
    kind: Literal["writer", "readerWriter"] | None = Field(description="null: a feature this package does "
                                                                       "not know")
    implicit: bool
    removable: bool
    requires_history_protection: bool
    in_use: bool = when_present("removable features: whether the table carries traces of it")
    traces: list[str] = when_present("removable features: what a drop must remove")


class UnsupportedFeatures(Document):
    read: list[str]
    write: list[str]


class Checkpoint(Document):
    version: int
    kind: Literal["classic", "multipart", "v2"]
    parts: int
    complete: bool
    files: list[str]
    size_bytes: int
    sidecars: list[str] = when_present("a V2 checkpoint: its sidecar files")


class CheckpointProtection(Document):
    feature_present: bool
    boundary_version: int | None = Field(description="delta.requireCheckpointProtectionBeforeVersion")
    protected_checkpoint_versions: list[int]


class Files(Document):
    live_files: int
    live_bytes: int
    files_with_deletion_vectors: int
    deleted_rows_in_deletion_vectors: int
    tombstones: int
    domains: list[str]


class ProtocolHistorySpan(Document):
    start_version: int
    end_version: int
    protocol: ProtocolDocument
    boundary_version: int | None


class InspectDocument(Document):
    """The stable ``inspect --json`` document of a path (README "inspect --json fields")."""

    format_version: Literal[1]
    table: str
    version: int
    latest_version: int
    earliest_version: int | None = Field(description="the oldest version still reconstructable; null "
                                                     "with --no-history when the log was listed from "
                                                     "_last_checkpoint (see listed_from)")
    listed_from: int | None = Field(description="null when the whole log was listed; with --no-history, "
                                                "the version of the checkpoint _last_checkpoint names "
                                                "when the log was listed from it")
    timestamp: str | None
    protocol: ProtocolDocument
    implicit_features: list[str]
    features: list[Feature]
    unsupported_features: UnsupportedFeatures
    table_id: str
    partition_columns: list[str]
    properties: dict[str, str]
    checkpoints: list[Checkpoint]
    last_checkpoint: dict[str, Any] | None = Field(description="the _last_checkpoint hint as the log holds it; "
                                                               "null when missing, empty or unreadable")
    checkpoint_protection: CheckpointProtection
    droppable_features: list[str]
    files: Files
    unknown_log_files: list[str]
    protocol_history: list[ProtocolHistorySpan] = when_present("unless --no-history")


class InspectOutput(InspectDocument, InspectResult):
    """``inspect PATH --json``: the document with the RESULT fields."""


class CatalogFeature(Document):
    name: str
    known: bool
    kind: Literal["writer", "readerWriter"] | None
    implicit: bool
    removable: bool
    requires_history_protection: bool


class CatalogCheckpointProtection(Document):
    feature_present: bool
    boundary_version: int | None


class CatalogFiles(Document):
    live_files: int | None
    live_bytes: int | None


class HistoryCommit(Document):
    version: int
    timestamp: str | None
    operation: str
    operation_parameters: dict[str, str]


class CatalogInspectDocument(Document):
    """``inspect NAME --json``: the fields of :class:`InspectDocument` that ``DESCRIBE DETAIL`` and
    ``DESCRIBE HISTORY`` give, under the same keys; ``unavailable`` names the others."""

    format_version: Literal[1]
    table: str
    source: str
    version: int | None
    latest_version: int | None
    earliest_version: int | None
    timestamp: str | None
    protocol: ProtocolDocument
    implicit_features: list[str]
    features: list[CatalogFeature]
    unsupported_features: UnsupportedFeatures
    table_id: str | None
    partition_columns: list[str]
    properties: dict[str, str]
    checkpoint_protection: CatalogCheckpointProtection
    droppable_features: list[str]
    files: CatalogFiles
    drop_feature_commits: list[HistoryCommit]
    unavailable: list[str]


class CatalogInspectOutput(CatalogInspectDocument, CatalogInspectResult):
    """``inspect NAME --json``: the document with the RESULT fields."""


# --- cleanup --------------------------------------------------------------------------------------

class CleanupPlan(Document):
    cutoff_ms: int
    cutoff: str
    retention_ms: int | None
    granularity: Literal["day", "hour", "minute"]
    cutoff_checkpoint: int | None
    allowed: bool
    decision: CleanupDecision
    reason: str
    checkpoint_protection: bool
    boundary_version: int | None
    latest_version: int | None
    truncates_before: int | None
    kept_checkpoints: list[int]
    delete_commits: list[str]
    delete_checkpoints: list[str]
    delete_other: list[str]
    ordered_deletions: list[str]
    delete_temps: list[str]
    compat_checkpoint: str | None
    compat_reason: str


class CleanupDocument(Document):
    table: str
    dry_run: bool
    deleted: list[str]
    written: list[str]
    plan: CleanupPlan


class CleanupOutput(CleanupDocument, CleanupResult):
    """``cleanup --json``: the plan and what was deleted, with the RESULT fields."""


# --- vacuum ---------------------------------------------------------------------------------------

class VacuumDocument(Document):
    table: str
    operation: Literal["VACUUM"]
    version: int
    dry_run: bool
    retention_ms: int
    configured_retention_ms: int
    delete_before_ms: int
    delete_before: str
    files_to_delete: list[str]
    deleted: list[str]
    checksum_companions: list[str]
    failed: dict[str, str] = Field(description="file -> why it could not be deleted")
    staging_dirs: list[str]
    removed_dirs: list[str]
    bytes_to_delete: int
    referenced_count: int
    kept_count: int
    recent_unreferenced_count: int


class VacuumOutput(VacuumDocument, VacuumResult):
    """``vacuum --json``: the files found, deleted and kept, with the RESULT fields."""


# --- progress -------------------------------------------------------------------------------------

class ProgressEvent(Document):
    """One ``PROGRESS {json}`` line a task prints on stderr per update of a long rewrite
    (``app/progress.py``): the counts, the elapsed time, the rates and the ETA (null until
    measurable)."""

    table: str
    step: str
    done: int
    total: int
    unit: Literal["files"]
    done_bytes: int | None
    total_bytes: int | None
    elapsed_s: float
    files_per_s: float | None
    bytes_per_s: float | None
    eta_s: float | None
    finished: bool
    message: str
