"""Spark session helpers shared by the job entry points, the rewrite layer and the tests.

PySpark is imported lazily: the wheel does not depend on it (a Databricks runtime brings its own,
and a wheel that pulls pyspark breaks the cluster), and nothing outside `rewrite`/`engines` needs a
session.

Environment variables (local runs only, i.e. when ``DATABRICKS_RUNTIME_VERSION`` is unset):

- ``DELTA_DOWNGRADE_SPARK_MASTER``: the master URL, default ``local[2]``.
- ``DELTA_DOWNGRADE_SPARK_LOG_LEVEL``: Spark's log level in a session this package starts,
  default ``ERROR`` (``WARN`` or ``INFO`` to see Spark's own lines again).
- ``DELTA_DOWNGRADE_DELTA_JARS``: comma-separated Delta jar paths (delta-spark, delta-storage).
  When set, the jars go on ``spark.jars`` and the Delta SQL extension and catalog are configured,
  which enables the ``delta-sql`` engine. The PyPI ``delta-spark`` wheel ships no jars and Maven
  Central is not always reachable, so this is opt-in.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
DEFAULT_MASTER = "local[2]"

_PYSPARK_MISSING = (
    "PySpark is not installed: on Databricks it comes with the runtime; "
    "locally install delta-downgrade[local]"
)


def on_databricks() -> bool:
    """True inside a Databricks runtime (classic cluster or serverless)."""
    return bool(os.environ.get("DATABRICKS_RUNTIME_VERSION"))


def local_conf() -> dict[str, str]:
    """The Spark confs `get_spark` applies off Databricks (exposed for tests and diagnostics)."""
    conf = {
        "spark.master": os.environ.get("DELTA_DOWNGRADE_SPARK_MASTER") or DEFAULT_MASTER,
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        # The user's stderr carries our steps: no `[Stage 0:> ...]` bars between them.
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "2g",
    }
    jars = [j.strip() for j in os.environ.get("DELTA_DOWNGRADE_DELTA_JARS", "").split(",") if j.strip()]
    if jars:
        conf["spark.jars"] = ",".join(jars)
        conf["spark.sql.extensions"] = DELTA_EXTENSION
        conf["spark.sql.catalog.spark_catalog"] = DELTA_CATALOG
    return conf


def get_spark(app_name: str = "delta-downgrade") -> SparkSession:
    """Return the active SparkSession, or build one.

    On Databricks (``DATABRICKS_RUNTIME_VERSION`` set) nothing is configured: Delta is built in and
    serverless rejects most Spark confs. Elsewhere a local session is configured by `local_conf`.
    Confs only take effect when this call starts the JVM; an already running session is returned
    as is.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise RuntimeError(_PYSPARK_MISSING) from exc

    active = SparkSession.getActiveSession()
    if active is not None:
        return active

    builder = SparkSession.builder.appName(app_name)
    if on_databricks():
        return builder.getOrCreate()
    for key, value in local_conf().items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    # A session this package started: Spark's own WARN/INFO lines (a window without partitions,
    # a shuffle spill) are not the user's business; errors still show. A session the caller
    # started (getActiveSession above) keeps its own log level.
    session.sparkContext.setLogLevel(os.environ.get("DELTA_DOWNGRADE_SPARK_LOG_LEVEL") or "ERROR")
    return session


def has_delta_sql(spark: SparkSession) -> bool:
    """Whether the session can run Delta SQL (``ALTER TABLE … DROP FEATURE``).

    True when ``spark.sql.extensions`` names the Delta extension and its class loads in the
    driver JVM. On Databricks Delta SQL is built into the runtime (and serverless/Spark Connect
    sessions have no ``_jvm``), so this returns True there.
    """
    if on_databricks():
        return True
    try:
        extensions = spark.conf.get("spark.sql.extensions", "") or ""
    except Exception:
        return False
    if DELTA_EXTENSION not in extensions:
        return False
    try:
        jvm = spark._jvm  # type: ignore[attr-defined]
    except Exception:
        return False
    # Jars from spark.jars live in Spark's context class loader, not always the system one.
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(DELTA_EXTENSION, False, loader)
        return True
    except Exception:
        pass
    try:
        jvm.java.lang.Class.forName(DELTA_EXTENSION)
        return True
    except Exception:
        return False
