"""A DROP FEATURE commit whose commitInfo does not say whether history was truncated (no
``truncateHistory`` parameter, as a writer may leave it out): the compat report's timeline
says null, and the report's model (and its JSON Schema) accept it."""

from __future__ import annotations

import json
from pathlib import Path

from delta_downgrade.app.render.protocol_timeline import timeline_json
from delta_downgrade.app.schemas.compat import Timeline
from delta_downgrade.operations.protocol_timeline import protocol_timeline
from tests.output_schemas import validate_complete


def test_a_drop_feature_commit_without_the_truncate_flag_is_null_and_valid(golden_table):
    path = golden_table("dv_enabled_no_dvs")
    log = Path(path, "_delta_log")
    next_version = max(int(p.name.split(".")[0]) for p in log.glob("*.json")) + 1
    commit_info = {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "DROP FEATURE",
                                  "operationParameters": {"featureName": "deletionVectors"}}}
    (log / f"{next_version:020d}.json").write_text(json.dumps(commit_info) + "\n")
    document = timeline_json(protocol_timeline(path))
    assert document["drop_feature_commits"] == [
        {"version": next_version, "feature": "deletionVectors", "truncate_history": None}]
    validate_complete(Timeline, document)
