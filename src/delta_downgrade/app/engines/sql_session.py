"""The Spark session that runs Delta's SQL, and the one way a statement is run on it.

:func:`delta_sql_session` finds a session with Delta SQL or says, in one line, what is missing
(:class:`EngineUnavailableError`, exit 2, the same for a catalog name and a path). It never starts
a local JVM only to find Delta absent: off Databricks, without an active session and without
``DELTA_DOWNGRADE_DELTA_JARS``, no session this package could start would have Delta.

:func:`run_sql` runs one statement (built by :mod:`.sql_statements`) and turns a runtime error
into ours, keeping the runtime's Delta error class (``from_delta_error_class``) and adding what
to do next for the classes a catalog user meets first: a missing privilege, an unknown table.
"""

from __future__ import annotations

import re
from typing import Any, Protocol, Sequence

from delta_downgrade.app.table_ref import TableRef
from delta_downgrade.errors import (
    DeltaDowngradeError, EngineUnavailableError, InsufficientPermissionsError, TableNotFoundError,
    TableOrViewNotFoundError, from_delta_error_class,
)

class SqlRow(Protocol):
    """A result row: a Spark ``Row`` or a SQL warehouse's (:class:`.sql_warehouse.WarehouseRow`).
    Its values are SQL values of any column type."""

    def asDict(self) -> dict[str, Any]: ...  # noqa: N802 - Spark's Row spelling

    def __getitem__(self, key: str, /) -> Any: ...


class SqlResult(Protocol):
    """What :meth:`SqlSession.sql` returns: a Spark ``DataFrame``, or a warehouse's result."""

    def collect(self) -> Sequence[SqlRow]: ...


class SqlSession(Protocol):
    """What the delta-sql engine needs of a session: a Spark session (classic or Connect) or a
    SQL warehouse's (:class:`.sql_warehouse.WarehouseSession`)."""

    def sql(self, statement: str, /) -> SqlResult: ...


_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]+)(?:\.[A-Z0-9_]+)?\]")

_NO_DELTA = ("the delta-sql engine needs a Spark session with Delta Lake's SQL (a Databricks "
             "runtime, or delta-spark >= 4 jars named by DELTA_DOWNGRADE_DELTA_JARS)")


def _unavailable(ref: TableRef, why: str) -> EngineUnavailableError:
    if ref.is_name:
        # No flag named here: not every command that reads a catalog name has --engine.
        todo = (f"{ref.display} is a catalog name, which only Delta's SQL reaches: run on a "
                f"Databricks cluster or job, or from here on a SQL warehouse (DATABRICKS_HOST and "
                f"credentials, and DELTA_DOWNGRADE_WAREHOUSE_ID=<warehouse id>), or give the table's "
                f"storage path instead (read without Spark)")
    else:
        todo = "for a path, --engine=native needs no Delta"
    return EngineUnavailableError(f"{_NO_DELTA}; {why}; {todo}", table=ref.display)


def delta_sql_session(ref: TableRef) -> SqlSession:
    """The session to run Delta SQL on: the active one; off Databricks without one, a SQL
    warehouse when ``DELTA_DOWNGRADE_WAREHOUSE_ID`` is set (:mod:`.sql_warehouse`); or one
    :func:`get_spark` starts where it would have Delta (Databricks, or the Delta jars configured).
    Else one-line :class:`EngineUnavailableError`."""
    from delta_downgrade.spark import (
        DELTA_EXTENSION, filter_pyspark_warnings, get_spark, has_delta_sql, local_conf, on_databricks,
    )

    filter_pyspark_warnings()
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # a laptop may reach a warehouse only
        have_pyspark, spark = False, None
    else:
        have_pyspark, spark = True, SparkSession.getActiveSession()
    if spark is None and not on_databricks():
        # No cluster: a SQL warehouse, when DELTA_DOWNGRADE_WAREHOUSE_ID names one (sql_warehouse.py).
        from delta_downgrade.app.engines.sql_warehouse import warehouse_session

        warehouse = warehouse_session()
        if warehouse is not None:
            return warehouse
    if not have_pyspark:
        raise _unavailable(ref, "PySpark is not installed")
    if spark is None:
        if not on_databricks() and DELTA_EXTENSION not in local_conf().get("spark.sql.extensions", ""):
            raise _unavailable(ref, "no Spark session is active and DELTA_DOWNGRADE_DELTA_JARS is unset")
        spark = get_spark()
    if not has_delta_sql(spark):
        raise _unavailable(ref, "the active Spark session has no Delta SQL extension "
                                "(io.delta.sql.DeltaSparkSessionExtension)")
    return spark


