"""DROP FEATURE through the task entry point: validation, protocol
results and the fast drop's core, on tables built by the package's own builder."""

from __future__ import annotations

import pytest

from delta_downgrade.app.tasks.entrypoints import drop_feature_task
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY
from delta_downgrade.protocol import Protocol
from tests.drop_support import (
    LEGACY_W, PROPERTY, RW_T, W_T, X_DEP, build, checkpoint_versions, latest, log_snapshot_files,
    registered_test_features, run_task,
)

CP = "checkpointProtection"


@pytest.fixture(autouse=True)
def _test_features():
    with registered_test_features():
        yield


def drop(path: str, feature: str, *extra: str) -> tuple[int, dict, str]:
    code, results, err = run_task(drop_feature_task, [f"--table={path}", f"--feature={feature}", *extra])
    assert len(results) == 1, (results, err)
    return code, results[0], err


def tf(r: int, w: int, *features: str) -> Protocol:
    """A table-features protocol listing ``features`` (RW ones in both lists when r == 3)."""
    from delta_downgrade.protocol.features import get_feature

    writer = set(features)
    reader = {f for f in features if (spec := get_feature(f)) and spec.kind.value == "readerWriter"} if r == 3 else None
    return Protocol(r, w, frozenset(reader) if reader is not None else None, frozenset(writer))


# --- A. validation ---------------------------------------------------------------------------------

def test_a1_unknown_feature(tmp_path):
    build(str(tmp_path), Protocol(1, 2))
    before = log_snapshot_files(str(tmp_path))
    code, result, err = drop(str(tmp_path), "NonSupportedFeature")
    assert code == 2
    assert result["error_class"] == "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"
    assert log_snapshot_files(str(tmp_path)) == before


def test_a2_known_feature_not_present_is_already_done(tmp_path):
    build(str(tmp_path), Protocol(1, 2))
    before = log_snapshot_files(str(tmp_path))
    code, result, _ = drop(str(tmp_path), "deletionVectors")
    assert code == 0
    assert result["status"] == "already_absent"
    assert result["error_class"] == "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"
    assert log_snapshot_files(str(tmp_path)) == before


def test_a3_implicit_append_only_is_not_removable(tmp_path):
    build(str(tmp_path), Protocol(1, 2))
    code, result, _ = drop(str(tmp_path), "appendOnly")
    assert (code, result["error_class"]) == (2, "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE")


def test_a4_explicit_non_removable_writer_feature(tmp_path):
    build(str(tmp_path), tf(1, 7, "appendOnly", "invariants", "allowColumnDefaults"))
    code, result, _ = drop(str(tmp_path), "allowColumnDefaults")
    assert (code, result["error_class"]) == (2, "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE")


@pytest.mark.parametrize("name", ["delta.enableRowTracking", "DELTA.ENABLEROWTRACKING", "Delta.EnableRowTracking"])
def test_a5_delta_property_instead_of_feature(tmp_path, name):
    build(str(tmp_path), Protocol(1, 2))
    code, result, _ = drop(str(tmp_path), name)
    assert (code, result["error_class"]) == (2, "DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY")
    assert name in result["message"]


def test_a6_truncate_history_for_writer_feature(tmp_path):
    build(str(tmp_path), tf(1, 7, W_T))
    code, result, _ = drop(str(tmp_path), W_T, "--truncate-history=true")
    assert (code, result["error_class"]) == (2, "DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED")


def test_a7_dependent_features(tmp_path):
    path = str(tmp_path)
    build(path, tf(3, 7, X_DEP, RW_T, W_T))
    code, result, _ = drop(path, W_T)
    assert (code, result["error_class"]) == (2, "DELTA_FEATURE_DROP_DEPENDENT_FEATURE")
    assert result["params"]["dependentFeatures"] == X_DEP
    code, result, _ = drop(path, X_DEP)
    assert code == 0 and result["status"] == "dropped"
    assert {W_T, RW_T} <= set(result["writer_features"])
    code, result, _ = drop(path, W_T)
    assert code == 0 and W_T not in result["writer_features"]


