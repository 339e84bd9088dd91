"""delta_downgrade.spark without starting Spark."""

from __future__ import annotations

import sys

import pytest

from delta_downgrade import spark as sparkmod


def test_local_conf_defaults(monkeypatch):
    monkeypatch.delenv("DELTA_DOWNGRADE_SPARK_MASTER", raising=False)
    monkeypatch.delenv("DELTA_DOWNGRADE_DELTA_JARS", raising=False)
    conf = sparkmod.local_conf()
    assert conf["spark.master"] == "local[2]"
    assert conf["spark.sql.shuffle.partitions"] == "4"
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.ui.showConsoleProgress"] == "false"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.driver.memory"] == "2g"
    assert "spark.jars" not in conf and "spark.sql.extensions" not in conf


def test_local_conf_with_delta_jars(monkeypatch):
    monkeypatch.setenv("DELTA_DOWNGRADE_SPARK_MASTER", "local[1]")
    monkeypatch.setenv("DELTA_DOWNGRADE_DELTA_JARS", "/j/delta-spark.jar, /j/delta-storage.jar")
    conf = sparkmod.local_conf()
    assert conf["spark.master"] == "local[1]"
    assert conf["spark.jars"] == "/j/delta-spark.jar,/j/delta-storage.jar"
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.catalog.spark_catalog"] == "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def test_missing_pyspark_is_a_clear_error(monkeypatch):
    for name in [m for m in sys.modules if m == "pyspark" or m.startswith("pyspark.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspark", None)  # makes `import pyspark...` fail
    with pytest.raises(RuntimeError, match=r"PySpark is not installed.*delta-downgrade\[local\]"):
        sparkmod.get_spark()


def test_has_delta_sql_without_extension_conf(monkeypatch):
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)

    class Conf:
        def get(self, key, default=None):
            return default

    class Session:
        conf = Conf()

    assert sparkmod.has_delta_sql(Session()) is False


def test_local_conf_sets_the_log_level_as_a_conf(monkeypatch):
    # spark.log.level, not sparkContext.setLogLevel: a Connect session has no sparkContext.
    monkeypatch.delenv("DELTA_DOWNGRADE_SPARK_LOG_LEVEL", raising=False)
    assert sparkmod.local_conf()["spark.log.level"] == "ERROR"
    monkeypatch.setenv("DELTA_DOWNGRADE_SPARK_LOG_LEVEL", "WARN")
    assert sparkmod.local_conf()["spark.log.level"] == "WARN"


def test_local_conf_for_a_connect_server_has_no_master(monkeypatch):
    # pyspark refuses spark.master next to a remote URL (CANNOT_CONFIGURE_SPARK_CONNECT_MASTER).
    monkeypatch.setenv("DELTA_DOWNGRADE_SPARK_MASTER", "local[1]")
    conf = sparkmod.local_conf(remote=True)
    assert "spark.master" not in conf
    assert conf["spark.ui.showConsoleProgress"] == "false"


def test_connect_url_prefers_the_package_variable(monkeypatch):
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.delenv("DELTA_DOWNGRADE_SPARK_REMOTE", raising=False)
    assert sparkmod.connect_url() is None
    monkeypatch.setenv("SPARK_REMOTE", "sc://spark:15002")
    assert sparkmod.connect_url() == "sc://spark:15002"
    monkeypatch.setenv("DELTA_DOWNGRADE_SPARK_REMOTE", "local[2]")
    assert sparkmod.connect_url() == "local[2]"


def _connect_like_session(extensions: str):
    """A session stand-in of the Connect client's class module that fails the test if anything
    reaches for a JVM."""

    class Conf:
        def get(self, key, default=None):
            return extensions if key == "spark.sql.extensions" else default

    class Session:
        conf = Conf()

        @property
        def _jvm(self):
            raise AssertionError("has_delta_sql touched _jvm on a Connect session")

    Session.__module__ = "pyspark.sql.connect.session"
    return Session()


def test_has_delta_sql_on_connect_is_decided_by_the_conf(monkeypatch):
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    with_delta = _connect_like_session(sparkmod.DELTA_EXTENSION)
    assert sparkmod.is_connect_session(with_delta)
    assert sparkmod.has_delta_sql(with_delta) is True
    assert sparkmod.has_delta_sql(_connect_like_session("")) is False
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "16.4")
    assert sparkmod.has_delta_sql(_connect_like_session("")) is True
