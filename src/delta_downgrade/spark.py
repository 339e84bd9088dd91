"""Spark session helpers shared by the job entry points, the rewrite layer and the tests.

PySpark is imported lazily: the wheel does not depend on it (a Databricks runtime brings its own,
and a wheel that pulls pyspark breaks the cluster), and nothing outside `rewrite`/`engines` needs a
session.

Two kinds of session serve every task and rewrite: a classic one (a JVM in this process, Hadoop
FileSystem reachable through ``spark._jvm``) and a Spark Connect one (Databricks serverless, or
``SPARK_REMOTE``): DataFrame API only, no ``sparkContext``/``_jvm``/``_jsc``. Nothing in the
package needs the JVM except the Hadoop FileSystem storage, which a Connect session refuses
(``storage/hadoop.py``).

Environment variables (local runs only, i.e. when ``DATABRICKS_RUNTIME_VERSION`` is unset):

- ``DELTA_DOWNGRADE_SPARK_REMOTE``, else pyspark's own ``SPARK_REMOTE``: start a Spark Connect
  session instead of a classic one: ``sc://host:port`` connects to a running server (its confs
  are the server's), ``local[N]`` starts pyspark's bundled Connect server in this process,
  configured by `local_conf` (without ``spark.master``, which pyspark refuses next to a remote).
- ``DELTA_DOWNGRADE_SPARK_MASTER``: the master URL of a classic session, default ``local[2]``.
- ``DELTA_DOWNGRADE_SPARK_LOG_LEVEL``: Spark's log level in a session this package starts,
  default ``ERROR`` (``WARN`` or ``INFO`` to see Spark's own lines again, on stderr).

A quiet start: a classic local session this package starts logs through the shipped
``log4j2.properties`` (errors only), and its JVM's stdout and stderr go to a log file of their own
(the JVM's own start-up lines, such as "Using incubator modules", are no log4j lines), so that no
JVM line reaches the user's stderr. One line says ``starting Spark (…)`` when the 10–70 s start
begins, and how long it took when it ends. pyspark's pandas-version warning is filtered wherever a
session is started or found.
- ``DELTA_DOWNGRADE_DELTA_JARS``: comma-separated Delta jar paths (delta-spark, delta-storage).
  When set, the jars go on ``spark.jars`` and the Delta SQL extension and catalog are configured,
  which enables the ``delta-sql`` engine. The PyPI ``delta-spark`` wheel ships no jars and Maven
  Central is not always reachable, so this is opt-in.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
DEFAULT_MASTER = "local[2]"
#: Spark log levels under which a WARN line is not shown.
_ABOVE_WARN = frozenset({"ERROR", "FATAL", "OFF"})

_PYSPARK_MISSING = (
    "PySpark is not installed: on Databricks it comes with the runtime; "
    "locally install delta-downgrade[local]"
)


def on_databricks() -> bool:
    """True inside a Databricks runtime (classic cluster or serverless)."""
    return bool(os.environ.get("DATABRICKS_RUNTIME_VERSION"))


def connect_url() -> str | None:
    """The Spark Connect URL a session this package starts uses, or None for a classic session:
    ``DELTA_DOWNGRADE_SPARK_REMOTE``, else pyspark's ``SPARK_REMOTE`` (which pyspark's own builder
    honours too, so both agree)."""
    return (os.environ.get("DELTA_DOWNGRADE_SPARK_REMOTE") or os.environ.get("SPARK_REMOTE")
            or None)


def is_connect_session(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect session (serverless, ``SPARK_REMOTE``): no JVM in this
    process, no ``sparkContext``. Decided by its class, without importing the Connect client
    (grpc) when the session is a classic one."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


#: The shipped log4j2 configuration of a local session (errors only).
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")


def filter_pyspark_warnings() -> None:
    """Drop pyspark's import-time warnings that are no concern of the user's (pyspark checks the
    pandas version on import and warns about pandas 3, which it uses only for pandas
    conversions, none of which this package makes)."""
    warnings.filterwarnings("ignore", message=r"PySpark does not yet fully support pandas", category=FutureWarning)


def active_session() -> SparkSession | None:
    """The Spark session active in this thread, classic or Connect; None without importing PySpark
    when nothing has imported it."""
    if "pyspark.sql" not in sys.modules:
        return None
    filter_pyspark_warnings()
    from pyspark.sql import SparkSession

    # pyspark's getActiveSession answers for Connect only once its Connect mode flag is set (a
    # session built through pyspark.sql's builder sets it); a Connect session built from
    # pyspark.sql.connect directly (a Databricks serverless runtime) is found on its own class.
    active: Any = SparkSession.getActiveSession()  # classic or Connect: two classes
    if active is None and "pyspark.sql.connect.session" in sys.modules:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        active = ConnectSession.getActiveSession()
    return active


def local_conf(*, remote: bool = False) -> dict[str, str]:
    """The Spark confs `get_spark` applies off Databricks (exposed for tests and diagnostics).

    ``remote``: for the Connect server pyspark starts in this process (``SPARK_REMOTE=local[N]``):
    no ``spark.master`` (the URL carries it; pyspark refuses both). Spark's log level is a conf
    (``spark.log.level``, Spark 3.5+, applied as the context starts), so that a Connect session,
    which has no ``sparkContext.setLogLevel``, is as quiet as a classic one."""
    conf = {
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        # The user's stderr carries our steps: no `[Stage 0:> ...]` bars between them.
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "2g",
        # Spark's own WARN/INFO lines (a window without partitions, a shuffle spill) are not the
        # user's business; errors still show.
        "spark.log.level": _log_level(),
    }
    if not remote:
        conf["spark.master"] = os.environ.get("DELTA_DOWNGRADE_SPARK_MASTER") or DEFAULT_MASTER
        if _log_level().upper() in _ABOVE_WARN and LOG4J2_CONFIG.is_file():
            # The driver JVM is the one spark-submit starts: its Java options are set at launch.
            conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}"
    jars = [j.strip() for j in os.environ.get("DELTA_DOWNGRADE_DELTA_JARS", "").split(",") if j.strip()]
    if jars:
        conf["spark.jars"] = ",".join(jars)
        conf["spark.sql.extensions"] = DELTA_EXTENSION
        conf["spark.sql.catalog.spark_catalog"] = DELTA_CATALOG
        # Delta rebuilds a snapshot's state over 50 partitions by default (sized for a cluster):
        # on a local session that is 50 tasks for every commit and checkpoint of a drop.
        conf["spark.databricks.delta.snapshotPartitions"] = "2"
    return conf


def get_spark(app_name: str = "delta-downgrade") -> SparkSession:
    """Return the active SparkSession (classic or Connect), or build one.

    On Databricks (``DATABRICKS_RUNTIME_VERSION`` set) nothing is configured: Delta is built in and
    serverless rejects most Spark confs; the runtime's builder gives a classic or a Connect
    session as the compute is. Elsewhere `connect_url` decides: a Connect session (a server at
    ``sc://…`` keeps its own confs; a ``local[N]`` one pyspark starts here gets `local_conf`), else
    a classic session configured by `local_conf`. Confs only take effect when this call starts
    Spark; an already running session is returned as is and keeps its own log level.
    """
    filter_pyspark_warnings()
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise RuntimeError(_PYSPARK_MISSING) from exc

    active = active_session()
    if active is not None:
        return active

    builder = SparkSession.builder.appName(app_name)
    if on_databricks():
        return builder.getOrCreate()
    url = connect_url()
    if url is None:
        conf = local_conf()
        for key, value in conf.items():
            builder = builder.config(key, value)
        started = time.monotonic()
        log_file = _quiet_jvm_log()
        where = f"; its log: {log_file}" if log_file else ""
        # Said before the JVM starts: the start is what takes 10-70 s.
        _say(f"starting Spark ({conf['spark.master']}{where}) ... ", end="")
        try:
            if log_file is not None:
                _launch_quiet_jvm(conf, log_file)
            session = builder.getOrCreate()
        except BaseException:
            _say("failed\n")
            raise
        _say(f"{time.monotonic() - started:.1f} s\n")
        return session
    builder = builder.remote(url)
    if url.startswith("local"):
        # pyspark starts its bundled Connect server in this process with these confs (a server at
        # sc://… keeps its own: static confs cannot change from a client).
        for key, value in local_conf(remote=True).items():
            builder = builder.config(key, value)
    with warnings.catch_warnings():
        # pyspark hands the static confs to the server it starts, then sets them once more from
        # the client, which the server refuses ("Failed to set spark.ui.enabled ...
        # CANNOT_MODIFY_CONFIG") although they are in force.
        warnings.filterwarnings("ignore", message=r"Failed to set spark\.", category=UserWarning)
        session = builder.getOrCreate()
    # Spark Connect's client draws no progress bar unless SPARK_CONNECT_PROGRESS_BAR_ENABLED=1 is
    # the user's choice. It repeats some of the server's WARN log lines as Python warnings
    # ("WARN WindowExpression: No Partition Defined ..."): silenced as the log level silences a
    # classic session's own (spark.log.level, local_conf), never through a sparkContext.
    if _log_level().upper() in _ABOVE_WARN:
        warnings.filterwarnings("ignore", message=r"WARN ", category=UserWarning,
                                module=r"pyspark\.sql\.connect\.")
    return session


def _say(text: str, *, end: str = "", stream: TextIO | None = None) -> None:
    out = stream or sys.stderr
    out.write(text + end)
    out.flush()


def _quiet_jvm_log() -> str | None:
    """A new log file for the driver JVM's stdout and stderr; None when a JVM is already running
    in this process, or when Spark's lines are wanted on stderr (``DELTA_DOWNGRADE_SPARK_LOG_LEVEL``
    WARN or lower)."""
    if _log_level().upper() not in _ABOVE_WARN:
        return None
    from pyspark import SparkContext

    if SparkContext._gateway is not None:
        return None
    fd, path = tempfile.mkstemp(prefix="delta-downgrade-spark-", suffix=".log")
    os.close(fd)
    return path


def _launch_quiet_jvm(conf: dict[str, str], log_file: str) -> None:
    """Start the driver JVM (pyspark's gateway) with its stdout and stderr in ``log_file``, and
    hand it to pyspark, which then starts no JVM of its own."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    spark_conf = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        spark_conf.set(key, value)
    try:
        with open(log_file, "ab") as log:  # the child keeps its own copy of the descriptor
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": log, "stderr": log})
    except Exception:
        # The JVM did not start (no Java, a bad option): its own words are in the log, not on
        # stderr; show them, as an unredirected start would have.
        with open(log_file, encoding="utf-8", errors="replace") as fh:
            sys.stderr.write("\n" + fh.read()[-4000:])
        raise
    SparkContext._ensure_initialized(gateway=gateway, conf=spark_conf)


def _log_level() -> str:
    return os.environ.get("DELTA_DOWNGRADE_SPARK_LOG_LEVEL") or "ERROR"


def has_delta_sql(spark: SparkSession) -> bool:
    """Whether the session can run Delta SQL (``ALTER TABLE … DROP FEATURE``).

    On Databricks Delta SQL is built into the runtime (classic and serverless): True. Elsewhere
    ``spark.sql.extensions`` must name the Delta extension; on a classic session its class must
    also load in the driver JVM. A Connect session has no JVM here to ask: the server's conf is
    the answer (a server configured with the extension but without the jar fails at its first
    Delta statement, with Spark's own error).
    """
    if on_databricks():
        return True
    try:
        extensions = spark.conf.get("spark.sql.extensions", "") or ""
    except Exception:
        return False
    if DELTA_EXTENSION not in extensions:
        return False
    if is_connect_session(spark):
        return True
    try:
        jvm: Any = spark._jvm
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