def test_a8_domain_metadata_needed_by_row_tracking(tmp_path):
    build(str(tmp_path), tf(1, 7, "rowTracking", "domainMetadata"))
    code, result, _ = drop(str(tmp_path), "domainMetadata")
    assert (code, result["error_class"]) == (2, "DELTA_FEATURE_DROP_DEPENDENT_FEATURE")
    assert result["params"]["dependentFeatures"] == "rowTracking"


def test_a9_catalog_managed_dependents(golden_table):
    path = golden_table("catalog_managed_ict")
    code, result, _ = drop(path, "inCommitTimestamp")
    assert (code, result["error_class"]) == (2, "DELTA_FEATURE_DROP_DEPENDENT_FEATURE")
    assert result["params"]["dependentFeatures"] == "catalogManaged"
    code, result, _ = drop(path, "vacuumProtocolCheck")
    assert result["error_class"] == "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"


def test_a10_checkpoint_protection_needs_truncate_history(tmp_path):
    build(str(tmp_path), tf(1, 7, CP))
    code, result, _ = drop(str(tmp_path), CP)
    assert (code, result["error_class"]) == (2, "DELTA_FEATURE_CAN_ONLY_DROP_CHECKPOINT_PROTECTION_WITH_HISTORY_TRUNCATION")


def test_a11_second_drop_reports_not_present(tmp_path):
    path = str(tmp_path)
    build(path, tf(1, 7, "appendOnly", "invariants", W_T))
    assert drop(path, W_T)[0] == 0
    code, result, _ = drop(path, W_T)
    assert code == 0 and result["status"] == "already_absent"
    assert result["error_class"] == "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"


@pytest.mark.parametrize("spelling", [W_T, f"'{W_T}'", f"`{W_T}`"])
def test_a12_quoted_names(tmp_path, spelling):
    build(str(tmp_path), tf(1, 7, W_T))
    code, result, _ = drop(str(tmp_path), spelling)
    assert code == 0 and result["feature"] == W_T and result["status"] == "dropped"


def test_unwritable_table_is_refused(tmp_path):
    """A writer feature this package does not know blocks every drop, before anything is written.
    (collations_dbr served here until collations became a writable feature.)"""
    import json
    import os

    path = str(tmp_path)
    builder = build(path, tf(1, 7, "appendOnly", "invariants", "domainMetadata"))
    # The package refuses to commit such a protocol itself: a newer writer wrote it.
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7,
                "writerFeatures": ["appendOnly", "invariants", "domainMetadata", "someFutureWriterFeature"]}
    with open(os.path.join(path, "_delta_log", f"{builder.version + 1:020d}.json"), "w") as fh:
        fh.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "UPGRADE PROTOCOL"}}) + "\n")
        fh.write(json.dumps({"protocol": protocol}) + "\n")
    before = log_snapshot_files(path)
    code, result, _ = drop(path, "domainMetadata")
    assert code == 2
    assert result["error_class"] == "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE"
    assert "someFutureWriterFeature" in result["message"]
    assert log_snapshot_files(path) == before


def test_collations_keep_domain_metadata(golden_table):
    """collations (a writable writer feature now) requires domainMetadata and cannot be dropped
    itself: domainMetadata is refused as a dependency, with nothing written."""
    path = golden_table("collations_dbr")
    before = log_snapshot_files(path)
    code, result, _ = drop(path, "domainMetadata")
    assert (code, result["error_class"]) == (2, "DELTA_FEATURE_DROP_DEPENDENT_FEATURE")
    assert result["params"]["dependentFeatures"] == "collations"
    assert "collations cannot be dropped, so domainMetadata stays" in result["message"]
    assert log_snapshot_files(path) == before


# --- B. protocol results (through the command) -------------------------------------------------------

def _legacy_plus(r: int, w: int, *extra: str) -> Protocol:
    base = Protocol(r, w).denormalized()
    p = base
    for f in extra:
        p = p.with_feature(f)
    return p


