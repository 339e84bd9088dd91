"""The RESULT line: its exact text for typed outcomes (keys sorted, compact JSON), the keys jobs
read back as task values, and the error and waiting forms."""

from __future__ import annotations

import io
import json

from delta_downgrade.app.render.result import (
    drop_result, emit_result, error_result, format_result, parse_result_lines, protocol_fields, verify_result,
)
from delta_downgrade.app.tasks.framework import TASK_VALUE_KEYS
from delta_downgrade.errors import BadInputError, RetentionWaitError
from delta_downgrade.drop.run import STATUS_DROPPED, STATUS_PLANNED, DropOutcome
from delta_downgrade.operations.verify import Check, VerifyReport
from delta_downgrade.protocol import Protocol

DV = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors", "appendOnly"}))
PROTECTED = Protocol(1, 7, None, frozenset({"appendOnly", "checkpointProtection"}))
LEGACY = Protocol(1, 2)


def _dropped() -> DropOutcome:
    return DropOutcome("/t", "deletionVectors", STATUS_DROPPED, DV, PROTECTED, 7,
                       ["_delta_log/00000000000000000007.checkpoint.parquet"], [3, 4], ["cp4"],
                       truncate_after="2024-01-02T00:00:00Z", plan=["committed v3: x"])


def test_drop_result_line_is_exact():
    assert format_result(drop_result(_dropped())) == (
        'RESULT {"boundary_version":7,"checkpoints_written":["cp4"],"commits":[3,4],'
        '"feature":"deletionVectors","min_reader_version":1,"min_writer_version":7,'
        '"needs_truncate":true,"protected_checkpoints":["_delta_log/00000000000000000007.checkpoint.parquet"],'
        '"protocol_before":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],'
        '"writerFeatures":["appendOnly","deletionVectors"]},"reader_features":null,"status":"dropped",'
        '"table":"/t","truncate_after":"2024-01-02T00:00:00Z","writer_features":["appendOnly","checkpointProtection"]}')


def test_drop_result_keys_in_order_and_every_task_value_key_present():
    result = drop_result(_dropped())
    assert list(result) == ["table", "feature", "status", "min_reader_version", "min_writer_version",
                            "reader_features", "writer_features", "protocol_before", "boundary_version",
                            "protected_checkpoints", "needs_truncate", "truncate_after", "commits",
                            "checkpoints_written"]
    # exit_code is added by the task itself; client and features_dropped belong to a run for a
    # client (client_drop_result), the task sets them to None for a single feature's drop
    assert set(TASK_VALUE_KEYS) - set(result) == {"exit_code", "client", "features_dropped"}


def test_plan_only_for_a_planned_drop_and_error_fields_merged():
    planned = DropOutcome("/t", "v2Checkpoint", STATUS_PLANNED, DV, DV, None, [], [], [], plan=["commit v1"])
    assert drop_result(planned)["plan"] == ["commit v1"]
    assert "plan" not in drop_result(_dropped())      # a dropped outcome keeps its plan to itself
    error = BadInputError("nope", params={"feature": "x"})
    absent = DropOutcome("/t", "x", "already_absent", LEGACY, LEGACY, None, [], [], [], error=error)
    result = drop_result(absent)
    assert result["error_class"] == error.error_class and result["message"] == "nope"
    assert result["params"] == {"feature": "x"} and result["needs_truncate"] is False


def test_protocol_fields_of_a_legacy_protocol_have_no_feature_lists():
    assert protocol_fields(LEGACY) == {"min_reader_version": 1, "min_writer_version": 2,
                                       "reader_features": None, "writer_features": None}


def test_verify_result():
    report = VerifyReport("/t", "deletionVectors", 9, PROTECTED, 7, ["a.parquet"],
                          [Check("readable", True, "ok"), Check("boundary_version", False, "expected 6, found 7")])
    result = verify_result(report)
    assert list(result) == ["table", "feature", "status", "version", "min_reader_version", "min_writer_version",
                            "reader_features", "writer_features", "boundary_version", "protected_checkpoints",
                            "needs_truncate", "checks", "failed_checks"]
    assert result["status"] == "failed" and result["failed_checks"] == ["boundary_version"]
    assert result["checks"][1] == {"check": "boundary_version", "ok": False, "detail": "expected 6, found 7"}
    assert result["needs_truncate"] is True and result["version"] == 9
    passing = VerifyReport("/t", None, 1, LEGACY, None, [], [Check("readable", True, "ok")])
    assert verify_result(passing)["status"] == "verified" and verify_result(passing)["needs_truncate"] is False


def test_error_results():
    wait = RetentionWaitError("later", retry_after="2030-01-01T00:00:00Z")
    result = error_result("/t", "deletionVectors", wait)
    assert result["status"] == "waiting" and result["truncate_after"] == "2030-01-01T00:00:00Z"
    assert result["error_class"] == "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"
    assert error_result("/t", None, BadInputError("bad"))["status"] == "error"
    assert error_result("/t", "f", ValueError("boom")) == {
        "table": "/t", "feature": "f", "status": "error", "error_class": "DELTA_DOWNGRADE_INTERNAL_ERROR",
        "message": "ValueError: boom"}


def test_emit_and_parse_round_trip():
    out = io.StringIO()
    emit_result({"b": 1, "a": [None, "x"]}, out)
    emit_result({"summary": True}, out)
    text = "noise\n" + out.getvalue()
    assert out.getvalue().splitlines()[0] == 'RESULT {"a":[null,"x"],"b":1}'
    assert parse_result_lines(text) == [{"a": [None, "x"], "b": 1}, {"summary": True}]
    assert json.loads(out.getvalue().splitlines()[1].removeprefix("RESULT ")) == {"summary": True}
