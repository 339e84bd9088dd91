"""Every action a run will replay is read and checked before its first write, the dry run the
same: a malformed commit after the last checkpoint (truncated, not an object, a field of the
wrong type, a BOM, a NUL byte, a bad in-commit timestamp) makes ``inspect``, the dry run, the real
drop and ``vacuum`` refuse with ``DELTA_STATE_RECOVER_ERROR`` and not one byte of the table
changed. Planning reads only the protocol and metaData lines, so before this check the dry run
said ``planned`` and the real drop failed after its first commits.

And when a run fails after it wrote, its message says what it committed - never that the table is
unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import CorruptLogError, DeltaDowngradeError
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR, commit_path
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.operations.inspect import inspect_table
from delta_downgrade.operations.vacuum import vacuum
from tests.logging_support import drop_steps
from tests.process_support import tree_hashes

T0 = 1_700_000_000_000
SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                   "metadata": {}}]})
FEATURE = "v2Checkpoint"


def _line(obj: object) -> str:
    return json.dumps(obj) + "\n"


def _add(path: str, **fields: object) -> dict:
    return {"add": {"path": path, "partitionValues": {}, "size": 10, "modificationTime": T0,
                    "dataChange": True, **fields}}


def _table(tmp_path: Path) -> Path:
    """v2Checkpoint under ``checkpointPolicy=v2`` (its drop plans from the protocol and metadata
    alone, reading no file action), a V2 checkpoint at version 2, in-commit timestamps off."""
    table = tmp_path / "t"
    log = table / LOG_DIR
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_text(
        _line({"commitInfo": {"timestamp": T0, "operation": "WRITE"}})
        + _line({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [FEATURE],
                              "writerFeatures": [FEATURE]}})
        + _line({"metaData": {"id": "m", "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                              "partitionColumns": [], "configuration": {"delta.checkpointPolicy": "v2"},
                              "createdTime": T0}})
        + _line(_add("a.parquet")))
    for v in (1, 2):
        (log / f"{v:020d}.json").write_text(_line({"commitInfo": {"timestamp": T0 + v}}) + _line(_add(f"f-{v}.parquet")))
    checkpoint_table(DeltaLog(str(table)), 2, clock=ManualClock(T0 + 10))
    return table


GOOD = _line({"commitInfo": {"timestamp": T0 + 3}}) + _line(_add("g.parquet"))
MALFORMED = {
    "truncated": GOOD[: len(GOOD) // 2],
    "array": "[1,2,3]\n",
    "number": "42\n",
    "path-not-a-string": _line(_add("x")).replace('"path": "x"', '"path": 5'),
    "size-not-a-number": _line(_add("x", size="big")),
    "modification-time-infinite": _line(_add("x")).replace(f'"modificationTime": {T0}', '"modificationTime": 1e999'),
    "bom": "\ufeff" + GOOD,
    "nul": GOOD.replace("g.parquet", "g\u0000.parquet").replace("\\u0000", "\x00"),
    "in-commit-timestamp-a-word": _line({"commitInfo": {"timestamp": T0, "inCommitTimestamp": "yesterday"}}),
    "path-a-bad-escape": _line(_add("a%zz.parquet")),
    "path-empty": _line(_add("")),
    "size-negative": _line(_add("x", size=-5)),
    "deletion-vector-of-no-kind": _line(_add("x", deletionVector={"storageType": "q", "pathOrInlineDv": "x",
                                                                  "sizeInBytes": 1, "cardinality": 1})),
    "schema-not-json": _line({"metaData": {"id": "m", "format": {"provider": "parquet"}, "schemaString": "not json",
                                           "partitionColumns": []}}),
    "two-metadata": _line({"metaData": {"id": "m", "format": {"provider": "parquet"}, "schemaString": SCHEMA,
                                        "partitionColumns": []}}) * 2,
}


def _run(command: str, table: Path) -> None:
    if command == "inspect":
        inspect_table(str(table))
    elif command == "drop-dry-run":
        drop_feature(str(table), FEATURE, committer=PlanRecorder())
    elif command == "drop":
        drop_feature(str(table), FEATURE)
    else:
        vacuum(str(table), dry_run=command == "vacuum-dry-run", retention_hours=0, enforce_retention_check=False)


@pytest.mark.parametrize("kind", sorted(MALFORMED))
@pytest.mark.parametrize("command", ["inspect", "drop-dry-run", "drop", "vacuum", "vacuum-dry-run"])
def test_a_malformed_commit_after_the_checkpoint_is_refused_before_any_write(tmp_path, kind, command):
    table = _table(tmp_path)
    data = MALFORMED[kind].encode("utf-8")
    (table / commit_path(3)).write_bytes(data)
    before = tree_hashes(table)
    with pytest.raises(CorruptLogError) as info:
        _run(command, table)
    assert info.value.exit_code == 2 and info.value.error_class in (
        "DELTA_STATE_RECOVER_ERROR", "DELTA_DUPLICATE_ACTIONS_FOUND")
    assert commit_path(3) in info.value.message
    assert tree_hashes(table) == before


def test_the_fixture_table_drops(tmp_path):
    table = _table(tmp_path)
    (table / commit_path(3)).write_text(GOOD)
    assert drop_feature(str(table), FEATURE).status == "dropped"


def test_a_run_that_fails_after_writing_says_what_it_committed(tmp_path):
    """The first barrier's commit version is taken, after the run committed its first step, by an
    entry that cannot be read (a directory): the run stops (never committing past a version
    nobody validated), and its message names the commit that landed."""
    table = _table(tmp_path)
    (table / commit_path(3)).write_text(GOOD)

    def on_step(message: str) -> None:
        if message.startswith("committed v4"):
            (table / commit_path(5)).mkdir()

    with pytest.raises(DeltaDowngradeError) as info, drop_steps(on_step) as steps:
        drop_feature(str(table), FEATURE)
    assert steps[0].startswith("committed v4")
    message = info.value.message
    assert "This run had already committed v4" in message, message
    assert "unchanged" not in message and "Nothing of this run" not in message
    assert info.value.params["landedVersions"] == [4]
    assert not (table / commit_path(6)).exists()
