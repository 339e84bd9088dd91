"""DESCRIBE DETAIL / HISTORY answers, typed: the protocol DETAIL describes, the boundary, the
DROP FEATURE commits, truncate_after; and a runtime's wait as our waiting RESULT."""

from __future__ import annotations

from datetime import datetime, timezone

from delta_downgrade.app.engines.catalog_answers import (
    HistoryEntry, TableDetail, protocol_from_detail, truncate_after,
)
from delta_downgrade.app.engines.sql_session import map_error
from delta_downgrade.app.render.result import error_result
from delta_downgrade.protocol import Protocol


class RuntimeError_(Exception):
    def __init__(self, condition: str, message: str) -> None:
        super().__init__(f"[{condition}] {message}")
        self.condition = condition

    def getCondition(self) -> str:  # noqa: N802 - pyspark's name
        return self.condition


def _detail(features, properties=None, r=1, w=7) -> TableDetail:
    return TableDetail("main.s.t", None, "id", "delta", r, w, tuple(features), dict(properties or {}),
                       (), (), 1, 10, None, None)


def test_legacy_versions_are_the_protocol_whatever_tableFeatures_lists():
    # delta-spark's DETAIL lists the implicitly supported features of a legacy protocol too.
    assert protocol_from_detail(1, 2, ["appendOnly", "invariants"]) == Protocol(1, 2)
    assert protocol_from_detail(2, 5, ["appendOnly", "columnMapping", "invariants"]) == Protocol(2, 5)


def test_table_features_protocols_split_reader_features_by_the_registry():
    p = protocol_from_detail(3, 7, ["appendOnly", "deletionVectors", "futureThing", "invariants"])
    assert p == Protocol(3, 7, {"deletionVectors"}, {"appendOnly", "deletionVectors", "futureThing", "invariants"})
    assert protocol_from_detail(1, 7, ["appendOnly", "checkpointProtection"]) == \
        Protocol(1, 7, None, {"appendOnly", "checkpointProtection"})


def test_boundary_only_with_checkpoint_protection():
    props = {"delta.requireCheckpointProtectionBeforeVersion": "12"}
    assert _detail(["checkpointProtection"], props).boundary_version == 12
    assert _detail(["appendOnly"], props).boundary_version is None


def test_drop_commits_match_the_feature_case_insensitively():
    e = HistoryEntry(5, 0, "DROP FEATURE", {"featureName": "vacuumProtocolCheck", "truncateHistory": "false"})
    assert e.drops() and e.drops("VACUUMPROTOCOLCHECK") and not e.drops("deletionVectors")
    assert not HistoryEntry(4, 0, "CHECKPOINT", {}).drops()


def test_truncate_after_is_the_boundary_commit_time_rounded_up_plus_the_retention():
    t = int(datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc).timestamp() * 1000)
    detail = _detail(["checkpointProtection"], {"delta.requireCheckpointProtectionBeforeVersion": "5",
                                                "delta.dropFeatureTruncateHistory.retentionDuration": "2 hours"})
    history = [HistoryEntry(6, t + 1000, "WRITE"), HistoryEntry(5, t, "DROP FEATURE")]
    assert truncate_after(detail, history) == "2026-01-02T05:05:00Z"
    assert truncate_after(detail, history[:1]) is None  # the boundary commit is not in the answer
    assert truncate_after(_detail(["appendOnly"]), history) is None


def test_a_runtime_wait_without_a_time_is_still_waiting():
    for condition in ("DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD", "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST",
                      "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"):
        mapped = map_error(RuntimeError_(condition, "wait 24 hours"), "main.s.t", "deletionVectors")
        assert mapped.exit_code == 3 and mapped.error_class == condition
        assert mapped.message == "wait 24 hours"  # the class is not repeated in the message
        result = error_result("main.s.t", "deletionVectors", mapped)
        assert result["status"] == "waiting" and result["truncate_after"] is None
