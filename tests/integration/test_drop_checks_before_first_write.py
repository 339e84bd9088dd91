"""A drop checks everything it will need before its first write.

- Every table property the drop reads later (retentions, checkpoint interval and policy,
   in-commit timestamps) is parsed up front: a bad one is exit 2 with nothing written, never a
   failure after the table was changed.
- A plan that cannot finish (a checkpoint the package cannot write, a rewrite that refuses the
   table) is refused before the first commit, and ``--dry-run`` says the same thing.

Each case runs the real CLI in a subprocess and compares a hash of every file under the table
before and after.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from delta_downgrade.protocol import Protocol
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import create_dv_table
from tests.drop_support import SCHEMA, build, rows
from tests.process_support import run_cli, tree_hashes

VPC = "vacuumProtocolCheck"
VPC_PROTOCOL = Protocol(3, 7, frozenset({VPC}), frozenset({VPC}))
CP = "checkpointProtection"


def assert_refused(path: str, args: list[str], error_class: str) -> None:
    """Exit 2, the error class on stderr, no traceback, not one byte of the table changed — for
    the real run and for its dry run alike."""
    before = tree_hashes(path)
    for extra in ([], ["--dry-run"]):
        done = run_cli(*args, *extra)
        output = done.stdout + done.stderr
        assert done.returncode == 2, (extra, done.returncode, output)
        assert f"[{error_class}]" in done.stderr, (extra, output)
        assert "Traceback" not in output, output
        assert tree_hashes(path) == before, f"the table changed ({extra or 'real run'})"


# A valid value per property, replaced by the bad one once the table exists.
VALID = {"delta.enableInCommitTimestamps": "false", "delta.checkpointPolicy": "classic",
         "delta.checkpointInterval": "10", "delta.rowTrackingSuspended": "false"}


def valid_value(key: str) -> str:
    return VALID.get(key, "interval 2 days")


def set_raw_property(path: str, key: str, value: str) -> None:
    """Put ``value`` into version 0's metaData by editing the JSON (this package's own commits
    refuse to write some of these values, which is the point)."""
    v0 = os.path.join(path, "_delta_log", f"{0:020d}.json")
    with open(v0, encoding="utf-8") as fh:
        text = fh.read()
    old = json.dumps({key: valid_value(key)}, separators=(",", ":"))[1:-1]
    new = json.dumps({key: value}, separators=(",", ":"))[1:-1]
    assert text.count(old) == 1, text
    with open(v0, "w", encoding="utf-8") as fh:
        fh.write(text.replace(old, new))


def result_of(done: subprocess.CompletedProcess) -> dict:
    [line] = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):])


BAD_PROPERTIES = [
    ("delta.dropFeatureTruncateHistory.retentionDuration", "banana"),
    ("delta.deletedFileRetentionDuration", "interval -1 days"),
    ("delta.deletedFileRetentionDuration", "interval 1 month"),
    ("delta.logRetentionDuration", "banana"),
    ("delta.checkpointInterval", "0"),
    ("delta.checkpointPolicy", "v3"),
    ("delta.enableInCommitTimestamps", "maybe"),
]


@pytest.mark.parametrize(("key", "value"), BAD_PROPERTIES, ids=[f"{k}={v}" for k, v in BAD_PROPERTIES])
def test_fast_drop_with_a_bad_property_writes_nothing(tmp_path, key, value):
    # Before the fix: 'banana' wrote 4 checkpoints and the downgrade, then exit 2; a negative or
    # monthly deletedFileRetentionDuration exit 1 after 3 empty commits; others exit 0.
    path = str(tmp_path / "t")
    build(path, VPC_PROTOCOL, properties={key: valid_value(key)})
    set_raw_property(path, key, value)
    assert_refused(path, ["drop-feature", path, VPC], "DELTA_DOWNGRADE_INVALID_TABLE_PROPERTY")


@pytest.mark.parametrize("value", ["interval 1 month", "interval -1 days", "banana"])
def test_deletion_vectors_drop_with_a_bad_deleted_file_retention_writes_nothing(tmp_path, value):
    # Before the fix the DV drop committed UNSET TBLPROPERTIES, then failed on the retention when
    # it computed the DV tombstones.
    path = str(tmp_path / "t")
    create_dv_table(TableBuilder(path), SCHEMA, rows(0, 10),
                    configuration={"delta.deletedFileRetentionDuration": value})
    assert_refused(path, ["drop-feature", path, "deletionVectors"], "DELTA_DOWNGRADE_INVALID_TABLE_PROPERTY")


def test_truncate_history_path_with_a_bad_retention_writes_nothing(tmp_path):
    # Before the fix: an empty commit and a checkpoint, then exit 2 on the retention.
    path = str(tmp_path / "t")
    build(path, VPC_PROTOCOL, properties={"delta.dropFeatureTruncateHistory.retentionDuration": "banana"})
    assert_refused(path, ["drop-feature", path, VPC, "--truncate-history"],
                   "DELTA_DOWNGRADE_INVALID_TABLE_PROPERTY")


def test_truncate_history_command_with_a_bad_property_writes_nothing(tmp_path):
    path = str(tmp_path / "t")
    build(path, Protocol(1, 7, None, frozenset({CP})),
          properties={"delta.requireCheckpointProtectionBeforeVersion": "1",
                      "delta.deletedFileRetentionDuration": "interval 2 months"})
    assert_refused(path, ["truncate-history", path], "DELTA_DOWNGRADE_INVALID_TABLE_PROPERTY")


ROW_TRACKING_BOTH = {"delta.enableRowTracking": "true", "delta.rowTrackingSuspended": "true"}


def test_row_tracking_enabled_and_suspended_together_writes_nothing(tmp_path):
    # PROTOCOL.md "Row Tracking": the two "should not be enabled together"; every commit to a
    # table that supports rowTracking would have to decide whether to assign row IDs.
    path = str(tmp_path / "t")
    protocol = Protocol(3, 7, frozenset({VPC}), frozenset({VPC, "rowTracking", "domainMetadata"}))
    build(path, protocol, properties={**ROW_TRACKING_BOTH, "delta.rowTrackingSuspended": "false"})
    set_raw_property(path, "delta.rowTrackingSuspended", "true")  # our own commits refuse to write it
    assert_refused(path, ["drop-feature", path, VPC], "DELTA_ROW_TRACKING_ILLEGAL_PROPERTY_COMBINATION")


def test_row_tracking_properties_without_the_feature_do_not_block_a_drop(tmp_path):
    # Without rowTracking in the protocol the two properties mean nothing (delta-spark checks
    # them only for tables that support the feature).
    path = str(tmp_path / "t")
    build(path, VPC_PROTOCOL, properties={**ROW_TRACKING_BOTH, "delta.rowTrackingSuspended": "false"})
    set_raw_property(path, "delta.rowTrackingSuspended", "true")
    done = run_cli("drop-feature", path, VPC)
    assert done.returncode == 0, done.stderr
    assert result_of(done)["status"] == "dropped"


def test_every_bad_property_is_named_at_once(tmp_path):
    path = str(tmp_path / "t")
    build(path, VPC_PROTOCOL, properties={"delta.logRetentionDuration": "banana",
                                          "delta.checkpointInterval": "x"})
    done = run_cli("drop-feature", path, VPC)
    assert done.returncode == 2
    assert "delta.logRetentionDuration" in done.stderr and "delta.checkpointInterval" in done.stderr
    assert "nothing was written" in done.stderr


# --- plans that cannot finish ---------------------------------------------------------------

def test_history_protected_drop_under_v2_checkpoint_policy_writes_v2_checkpoints(tmp_path):
    # Was refused up front (DELTA_DOWNGRADE_V2_CHECKPOINT_POLICY) while this package wrote classic
    # checkpoints only; before that refusal the real run wrote 3 empty commits and failed (exit 1)
    # while the dry run planned it all. Under delta.checkpointPolicy=v2 the barriers and the
    # boundary checkpoint are V2 checkpoints now (PROTOCOL.md "V2 Checkpoint Table Feature"), as
    # delta-spark writes them, and the drop succeeds.
    from delta_downgrade.log.delta_log import DeltaLog

    protocol = Protocol(3, 7, frozenset({VPC, "v2Checkpoint"}), frozenset({VPC, "v2Checkpoint"}))
    path = str(tmp_path / "t")
    build(path, protocol, properties={"delta.checkpointPolicy": "v2"})
    before = tree_hashes(path)
    planned = run_cli("drop-feature", path, VPC, "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert tree_hashes(path) == before
    done = run_cli("drop-feature", path, VPC)
    assert done.returncode == 0, done.stderr
    assert [c.kind for c in DeltaLog(path).checkpoint_inventory()] == ["v2"] * 4

    # The TRUNCATE HISTORY path: an empty commit and a V2 checkpoint, then (nothing to wait for:
    # the feature left no trace) the downgrade.
    other = str(tmp_path / "u")
    build(other, protocol, properties={"delta.checkpointPolicy": "v2"})
    done = run_cli("drop-feature", other, VPC, "--truncate-history")
    assert done.returncode == 0, done.stderr
    assert [c.kind for c in DeltaLog(other).checkpoint_inventory()] == ["v2"]


def test_v2_checkpoint_drop_itself_is_not_refused(tmp_path):
    # Its pre-downgrade sets the policy to classic before any checkpoint: the plan's checks see
    # the configuration the checkpoints will be written under.
    path = str(tmp_path / "t")
    protocol = Protocol(3, 7, frozenset({"v2Checkpoint"}), frozenset({"v2Checkpoint"}))
    build(path, protocol, properties={"delta.checkpointPolicy": "v2"})
    done = run_cli("drop-feature", path, "v2Checkpoint", "--dry-run")
    assert done.returncode == 0, done.stderr
    done = run_cli("drop-feature", path, "v2Checkpoint")
    assert done.returncode == 0, done.stderr
    assert result_of(done)["status"] == "dropped"


def test_rewrite_refusal_comes_before_the_first_commit(tmp_path):
    # The deletion-vector purge refuses a table it cannot finish: here a rowTracking table whose
    # file carries a DV deleting nothing and has neither row IDs nor numRecords, so recommitting
    # it without the DV could not assign row IDs. Before the fix the drop committed UNSET
    # TBLPROPERTIES first and only then met the refusal (exit 2 after writing), and the dry run
    # planned the whole drop. (This test used the purge's old refusal of every rowTracking
    # table, which is gone: the purge now carries row IDs through.)
    pytest.importorskip("pyspark")
    from delta_downgrade.deletion_vectors import inline_descriptor
    from delta_downgrade.protocol.actions import AddFile, RemoveFile

    path = str(tmp_path / "t")
    builder = TableBuilder(path)
    create_dv_table(builder, SCHEMA, rows(0, 20))
    [add] = builder.log.snapshot(check_read=False).state().files.values()
    builder.commit([RemoveFile(path=add.path, deletionTimestamp=1, dataChange=True, size=add.size),
                    AddFile(path=add.path, size=add.size, modificationTime=add.modificationTime,
                            deletionVector=inline_descriptor([]).to_obj())], "DELETE")
    builder.set_protocol(Protocol(3, 7, frozenset({"deletionVectors"}),
                                  frozenset({"deletionVectors", "rowTracking", "domainMetadata"})))
    assert_refused(path, ["drop-feature", path, "deletionVectors"], "DELTA_ROW_ID_ASSIGNMENT_WITHOUT_STATS")


def test_valid_table_still_drops(tmp_path):
    # The checks are not a blanket refusal: the same table with good properties drops.
    path = str(tmp_path / "t")
    build(path, VPC_PROTOCOL, properties={"delta.deletedFileRetentionDuration": "interval 2 days",
                                          "delta.checkpointInterval": "5",
                                          "delta.enableInCommitTimestamps": "FALSE"})
    done = run_cli("drop-feature", path, VPC)
    assert done.returncode == 0, done.stderr
    assert result_of(done)["status"] == "dropped"

