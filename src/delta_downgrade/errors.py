"""Error types carrying Delta error classes.

Every error a user can meet is a subclass of :class:`DeltaDowngradeError`. It carries the Delta
error class (the names of delta-spark's ``delta-error-classes.json``), its SQLSTATE, the table it
concerns, a message that says what is wrong and what to do next, and the process exit code of the
task contract (DESIGN.md): 2 bad input, 3 wait for a retention period, 4 concurrent writer, 1 else.
"""

from __future__ import annotations

from typing import Any

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_WAIT = 3
EXIT_CONFLICT = 4


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
        where = f" (table {self.table})" if self.table else ""
        return f"[{self.error_class}] {self.message}{where}"

    def to_dict(self) -> dict[str, Any]:
        """The error as it appears in a RESULT line."""
        out: dict[str, Any] = {"error_class": self.error_class, "sqlstate": self.sqlstate,
                               "message": self.message}
        if self.params:
            out["params"] = {k: v for k, v in self.params.items()}
        return out


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


class CheckpointUnreadableError(CorruptLogError):
    """A checkpoint file cannot be read at all (truncated, not parquet); readers may fall back to
    an older checkpoint, as Spark does. A readable checkpoint that lacks actions is not this."""


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
    """A DROP FEATURE validation error; ``error_class`` is set per instance (§9 of the reference)."""

    error_class = "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"
    sqlstate = "0AKDC"


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


class UnsupportedCheckpointPolicyError(BadInputError):
    """The operation would have to write a checkpoint under ``delta.checkpointPolicy=v2``; this
    package writes classic checkpoints only. Refused before anything is written."""

    error_class = "DELTA_DOWNGRADE_V2_CHECKPOINT_POLICY"
    sqlstate = "0A000"


class DuplicateActionsError(CorruptLogError):
    """A commit (or checkpoint) holds more than one ``protocol`` or more than one ``metaData``
    action (PROTOCOL.md "Delta Log Entries", "Change Metadata"): which one holds is undefined.
    delta-spark has no error class for reading such a log; this is its class for an action given
    several times in one commit."""

    error_class = "DELTA_DUPLICATE_ACTIONS_FOUND"
    sqlstate = "2D521"


# --- must wait (exit 3) ----------------------------------------------------------------------------

class RetentionWaitError(DeltaDowngradeError):
    """Part of the work is done and recorded; rerun after ``retry_after`` (UTC)."""

    exit_code = EXIT_WAIT
    error_class = "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"
    sqlstate = "22KD0"

    def __init__(self, message: str, *, retry_after: Any = None, **kw: Any) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kw)


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

class StorageFullError(DeltaDowngradeError):
    """A write failed for lack of space (ENOSPC, EDQUOT). Not bad input (exit 1): the file being
    written was removed (temporary file included), the steps before it are complete, and a rerun
    once space is freed resumes from there."""

    error_class = "DELTA_DOWNGRADE_STORAGE_FULL"
    sqlstate = "53100"


# --- drop failures (exit 1) ------------------------------------------------------------------------

class DropCheckpointFailedError(DeltaDowngradeError):
    """A barrier checkpoint of DROP FEATURE could not be written after its retries (reference
    §3); only empty commits were written, and a rerun continues."""

    error_class = "DELTA_FEATURE_DROP_CHECKPOINT_FAILED"
    sqlstate = "22KD0"
