"""The ``delta-sql`` engine: ``ALTER TABLE … DROP FEATURE …`` through a Spark session with Delta
(a Databricks runtime, or delta-spark ≥ 4 with its jars on the classpath).

The runtime does the work and owns the log; we map its Delta error classes onto our exit codes.
The outcome is read back so that both engines report the same RESULT shape:

- a catalog name (``main.ops.events``): through ``DESCRIBE DETAIL`` (protocol, features, the
  boundary property) and ``DESCRIBE HISTORY`` (the commits, the boundary commit's time), never
  through the table's storage location — Unity Catalog forbids path access to managed tables.
  What SQL does not show (the protected checkpoints' files) is reported as ``unavailable``;
- a path (``delta.`/data/t```): with our own reader of its log, as the native engine reports it.

Statements are built in :mod:`.sql_statements`, run by :func:`.sql_session.run_sql`.
"""

from __future__ import annotations

from typing import Mapping

from msgspec import field
from delta_downgrade.app.engines.catalog_answers import (
    HistoryEntry, TableDetail, latest_version, read_detail, read_history, truncate_after,
)
from delta_downgrade.app.engines.sql_session import (
    SqlSession, delta_sql_session, error_class_of, map_error, run_sql,
)
from delta_downgrade.app.engines.sql_statements import drop_feature_statement, feature_name
from delta_downgrade.app.table_ref import (
    TableRef, as_table_ref, is_path, parse_table_ref, quote_identifier, split_multipart,
)
from delta_downgrade.errors import DeltaDowngradeError, FeatureNotPresentError, RetentionWaitError
from delta_downgrade.clock import Clock
from delta_downgrade.drop.run import DropOutcome

__all__ = ["CatalogDropOutcome", "DeltaSqlEngine", "delta_sql_available", "drop_feature_sql",
           "error_class_of", "feature_name", "is_path", "map_error", "quote_identifier",
           "split_multipart", "table_identifier"]

#: RESULT fields a catalog name's outcome cannot fill: SQL shows no checkpoint files.
CATALOG_UNAVAILABLE = ("protected_checkpoints", "checkpoints_written")


class CatalogDropOutcome(DropOutcome):
    """A drop on a catalog name: :class:`DropOutcome` read back through DETAIL and HISTORY;
    ``unavailable`` names the fields SQL cannot give (reported empty)."""

    unavailable: list[str] = field(default_factory=lambda: list(CATALOG_UNAVAILABLE))
    detail: TableDetail | None = None


