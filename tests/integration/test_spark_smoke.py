"""A real local SparkSession starts with the project's confs."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_downgrade.spark import get_spark, has_delta_sql


def test_local_session(spark):
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"
    assert spark.range(10).selectExpr("sum(id) AS s").collect()[0]["s"] == 45
    assert get_spark() is spark  # the active session is reused


def test_has_delta_sql_is_false_without_delta_jars(spark, monkeypatch):
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    if "DeltaSparkSessionExtension" in (spark.conf.get("spark.sql.extensions", "") or ""):
        pytest.skip("DELTA_DOWNGRADE_DELTA_JARS is set for this run")
    assert has_delta_sql(spark) is False


def test_reads_golden_parquet(spark, golden_table):
    path = golden_table("classic_checkpoint")
    files = sorted(str(p) for p in Path(path).rglob("*.parquet") if "_delta_log" not in p.parts)
    assert spark.read.parquet(*files).count() > 0


CONNECT_CHILD = r"""
import sys
from delta_downgrade.spark import active_session, get_spark, has_delta_sql, is_connect_session
from pyspark.sql import Window, functions as F
spark = get_spark("connect-test")
sys.stderr.write("@@started\n"); sys.stderr.flush()
assert is_connect_session(spark), type(spark)
assert active_session() is spark and get_spark() is spark
print(spark.conf.get("spark.sql.session.timeZone"), spark.conf.get("spark.sql.shuffle.partitions"),
      has_delta_sql(spark))
df = spark.range(0, 1000).withColumn("r", F.row_number().over(Window.orderBy("id")))
print(df.agg(F.max("r")).collect()[0][0])
spark.stop()
"""


@pytest.mark.spark
def test_get_spark_starts_pyspark_s_local_connect_server():
    # DELTA_DOWNGRADE_SPARK_REMOTE=local[2]: pyspark's bundled Connect server in the process, with
    # local_conf (UTC, 4 shuffle partitions) and quiet; SPARK_TESTING only makes pyspark bind an
    # ephemeral port instead of 15002, which another run on the machine may hold.
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE",
                        "DATABRICKS_RUNTIME_VERSION", "DELTA_DOWNGRADE_DELTA_JARS")}
    env.update(DELTA_DOWNGRADE_SPARK_REMOTE="local[2]", SPARK_TESTING="1",
               PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", CONNECT_CHILD], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == ["UTC 4 False", "1000"]
    after = done.stderr.split("@@started", 1)[1]
    assert "WARN" not in after, after[-2000:]
    assert "Failed to set" not in done.stderr and "CANNOT_MODIFY_CONFIG" not in done.stderr
