"""What ``DESCRIBE DETAIL`` and ``DESCRIBE HISTORY`` say about a catalog table, typed.

The columns are the documented ones (delta-spark's ``TableDetail`` and the history schema of
Databricks' "Table history schema" page): DETAIL has ``format, id, name, description, location,
createdAt, lastModified, partitionColumns, clusteringColumns, numFiles, sizeInBytes, properties,
minReaderVersion, minWriterVersion, tableFeatures``; HISTORY has ``version, timestamp, userId,
userName, operation, operationParameters, job, notebook, clusterId, readVersion,
isolationLevel, isBlindAppend, operationMetrics, userMetadata, engineInfo``, newest first.

Everything a task reports for a catalog name comes from these two answers, never from the
table's storage location: Unity Catalog forbids path access to managed tables.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Mapping

from msgspec import Struct, field
from delta_downgrade.app.engines.sql_session import SqlRow, SqlSession, run_sql
from delta_downgrade.app.engines.sql_statements import describe_detail_statement, describe_history_statement
from delta_downgrade.app.table_ref import TableRef
from delta_downgrade.clock import to_utc_iso
from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol, lookup_feature
from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.protocol.table_config import TableConfig

#: The table property that holds the Checkpoint Protection boundary (Checkpoint Protection RFC).
BOUNDARY_PROPERTY = "delta.requireCheckpointProtectionBeforeVersion"
#: delta-spark's DeltaOperations.OP_DROP_FEATURE and its parameters.
DROP_FEATURE_OPERATION = "DROP FEATURE"

# Protocol versions that list their features (PROTOCOL.md "Table Features").
_READER_FEATURES_VERSION = 3
_WRITER_FEATURES_VERSION = 7
_MINUTE_MS = 60_000


class TableDetail(Struct, frozen=True):
    """One ``DESCRIBE DETAIL`` row."""

    name: str | None
    location: str | None
    table_id: str | None
    format: str | None
    min_reader_version: int
    min_writer_version: int
    table_features: tuple[str, ...]
    properties: Mapping[str, str]
    partition_columns: tuple[str, ...]
    clustering_columns: tuple[str, ...]
    num_files: int | None
    size_in_bytes: int | None
    created_at_ms: int | None
    last_modified_ms: int | None

    @property
    def protocol(self) -> Protocol:
        return protocol_from_detail(self.min_reader_version, self.min_writer_version, self.table_features)

    @property
    def boundary_version(self) -> int | None:
        """``delta.requireCheckpointProtectionBeforeVersion`` while ``checkpointProtection`` is in
        the protocol (the property means nothing without the feature)."""
        if CHECKPOINT_PROTECTION not in self.table_features:
            return None
        value = self.properties.get(BOUNDARY_PROPERTY)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None


class HistoryEntry(Struct, frozen=True):
    """One ``DESCRIBE HISTORY`` row: what the outcome needs of it."""

    version: int
    timestamp_ms: int | None
    operation: str
    parameters: Mapping[str, str] = field(default_factory=dict)

    def drops(self, feature: str | None = None) -> bool:
        """Whether this commit is a DROP FEATURE (of ``feature``, matched case-insensitively)."""
        if self.operation != DROP_FEATURE_OPERATION:
            return False
        return feature is None or str(self.parameters.get("featureName", "")).lower() == feature.lower()

    @property
    def timestamp_iso(self) -> str | None:
        return to_utc_iso(self.timestamp_ms) if self.timestamp_ms is not None else None

    def to_dict(self) -> JsonObject:
        return {"version": self.version, "timestamp": self.timestamp_iso,
                "operation": self.operation, "operation_parameters": dict(self.parameters)}


def protocol_from_detail(min_reader: int, min_writer: int, features: tuple[str, ...] | list[str]) -> Protocol:
    """The protocol DETAIL describes. ``tableFeatures`` is delta-spark's implicitly and explicitly
    supported feature names, one list: below writer version 7 the versions alone are the protocol;
    at 7 every name is a writer feature, and at reader version 3 the names the registry knows as
    reader-writer features are the reader features too. A name this package does not know is
    counted as a writer feature only (DETAIL does not say which list held it)."""
    if min_writer < _WRITER_FEATURES_VERSION:
        return Protocol(min_reader, min_writer)
    writer = frozenset(features)
    reader = None
    if min_reader >= _READER_FEATURES_VERSION:
        reader = frozenset(n for n in features if (spec := lookup_feature(n)) is not None and spec.is_reader_writer)
    return Protocol(min_reader, min_writer, reader, writer)


def _ms(value: object) -> int | None:
    """Epoch milliseconds of a timestamp column. PySpark gives a naive datetime in the driver's
    local time (it converts with the local zone), so a naive value is read as local time."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return int(round(value.timestamp() * 1000))
    if isinstance(value, (int, float)):
        return int(value)
    return None