# Parameters are built lazily: the test features exist only inside the registry fixture.
B_CASES = {
    "13": (lambda: _legacy_plus(1, 4, W_T), lambda: Protocol(1, 4)),
    "14": (lambda: _legacy_plus(2, 4, W_T), lambda: Protocol(1, 4)),
    "15": (lambda: _legacy_plus(2, 5, W_T), lambda: Protocol(2, 5)),
    "16": (lambda: _legacy_plus(1, 1, W_T), lambda: Protocol(1, 1)),
    "17": (lambda: tf(1, 7, W_T), lambda: Protocol(1, 1)),
    "18": (lambda: tf(1, 7, "appendOnly", "invariants", W_T), lambda: Protocol(1, 2)),
    "20": (lambda: tf(1, 7, W_T, LEGACY_W), lambda: tf(1, 7, LEGACY_W)),
    "21": (lambda: tf(2, 7, W_T, "columnMapping"), lambda: Protocol(2, 7, None, frozenset({"columnMapping"}))),
    "22a": (lambda: tf(1, 7, W_T, "domainMetadata"), lambda: tf(1, 7, "domainMetadata")),
    "22c": (lambda: tf(3, 7, W_T, RW_T), lambda: tf(3, 7, RW_T)),
}


@pytest.mark.parametrize("case", sorted(B_CASES))
def test_b_writer_feature_drop_results(tmp_path, case):
    start, expected = (make() for make in B_CASES[case])
    build(str(tmp_path), start, appends=0)
    code, result, _ = drop(str(tmp_path), W_T)
    assert code == 0, result
    assert latest(str(tmp_path)).protocol == expected
    assert result["min_reader_version"] == expected.min_reader_version
    assert result["min_writer_version"] == expected.min_writer_version
    assert checkpoint_versions(str(tmp_path)) == []  # writer-only: no barriers


def test_b19_rw_drop_back_to_2_5_plus_checkpoint_protection(tmp_path):
    start = _legacy_plus(2, 5, RW_T)
    build(str(tmp_path), start, appends=0)
    code, result, _ = drop(str(tmp_path), RW_T)
    assert code == 0
    # Fast path: the (2,5) legacy set stays, checkpointProtection is added (Checkpoint Protection RFC).
    expected = Protocol(2, 5).denormalized().with_feature(CP).normalized()
    assert latest(str(tmp_path)).protocol == expected


def test_b22_rw_plus_deletion_vectors(tmp_path):
    build(str(tmp_path), tf(3, 7, RW_T, "deletionVectors"), appends=0)
    drop(str(tmp_path), RW_T)
    p = latest(str(tmp_path)).protocol
    assert p.reader_features == frozenset({"deletionVectors"})
    assert p.writer_features == frozenset({"deletionVectors", CP})


def test_b24_check_constraints_from_legacy(tmp_path):
    build(str(tmp_path), Protocol(1, 3), appends=0)
    drop(str(tmp_path), "checkConstraints")
    assert latest(str(tmp_path)).protocol == Protocol(1, 2)
    other = tmp_path / "b"
    build(str(other), Protocol(1, 4), appends=0)
    drop(str(other), "checkConstraints")
    assert latest(str(other)).protocol == tf(1, 7, "appendOnly", "invariants", "generatedColumns", "changeDataFeed")


def test_b26_rw_drop_with_column_mapping_and_writer_feature(tmp_path):
    build(str(tmp_path), tf(2, 7, "columnMapping", W_T, "appendOnly", "invariants").with_feature(RW_T), appends=0)
    drop(str(tmp_path), RW_T)
    assert latest(str(tmp_path)).protocol == Protocol(
        2, 7, None, frozenset({"invariants", "appendOnly", "columnMapping", W_T, CP}))


# --- C. fast drop core -------------------------------------------------------------------------------

def test_c27_rw_feature_fast_drop(tmp_path):
    path = str(tmp_path)
    build(path, tf(3, 7, RW_T, "appendOnly", "invariants"), properties={PROPERTY[RW_T]: "true"})
    code, result, _ = drop(path, RW_T)
    assert code == 0
    snap = latest(path)
    assert CP in snap.protocol.features and RW_T not in snap.protocol.features
    assert snap.boundary_version == snap.version == result["boundary_version"]
    assert len([v for v in checkpoint_versions(path) if v <= snap.version]) == 4
    assert PROPERTY[RW_T] not in snap.metadata.configuration
    assert len(result["protected_checkpoints"]) == 4
    assert result["needs_truncate"] is True
    # v0 create, v1-v2 appends, v3 unset property, v4-v6 barriers, v7 downgrade.
    assert snap.version == 7 and checkpoint_versions(path) == [4, 5, 6, 7]


