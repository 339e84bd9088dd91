"""With in-commit timestamps enabled, every commit's commitInfo carries ``inCommitTimestamp``, and
a new commit's must be greater than the one before (PROTOCOL.md "In-Commit Timestamps"). A latest
commit without it - no commitInfo at all, or one without the field - leaves a writer nothing to
be greater than: the drop and its dry run refuse it as delta-spark does
(``DELTA_MISSING_COMMIT_INFO`` / ``DELTA_MISSING_COMMIT_TIMESTAMP``), exit 2, nothing written.
Disabling in-commit timestamps (dropping the feature) needs no previous timestamp and goes on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.errors import MissingCommitInfoError, MissingCommitTimestampError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR, commit_path
from delta_downgrade.operations.drop_feature import drop_feature
from tests.process_support import tree_hashes

T0 = 1_700_000_000_000
SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                   "metadata": {}}]})
PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors", "inCommitTimestamp"]}
CONFIGURATION = {"delta.enableInCommitTimestamps": "true", "delta.enableDeletionVectors": "false"}


def _lines(*actions: dict) -> str:
    return "".join(json.dumps(a) + "\n" for a in actions)


def _table(tmp_path: Path, last_commit_info: dict | None) -> Path:
    table = tmp_path / "t"
    (table / LOG_DIR).mkdir(parents=True)
    (table / commit_path(0)).write_text(_lines(
        {"commitInfo": {"timestamp": T0, "inCommitTimestamp": T0, "operation": "CREATE TABLE"}},
        {"protocol": PROTOCOL},
        {"metaData": {"id": "ict-table", "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                      "partitionColumns": [], "configuration": CONFIGURATION, "createdTime": T0}}))
    last = [{"commitInfo": last_commit_info}] if last_commit_info is not None else []
    (table / commit_path(1)).write_text(_lines(
        *last, {"add": {"path": "part-0.parquet", "partitionValues": {}, "size": 10, "modificationTime": T0,
                        "dataChange": True}}))
    return table


@pytest.mark.parametrize("commit_info, error", [
    (None, MissingCommitInfoError),
    ({"timestamp": T0 + 1000, "operation": "WRITE"}, MissingCommitTimestampError),
], ids=["no commitInfo", "no inCommitTimestamp"])
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry run", "drop"])
def test_a_latest_commit_without_its_in_commit_timestamp_is_refused(tmp_path, commit_info, error, dry_run):
    table = _table(tmp_path, commit_info)
    before = tree_hashes(table)
    with pytest.raises(error) as info:
        drop_feature(str(table), "deletionVectors", **({"committer": PlanRecorder()} if dry_run else {}))
    assert info.value.exit_code == 2 and "commit version 1" in info.value.message
    assert info.value.table == str(table)
    assert tree_hashes(table) == before


def test_the_latest_commits_in_commit_timestamp_is_what_the_next_must_exceed(tmp_path):
    ahead = T0 + 3_600_000 * 24 * 365 * 50  # far in the future: the drop's commits must still exceed it
    table = _table(tmp_path, {"timestamp": T0 + 1000, "inCommitTimestamp": ahead, "operation": "WRITE"})
    drop_feature(str(table), "deletionVectors")
    snapshot = DeltaLog(str(table)).snapshot()
    assert "deletionVectors" not in snapshot.protocol.features
    stamps = []
    for version in range(1, snapshot.version + 1):
        first = json.loads((table / commit_path(version)).read_text().splitlines()[0])
        stamps.append(first["commitInfo"]["inCommitTimestamp"])
    assert stamps[0] == ahead and stamps == sorted(set(stamps))


def test_dropping_in_commit_timestamps_needs_no_previous_timestamp(tmp_path):
    table = _table(tmp_path, {"timestamp": T0 + 1000, "operation": "WRITE"})
    drop_feature(str(table), "inCommitTimestamp")
    snapshot = DeltaLog(str(table)).snapshot()
    assert "inCommitTimestamp" not in snapshot.protocol.features