def _row(row: SqlRow) -> dict[str, Any]:
    return row.asDict()


def read_detail(spark: SqlSession, ref: TableRef) -> TableDetail:
    """``DESCRIBE DETAIL`` of ``ref``, typed."""
    rows = run_sql(spark, describe_detail_statement(ref), ref.display)
    if len(rows) != 1:
        raise DeltaDowngradeError(f"DESCRIBE DETAIL answered {len(rows)} rows, expected one", table=ref.display)
    d = _row(rows[0])
    if d.get("format") not in (None, "delta"):
        from delta_downgrade.errors import NotADeltaTableError
        raise NotADeltaTableError(f"{ref.display} is a {d.get('format')} table, not a Delta table",
                                  table=ref.display)
    return TableDetail(
        name=d.get("name"), location=d.get("location"), table_id=d.get("id"), format=d.get("format"),
        min_reader_version=int(d["minReaderVersion"]), min_writer_version=int(d["minWriterVersion"]),
        table_features=tuple(sorted(d.get("tableFeatures") or ())),
        properties=dict(d.get("properties") or {}),
        partition_columns=tuple(d.get("partitionColumns") or ()),
        clustering_columns=tuple(d.get("clusteringColumns") or ()),
        num_files=d.get("numFiles"), size_in_bytes=d.get("sizeInBytes"),
        created_at_ms=_ms(d.get("createdAt")), last_modified_ms=_ms(d.get("lastModified")))


def read_history(spark: SqlSession, ref: TableRef, limit: int | None = None) -> list[HistoryEntry]:
    """``DESCRIBE HISTORY`` of ``ref`` (the ``limit`` newest commits), newest first."""
    rows = run_sql(spark, describe_history_statement(ref, limit), ref.display)
    entries = []
    for row in rows:
        d = _row(row)
        params = {str(k): str(v) for k, v in (d.get("operationParameters") or {}).items()}
        entries.append(HistoryEntry(int(d["version"]), _ms(d.get("timestamp")), str(d.get("operation") or ""), params))
    return sorted(entries, key=lambda e: e.version, reverse=True)


def latest_version(spark: SqlSession, ref: TableRef) -> int:
    entries = read_history(spark, ref, limit=1)
    if not entries:
        raise DeltaDowngradeError("DESCRIBE HISTORY answered no commit", table=ref.display)
    return entries[0].version


def truncate_after(detail: TableDetail, history: list[HistoryEntry]) -> str | None:
    """When ``checkpointProtection`` can go (TRUNCATE HISTORY), as far as DETAIL and HISTORY tell:
    the boundary commit's time, rounded up to the minute, plus the table's
    ``delta.dropFeatureTruncateHistory.retentionDuration`` (Checkpoint Protection RFC: history
    before the boundary is truncated in one go once it is older than the retention). The runtime
    decides from the checkpoint it truncates at, which SQL does not show: an estimate no earlier
    than the runtime's. None when the boundary commit is not in the history answered."""
    boundary = detail.boundary_version
    if boundary is None:
        return None
    commit = next((e for e in history if e.version == boundary), None)
    if commit is None or commit.timestamp_ms is None:
        return None
    retention = TableConfig(detail.properties).truncate_history_retention_ms
    return to_utc_iso(math.ceil(commit.timestamp_ms / _MINUTE_MS) * _MINUTE_MS + retention)