def test_c28_writer_feature_fast_drop(tmp_path):
    path = str(tmp_path)
    build(path, tf(1, 7, W_T), properties={PROPERTY[W_T]: "true"})
    code, result, _ = drop(path, W_T)
    snap = latest(path)
    assert code == 0 and CP not in snap.protocol.features
    assert BOUNDARY_PROPERTY not in snap.metadata.configuration
    assert checkpoint_versions(path) == []
    assert result["needs_truncate"] is False and result["boundary_version"] is None


def test_c29_second_drop_moves_the_boundary(tmp_path):
    path = str(tmp_path)
    builder = build(path, tf(3, 7, RW_T, "appendOnly", "invariants"), properties={PROPERTY[RW_T]: "true"})
    drop(path, RW_T)
    builder.append([{"id": 100, "value": "x"}])
    builder.set_protocol(latest(path).protocol.with_feature("vacuumProtocolCheck"))
    drop(path, "vacuumProtocolCheck")
    snap = latest(path)
    assert CP in snap.protocol.features
    assert RW_T not in snap.protocol.features and "vacuumProtocolCheck" not in snap.protocol.features
    assert snap.boundary_version == snap.version
    assert len(checkpoint_versions(path)) == 8


def test_dry_run_writes_nothing_and_plans(tmp_path):
    path = str(tmp_path)
    build(path, tf(3, 7, RW_T), properties={PROPERTY[RW_T]: "true"})
    before = log_snapshot_files(path)
    code, result, _ = drop(path, RW_T, "--dry-run=true")
    assert code == 0 and result["status"] == "planned"
    assert log_snapshot_files(path) == before
    plan = result["plan"]
    assert sum("Empty Commit" in s for s in plan) == 3
    assert sum(s.startswith("checkpoint") for s in plan) == 4
    assert any("DROP FEATURE" in s for s in plan)
    assert result["writer_features"] == [CP]


@pytest.mark.parametrize("truncate", [False, True], ids=["fast", "truncate-history"])
def test_b23_inactive_rw_feature_next_to_row_tracking(tmp_path, truncate):
    """(3,7) with {rowTracking, domainMetadata, RW-T inactive}: dropping RW-T leaves
    (1,7,{rowTracking, domainMetadata}) (+ checkpointProtection on the fast path)."""
    from delta_downgrade.clock import ManualClock
    from delta_downgrade.operations.drop_feature import drop_feature

    path, clock = str(tmp_path), ManualClock()
    build(path, tf(3, 7, "rowTracking", "domainMetadata", RW_T), clock=clock)
    clock.advance(hours=48)  # nothing was active: the truncate path needs no wait at all
    drop_feature(path, RW_T, truncate_history=truncate, clock=clock)
    expected = {"rowTracking", "domainMetadata"} | (set() if truncate else {CP})
    assert latest(path).protocol == Protocol(1, 7, None, frozenset(expected))


@pytest.mark.parametrize("spelling", [W_T.upper(), W_T.lower(), f"`{W_T.swapcase()}`"])
def test_a13_a_name_in_another_case_drops_the_present_feature(tmp_path, spelling):
    """Names resolve case-insensitively (delta-spark's featureNameToFeature): another case of a
    present feature's name drops that feature; it is never "already absent" while still there."""
    build(str(tmp_path), tf(1, 7, W_T))
    code, result, _ = drop(str(tmp_path), spelling)
    assert (code, result["status"], result["feature"]) == (0, "dropped", W_T)
    assert W_T not in (result["writer_features"] or [])


@pytest.mark.parametrize("present, asked", [("typeWidening-preview", "typeWidening"),
                                            ("typeWidening", "typeWidening-preview")])
def test_a14_the_preview_counterpart_of_a_present_feature_is_a_did_you_mean(tmp_path, present, asked):
    """``typeWidening`` on a ``typeWidening-preview`` table (and back) is not a completed drop:
    exit 2 naming the feature the table has, nothing written."""
    build(str(tmp_path), tf(3, 7, present))
    before = log_snapshot_files(str(tmp_path))
    code, result, _ = drop(str(tmp_path), asked)
    assert (code, result["error_class"]) == (2, "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT")
    assert result["status"] != "already_absent"
    assert f"Did you mean {present}?" in result["message"]
    assert result["params"]["didYouMean"] == present
    assert log_snapshot_files(str(tmp_path)) == before
