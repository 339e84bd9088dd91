"""``drop-feature --for CLIENT`` on a table whose live files carry deletion vectors although its
protocol does not list ``deletionVectors`` (a writer broke PROTOCOL.md "Deletion Vectors"; made
here by editing a golden table's log). The verdict alone, taken on the protocol, would say that a
client without deletion vectors reads the table; the real client then returns the deleted rows.
The run is refused (exit 2) with nothing written, and says what to do; a client that applies
deletion vectors, and the same table with its protocol intact, are not refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_downgrade.compat import packaged_catalogue
from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.errors import ClientCannotBeUnblockedError
from delta_downgrade.operations.drop_for_client import STATUS_ALREADY_COMPATIBLE, drop_for_client

TABLE = "dv_basic_no_checkpoint"  # one live file with a deletion vector, no checkpoint
CLIENT = "deltalake-0.18-pyarrow"


def _without_deletion_vectors_in_protocol(path: str, only_files_with_vectors: bool = False) -> None:
    """Every protocol of the log made (1, 2), the enabling property removed; the files untouched.
    ``only_files_with_vectors``: the adds of files that are never given a vector are left out too
    (the one file the table then has carries one)."""
    with_vectors = {json.loads(line)["add"]["path"] for commit in (Path(path) / "_delta_log").glob("*.json")
                    for line in commit.read_text().splitlines()
                    if '"deletionVector"' in line and '"add"' in line}
    for commit in sorted((Path(path) / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        if only_files_with_vectors:
            actions = [a for a in actions if "add" not in a or a["add"]["path"] in with_vectors]
        for action in actions:
            if "protocol" in action:
                action["protocol"] = {"minReaderVersion": 1, "minWriterVersion": 2}
            if "metaData" in action:
                action["metaData"]["configuration"].pop("delta.enableDeletionVectors", None)
        commit.write_text("".join(json.dumps(a) + "\n" for a in actions))
    for crc in (Path(path) / "_delta_log").glob(".*.crc"):
        crc.unlink()


def _live_adds(path: str) -> list[dict]:
    """The live add actions of a log without checkpoints (checked): PROTOCOL.md "Action
    Reconciliation", a file keyed by its path and deletion vector, the last action winning."""
    def key(action: dict) -> tuple:
        dv = action.get("deletionVector") or {}
        return action["path"], dv.get("storageType"), dv.get("pathOrInlineDv"), dv.get("offset")

    assert not list((Path(path) / "_delta_log").glob("*.checkpoint*"))
    live: dict[tuple, dict] = {}
    for commit in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "remove" in action:
                live.pop(key(action["remove"]), None)
            if "add" in action:
                live[key(action["add"])] = action["add"]
    return list(live.values())


def _files(path: str) -> dict[str, bytes]:
    root = Path(path)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
@pytest.mark.parametrize("only_files_with_vectors", [False, True], ids=["mixed", "every-file-with-a-vector"])
def test_undeclared_deletion_vectors_refuse_a_client_without_them(golden_table, oracle_018, dry_run,
                                                                  only_files_with_vectors):
    path = golden_table(TABLE)
    _without_deletion_vectors_in_protocol(path, only_files_with_vectors)
    # What the refusal is about: the client no longer refuses the table as it did (its
    # DeltaProtocolError on the intact table), and does not read it right. deltalake 0.18.2
    # returns the deleted rows when every live file has a vector, and fails on the log's
    # vector column when some have none.
    adds = _live_adds(path)
    deleted = sum(a["deletionVector"]["cardinality"] for a in adds if a.get("deletionVector"))
    assert deleted > 0
    read_by_client = oracle_018.pyarrow_rows(path)
    assert "DeltaProtocolError" not in str(read_by_client.error)
    if only_files_with_vectors:
        assert len(read_by_client.unwrap()) == sum(json.loads(a["stats"])["numRecords"] for a in adds)
    else:
        assert not read_by_client.ok
    before = _files(path)
    with pytest.raises(ClientCannotBeUnblockedError) as refused:
        drop_for_client(path, packaged_catalogue().client(CLIENT),
                        committer=PlanRecorder() if dry_run else None)
    assert refused.value.exit_code == 2
    message = refused.value.message
    assert "carry deletion vectors" in message and "deletionVectors" in message
    assert "delta.feature.deletionVectors" in message and "Nothing was written" in message
    assert _files(path) == before


def test_a_client_that_applies_deletion_vectors_is_not_refused(golden_table):
    path = golden_table(TABLE)
    _without_deletion_vectors_in_protocol(path)
    outcome = drop_for_client(path, packaged_catalogue().client("delta-spark-4.4"), committer=PlanRecorder())
    assert outcome.status == STATUS_ALREADY_COMPATIBLE


def test_the_intact_table_is_planned_as_before(golden_table):
    path = golden_table(TABLE)
    outcome = drop_for_client(path, packaged_catalogue().client(CLIENT), committer=PlanRecorder())
    assert outcome.features_planned == ["deletionVectors"]
