"""The delta-sql engine against a real Delta runtime: runs only where the delta-spark jars are on
the classpath (set DELTA_DOWNGRADE_DELTA_JARS to their comma-separated paths)."""

from __future__ import annotations

import os

import pytest

from delta_downgrade.protocol import Protocol

pytestmark = pytest.mark.skipif(
    not os.environ.get("DELTA_DOWNGRADE_DELTA_JARS"),
    reason="delta-sql engine: set DELTA_DOWNGRADE_DELTA_JARS to delta-spark 4.x jars (Maven is unreachable here)")


def test_drop_vacuum_protocol_check_with_delta_sql(spark, golden_table):
    from delta_downgrade.app.engines.delta_sql import DeltaSqlEngine
    from delta_downgrade.log.delta_log import DeltaLog

    path = golden_table("vacuum_protocol_check")
    outcome = DeltaSqlEngine(spark).drop_feature(path, "vacuumProtocolCheck")
    assert outcome.status == "dropped"
    snap = DeltaLog(path).snapshot()
    assert "vacuumProtocolCheck" not in snap.protocol.features
    assert snap.protocol.min_reader_version == 1
    again = DeltaSqlEngine(spark).drop_feature(path, "vacuumProtocolCheck")
    assert again.status == "already_absent"
    assert Protocol(1, 2).features <= snap.protocol.features
