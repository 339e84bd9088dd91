"""The TRUNCATE HISTORY path (this package's legacy path always uses the
truncate-history retention) and dropping checkpointProtection, with an injected
clock so that days pass in milliseconds."""

from __future__ import annotations

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import RetentionWaitError
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY
from delta_downgrade.operations.cleanup import cleanup_expired_logs
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol import Protocol
from tests.drop_support import (
    PROPERTY, RW_T, W_HIST, build, checkpoint_versions, commit_versions, latest, log_snapshot_files,
    registered_test_features,
)

CP = "checkpointProtection"


@pytest.fixture(autouse=True)
def _test_features():
    with registered_test_features():
        yield


def rw_table(path: str, clock: ManualClock, **props: str):
    protocol = Protocol(1, 2).denormalized().with_feature(RW_T)
    return build(path, protocol, properties={PROPERTY[RW_T]: "true", **props}, clock=clock)


def wait_error(path: str, feature: str, clock: ManualClock) -> RetentionWaitError:
    with pytest.raises(RetentionWaitError) as info:
        drop_feature(path, feature, truncate_history=True, clock=clock)
    return info.value


# --- D ------------------------------------------------------------------------------------------------

def test_d35_wait_then_historical_versions_exist(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    builder = rw_table(path, clock)
    err = wait_error(path, RW_T, clock)
    assert err.error_class == "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"
    assert err.exit_code == 3
    assert err.params == {"feature": RW_T, "logRetentionPeriodKey": "delta.logRetentionDuration",
                          "logRetentionPeriod": "30 days", "truncateHistoryLogRetentionPeriod": "24 hours"}
    assert err.retry_after is not None
    # Run 1 removed the traces and wrote one empty commit + checkpoint.
    snap = latest(path)
    assert PROPERTY[RW_T] not in snap.metadata.configuration and RW_T in snap.protocol.features
    assert checkpoint_versions(path) == [snap.version]
    builder.append([{"id": 99, "value": "x"}])
    builder.append([{"id": 98, "value": "y"}])
    err = wait_error(path, RW_T, clock)
    assert err.error_class == "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST"
    assert err.params["truncateHistoryLogRetentionPeriod"] == "24 hours"


def test_d37_success_after_the_truncate_retention(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    rw_table(path, clock)
    wait_error(path, RW_T, clock)
    clock.advance(hours=24, minutes=5)
    outcome = drop_feature(path, RW_T, truncate_history=True, clock=clock)
    snap = latest(path)
    assert outcome.status == "dropped"
    assert snap.protocol == Protocol(1, 2)
    assert CP not in snap.protocol.features and BOUNDARY_PROPERTY not in snap.metadata.configuration
    # The earliest remaining commit is the earliest reliable checkpoint.
    assert commit_versions(path)[0] == checkpoint_versions(path)[0]
    assert len(snap.state().files) == 3  # data intact: the three files of v0..v2


def test_d37_retention_property_shows_in_messages(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    rw_table(path, clock, **{"delta.dropFeatureTruncateHistory.retentionDuration": "12 hours"})
    err = wait_error(path, RW_T, clock)
    assert err.params["truncateHistoryLogRetentionPeriod"] == "12 hours"
    clock.advance(hours=12, minutes=5)
    assert drop_feature(path, RW_T, truncate_history=True, clock=clock).status == "dropped"


def test_d38_no_clock_advance_keeps_history(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    rw_table(path, clock)
    wait_error(path, RW_T, clock)
    err = wait_error(path, RW_T, clock)
    assert err.error_class == "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST"
    assert commit_versions(path)[0] == 0


def test_d40_reenabled_after_run_1_waits_again(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    builder = rw_table(path, clock)
    wait_error(path, RW_T, clock)
    builder.set_properties({PROPERTY[RW_T]: "true"})
    clock.advance(hours=48)
    assert wait_error(path, RW_T, clock).error_class == "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"


def test_d43_unrelated_metadata_change_after_run_1(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    builder = rw_table(path, clock)
    wait_error(path, RW_T, clock)
    builder.append([{"id": 99, "value": "x"}])
    clock.advance(hours=24, minutes=5)
    builder.set_properties({"comment.unrelated": "yes"})  # an ADD COLUMN-like metadata change
    assert drop_feature(path, RW_T, truncate_history=True, clock=clock).status == "dropped"
    assert latest(path).protocol == Protocol(1, 2)


def test_d44_inactive_property_drops_in_one_run(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    protocol = Protocol(1, 2).denormalized().with_feature(RW_T)
    build(path, protocol, properties={PROPERTY[RW_T]: "false"}, clock=clock)
    clock.advance(hours=48)
    assert drop_feature(path, RW_T, truncate_history=True, clock=clock).status == "dropped"
    assert latest(path).protocol == Protocol(1, 2)


def test_d45_writer_feature_with_history_protection(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    protocol = Protocol(1, 2).denormalized().with_feature(W_HIST)
    build(path, protocol, properties={PROPERTY[W_HIST]: "true"}, clock=clock)
    err = wait_error(path, W_HIST, clock)
    assert err.params["truncateHistoryLogRetentionPeriod"] == "24 hours"
    clock.advance(hours=24, minutes=5)
    drop_feature(path, W_HIST, truncate_history=True, clock=clock)
    assert latest(path).protocol == Protocol(1, 2)


# --- C30 / C31: mixing paths ---------------------------------------------------------------------------

def test_c30_truncate_history_uses_the_legacy_path(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    rw_table(path, clock)
    wait_error(path, RW_T, clock)
    clock.advance(hours=24, minutes=5)
    drop_feature(path, RW_T, truncate_history=True, clock=clock)
    snap = latest(path)
    assert CP not in snap.protocol.features and BOUNDARY_PROPERTY not in snap.metadata.configuration


def test_c31_legacy_wait_then_fast_drop(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    rw_table(path, clock)
    wait_error(path, RW_T, clock)
    clock.advance(hours=24, minutes=5)
    outcome = drop_feature(path, RW_T, clock=clock)
    snap = latest(path)
    assert CP in snap.protocol.features and snap.boundary_version == snap.version
    assert outcome.boundary_version == snap.version
    assert len(checkpoint_versions(path)) == 5


# --- E: dropping checkpointProtection ------------------------------------------------------------------

def fast_dropped(path: str, clock: ManualClock):
    builder = rw_table(path, clock)
    drop_feature(path, RW_T, clock=clock)
    return builder


def test_e47_wait_then_truncate(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    builder = fast_dropped(path, clock)
    boundary = latest(path).boundary_version
    builder.append([{"id": 99, "value": "x"}])
    before = log_snapshot_files(path)
    err = wait_error(path, CP, clock)
    assert err.error_class == "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"
    assert err.params == {"truncateHistoryLogRetentionPeriod": "24 hours"}
    assert err.retry_after is not None
    assert log_snapshot_files(path) == before  # stricter than delta-spark: a wait writes nothing
    clock.advance(hours=48)
    outcome = drop_feature(path, CP, truncate_history=True, clock=clock)
    snap = latest(path)
    assert outcome.status == "dropped"
    assert snap.protocol == Protocol(1, 2)
    assert BOUNDARY_PROPERTY not in snap.metadata.configuration
    assert min(commit_versions(path)) >= boundary
    assert len(snap.state().files) == 4


def test_e48_still_waiting_after_15_hours(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    builder = fast_dropped(path, clock)
    builder.append([{"id": 99, "value": "x"}])
    builder.checkpoint()
    wait_error(path, CP, clock)
    clock.advance(hours=15)
    assert wait_error(path, CP, clock).error_class == \
        "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"


def test_e49_history_already_truncated(tmp_path):
    path, clock = str(tmp_path), ManualClock()
    fast_dropped(path, clock)
    boundary = latest(path).boundary_version
    clock.advance(days=33)
    cleanup_expired_logs(__import__("delta_downgrade.log.delta_log", fromlist=["DeltaLog"]).DeltaLog(path),
                         clock=clock)
    remaining = commit_versions(path)
    assert min(remaining) >= boundary
    drop_feature(path, CP, truncate_history=True, clock=clock)
    assert latest(path).protocol == Protocol(1, 2)
    # Nothing more was deleted: only the two new commits (unset property, downgrade) were added.
    assert commit_versions(path) == remaining + [remaining[-1] + 1, remaining[-1] + 2]


def test_truncate_task_exit_code_and_result(tmp_path):
    from delta_downgrade.app.tasks.entrypoints import truncate_task
    from tests.drop_support import run_task

    path, clock = str(tmp_path), ManualClock()
    fast_dropped(path, clock)
    code, results, _ = run_task(truncate_task, [f"--table={path}"])
    assert code == 0  # a wait is a successful task outcome (exit 3 in the CLI only)
    assert results[0]["status"] == "waiting" and results[0]["needs_truncate"] is True
    assert results[0]["error_class"] == "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"
    assert results[0]["truncate_after"]
