"""The clients matrix stops the package's own Spark before the clients run, its JVM too: pyspark's
gateway server keeps its JVM alive until its standard input reaches end of file, so closing the
gateway's connections alone left an idle JVM of a gigabyte or more beside the clients' (seen in a
``--jvms 1`` run). The gateway here is pyspark's shape (``SparkContext._gateway``, whose ``proc``
is the JVM's ``Popen``) with a process that exits on end of input, as that server does."""

from __future__ import annotations

import subprocess

import pytest

from delta_downgrade_tools import clients_matrix as matrix


class ExitsOnEndOfInput:
    """A ``Popen`` of pyspark's gateway JVM: running until its stdin is closed."""

    class Stdin:
        def __init__(self, proc) -> None:
            self.proc = proc

        def close(self) -> None:
            self.proc.code = 0

    def __init__(self) -> None:
        self.code: int | None = None
        self.stdin = self.Stdin(self)
        self.killed = False

    def poll(self):
        return self.code

    def wait(self, timeout=None):
        if self.code is None:
            raise subprocess.TimeoutExpired("java", timeout)
        return self.code

    def kill(self) -> None:
        self.killed, self.code = True, -9


class Gateway:
    def __init__(self, proc) -> None:
        self.proc = proc
        self.closed = False

    def shutdown(self) -> None:
        self.closed = True  # the connections: the JVM itself keeps running


class Session:
    stopped = False

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def spark_context(monkeypatch):
    pyspark = pytest.importorskip("pyspark")
    monkeypatch.setattr(pyspark.SparkContext, "_gateway", None, raising=False)
    monkeypatch.setattr(pyspark.SparkContext, "_jvm", None, raising=False)
    return pyspark.SparkContext


def test_the_package_spark_is_stopped_and_its_jvm_exits(monkeypatch, spark_context):
    session, jvm = Session(), ExitsOnEndOfInput()
    gateway = Gateway(jvm)
    monkeypatch.setattr("delta_downgrade.spark.active_session", lambda: session)
    spark_context._gateway = gateway

    matrix.stop_package_spark()

    assert session.stopped and gateway.closed
    assert jvm.poll() == 0 and not jvm.killed, "the gateway's JVM is still running"
    assert spark_context._gateway is None


def test_a_gateway_left_without_an_active_session_is_stopped_too(monkeypatch, spark_context):
    jvm = ExitsOnEndOfInput()
    monkeypatch.setattr("delta_downgrade.spark.active_session", lambda: None)
    spark_context._gateway = Gateway(jvm)

    matrix.stop_package_spark()

    assert jvm.poll() == 0


def test_nothing_started_nothing_to_stop(monkeypatch, spark_context):
    monkeypatch.setattr("delta_downgrade.spark.active_session", lambda: None)
    matrix.stop_package_spark()
    assert spark_context._gateway is None
