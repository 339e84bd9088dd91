"""A Spark session the package starts prints none of Spark's own WARN lines or progress bars on
the user's stderr once it runs (the steps of a drop go there). A subprocess, so that the test
session's Spark is not the one measured."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

CHILD = r"""
from delta_downgrade.spark import get_spark
from pyspark.sql import Window, functions as F
spark = get_spark("quiet-test")
import sys
sys.stderr.write("@@started\n"); sys.stderr.flush()
# A window without partitions makes Spark log a WARN (WindowExec: No Partition Defined ...), and
# a longer job would draw a progress bar.
df = spark.range(0, 200_000).withColumn("r", F.row_number().over(Window.orderBy("id")))
print(df.agg(F.max("r")).collect()[0][0])
spark.stop()
"""


def _run(env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **env_extra}
    env.pop("DATABRICKS_RUNTIME_VERSION", None)
    return subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=300, env=env)


def test_a_started_session_keeps_sparks_lines_off_stderr(spark) -> None:
    done = _run({})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "200000"
    after = done.stderr.split("@@started", 1)[1]
    assert "WARN" not in after and "[Stage" not in after, after[-2000:]
    # The same job at Spark's WARN level shows the warning: the check above can fail.
    loud = _run({"DELTA_DOWNGRADE_SPARK_LOG_LEVEL": "WARN"})
    assert "No Partition Defined" in loud.stderr.split("@@started", 1)[1]
