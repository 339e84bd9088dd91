"""A live data file the log names but the store lacks (deleted by hand, not by DELETE or VACUUM):
a drop that must read it is refused with delta-spark's DELTA_FILE_NOT_FOUND_DETAILED, exit 2,
naming the file and the table, before its first write - never an internal error, never a drop
that commits the property change and then fails in the rewrite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.errors import EXIT_BAD_INPUT, DataFileNotFoundError
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.rewrite.data_files import DataFiles
from delta_downgrade.storage import open_storage
from tests.process_support import tree_hashes


def _live_adds(table: str) -> dict[str, dict]:
    """The live adds of a table whose log has no checkpoint, by path: removes of a commit apply
    before its adds (a DV update removes and re-adds the same path)."""
    live: dict[str, dict] = {}
    for commit in sorted((Path(table) / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        for action in actions:
            if "remove" in action:
                live.pop(action["remove"]["path"], None)
        for action in actions:
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
    return live


def test_a_deletion_vector_drop_refuses_a_missing_file_it_would_purge(golden_table):
    table = golden_table("dv_basic_no_checkpoint")
    with_dv = sorted(p for p, add in _live_adds(table).items() if add.get("deletionVector"))
    assert with_dv, "the table must have a live file with a deletion vector"
    (Path(table) / with_dv[0]).unlink()
    before = tree_hashes(Path(table))

    for committer in (PlanRecorder(), None):  # the dry run makes the same refusal
        with pytest.raises(DataFileNotFoundError) as info:
            drop_feature(table, "deletionVectors", **({"committer": committer} if committer else {}))
        error = info.value
        assert error.exit_code == EXIT_BAD_INPUT
        assert error.error_class == "DELTA_FILE_NOT_FOUND_DETAILED"
        assert with_dv[0] in error.message and "Nothing was written" in error.message
        assert error.params["missing"] == [with_dv[0]]
        assert error.table == table
    assert tree_hashes(Path(table)) == before


def test_a_type_widening_drop_refuses_a_missing_file_whose_footer_it_reads(golden_table):
    table = golden_table("type_widening_preview")
    gone = sorted(_live_adds(table))[0]
    (Path(table) / gone).unlink()
    before = tree_hashes(Path(table))

    with pytest.raises(DataFileNotFoundError) as info:
        drop_feature(table, "typeWidening-preview")
    assert info.value.exit_code == EXIT_BAD_INPUT
    assert gone in info.value.message and info.value.table == table
    assert tree_hashes(Path(table)) == before


def test_missing_names_the_absent_files_in_order(tmp_path):
    for name in ("a.parquet", "c.parquet"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "p=1").mkdir()
    (tmp_path / "p=1" / "d e.parquet").write_bytes(b"x")
    files = DataFiles(open_storage(str(tmp_path)))
    asked = ["a.parquet", "b.parquet", "c.parquet", "p=1/d%20e.parquet", "p=1/f.parquet"]
    assert files.missing(asked) == ["b.parquet", "p=1/f.parquet"]
    files.require_present(["a.parquet", "p=1/d%20e.parquet"])
    with pytest.raises(DataFileNotFoundError) as info:
        files.require_present(asked)
    assert info.value.params["missing"] == ["b.parquet", "p=1/f.parquet"]


def test_missing_lists_a_directory_with_many_files_once(tmp_path, monkeypatch):
    import delta_downgrade.rewrite.data_files as data_files

    monkeypatch.setattr(data_files, "LIST_RATHER_THAN_STAT", 3)
    (tmp_path / "p=1").mkdir()
    for n in range(5):
        if n != 2:
            (tmp_path / "p=1" / f"{n}.parquet").write_bytes(b"x")
    (tmp_path / "lone.parquet").write_bytes(b"x")
    storage = open_storage(str(tmp_path))
    calls = {"list": 0, "status": 0}
    real_list, real_status = storage.list_names, storage.status
    monkeypatch.setattr(storage, "list_names", lambda d: (calls.__setitem__("list", calls["list"] + 1), real_list(d))[1])
    monkeypatch.setattr(storage, "status", lambda r: (calls.__setitem__("status", calls["status"] + 1), real_status(r))[1])
    asked = [f"p=1/{n}.parquet" for n in range(5)] + ["lone.parquet", "p=2/x.parquet"]
    assert DataFiles(storage).missing(asked) == ["p=1/2.parquet", "p=2/x.parquet"]
    assert calls == {"list": 1, "status": 2}
