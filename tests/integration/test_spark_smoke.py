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
