"""Log entries that exist but cannot be read, and log lines no parser may see, are named errors
(``DELTA_STATE_RECOVER_ERROR``, exit 2), never skipped, never a crash:

- a commit that is a link to nothing or a directory, ``_last_checkpoint`` a directory,
  ``_sidecars`` a file, ``_delta_log`` a link loop;
- a commit whose creation failed because it exists but that cannot be read: never an empty winner
  (the commit would go on past a version nobody validated);
- a line nested thousands of levels deep (a commit line, a ``schemaString``, a stats string):
  measured before parsing, in both replays and the projected reads.

The CLI-level checks (exit codes, bytes unchanged) are in tests/integration/test_damaged_log_cli.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from delta_downgrade.errors import CorruptLogError
from delta_downgrade.log.replay.arrow_replay import replay_segment
from delta_downgrade.log.commit import commit
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR, commit_path
from delta_downgrade.log.format.last_checkpoint import parse_last_checkpoint
from delta_downgrade.log.read.segment import read_commit_actions
from delta_downgrade.operations.vacuum import vacuum
from delta_downgrade.protocol.actions import MalformedActionError, parse_commit
from delta_downgrade.protocol.json_nesting import (MAX_NESTING, NestingTooDeepError, check_nesting, may_nest_too_deep,
                                                   nesting_depth)
from tests.process_support import tree_hashes

T0 = 1_700_000_000_000
SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                   "metadata": {}}]})
DEEP = 20_000


def _line(obj: object) -> str:
    return json.dumps(obj) + "\n"


def _table(tmp_path: Path, commits: int = 3) -> Path:
    table = tmp_path / "t"
    log = table / LOG_DIR
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_text(
        _line({"commitInfo": {"timestamp": T0, "operation": "WRITE"}})
        + _line({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
        + _line({"metaData": {"id": "m", "format": {"provider": "parquet", "options": {}},
                              "schemaString": SCHEMA, "partitionColumns": [], "configuration": {},
                              "createdTime": T0}}))
    for v in range(1, commits):
        (log / f"{v:020d}.json").write_text(_line({"add": {
            "path": f"f-{v}.parquet", "partitionValues": {}, "size": 10, "modificationTime": T0,
            "dataChange": True}}))
        (table / f"f-{v}.parquet").write_bytes(b"data")
    return table


# --- entries that are not readable files --------------------------------------------------------

def _dangling_commit(table: Path, version: int) -> None:
    os.symlink(table / "no-such-file.json", table / commit_path(version))


def _directory_commit(table: Path, version: int) -> None:
    (table / commit_path(version)).mkdir()


@pytest.mark.parametrize("make, what", [(_dangling_commit, "a link to nothing"),
                                        (_directory_commit, "a directory")])
@pytest.mark.parametrize("where", ["latest+1", "middle"])
def test_a_commit_that_is_not_a_readable_file_is_named(tmp_path, make, what, where):
    table = _table(tmp_path)
    if where == "middle":
        (table / commit_path(2)).rename(table / commit_path(3))
        make(table, 2)
    else:
        make(table, 3)
    before = tree_hashes(table)
    with pytest.raises(CorruptLogError) as info:
        DeltaLog(str(table)).snapshot()
    assert what in info.value.message and commit_path(2 if where == "middle" else 3) in info.value.message
    assert info.value.exit_code == 2
    # vacuum must not take the data file that commit may add for an orphan
    with pytest.raises(CorruptLogError):
        vacuum(str(table), retention_hours=0, enforce_retention_check=False)
    assert tree_hashes(table) == before


def test_last_checkpoint_that_is_a_directory_is_named(tmp_path):
    table = _table(tmp_path)
    (table / LOG_DIR / "_last_checkpoint").mkdir()
    with pytest.raises(CorruptLogError, match="_last_checkpoint is a directory"):
        DeltaLog(str(table)).snapshot()


def test_sidecars_that_is_a_file_is_named(tmp_path):
    table = _table(tmp_path)
    (table / LOG_DIR / "_sidecars").write_text("")
    with pytest.raises(CorruptLogError, match="_sidecars is not a directory"):
        DeltaLog(str(table)).snapshot()


def test_delta_log_in_a_link_loop_is_named(tmp_path):
    table = tmp_path / "t"
    table.mkdir()
    os.symlink(table / LOG_DIR, table / LOG_DIR)
    with pytest.raises(CorruptLogError, match="cannot list _delta_log"):
        DeltaLog(str(table)).snapshot()


def test_a_lost_create_whose_winner_cannot_be_read_is_an_error_never_an_empty_winner(tmp_path):
    table = _table(tmp_path)
    log = DeltaLog(str(table))
    latest = log.snapshot().version
    _dangling_commit(table, latest + 1)  # after the listing: the create finds the version taken
    with pytest.raises(CorruptLogError) as info:
        commit(log, latest, [], operation="Empty Commit")
    assert "exists" in info.value.message and commit_path(latest + 1) in info.value.message
    assert not (table / commit_path(latest + 2)).exists()  # nothing committed past it


# --- nesting -------------------------------------------------------------------------------------

def _deep(depth: int = DEEP) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("line", [
    '{"commitInfo": {"x": %s}}' % _deep(),
    '{"add": {"path": "x", "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": true, '
    '"tags": %s}}' % ('{"a":' * DEEP + '"b"' + "}" * DEEP),
    _deep(),
    '{"metaData": {"id": "m", "format": {"provider": "parquet"}, "schemaString": %s, "partitionColumns": [], '
    '"configuration": {}}}' % json.dumps(_deep()),
])
def test_a_deeply_nested_line_is_malformed_in_every_reader(tmp_path, line):
    table = _table(tmp_path)
    (table / commit_path(3)).write_text(_line({"commitInfo": {"timestamp": T0}}) + line + "\n")
    log = DeltaLog(str(table))
    with pytest.raises(CorruptLogError, match="nest"):
        log.validated_snapshot()
    with pytest.raises(CorruptLogError, match="nest"):
        replay_segment(log.storage, str(table), log.segment())  # pyarrow.json must never see it
    with pytest.raises(CorruptLogError, match="nest"):
        DeltaLog(str(table)).snapshot().state()
    status = log.listing().commit_status(3)
    with pytest.raises(CorruptLogError):
        read_commit_actions(log.storage, status, ("protocol", "metaData", "commitInfo", "add"))


def test_nesting_is_measured_without_recursion_and_strings_do_not_count():
    assert nesting_depth(b'{"a": [1, {"b": "[[[[{{{{"}]}') == 3
    check_nesting('{"s": "%s"}' % ("[" * 5000))  # brackets in a string are text
    check_nesting(_deep(MAX_NESTING))
    with pytest.raises(NestingTooDeepError):
        check_nesting(_deep(MAX_NESTING + 1))
    with pytest.raises(NestingTooDeepError, match="line 3"):
        check_nesting("{}\n[]\n" + _deep() + "\n{}")
    with pytest.raises(MalformedActionError):
        parse_commit(_deep(DEEP))
    assert parse_last_checkpoint('{"version": 1, "x": %s}' % _deep()) is None  # a hint, ignored


def test_only_a_line_with_that_many_brackets_may_nest_too_deep():
    assert not may_nest_too_deep(b"")
    assert not may_nest_too_deep(_deep(MAX_NESTING).encode())
    assert may_nest_too_deep(_deep(MAX_NESTING + 1).encode())
    # many brackets in the file, few in each line: no line can be too deep
    assert not may_nest_too_deep(("[" * 300 + "]" * 300 + "\n").encode() * 50)
    # many brackets in one line, shallow: may (and check_nesting then measures it)
    wide = ('{"x": [%s]}' % ",".join(["{}"] * 600)).encode()
    assert may_nest_too_deep(b"{}\n" + wide + b"\n{}")
    check_nesting(wide)


def test_the_arrow_replay_names_the_deep_commit_among_many_and_reads_a_wide_one(tmp_path):
    # One chunk of 40 commits: the nesting is measured per commit as the files are read, so a
    # commit with a wide but shallow line is still parsed by pyarrow, and a deep one is named.
    table = _table(tmp_path, commits=40)
    wide = _line({"commitInfo": {"timestamp": T0, "x": [{} for _ in range(600)]}})
    (table / commit_path(12)).write_text(wide + (table / commit_path(12)).read_text())
    log = DeltaLog(str(table))
    state = replay_segment(log.storage, str(table), log.segment())
    assert state.num_adds == 39 and 12 not in state.python_commits
    (table / commit_path(27)).write_text((table / commit_path(27)).read_text()
                                         + '{"commitInfo": {"x": %s}}\n' % _deep())
    log = DeltaLog(str(table))
    with pytest.raises(CorruptLogError, match="nest") as info:
        replay_segment(log.storage, str(table), log.segment())
    assert commit_path(27) in info.value.message


def test_a_deeply_nested_stats_string_costs_its_statistics_only(tmp_path):
    from delta_downgrade.protocol.actions import AddFile

    add = AddFile(path="x", size=1, modificationTime=1, stats=_deep())
    assert add.num_records is None


def test_a_deeply_nested_domain_configuration_is_malformed(tmp_path):
    table = _table(tmp_path)
    (table / commit_path(3)).write_text(_line({"domainMetadata": {
        "domain": "delta.rowTracking", "configuration": '{"a": %s}' % _deep(),
        "removed": False}}))
    with pytest.raises(CorruptLogError, match="nest"):
        DeltaLog(str(table)).validated_snapshot()
