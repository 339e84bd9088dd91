"""The features whose drop needs no data rewrite: v2Checkpoint, inCommitTimestamp,
checkConstraints, domainMetadata, rowTracking."""

from __future__ import annotations

import pytest

from delta_downgrade.protocol.actions import DomainMetadata
from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import FeatureDropError, RetentionWaitError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol import Protocol
from tests.drop_support import build, checkpoint_versions, latest
from tests.oracle import same_rows

CP = "checkpointProtection"


def with_features(*names: str) -> Protocol:
    p = Protocol(1, 2).denormalized()
    for n in names:
        p = p.with_feature(n)
    return p


# --- 66 v2Checkpoint, TRUNCATE HISTORY path ------------------------------------------------------------

def test_g66_v2_checkpoint_legacy_path(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    builder = build(path, with_features("v2Checkpoint"), properties={"delta.checkpointPolicy": "v2"}, clock=clock)
    with pytest.raises(RetentionWaitError) as info:
        drop_feature(path, "v2Checkpoint", truncate_history=True, clock=clock)
    assert info.value.error_class == "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"
    inventory = DeltaLog(path).checkpoint_inventory()
    assert [c.kind for c in inventory] == ["classic"]  # exactly one new classic checkpoint
    builder.append([{"id": 500, "value": "z"}])
    with pytest.raises(RetentionWaitError) as info:
        drop_feature(path, "v2Checkpoint", truncate_history=True, clock=clock)
    assert info.value.error_class == "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST"
    clock.advance(hours=24, minutes=5)
    drop_feature(path, "v2Checkpoint", truncate_history=True, clock=clock)
    snap = latest(path)
    assert "v2Checkpoint" not in snap.protocol.features and CP not in snap.protocol.features
    assert snap.metadata.configuration["delta.checkpointPolicy"] != "v2"
    assert all(c.kind == "classic" for c in DeltaLog(path).checkpoint_inventory())


def test_g66_golden_v2_table_truncate_history(golden_table, oracle):
    path, clock = golden_table("v2_checkpoint_json_sidecars"), ManualClock()
    before = oracle.scan_rows(path)
    with pytest.raises(RetentionWaitError):
        drop_feature(path, "v2Checkpoint", truncate_history=True, clock=clock)
    clock.advance(hours=24, minutes=5)
    drop_feature(path, "v2Checkpoint", truncate_history=True, clock=clock)
    log = DeltaLog(path)
    assert log.snapshot().protocol == Protocol(1, 2)
    assert all(c.kind == "classic" for c in log.checkpoint_inventory())  # the v2 manifest is gone
    assert same_rows(oracle.pyarrow_rows(path), before)


# --- 69 inCommitTimestamp ------------------------------------------------------------------------------

@pytest.mark.parametrize("properties", [
    {"delta.enableInCommitTimestamps": "true", "delta.inCommitTimestampEnablementVersion": "0",
     "delta.inCommitTimestampEnablementTimestamp": "1700000000000"},
    {"delta.inCommitTimestampEnablementVersion": "3"},
    {},
], ids=["enabled", "provenance-only", "no-property"])
def test_g69_in_commit_timestamp(tmp_path, properties):
    path = str(tmp_path)
    build(path, with_features("inCommitTimestamp"), properties=properties)
    outcome = drop_feature(path, "inCommitTimestamp")
    snap = latest(path)
    assert outcome.status == "dropped"
    assert "inCommitTimestamp" not in snap.protocol.features and CP not in snap.protocol.features
    conf = snap.metadata.configuration
    assert conf.get("delta.enableInCommitTimestamps", "false") == "false"
    assert not {"delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp"} & set(conf)
    assert checkpoint_versions(path) == []
    again = drop_feature(path, "inCommitTimestamp")
    assert again.status == "already_absent"
    assert again.error is not None and again.error.error_class == "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"


def test_in_commit_timestamps_are_written_while_enabled(tmp_path):
    path = str(tmp_path)
    builder = build(path, with_features("inCommitTimestamp"), properties={"delta.enableInCommitTimestamps": "true"})
    builder.empty_commit()
    infos = [latest(path).commit_info(v) for v in range(latest(path).version + 1)]
    stamps = [i.inCommitTimestamp for i in infos]
    assert all(s is not None for s in stamps) and stamps == sorted(set(stamps))  # strictly increasing


# --- 70 checkConstraints -------------------------------------------------------------------------------

def test_g70_constraints_must_be_dropped_first(tmp_path):
    path = str(tmp_path)
    builder = build(path, Protocol(1, 3), properties={"delta.constraints.c1": "id > 0", "delta.constraints.c2": "id < 9"})
    with pytest.raises(FeatureDropError) as info:
        drop_feature(path, "checkConstraints")
    assert info.value.error_class == "DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE"
    assert "`c1`, `c2`" in info.value.message
    builder.set_properties({"delta.constraints.c1": None})
    with pytest.raises(FeatureDropError) as info:
        drop_feature(path, "checkConstraints")
    assert "`c2`" in info.value.message and "`c1`" not in info.value.message
    builder.set_properties({"delta.constraints.c2": None})
    assert drop_feature(path, "checkConstraints").status == "dropped"
    assert latest(path).protocol == Protocol(1, 2)


# --- 71 domainMetadata ------------------------------------------------------------------------------

def test_g71_domain_metadata(tmp_path):
    path = str(tmp_path)
    builder = build(path, with_features("domainMetadata"))
    builder.commit([DomainMetadata(domain="leaked.domain", configuration='{"a":1}')], "DOMAIN METADATA")
    assert drop_feature(path, "domainMetadata").status == "dropped"
    snap = latest(path)
    assert "domainMetadata" not in snap.protocol.features
    assert snap.state().live_domains == {}
    assert snap.protocol == Protocol(1, 2)


def test_g71_row_tracking_then_domain_metadata_on_golden(golden_table, oracle):
    path = golden_table("row_tracking")
    before = oracle.scan_rows(path)
    assert before.ok, before.error
    drop_feature(path, "rowTracking")
    drop_feature(path, "domainMetadata")
    snap = latest(path)
    assert snap.protocol == Protocol(1, 2)
    assert snap.state().live_domains == {}
    assert same_rows(oracle.scan_rows(path), before)
    assert same_rows(oracle.pyarrow_rows(path), before)


# --- 72 rowTracking ------------------------------------------------------------------------------------

def test_g72_row_tracking_cleanup(golden_table):
    path = golden_table("row_tracking")
    state = latest(path).state()
    assert any(f.baseRowId is not None for f in state.files.values())
    drop_feature(path, "rowTracking")
    snap = latest(path)
    conf = snap.metadata.configuration
    for key in ("delta.enableRowTracking", "delta.rowTrackingSuspended",
                "delta.rowTracking.materializedRowIdColumnName",
                "delta.rowTracking.materializedRowCommitVersionColumnName"):
        assert key not in conf
    state = snap.state()
    assert "delta.rowTracking" not in state.live_domains
    assert all(f.baseRowId is None and f.defaultRowCommitVersion is None for f in state.files.values())
    assert "rowTracking" not in snap.protocol.features and CP not in snap.protocol.features
