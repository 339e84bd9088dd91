"""The delta-sql engine's session when none can be had: one line saying what is missing (exit 2),
decided before any JVM would start - without PySpark, and with PySpark but no active session and
no Delta jars configured."""

from __future__ import annotations

import sys

import pytest

from delta_downgrade.app.engines.sql_session import delta_sql_session
from delta_downgrade.app.table_ref import parse_table_ref
from delta_downgrade.errors import EXIT_BAD_INPUT, EngineUnavailableError


@pytest.fixture
def off_databricks_without_a_warehouse(monkeypatch):
    for name in ("DATABRICKS_RUNTIME_VERSION", "DELTA_DOWNGRADE_WAREHOUSE_ID", "DELTA_DOWNGRADE_DELTA_JARS"):
        monkeypatch.delenv(name, raising=False)


def test_without_pyspark_a_catalog_name_is_told_what_is_missing(monkeypatch, off_databricks_without_a_warehouse):
    for name in [m for m in sys.modules if m == "pyspark" or m.startswith("pyspark.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspark", None)  # makes `import pyspark...` fail
    with pytest.raises(EngineUnavailableError) as caught:
        delta_sql_session(parse_table_ref("main.sales.orders"))
    assert caught.value.exit_code == EXIT_BAD_INPUT
    assert "PySpark is not installed" in caught.value.message
    assert "main.sales.orders is a catalog name" in caught.value.message


def test_with_pyspark_but_no_session_nor_delta_jars_no_session_is_started(off_databricks_without_a_warehouse):
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:  # pragma: no cover - the unit tier starts none
        pytest.skip("a Spark session is active in this process")
    with pytest.raises(EngineUnavailableError) as caught:
        delta_sql_session(parse_table_ref("/data/table"))
    assert "no Spark session is active and DELTA_DOWNGRADE_DELTA_JARS is unset" in caught.value.message
    assert "for a path, --engine=native needs no Delta" in caught.value.message