def delta_sql_available() -> bool:
    """Whether an active Spark session has the Delta SQL extension (never starts a session)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return False
    spark = SparkSession.getActiveSession()
    if spark is None:
        return False
    from delta_downgrade.spark import has_delta_sql

    return has_delta_sql(spark)


def table_identifier(table: str) -> str:
    """The SQL identifier of a table argument (:meth:`TableRef.identifier`)."""
    return parse_table_ref(table).identifier


def drop_feature_sql(table: str, feature: str, truncate_history: bool) -> str:
    return drop_feature_statement(parse_table_ref(table), feature, truncate_history)


class DeltaSqlEngine:
    name = "delta-sql"

    def __init__(self, spark: SqlSession | None = None) -> None:
        self._spark = spark

    def spark(self, ref: TableRef | None = None) -> SqlSession:
        if self._spark is None:
            self._spark = delta_sql_session(ref or TableRef("", path=""))
        return self._spark

    def drop_feature(self, table: TableRef | str, feature: str, *, truncate_history: bool = False,
                     dry_run: bool = False, clock: Clock | None = None,
                     storage_options: Mapping[str, str] | None = None) -> DropOutcome:
        ref = as_table_ref(table)
        statement = drop_feature_statement(ref, feature, truncate_history)  # refuses bad names first
        name = feature_name(feature, ref.display)
        spark = self.spark(ref)  # no Delta SQL: one line, exit 2, before anything else
        if ref.is_name:
            return self._drop_catalog_table(spark, ref, name, statement, dry_run)
        return self._drop_path_table(spark, ref, name, statement, dry_run, storage_options)

    def _drop_catalog_table(self, spark: SqlSession, ref: TableRef, name: str, statement: str,
                            dry_run: bool) -> CatalogDropOutcome:
        from delta_downgrade.drop.run import (
            LOGGER, STATUS_ALREADY_ABSENT, STATUS_DROPPED, STATUS_PLANNED,
        )

        table = ref.display
        detail = read_detail(spark, ref)
        before = detail.protocol
        if dry_run:
            return CatalogDropOutcome(
                table, name, STATUS_PLANNED, before, before, detail.boundary_version, [], [], [],
                plan=[f"run: {statement}",
                      f"now (DESCRIBE DETAIL): protocol {before}, tableFeatures "
                      f"[{', '.join(detail.table_features)}]"],
                detail=detail)
        start_version = latest_version(spark, ref)
        LOGGER.info("running %s", statement, extra={"table": table})
        status, error = STATUS_DROPPED, None
        try:
            run_sql(spark, statement, table, name)
        except RetentionWaitError as wait:
            raise self._with_retry_after(spark, ref, wait) from wait
        except DeltaDowngradeError as mapped:
            # The runtime's error keeps its own class; "not present" means already done (exit 0).
            if mapped.error_class != FeatureNotPresentError.error_class:
                raise
            status, error = STATUS_ALREADY_ABSENT, mapped
        after = read_detail(spark, ref)
        history = self._history_since(spark, ref, start_version, after.boundary_version)
        commits = sorted(e.version for e in history if e.version > start_version)
        return CatalogDropOutcome(table, name, status, before, after.protocol, after.boundary_version,
                                  [], commits, [], truncate_after(after, history), error=error,
                                  detail=after)

    @staticmethod
    def _history_since(spark: SqlSession, ref: TableRef, start_version: int, boundary: int | None) -> list[HistoryEntry]:
        """HISTORY back to the commit after ``start_version`` and to the boundary commit (its
        time gives ``truncate_after``), not the whole retained history."""
        latest = latest_version(spark, ref)
        oldest = min(start_version + 1, boundary if boundary is not None else start_version + 1)
        return read_history(spark, ref, limit=max(1, latest - oldest + 1))

    def _with_retry_after(self, spark: SqlSession, ref: TableRef, wait: RetentionWaitError) -> RetentionWaitError:
        """The runtime's wait, with when to retry where DETAIL and HISTORY tell it (the
        checkpointProtection boundary's commit time plus the truncate retention)."""
        if wait.retry_after is not None:
            return wait
        try:
            detail = read_detail(spark, ref)
            boundary = detail.boundary_version
            history = (read_history(spark, ref, limit=max(1, latest_version(spark, ref) - boundary + 1))
                       if boundary is not None else [])
            when = truncate_after(detail, history)
        except DeltaDowngradeError:
            when = None
        if when is None:
            return wait
        wait.retry_after = when
        return wait

    def _drop_path_table(self, spark: SqlSession, ref: TableRef, name: str, statement: str, dry_run: bool,
                         storage_options: Mapping[str, str] | None) -> DropOutcome:
        from delta_downgrade.log.delta_log import DeltaLog
        from delta_downgrade.drop.run import (
            LOGGER, STATUS_ALREADY_ABSENT, STATUS_DROPPED, STATUS_PLANNED, protected_checkpoint_paths,
        )
        from delta_downgrade.protocol import CHECKPOINT_PROTECTION

        location = ref.path or ""
        # The runtime writes with its session's own credentials; ours read the outcome back.
        log = DeltaLog(location, storage_options=storage_options or None)
        before = log.snapshot(check_read=False).protocol
        if dry_run:
            return DropOutcome(location, name, STATUS_PLANNED, before, before, None, [], [], [],
                               plan=[f"run: {statement}"])
        LOGGER.info("running %s", statement, extra={"table": location})
        start_version = log.latest_version()
        status = STATUS_DROPPED
        error: DeltaDowngradeError | None = None
        try:
            run_sql(spark, statement, location, name)
        except DeltaDowngradeError as mapped:
            # The runtime's error keeps its own class; "not present" means already done (exit 0).
            if mapped.error_class != FeatureNotPresentError.error_class:
                raise
            status, error = STATUS_ALREADY_ABSENT, mapped
        log.refresh()
        snap = log.snapshot(check_read=False)
        boundary = snap.boundary_version if CHECKPOINT_PROTECTION in snap.protocol.features else None
        commits = list(range(start_version + 1, snap.version + 1))
        return DropOutcome(location, name, status, before, snap.protocol, boundary,
                           protected_checkpoint_paths(log, boundary), commits, [], error=error)
