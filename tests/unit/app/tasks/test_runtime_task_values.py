"""Task values on a Databricks runtime go through the runtime's dbutils: the one
``databricks.sdk.runtime`` exposes when it took it from the runtime's namespace, else the classic
``pyspark.dbutils.DBUtils``. A Databricks runtime cannot run here: both modules are given in the
shape the runtime has (``databricks.sdk.runtime`` with ``dbutils`` and ``is_local_implementation``;
``pyspark.dbutils.DBUtils(spark)``), holding a recording ``dbutils``."""

from __future__ import annotations

import sys
import types

import pytest

from delta_downgrade.app.tasks.task_values import DatabricksTaskValues, task_values_for
from delta_downgrade.errors import TaskValueTooLargeError


class RecordingDbutils:
    """``dbutils.jobs.taskValues.set(key=…, value=…)``, as the runtime's, recording each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        outer = self

        class TaskValues:
            def set(self, key, value):  # keyword call, as the runtime documents it
                outer.calls.append((key, value))

        self.jobs = types.SimpleNamespace(taskValues=TaskValues())


def _sdk_runtime(monkeypatch, dbutils, *, local: bool) -> None:
    module = types.ModuleType("databricks.sdk.runtime")
    module.dbutils = dbutils
    module.is_local_implementation = local
    monkeypatch.setitem(sys.modules, "databricks.sdk.runtime", module)
    import databricks.sdk

    monkeypatch.setattr(databricks.sdk, "runtime", module, raising=False)


def _classic_dbutils(monkeypatch, dbutils) -> list[object]:
    sessions: list[object] = []

    class DBUtils:
        def __new__(cls, spark):
            sessions.append(spark)
            return dbutils

    module = types.ModuleType("pyspark.dbutils")
    module.DBUtils = DBUtils
    monkeypatch.setitem(sys.modules, "pyspark.dbutils", module)
    session = object()
    sql = types.ModuleType("pyspark.sql")
    sql.SparkSession = types.SimpleNamespace(builder=types.SimpleNamespace(getOrCreate=lambda: session))
    monkeypatch.setitem(sys.modules, "pyspark.sql", sql)
    return sessions


def test_the_sdk_runtime_dbutils_is_used_when_it_is_the_runtimes(monkeypatch):
    sdk, classic = RecordingDbutils(), RecordingDbutils()
    _sdk_runtime(monkeypatch, sdk, local=False)
    sessions = _classic_dbutils(monkeypatch, classic)
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "client.4.5")
    values = task_values_for("drop_feature")
    values.set("min_reader_version", 1)
    values.set("needs_truncate", True)
    assert sdk.calls == [("min_reader_version", 1), ("needs_truncate", True)]
    assert classic.calls == [] and sessions == []


def test_the_classic_route_when_the_sdk_holds_only_its_remote_stand_in(monkeypatch):
    remote, classic = RecordingDbutils(), RecordingDbutils()
    _sdk_runtime(monkeypatch, remote, local=True)  # off the runtime's namespace: set() is a no-op
    sessions = _classic_dbutils(monkeypatch, classic)
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "16.4")
    task_values_for("verify").set("status", "verified")
    assert classic.calls == [("status", "verified")] and remote.calls == [] and len(sessions) == 1


def test_the_classic_route_when_the_sdk_is_absent(monkeypatch):
    classic = RecordingDbutils()
    monkeypatch.setitem(sys.modules, "databricks.sdk.runtime", None)  # import fails
    _classic_dbutils(monkeypatch, classic)
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "16.4")
    task_values_for("truncate").set("status", "dropped")
    assert classic.calls == [("status", "dropped")]


def test_limits_are_checked_before_the_runtime_is_called():
    dbutils = RecordingDbutils()
    values = DatabricksTaskValues(dbutils)
    with pytest.raises(TaskValueTooLargeError):
        values.set("summary", "x" * (49 * 1024))
    assert dbutils.calls == []
