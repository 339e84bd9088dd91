"""DROP FEATURE on copies of real golden tables, checked with delta-rs in a subprocess: its pyarrow
read path (the "older reader") refuses before the drop where the feature is a reader feature and
reads after it, and the rows are equal before and after."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import FeatureDropError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.app.render.inspect import inspect_document
from delta_downgrade.operations.inspect import inspect_table
from delta_downgrade.protocol import Protocol
from tests.oracle import same_rows

CP = "checkpointProtection"


def live_rows(path: str) -> list[dict]:
    """Rows of the live files read straight from parquet (for tables delta-rs cannot read)."""
    state = DeltaLog(path).snapshot(check_read=False).state()
    out: list[dict] = []
    for f in state.files.values():
        table = pq.read_table(os.path.join(path, f.decoded_path))
        for row in table.to_pylist():
            row.update({k: v for k, v in f.partitionValues.items()})
            out.append(row)
    return out


def test_vacuum_protocol_check_then_truncate(golden_table, oracle):
    path = golden_table("vacuum_protocol_check")
    assert not oracle.pyarrow_rows(path).ok  # the older reader refuses vacuumProtocolCheck
    expected = oracle.scan_rows(path, version=0)  # v0 is (1,2) with the same data
    assert expected.ok, expected.error
    assert same_rows(live_rows(path), expected.value)

    clock = ManualClock()
    outcome = drop_feature(path, "vacuumProtocolCheck", clock=clock)
    log = DeltaLog(path)
    snap = log.snapshot()
    assert snap.protocol == Protocol(1, 7, None, frozenset({"appendOnly", "invariants", CP}))
    assert snap.boundary_version == snap.version == outcome.boundary_version
    assert [c.version for c in log.checkpoint_inventory()][-4:] == list(range(snap.version - 3, snap.version + 1))
    after = oracle.pyarrow_rows(path)
    assert after.ok, after.error
    assert same_rows(after, expected)

    clock.advance(hours=24, minutes=5)
    drop_feature(path, CP, truncate_history=True, clock=clock)
    final = DeltaLog(path).snapshot()
    assert final.protocol == Protocol(1, 2)
    assert same_rows(oracle.pyarrow_rows(path), expected)
    assert same_rows(oracle.scan_rows(path), expected)


def test_check_constraints_lists_the_constraint(golden_table):
    path = golden_table("check_constraints_legacy_1_3")
    before = sorted(os.listdir(os.path.join(path, "_delta_log")))
    with pytest.raises(FeatureDropError) as info:
        drop_feature(path, "checkConstraints")
    assert info.value.error_class == "DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE"
    assert "`id`" in info.value.message
    assert sorted(os.listdir(os.path.join(path, "_delta_log"))) == before


def test_in_commit_timestamp(golden_table, oracle):
    path = golden_table("ict_cdf")
    before = oracle.scan_rows(path)
    assert before.ok, before.error
    outcome = drop_feature(path, "inCommitTimestamp")
    snap = DeltaLog(path).snapshot()
    assert "inCommitTimestamp" not in snap.protocol.features
    assert CP not in snap.protocol.features  # writer-only: no history protection
    conf = snap.metadata.configuration
    assert conf.get("delta.enableInCommitTimestamps") in (None, "false")
    assert "delta.inCommitTimestampEnablementVersion" not in conf
    assert outcome.checkpoints_written == []
    assert same_rows(oracle.pyarrow_rows(path), before)
    assert same_rows(oracle.scan_rows(path), before)
    doc = inspect_document(inspect_table(path))
    assert "inCommitTimestamp" not in {f["name"] for f in doc["features"]}


@pytest.mark.parametrize("name", ["v2_checkpoint_json_sidecars", "v2_checkpoint_parquet_sidecars",
                                  "v2_checkpoint_dbr_identity"])
def test_v2_checkpoint(golden_table, oracle, name):
    path = golden_table(name)
    before = oracle.scan_rows(path)
    assert before.ok, before.error
    assert not oracle.pyarrow_rows(path).ok  # the older reader refuses v2Checkpoint
    drop_feature(path, "v2Checkpoint")
    log = DeltaLog(path)
    snap = log.snapshot()
    assert "v2Checkpoint" not in snap.protocol.features and CP in snap.protocol.features
    assert snap.protocol.min_reader_version == 1
    assert snap.metadata.configuration["delta.checkpointPolicy"] == "classic"
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.kind == "classic"
    after = oracle.pyarrow_rows(path)
    assert after.ok, after.error
    assert same_rows(after, before)
    assert same_rows(oracle.scan_rows(path), before)
    assert not [f for f in inspect_document(inspect_table(path))["features"] if f["name"] == "v2Checkpoint"]
