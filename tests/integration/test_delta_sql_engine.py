"""The delta-sql engine against a real Delta runtime: delta-spark's jars from `make jars` (or
DELTA_DOWNGRADE_DELTA_JARS); without them these tests fail (the `delta_spark` fixture)."""

from __future__ import annotations

import pytest

from delta_downgrade.protocol import Protocol

# Real Delta SQL runs on the classic session: the tests' Connect server has no Delta extension
# (tests/spark_connect_server.py says why).
pytestmark = pytest.mark.classic_spark("real Delta SQL runs on the classic session's Delta jars")


def test_drop_vacuum_protocol_check_with_delta_sql(delta_spark, golden_table):
    from delta_downgrade.app.engines.delta_sql import DeltaSqlEngine
    from delta_downgrade.log.delta_log import DeltaLog

    path = golden_table("vacuum_protocol_check")
    outcome = DeltaSqlEngine(delta_spark).drop_feature(path, "vacuumProtocolCheck")
    assert outcome.status == "dropped"
    snap = DeltaLog(path).snapshot()
    assert "vacuumProtocolCheck" not in snap.protocol.features
    assert snap.protocol.min_reader_version == 1
    again = DeltaSqlEngine(delta_spark).drop_feature(path, "vacuumProtocolCheck")
    assert again.status == "already_absent"
    assert Protocol(1, 2).features <= snap.protocol.features
