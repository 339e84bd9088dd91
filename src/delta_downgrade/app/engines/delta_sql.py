"""The ``delta-sql`` engine: ``ALTER TABLE … DROP FEATURE …`` through a Spark session with Delta
(a Databricks runtime, or delta-spark ≥ 4 with its jars on the classpath).

The runtime does the work and owns the log; we map its Delta error classes onto our exit codes
and read the outcome back with our own reader (the location comes from ``DESCRIBE DETAIL``), so
both engines report the same RESULT shape and are verified the same way.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from delta_downgrade.errors import (
    DeltaDowngradeError, EngineUnavailableError, FeatureNotPresentError, InvalidIdentifierError,
    UnsupportedClientFeatureError, from_delta_error_class,
)

_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]+)(?:\.[A-Z0-9_]+)?\]")


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


def error_class_of(exc: BaseException) -> str | None:
    """The Delta error class of a Spark exception (``getErrorClass``/``getCondition``, else the
    ``[CLASS]`` prefix of its message)."""
    for getter in ("getCondition", "getErrorClass"):
        fn = getattr(exc, getter, None)
        if callable(fn):
            try:
                value = fn()
            except Exception:  # noqa: BLE001 - py4j errors differ between versions
                value = None
            if value:
                return str(value).split(".")[0]
    match = _ERROR_CLASS.search(str(exc))
    return match.group(1) if match else None


def map_error(exc: BaseException, table: str, feature: str) -> DeltaDowngradeError:
    """Translate a runtime error into ours, keeping the Delta error class and message."""
    error_class = error_class_of(exc) or "DELTA_DOWNGRADE_ENGINE_ERROR"
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return from_delta_error_class(error_class, message, table=table, feature=feature)


# An unquoted identifier part as Spark's parser accepts it (letters, digits, underscore); anything
# else must be backtick-quoted.
_PLAIN_PART = re.compile(r"[A-Za-z0-9_]+")
# A feature name this package does not know is passed to the runtime (it may know newer features)
# only when it is a plain name: the spelling of PROTOCOL.md's "Valid Feature Names" (letters,
# digits, '-' and '_').
_PLAIN_FEATURE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def quote_identifier(part: str) -> str:
    """One backtick-quoted identifier part; an embedded backtick is doubled (Spark SQL syntax)."""
    return "`" + part.replace("`", "``") + "`"


def split_multipart(name: str) -> list[str]:
    """The parts of a (catalog.)(schema.)table name, as Spark's ``parseMultipartIdentifier`` reads
    it: parts are separated by ``.``; a part is either plain (letters, digits, ``_``) or quoted in
    backticks, where two backticks stand for one. Anything else is an
    :class:`InvalidIdentifierError` (nothing is guessed, nothing reaches SQL unquoted)."""
    parts: list[str] = []
    i, n = 0, len(name)
    while True:
        if i < n and name[i] == "`":
            i += 1
            buf = []
            while True:
                if i >= n:
                    raise InvalidIdentifierError(f"table name {name!r} has an unclosed backtick")
                if name[i] == "`":
                    if i + 1 < n and name[i + 1] == "`":
                        buf.append("`")
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(name[i])
                i += 1
            part = "".join(buf)
            if not part:
                raise InvalidIdentifierError(f"table name {name!r} has an empty quoted part")
        else:
            j = i
            while j < n and name[j] not in ".`":
                j += 1
            part = name[i:j]
            if not _PLAIN_PART.fullmatch(part):
                raise InvalidIdentifierError(
                    f"table name {name!r}: {part!r} is not a valid identifier part; quote a part with "
                    f"other characters in backticks (e.g. main.`my schema`.t)")
            i = j
        parts.append(part)
        if i == n:
            return parts
        if name[i] != ".":
            raise InvalidIdentifierError(f"table name {name!r}: expected '.' after {part!r}")
        i += 1


def _outside_backticks(text: str) -> str:
    out, quoted = [], False
    for ch in text:
        if ch == "`":
            quoted = not quoted  # a doubled backtick toggles twice: still the same state
        elif not quoted:
            out.append(ch)
    return "".join(out)


def is_path(table: str) -> bool:
    """Whether ``table`` is a storage path (``/data/t``, ``./t``, ``s3://b/t``) rather than a
    catalog name (``main.ops.t``, ``main.`a/b`.t``, ``delta.`/data/t```)."""
    return "://" in table or table.startswith(("/", ".", "~")) or "/" in _outside_backticks(table)


def table_identifier(table: str) -> str:
    """A SQL identifier for ``table``: ``delta.`path``` for a path, else every part of the catalog
    name backtick-quoted. Quoting every part with embedded backticks doubled means no table name
    can end the identifier early and add SQL of its own."""
    if is_path(table):
        return "delta." + quote_identifier(table)
    return ".".join(quote_identifier(part) for part in split_multipart(table))


def feature_name(feature: str, table: str | None = None) -> str:
    """The feature name to put in SQL: the registry's spelling for a known feature (matched
    case-insensitively, as Spark resolves it), else the name itself when it is a plain feature name.
    One pair of surrounding backticks or quotes is accepted. Anything else is refused: a backtick
    or a space in a name could close the quoted identifier and add clauses (``TRUNCATE HISTORY``)."""
    from delta_downgrade.protocol.features import lookup_feature

    name = feature.strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "`'\"":
        name = name[1:-1]
    known = lookup_feature(name)
    if known is not None:
        return known.name
    if not _PLAIN_FEATURE.fullmatch(name):
        raise UnsupportedClientFeatureError(
            f"{feature!r} is not a table feature name: a feature name is letters, digits, '-' and "
            f"'_' (e.g. deletionVectors)", table=table, feature=feature)
    return name


def drop_feature_sql(table: str, feature: str, truncate_history: bool) -> str:
    return (f"ALTER TABLE {table_identifier(table)} DROP FEATURE {quote_identifier(feature_name(feature, table))}"
            + (" TRUNCATE HISTORY" if truncate_history else ""))


class DeltaSqlEngine:
    name = "delta-sql"

    def __init__(self, spark: Any = None) -> None:
        self._spark = spark

    def spark(self) -> Any:
        if self._spark is None:
            from delta_downgrade.spark import get_spark, has_delta_sql

            spark = get_spark()
            if not has_delta_sql(spark):
                raise EngineUnavailableError(
                    "the delta-sql engine needs a Spark session with Delta (a Databricks runtime, or "
                    "delta-spark >= 4 jars via DELTA_DOWNGRADE_DELTA_JARS); use --engine=native")
            self._spark = spark
        return self._spark

    def location(self, table: str) -> str:
        if is_path(table):
            return table
        row = self.spark().sql(f"DESCRIBE DETAIL {table_identifier(table)}").collect()[0]
        return str(row["location"])

    def drop_feature(self, table: str, feature: str, *, truncate_history: bool = False,
                     dry_run: bool = False, clock: Any = None,
                     storage_options: Mapping[str, str] | None = None) -> Any:
        from delta_downgrade.log.delta_log import DeltaLog
        from delta_downgrade.operations.drop_run import (
            LOGGER, STATUS_ALREADY_ABSENT, STATUS_DROPPED, STATUS_PLANNED, DropOutcome, protected_checkpoint_paths,
        )
        from delta_downgrade.protocol import CHECKPOINT_PROTECTION

        statement = drop_feature_sql(table, feature, truncate_history)  # refuses bad names first
        name = feature_name(feature, table)
        location = self.location(table)
        # The runtime writes with its session's own credentials; ours read the outcome back.
        log = DeltaLog(location, storage_options=storage_options or None)
        before = log.snapshot(check_read=False).protocol
        if dry_run:
            return DropOutcome(table, name, STATUS_PLANNED, before, before, None, [], [], [],
                               plan=[f"run: {statement}"])
        LOGGER.info("running %s", statement, extra={"table": table})
        start_version = log.latest_version()
        status = STATUS_DROPPED
        error: DeltaDowngradeError | None = None
        try:
            self.spark().sql(statement)
        except Exception as exc:  # noqa: BLE001 - py4j/pyspark exception types vary by runtime
            mapped = map_error(exc, table, name)
            # The runtime's error keeps its own class; "not present" means already done (exit 0).
            if mapped.error_class != FeatureNotPresentError.error_class:
                raise mapped from exc
            status, error = STATUS_ALREADY_ABSENT, mapped
        log.refresh()
        snap = log.snapshot(check_read=False)
        boundary = snap.boundary_version if CHECKPOINT_PROTECTION in snap.protocol.features else None
        commits = list(range(start_version + 1, snap.version + 1))
        return DropOutcome(table, name, status, before, snap.protocol, boundary,
                           protected_checkpoint_paths(log, boundary), commits, [], error=error)