def error_class_of(exc: BaseException) -> str | None:
    """The Delta error class of a Spark exception (``getCondition``/``getErrorClass``, else the
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


# What to do next, by our error type, for the runtime errors a catalog user meets first.
_NEXT_STEP: dict[type, str] = {
    InsufficientPermissionsError: (
        "dropping a feature needs MODIFY on the table (and USE CATALOG / USE SCHEMA on its "
        "parents): ask its owner for GRANT MODIFY ON TABLE {table} TO <the job's principal>, or "
        "run the job as a principal that has it"),
    TableOrViewNotFoundError: (
        "check the name as catalog.schema.table (SHOW CATALOGS, SHOW TABLES IN catalog.schema), "
        "and that the job's principal may USE its catalog and schema; a path-based table is "
        "given as its path"),
    TableNotFoundError: (
        "check the name or path; a catalog table is given as catalog.schema.table"),
}


# A Java exception's class in front of its message ("org.apache…Exception: [CLASS] …").
_JAVA_CLASS_PREFIX = re.compile(r"^(?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(?:Exception|Error|Throwable): ")


def runtime_message(exc: BaseException) -> str:
    """The runtime's own message, first line. PySpark raises a Delta exception it does not
    convert (e.g. delta-spark's ``DeltaUnsupportedTableFeatureException``) as py4j's
    ``Py4JJavaError``, whose text starts "An error occurred while calling o50.sql." and holds
    the Java exception's text and stack below: its Java message is the message then."""
    java = getattr(exc, "java_exception", None)
    text = ""
    if java is not None:
        try:
            text = str(java.getMessage() or "")
        except Exception:  # noqa: BLE001 - a closed gateway; the text below still has it
            text = ""
    lines = [line.strip() for line in (text or str(exc)).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    # Without the Java object (another wrapper), the line that carries the error class.
    line = next((l for l in lines if _ERROR_CLASS.search(l)), lines[0]) if not text else lines[0]
    return _JAVA_CLASS_PREFIX.sub("", line.lstrip(": "))


def map_error(exc: BaseException, table: str, feature: str | None) -> DeltaDowngradeError:
    """Translate a runtime error into ours, keeping the Delta error class and message (first
    line), with the next step for the classes above."""
    error_class = error_class_of(exc) or "DELTA_DOWNGRADE_ENGINE_ERROR"
    message = runtime_message(exc)
    # Our error prints its class in front: the runtime's own "[CLASS] " prefix is not repeated.
    while (prefix := _ERROR_CLASS.match(message)) and prefix.group(1) == error_class:
        message = message[prefix.end():].lstrip() or message
    mapped = from_delta_error_class(error_class, message, table=table, feature=feature)
    step = _NEXT_STEP.get(type(mapped))
    if step:
        mapped = mapped.amended(f"{message} Next: {step.format(table=table)}.")
    return mapped


def run_sql(spark: SqlSession, statement: str, table: str, feature: str | None = None) -> list[SqlRow]:
    """Run ``statement`` and collect its rows (a command's result is its rows, usually none);
    any runtime error is ours (:func:`map_error`)."""
    try:
        return list(spark.sql(statement).collect())
    except DeltaDowngradeError:
        raise
    except Exception as exc:  # noqa: BLE001 - py4j/pyspark/Connect exception types vary by runtime
        raise map_error(exc, table, feature) from exc
