"""The storage registry as a command meets it, in a fresh interpreter: an unserved scheme refused
before a JVM, importing the package loads no implementation, Hadoop schemes under Spark Connect
refused before any session."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


IMPLEMENTATIONS = ("delta_downgrade.storage.local", "delta_downgrade.storage.hadoop",
                   "delta_downgrade.storage.object_store")


def test_unserved_scheme_is_unsupported_storage_before_a_jvm(tmp_path):
    # A fresh process with no Spark session, no Databricks runtime and no Spark/Hadoop conf: the
    # scheme has no entry and nothing here serves it.
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABRICKS_RUNTIME_VERSION", "SPARK_HOME", "SPARK_CONF_DIR",
                        "HADOOP_CONF_DIR", "PYSPARK_SUBMIT_ARGS", "SPARK_DIST_CLASSPATH",
                        "DELTA_DOWNGRADE_DELTA_JARS")}
    script = textwrap.dedent("""
        from delta_downgrade.errors import UnsupportedStorageError
        from delta_downgrade.storage import open_storage
        try:
            open_storage("nosuch://bucket/t")
            print("NO ERROR")
        except UnsupportedStorageError as exc:
            print("CLASS", exc.error_class, exc.exit_code)
        from pyspark import SparkContext
        print("JVM", SparkContext._gateway is not None)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["CLASS DELTA_DOWNGRADE_UNSUPPORTED_STORAGE 2", "JVM False"]


def test_importing_the_package_imports_no_implementation():
    script = ("import sys, delta_downgrade.storage\n"
              f"print(sorted(m for m in {IMPLEMENTATIONS + ('pyspark',)!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def _cli(args: list[str], env_extra: dict[str, str], cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABRICKS_RUNTIME_VERSION", "SPARK_REMOTE", "DELTA_DOWNGRADE_SPARK_REMOTE")}
    env.update(env_extra, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", *args],
                          capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


@pytest.mark.parametrize("variable", ["SPARK_REMOTE", "DELTA_DOWNGRADE_SPARK_REMOTE"])
@pytest.mark.parametrize("location,instead", [
    ("hdfs://namenode:8020/t", "catalog name"),
    ("wasbs://c@account.blob.core.windows.net/t", "abfss://"),
    ("dbfs:/user/hive/warehouse/t", "/Volumes/"),
])
def test_hadoop_schemes_under_spark_connect_are_exit_2_before_any_session(
        tmp_path, variable, location, instead):
    # Spark Connect (serverless, SPARK_REMOTE) has no JVM in this process for Hadoop's
    # FileSystem: refused before a session is started or a server contacted (nothing listens on
    # port 1), with what serves the table instead.
    proc = _cli(["inspect", location], {variable: "sc://127.0.0.1:1"}, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "[DELTA_DOWNGRADE_UNSUPPORTED_STORAGE]" in proc.stderr
    assert "Spark Connect" in proc.stderr and "classic" in proc.stderr
    assert instead in proc.stderr
