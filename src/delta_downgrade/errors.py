"""Error types carrying Delta error classes.

Every error a user can meet is a subclass of :class:`DeltaDowngradeError`. It carries the Delta
error class (the names of delta-spark's ``delta-error-classes.json``), its SQLSTATE, the table it
concerns, a message that says what is wrong and what to do next, and the process exit code of the
task contract (README "Commands", exit codes): 2 bad input, 3 wait for a retention period, 4 concurrent writer, 1 else.

Every error type is declared here, once, with its error class, SQLSTATE and exit code as class
attributes; a raise site picks the type and never sets those three itself (``tests/unit/
test_errors.py`` holds the package to that). The one exception is :func:`from_delta_error_class`,
which keeps the error class a Delta runtime reported, whatever it is.
"""

from __future__ import annotations

import functools
import inspect
import re

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_WAIT = 3
EXIT_CONFLICT = 4

_E = TypeVar("_E", bound="DeltaDowngradeError")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def shown_table(table: str) -> str:
    """A table as a message names it: as given, or quoted (``'/x/t '``) when blanks around it or
    control characters would otherwise hide what it is."""
    return table if table == table.strip() and table.isprintable() else repr(table)


class DeltaDowngradeError(Exception):
    """Base error. ``error_class`` is the Delta error class name, or a package-specific one."""

    error_class: str = "DELTA_DOWNGRADE_INTERNAL_ERROR"
    sqlstate: str = "XX000"
    exit_code: int = EXIT_FAILURE

    def __init__(
        self,
        message: str,
        *,
        table: str | None = None,
        feature: str | None = None,
        error_class: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> None:
        if error_class is not None:
            self.error_class = error_class
        self.table = table
        self.feature = feature
        self.params = dict(params or {})
        self.message = message
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f" (table {shown_table(self.table)})" if self.table else ""
        return f"[{self.error_class}] {self.message}{where}"

    def amended(self: _E, message: str, *, table: str | None = None, feature: str | None = None,
                params: dict[str, Any] | None = None) -> _E:
        """The same error (same type, error class, SQLSTATE, exit code and other attributes) with
        a new message and params; ``table`` and ``feature`` fill in only what was not known."""
        # Not copy.copy: it would call __init__ again, whose signature differs per subclass.
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.message = message
        new.table = self.table or table
        new.feature = self.feature or feature
        new.params = dict(self.params if params is None else params)
        new.args = (new.__str__(),)
        return new

    def naming(self: _E, table: str | None) -> _E:
        """This error naming ``table`` when it names none yet (itself otherwise): what an
        operation's boundary adds (:func:`naming_table`, the CLI, the tasks)."""
        return self if self.table or not table else self.amended(self.message, table=table)

    def to_dict(self) -> dict[str, Any]:
        """The error as it appears in a RESULT line."""
        out: dict[str, Any] = {"error_class": self.error_class, "sqlstate": self.sqlstate,
                               "message": self.message}
        if self.params:
            out["params"] = {k: v for k, v in self.params.items()}
        return out


def naming_table(parameter: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorates an operation's entry point: an error raised inside it that names no table is
    raised again naming the one its ``parameter`` holds (a location, or anything with a ``table``
    attribute such as a DeltaLog). The core below an operation raises without the table; the
    operation, which knows which table it works on, adds it once (:meth:`amended`)."""

    def decorate(func: Callable[_P, _R]) -> Callable[_P, _R]:
        signature = inspect.signature(func)
        if parameter not in signature.parameters:
            raise TypeError(f"{func.__qualname__} has no parameter {parameter!r}")

        @functools.wraps(func)
        def operation(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return func(*args, **kwargs)
            except DeltaDowngradeError as exc:
                if exc.table:
                    raise
                given = signature.bind_partial(*args, **kwargs).arguments.get(parameter)
                table = given if isinstance(given, str) else getattr(given, "table", None)
                named = exc.naming(table if isinstance(table, str) else None)
                if named is exc:
                    raise
                raise named.with_traceback(exc.__traceback__) from exc.__cause__

        return operation

    return decorate


# --- bad input: the table or the request is wrong; nothing was written (exit 2) -------------------

class BadInputError(DeltaDowngradeError):
    exit_code = EXIT_BAD_INPUT
    error_class = "DELTA_DOWNGRADE_BAD_INPUT"
    sqlstate = "42000"


class TableNotFoundError(BadInputError):
    error_class = "DELTA_TABLE_NOT_FOUND"
    sqlstate = "42P01"


class NotADeltaTableError(BadInputError):
    error_class = "DELTA_MISSING_DELTA_TABLE"
    sqlstate = "42P01"


class CorruptLogError(BadInputError):
    """The log cannot be reconstructed (gap in versions, missing protocol/metadata, bad file)."""

    error_class = "DELTA_STATE_RECOVER_ERROR"
    sqlstate = "XXKDS"


class DuplicateColumnsError(CorruptLogError):
    """Two fields of one struct of the table's schema have names equal ignoring case."""

    error_class = "DELTA_DUPLICATE_COLUMNS_FOUND"
    sqlstate = "42711"


class CheckpointUnreadableError(CorruptLogError):
    """A checkpoint file cannot be read at all (truncated, not parquet); readers may fall back to
    an older checkpoint, as Spark does. A readable checkpoint that lacks actions is not this."""


class MissingCommitInfoError(CorruptLogError):
    """In-commit timestamps are enabled, yet a commit has no ``commitInfo`` action
    (PROTOCOL.md "In-Commit Timestamps": every commit then starts with one carrying
    ``inCommitTimestamp``)."""

    error_class = "DELTA_MISSING_COMMIT_INFO"
    sqlstate = "KD004"


class MissingCommitTimestampError(CorruptLogError):
    """In-commit timestamps are enabled, yet a commit's ``commitInfo`` has no
    ``inCommitTimestamp``."""

    error_class = "DELTA_MISSING_COMMIT_TIMESTAMP"
    sqlstate = "KD004"


class VersionsNotContiguousError(CorruptLogError):
    error_class = "DELTA_VERSIONS_NOT_CONTIGUOUS"
    sqlstate = "KD00C"


class VersionNotFoundError(BadInputError):
    error_class = "DELTA_VERSION_NOT_FOUND"
    sqlstate = "22003"


class InvalidProtocolError(BadInputError):
    error_class = "DELTA_INVALID_PROTOCOL_VERSION"
    sqlstate = "KD004"


class UnsupportedFeaturesError(BadInputError):
    """This package lacks reader or writer support for features of the table's protocol."""

    sqlstate = "56038"

    def __init__(self, message: str, *, features: list[str] | set[str] | frozenset[str],
                 for_write: bool, **kw: Any) -> None:
        self.features = sorted(features)
        kw.setdefault("error_class", "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE" if for_write
                      else "DELTA_UNSUPPORTED_FEATURES_FOR_READ")
        params = dict(kw.pop("params", None) or {})
        params.setdefault("unsupportedFeatures", ", ".join(self.features))
        super().__init__(message, params=params, **kw)


class FeatureDropError(BadInputError):
    """DROP FEATURE refused before anything was written. The base of the validation errors below,
    one per delta-spark error class (``delta-error-classes.json``), checked in delta-spark's order
    (``AlterTableDropFeatureDeltaCommand``); its own class is the one for a feature this client
    cannot remove."""

    error_class = "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"
    sqlstate = "0AKDC"


class FeatureIsDeltaPropertyError(FeatureDropError):
    """A ``delta.*`` table property was given where a feature name belongs."""

    error_class = "DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY"
    sqlstate = "42000"


class FeatureNotPresentError(FeatureDropError):
    """A known feature that the table's protocol does not list: the drop has nothing to do (a
    rerun of a completed drop reports this and exits 0)."""

    error_class = "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"
    sqlstate = "55000"


class FeatureNotPresentDidYouMeanError(FeatureDropError):
    """The feature named is not in the protocol, but its preview (or released) counterpart is
    (``typeWidening`` on a ``typeWidening-preview`` table): a typo of intent, not a completed
    drop, so exit 2 and the name to give instead, never ``already_absent``."""

    error_class = "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"
    sqlstate = "55000"


class NonRemovableFeatureError(FeatureDropError):
    """A feature Delta cannot drop at all (not a ``RemovableFeature`` in delta-spark)."""

    error_class = "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"
    sqlstate = "0AKDC"


class UnsupportedClientFeatureError(FeatureDropError):
    """A feature this package cannot remove: unknown to it, or governed by a catalog or commit
    coordinator it cannot write through."""


class HistoryTruncationNotAllowedError(FeatureDropError):
    """TRUNCATE HISTORY asked for a feature that needs no history protection."""

    error_class = "DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED"
    sqlstate = "42000"


class CheckpointProtectionNeedsTruncationError(FeatureDropError):
    """``checkpointProtection`` goes only by truncating the history before its boundary
    (Checkpoint Protection RFC)."""

    error_class = "DELTA_FEATURE_CAN_ONLY_DROP_CHECKPOINT_PROTECTION_WITH_HISTORY_TRUNCATION"
    sqlstate = "55000"


class DependentFeatureError(FeatureDropError):
    """Another feature of the protocol requires the one to drop (PROTOCOL.md "Table Features")."""

    error_class = "DELTA_FEATURE_DROP_DEPENDENT_FEATURE"
    sqlstate = "55000"


class CheckConstraintsPresentError(FeatureDropError):
    """``checkConstraints`` cannot go while the table has constraints; they are never dropped for
    the user."""

    error_class = "DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE"
    sqlstate = "0AKDE"


class GeospatialColumnsPresentError(FeatureDropError):
    """A geospatial feature cannot go while a geometry or geography column exists."""

    error_class = "DELTA_CANNOT_DROP_GEOSPATIAL_FEATURE"
    sqlstate = "0AKDE"


class InvalidColumnNamesForMappingRemovalError(FeatureDropError):
    """Column names that Parquet files without column mapping cannot hold (PROTOCOL.md "Column
    Mapping": physical names are free, logical names become the file's names)."""

    error_class = "DELTA_INVALID_COLUMN_NAMES_WHEN_REMOVING_COLUMN_MAPPING"
    sqlstate = "42K05"


class NotSupportedYetError(BadInputError):
    """A feature whose drop this version of the package cannot do yet; nothing was written."""

    error_class = "DELTA_DOWNGRADE_NOT_SUPPORTED_YET"
    sqlstate = "0A000"


class InvalidProtocolDowngradeError(DeltaDowngradeError):
    error_class = "DELTA_INVALID_PROTOCOL_DOWNGRADE"
    sqlstate = "KD004"


class BadSettingsError(BadInputError):
    """A task setting (``--key=value``, environment, config file) is missing or invalid."""

    error_class = "DELTA_DOWNGRADE_BAD_SETTINGS"


class BadConfigError(BadSettingsError):
    """A file named by the settings (``--config`` TOML, ``--tables_file``) is missing or malformed."""

    error_class = "DELTA_DOWNGRADE_BAD_CONFIG"


class BadJobDefinitionError(BadInputError):
    """A job definition (bundle YAML) the local runner refuses as a whole, before running any task:
    malformed YAML, a bad task, an entry point the wheel does not declare."""

    error_class = "DELTA_DOWNGRADE_BAD_JOB"


class BadTaskValueError(BadInputError):
    """A task key or task-value key that is not ``[A-Za-z0-9_-]+`` (what Databricks accepts)."""

    error_class = "DELTA_DOWNGRADE_BAD_TASK_VALUE"


class TaskValueTooLargeError(BadInputError):
    """A task value whose JSON is over the 48 KiB that Databricks task values hold."""

    error_class = "DELTA_DOWNGRADE_TASK_VALUE_TOO_LARGE"


class EngineUnavailableError(BadInputError):
    """``--engine=delta-sql`` without a Spark session that has Delta SQL."""

    error_class = "DELTA_DOWNGRADE_ENGINE_UNAVAILABLE"


class CatalogNameNeedsSqlError(BadInputError):
    """``--engine=native`` with a catalog name: the native engine reads and writes a table's log
    through its storage path, and a catalog table is reached only through SQL on the session
    (Unity Catalog forbids path access to managed tables)."""

    error_class = "DELTA_DOWNGRADE_CATALOG_NAME_NEEDS_SQL"


class TableOrViewNotFoundError(BadInputError):
    """The runtime knows no table or view of that name (Spark's ``TABLE_OR_VIEW_NOT_FOUND``), or
    not its catalog or schema (the runtime's class is kept: ``REQUIRES_SINGLE_PART_NAMESPACE``,
    ``SCHEMA_NOT_FOUND``, ``CATALOG_NOT_FOUND``, ``NO_SUCH_CATALOG_EXCEPTION``)."""

    error_class = "TABLE_OR_VIEW_NOT_FOUND"
    sqlstate = "42P01"


class InsufficientPermissionsError(BadInputError):
    """The runtime refused the statement for a missing privilege (Databricks'
    ``INSUFFICIENT_PERMISSIONS``, or ``PERMISSION_DENIED``, kept as reported): dropping a feature
    needs ``MODIFY`` on the table. Nothing was written."""

    error_class = "INSUFFICIENT_PERMISSIONS"
    sqlstate = "42501"


class OptionalDependencyMissingError(BadInputError):
    """A setting needs an optional extra that is not installed (``tables_from`` needs
    databricks-sdk: ``pip install 'delta-downgrade[databricks]'``). Nothing was read or written."""

    error_class = "DELTA_DOWNGRADE_MISSING_DEPENDENCY"
    sqlstate = "0A000"


class UnityCatalogListingError(BadInputError):
    """Unity Catalog did not list ``tables_from``: the REST API answered with an error (its
    ``error_code`` is kept as the error class, see :func:`from_unity_catalog_error`), or no
    Databricks credentials were found. Nothing was read or written."""

    error_class = "DELTA_DOWNGRADE_UNITY_CATALOG_LISTING_FAILED"
    sqlstate = "42000"


class UnityCatalogPermissionError(UnityCatalogListingError):
    """Unity Catalog refused the listing (HTTP 403, e.g. ``PERMISSION_DENIED``: no USE_CATALOG /
    USE_SCHEMA)."""

    error_class = "PERMISSION_DENIED"
    sqlstate = "42501"


class UnityCatalogNotFoundError(UnityCatalogListingError):
    """The catalog or schema of ``tables_from`` does not exist (HTTP 404, e.g.
    ``CATALOG_DOES_NOT_EXIST``, ``SCHEMA_DOES_NOT_EXIST``)."""

    error_class = "NOT_FOUND"
    sqlstate = "42704"


def from_unity_catalog_error(status: int | None, error_code: str | None, message: str) -> UnityCatalogListingError:
    """A Unity Catalog REST error as ours: the type from the HTTP status (403, 404, else the
    generic one), the API's ``error_code`` kept verbatim as the error class."""
    kind = {403: UnityCatalogPermissionError, 404: UnityCatalogNotFoundError}.get(status or 0,
                                                                                  UnityCatalogListingError)
    return kind(message, error_class=error_code or None)


class InvalidIdentifierError(BadInputError):
    """A table name that is not a valid (multi-part) SQL identifier."""

    error_class = "INVALID_IDENTIFIER"
    sqlstate = "42602"


class BadDurationError(BadInputError):
    """A duration (retention, interval) that is not a duration, is negative, or is longer than
    :data:`delta_downgrade.clock.MAX_DURATION_MS` (so that ``now ± duration`` stays a date)."""

    error_class = "DELTA_DOWNGRADE_BAD_DURATION"
    sqlstate = "22015"


class UnsupportedStorageError(BadInputError):
    """The table's URI scheme (``s3a://``, ``abfss://``, ``gs://`` …) has no file system here: no
    Spark session serves it and no connector jar for it is installed. Nothing was written."""

    error_class = "DELTA_DOWNGRADE_UNSUPPORTED_STORAGE"
    sqlstate = "0A000"


class StorageUnreachableError(UnsupportedStorageError):
    """The file system of the table's URI exists but cannot be reached (host unknown, connection
    refused or timed out). Nothing was written."""

    error_class = "DELTA_DOWNGRADE_STORAGE_UNREACHABLE"
    sqlstate = "08001"


class StorageAccessDeniedError(BadInputError):
    """The store refused the request's credentials (missing, wrong or expired) or their
    permissions. Nothing was written."""

    error_class = "DELTA_DOWNGRADE_STORAGE_ACCESS_DENIED"
    sqlstate = "28000"


class BadStorageOptionError(BadInputError):
    """A storage option (``--storage-option KEY=VALUE``, ``storage_options``) that no store
    takes, or a value it cannot parse. Nothing was read or written."""

    error_class = "DELTA_DOWNGRADE_BAD_STORAGE_OPTION"
    sqlstate = "42616"


class StorageNotWritableError(BadInputError):
    """The storage refused a write: a read-only file system (EROFS) or no permission (EACCES,
    EPERM). Exit 2: on such storage the first write of a run already fails, so nothing was
    written; when it happens later (permissions of one directory), every completed step is
    committed and a rerun resumes once the storage is writable."""

    error_class = "DELTA_DOWNGRADE_STORAGE_NOT_WRITABLE"
    sqlstate = "42501"


class InvalidTablePropertyError(BadInputError):
    """A table property that an operation reads (a retention, the checkpoint policy or interval,
    in-commit timestamps …) has a value that cannot be parsed or is not allowed. Operations parse
    every property they need before their first write, so nothing was written."""

    error_class = "DELTA_DOWNGRADE_INVALID_TABLE_PROPERTY"
    sqlstate = "22023"


class RowTrackingPropertiesError(InvalidTablePropertyError):
    """``delta.enableRowTracking`` and ``delta.rowTrackingSuspended`` are both true (PROTOCOL.md
    "Row Tracking": the two "should not be enabled together"); delta-spark refuses every write to
    such a table. Checked before anything is written."""

    error_class = "DELTA_ROW_TRACKING_ILLEGAL_PROPERTY_COMBINATION"
    sqlstate = "55000"


class RowIdAssignmentWithoutStatsError(BadInputError):
    """A commit to a table that supports row tracking would add a file without ``numRecords`` in
    its statistics, so no range of fresh row IDs can be reserved for it (PROTOCOL.md "Writer
    Requirements for Row Tracking"). Raised before the commit file is written."""

    error_class = "DELTA_ROW_ID_ASSIGNMENT_WITHOUT_STATS"
    sqlstate = "22000"


class DuplicateActionsError(CorruptLogError):
    """A commit (or checkpoint) holds more than one ``protocol`` or more than one ``metaData``
    action (PROTOCOL.md "Delta Log Entries", "Change Metadata"): which one holds is undefined.
    delta-spark has no error class for reading such a log; this is its class for an action given
    several times in one commit."""

    error_class = "DELTA_DUPLICATE_ACTIONS_FOUND"
    sqlstate = "2D521"


class DeletionVectorError(CorruptLogError):
    """A deletion vector of the table cannot be used. Nothing was committed when it is raised:
    the operation stops before it would drop the rows the DV deletes."""

    error_class = "DELTA_DOWNGRADE_DV_CORRUPT"
    sqlstate = "XXKDS"


class DeletionVectorNotFoundError(DeletionVectorError):
    """The DV file a descriptor resolves to does not exist or cannot be read."""

    error_class = "DELTA_DOWNGRADE_DV_FILE_NOT_FOUND"
    sqlstate = "42K03"


class DataFileNotFoundError(BadInputError):
    """A live data file the operation must read is named by the log but does not exist (deleted
    by hand rather than by a DELETE or a VACUUM). Raised before the first write."""

    error_class = "DELTA_FILE_NOT_FOUND_DETAILED"
    sqlstate = "42K03"


class DeletionVectorChecksumError(DeletionVectorError):
    """The stored DV does not match its checksum (PROTOCOL.md "Deletion Vector Format")."""

    error_class = "DELTA_DELETION_VECTOR_CHECKSUM_MISMATCH"


class DeletionVectorSizeError(DeletionVectorError):
    """The stored DV is not ``sizeInBytes`` long (PROTOCOL.md "Deletion Vector Descriptor")."""

    error_class = "DELTA_DELETION_VECTOR_SIZE_MISMATCH"


class DeletionVectorCardinalityError(DeletionVectorError):
    """The DV holds another number of rows than the descriptor's ``cardinality``."""

    error_class = "DELTA_DOWNGRADE_DV_CARDINALITY_MISMATCH"


class DeletionVectorRowIndexError(DeletionVectorError):
    """The DV deletes a row index at or past the data file's ``numRecords``."""

    error_class = "DELTA_DELETION_VECTOR_INVALID_ROW_INDEX"


class FileLayoutError(BadInputError):
    """A data file's Parquet schema cannot be matched with the table schema."""

    error_class = "DELTA_DOWNGRADE_FILE_SCHEMA_MISMATCH"
    sqlstate = "42K09"


class VacuumRetentionTooShortError(BadInputError):
    """The requested retention is shorter than ``delta.deletedFileRetentionDuration``.

    delta-spark has no error class for this (``VacuumCommand.checkRetentionPeriodSafety`` fails a
    ``require`` with "Are you sure you would like to vacuum files with such a low retention
    period?"), so the class is the package's own.
    """

    error_class = "DELTA_DOWNGRADE_VACUUM_RETENTION_TOO_SHORT"
    sqlstate = "22023"


class VacuumNegativeRetentionError(BadInputError):
    """A negative (or not finite) retention: delta-spark's "Retention for Vacuum can't be less
    than 0." (a ``require`` as well, no Delta error class). Never overridable."""

    error_class = "DELTA_DOWNGRADE_VACUUM_NEGATIVE_RETENTION"
    sqlstate = "22023"


# --- must wait (exit 3) ----------------------------------------------------------------------------

class CheckpointProtectionTruncationBlockedError(CorruptLogError):
    """The retention before truncating the history of checkpointProtection has passed, yet the
    metadata cleanup still cannot remove every version before the boundary (the cutoff checkpoint
    it needs is unusable): a wait that would never end, reported as what it is."""

    error_class = "DELTA_STATE_RECOVER_ERROR"


class RetentionWaitError(DeltaDowngradeError):
    """Part of the work is done and recorded; rerun after ``retry_after`` (UTC)."""

    exit_code = EXIT_WAIT
    error_class = "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"
    sqlstate = "22KD0"

    def __init__(self, message: str, *, retry_after: str | None = None, **kw: Any) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kw)


class HistoricalVersionsExistError(RetentionWaitError):
    """The traces are gone from the current version, but retained history still uses the feature
    (delta-spark's ``historyContainsFeature``); rerun after the retention period."""

    error_class = "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST"


class CheckpointProtectionWaitError(RetentionWaitError):
    """History before the ``checkpointProtection`` boundary cannot be truncated yet (Checkpoint
    Protection RFC: only once it is older than the retention period)."""

    error_class = "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"


# --- concurrent writers (exit 4) -------------------------------------------------------------------

class ConcurrentWriteError(DeltaDowngradeError):
    """Another writer committed the version we wanted; nothing of ours is half-done."""

    exit_code = EXIT_CONFLICT
    error_class = "DELTA_CONCURRENT_WRITE"
    sqlstate = "2D521"


class DropConflictError(ConcurrentWriteError):
    """A concurrent commit reintroduced traces of the feature being dropped, or changed the
    table's metadata or protocol, between the pre-downgrade and the downgrade commit."""

    error_class = "DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL"
    sqlstate = "40000"


class CommitFileExistsError(ConcurrentWriteError):
    """Put-if-absent failed: the commit file for this version already exists."""

    error_class = "DELTA_FILE_ALREADY_EXISTS"


class StorageNotAtomicError(BadInputError):
    """The storage cannot create a file atomically if absent; writing would risk lost commits."""

    error_class = "DELTA_DOWNGRADE_STORAGE_NOT_ATOMIC"
    sqlstate = "0A000"


# --- storage failures (exit 1) ---------------------------------------------------------------------

class StorageError(DeltaDowngradeError):
    """An object store answered a request with an error this package has no other name for (not
    a missing bucket, bad credentials, an unreachable endpoint...): one line with the store's
    message (secrets masked), no traceback."""

    error_class = "DELTA_DOWNGRADE_STORAGE_ERROR"


class DvPurgeError(DeltaDowngradeError):
    """The rewrite produced something other than what the log promises (row counts); the batch
    was not committed."""

    error_class = "DELTA_DOWNGRADE_DV_PURGE_VERIFICATION_FAILED"
    sqlstate = "XXKDS"


class StorageFullError(DeltaDowngradeError):
    """A write failed for lack of space (ENOSPC, EDQUOT). Not bad input (exit 1): the file being
    written was removed (temporary file included), the steps before it are complete, and a rerun
    once space is freed resumes from there."""

    error_class = "DELTA_DOWNGRADE_STORAGE_FULL"
    sqlstate = "53100"


# --- drop failures (exit 1) ------------------------------------------------------------------------

class DropCheckpointFailedError(DeltaDowngradeError):
    """A barrier checkpoint of DROP FEATURE could not be written after its retries (Checkpoint
    Protection RFC: the protected checkpoints must exist before the downgrade commit); only empty
    commits were written, and a rerun continues."""

    error_class = "DELTA_FEATURE_DROP_CHECKPOINT_FAILED"
    sqlstate = "22KD0"


# --- parse errors: plain ValueErrors, turned into a DeltaDowngradeError where the file is known ---

class MalformedActionError(ValueError):
    """An action lacks a field the protocol requires, or a field has the wrong JSON type, or a
    log line is not an action at all (PROTOCOL.md "Actions": each line is one JSON object)."""


class NestingTooDeepError(MalformedActionError):
    """A log line (or a JSON string in one) nests deeper than a parser may be asked to follow
    (``protocol/json_nesting.py``)."""


class DeletionVectorFormatError(ValueError):
    """Bytes that do not follow the DV data format (pure parsing; no file context)."""


class DvSizeMismatch(DeletionVectorFormatError):
    """A stored DV is not as long as its descriptor's ``sizeInBytes`` says, or runs past the end of
    its file (PROTOCOL.md "Deletion Vector Format")."""


class DvChecksumMismatch(DeletionVectorFormatError):
    """The CRC-32 stored after a DV does not match its bytes (PROTOCOL.md "Deletion Vector
    Format")."""


# --- programming errors: a caller asked a question the value it holds cannot answer ---------------

class PartialListingError(RuntimeError):
    """A question about the whole log asked of a listing of its tail only
    (``log/read/listing.py``): a bug in the caller, which asks for the whole listing first
    (``extended_to_whole_log``; ``DeltaLog.whole_listing()``)."""


# --- errors a Delta runtime reported ----------------------------------------------------------------

# Delta error classes → our error types (and so exit codes).
_WAIT_CLASSES = frozenset({
    "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD", "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST",
    "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"})
_CONFLICT_CLASSES = frozenset({
    "DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL", "DELTA_CONCURRENT_APPEND",
    "DELTA_CONCURRENT_DELETE_READ", "DELTA_CONCURRENT_DELETE_DELETE", "DELTA_METADATA_CHANGED",
    "DELTA_PROTOCOL_CHANGED", "DELTA_CONCURRENT_TRANSACTION", "DELTA_CONCURRENT_WRITE"})
_FEATURE_DROP_CLASSES = frozenset({"DELTA_INVALID_COLUMN_NAMES_WHEN_REMOVING_COLUMN_MAPPING",
                                   "DELTA_ONLY_OPERATION"})
_NOT_FOUND_CLASSES = frozenset({"DELTA_MISSING_DELTA_TABLE", "PATH_NOT_FOUND"})
# A name whose catalog or schema the runtime does not know. Spark takes an unknown first part of
# a three-part name as a namespace of its session catalog, hence REQUIRES_SINGLE_PART_NAMESPACE.
_NAME_NOT_FOUND_CLASSES = frozenset({"REQUIRES_SINGLE_PART_NAMESPACE", "SCHEMA_NOT_FOUND",
                                     "CATALOG_NOT_FOUND", "NO_SUCH_CATALOG_EXCEPTION"})
_PERMISSION_CLASSES = frozenset({"INSUFFICIENT_PERMISSIONS", "PERMISSION_DENIED"})


def from_delta_error_class(error_class: str, message: str, *, table: str | None = None,
                           feature: str | None = None) -> DeltaDowngradeError:
    """An error a Delta runtime raised, as ours: the runtime's error class is kept verbatim (it may
    be one this package never declares), and so is its SQLSTATE where its message ends with one
    (Spark's "… SQLSTATE: 42K05"); the type gives the exit code."""
    error = _from_delta_error_class(error_class, message, table=table, feature=feature)
    sqlstate = _RUNTIME_SQLSTATE.search(message)
    if sqlstate:
        error.sqlstate = sqlstate.group(1)
    return error


_RUNTIME_SQLSTATE = re.compile(r"\bSQLSTATE: ([0-9A-Z]{5})\s*$")


def _from_delta_error_class(error_class: str, message: str, *, table: str | None,
                            feature: str | None) -> DeltaDowngradeError:
    kw: dict[str, Any] = {"table": table, "feature": feature, "error_class": error_class}
    if error_class in _WAIT_CLASSES:
        return RetentionWaitError(message, **kw)
    if error_class in _CONFLICT_CLASSES:
        return ConcurrentWriteError(message, **kw)
    if error_class.startswith("DELTA_UNSUPPORTED_FEATURES_FOR"):
        return UnsupportedFeaturesError(message, features=[], for_write=error_class.endswith("WRITE"), **kw)
    if error_class.startswith("DELTA_FEATURE_DROP") or error_class.startswith("DELTA_CANNOT_DROP") \
            or error_class in _FEATURE_DROP_CLASSES:
        return FeatureDropError(message, **kw)
    if error_class in _PERMISSION_CLASSES:
        return InsufficientPermissionsError(message, **kw)
    if error_class == "TABLE_OR_VIEW_NOT_FOUND" or error_class in _NAME_NOT_FOUND_CLASSES:
        return TableOrViewNotFoundError(message, **kw)
    if error_class == "DELTA_TABLE_NOT_FOUND":
        return TableNotFoundError(message, **kw)
    if error_class in _NOT_FOUND_CLASSES:
        return BadInputError(message, **kw)
    return DeltaDowngradeError(message, **kw)


class SparkCheckpointUnsupportedError(NotSupportedYetError):
    """A checkpoint the Spark path (``log/checkpoint/on_spark.py``) does not write yet - a V2 checkpoint,
    typed statistics (``delta.checkpoint.writeStatsAsStruct``), or a source checkpoint whose adds
    keep their statistics only in ``stats_parsed``. Nothing was written; the Arrow path
    (``checkpoint_table``) writes it."""

    error_class = "DELTA_DOWNGRADE_SPARK_CHECKPOINT_UNSUPPORTED"
    sqlstate = "0A000"


class BadClientCatalogueError(BadInputError):
    """A client catalogue (the package's ``compat/clients.toml`` or a file given instead) that is
    not valid TOML or breaks the catalogue's schema: an unknown key, a feature name no registry
    knows, an entry without a source. The catalogue is read before any table is looked at."""

    error_class = "DELTA_DOWNGRADE_BAD_CLIENT_CATALOGUE"


class UnknownClientError(BadInputError):
    """A client name (``--client``) that no catalogue entry has as its id or an alias."""

    error_class = "DELTA_DOWNGRADE_UNKNOWN_CLIENT"


class AmbiguousClientError(UnknownClientError):
    """A client spelt with a version (``polars 1``, ``deltalake 1.6``) that more than one catalogue
    entry covers, or that entries cover only in part: the message names them."""

    error_class = "DELTA_DOWNGRADE_AMBIGUOUS_CLIENT"


class UncoveredClientVersionError(UnknownClientError):
    """A client spelt with a version no catalogue entry covers (``dbr 15.3``, ``polars 1.45``):
    the message names the nearest entries below and above it."""

    error_class = "DELTA_DOWNGRADE_CLIENT_VERSION_NOT_IN_CATALOGUE"


class ReportDirectoryError(BadInputError):
    """A report directory (``compat --report DIR``, ``verify_task --compat_report=DIR``) that
    cannot be created or written. Checked before the report is built: nothing is written."""

    error_class = "DELTA_DOWNGRADE_BAD_REPORT_DIRECTORY"


class ClientCannotBeUnblockedError(BadInputError):
    """``drop-feature --for CLIENT`` refused before its first write: what blocks the client cannot
    be removed by dropping features (a feature Delta cannot drop, a protocol version or schema
    detail no feature owns), or the catalogue does not know whether the client reads the table."""

    error_class = "DELTA_DOWNGRADE_CLIENT_CANNOT_BE_UNBLOCKED"


class ClientDropIncompleteError(DeltaDowngradeError):
    """``drop-feature --for CLIENT`` failed on a feature after earlier ones of the same run were
    dropped: those stay dropped (each drop is complete and the table consistent), so this is not
    exit 2's "nothing written". The cause's error class and message are in the params; a rerun
    recomputes the client's verdict and continues with what is left."""

    error_class = "DELTA_DOWNGRADE_CLIENT_DROP_INCOMPLETE"


class WarehouseStatementFailed(Exception):
    """A statement a SQL warehouse ran and refused (app/engines/sql_warehouse.py). Not one of
    ours: ``str`` is the runtime's message, its ``[ERROR_CLASS]`` first, so that ``run_sql`` maps
    it like a Spark session's error (``map_error``); ``error_code`` is the API's."""

    def __init__(self, message: str, error_code: str | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code
