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
