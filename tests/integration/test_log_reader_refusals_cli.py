"""The log reader's refusals through the CLI in a subprocess: bad input exits 2
with its Delta error class on stderr, no traceback, and not one byte of the table changed; a stray
commit file far ahead is found in bounded time and memory; a Databricks checkpoint with an INT96
``stats_parsed`` timestamp in year 2960 reads fine.

The unit-level checks (both replays, the history, incremental snapshots) are in
tests/unit/log/test_log_reader_edges.py."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR, commit_path
from tests.unit.log.test_log_reader_edges import with_int96_stats_parsed
from tests.process_support import tree_hashes

T0 = 1_700_000_000_000
SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                   "metadata": {}}]})
#: Address space of each CLI run: a reader that enumerates versions runs out of it at once.
MEMORY_LIMIT = 2 << 30
TIMEOUT = 120


def _lines(*actions: Any) -> str:
    return "".join((a if isinstance(a, str) else json.dumps(a)) + "\n" for a in actions)


def _info(v: int) -> dict[str, Any]:
    return {"commitInfo": {"timestamp": T0 + v, "operation": "WRITE"}}


def _add(path: str) -> dict[str, Any]:
    return {"add": {"path": path, "partitionValues": {}, "size": 10, "modificationTime": T0,
                    "dataChange": True}}


PROTOCOL = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                         "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}}


def _metadata(**configuration: str) -> dict[str, Any]:
    return {"metaData": {"id": "11111111-2222-3333-4444-555555555555",
                         "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                         "partitionColumns": [], "createdTime": T0,
                         "configuration": {"delta.enableDeletionVectors": "true", **configuration}}}


def _table(tmp_path: Path, commits: int = 3) -> Path:
    """A table with the feature deletionVectors (droppable, no rewrite needed: no file has a DV)."""
    table = tmp_path / "t"
    log = table / LOG_DIR
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_text(_lines(_info(0), PROTOCOL, _metadata(), _add("a.parquet")))
    for v in range(1, commits):
        (log / f"{v:020d}.json").write_text(_lines(_info(v), _add(f"f-{v}.parquet")))
    return table


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", *args], capture_output=True,
                          text=True, timeout=TIMEOUT, preexec_fn=_limit_memory)


COMMANDS = {
    "inspect": lambda t: ["inspect", t],
    "inspect-json": lambda t: ["inspect", t, "--json"],
    "drop-dry-run": lambda t: ["drop-feature", t, "deletionVectors", "--dry-run"],
    "drop": lambda t: ["drop-feature", t, "deletionVectors"],
}


def _bad_input(table: Path, command: list[str], error_class: str, *needles: str) -> str:
    before = tree_hashes(table)
    try:
        done = _cli(*command)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{command} did not finish within {TIMEOUT} s")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert error_class in done.stderr, output
    for needle in needles:
        assert needle in done.stderr, output
    assert "Traceback" not in output and "MemoryError" not in output
    assert tree_hashes(table) == before  # nothing written
    return done.stderr


def test_the_fixture_table_is_fine(tmp_path):
    table = _table(tmp_path)
    for make in COMMANDS.values():
        if make("x")[-1] != "deletionVectors":  # every command but the real drop
            done = _cli(*make(str(table)))
            assert done.returncode == 0, done.stdout + done.stderr


# --- a file for a table, malformed lines -------------------------------------------------------

@pytest.mark.parametrize("command", ["inspect", "drop-dry-run", "drop"])
def test_a_regular_file_is_not_a_table(tmp_path, command):
    path = tmp_path / "part-0000.parquet"
    path.write_bytes(b"PAR1 not a table PAR1")
    _bad_input(path, COMMANDS[command](str(path)), "DELTA_MISSING_DELTA_TABLE", "is a file")


@pytest.mark.parametrize("command", ["inspect", "drop-dry-run", "drop"])
def test_delta_log_that_is_a_file_is_not_a_table(tmp_path, command):
    table = tmp_path / "t"
    table.mkdir()
    (table / LOG_DIR).write_text("{}")
    _bad_input(table, COMMANDS[command](str(table)), "DELTA_MISSING_DELTA_TABLE", "_delta_log is a file")


MALFORMED = ["[1,2]", '"x"', "3", '{"add": {"path": 5, "size": "x"}}',
             '{"protocol": {"minReaderVersion": "abc"}}', '{"metaData": "oops"}',
             '{"protocol": {"minReaderVersion": "abc", "minWriterVersion": 7}}',
             '{"add": {"path": "x.parquet", "size": 1, "deletionVector": "dv"}}']


@pytest.mark.parametrize("line", MALFORMED)
@pytest.mark.parametrize("command", ["inspect", "drop-dry-run", "drop"])
def test_a_malformed_line_is_bad_input_naming_file_and_line(tmp_path, command, line):
    table = _table(tmp_path)
    (table / commit_path(2)).write_text(_lines(_info(2), _add("ok.parquet"), line))
    _bad_input(table, COMMANDS[command](str(table)), "DELTA_STATE_RECOVER_ERROR",
               f"{commit_path(2)}: line 3", str(table))


# --- a stray commit file far ahead ------------------------------------------------------------

@pytest.mark.parametrize("name", ["00000000000100000000.json", "09223372036854775807.json",
                                  "99999999999999999999.json"])
@pytest.mark.parametrize("command", ["inspect", "drop-dry-run", "drop", "vacuum", "cleanup"])
def test_a_stray_commit_far_ahead_is_named_in_bounded_time_and_memory(tmp_path, command, name):
    table = _table(tmp_path)
    (table / LOG_DIR / name).write_text(_lines(_info(9)))
    args = {"vacuum": ["vacuum", str(table), "--dry-run"],
            "cleanup": ["cleanup", str(table), "--dry-run"]}.get(command) or COMMANDS[command](str(table))
    _bad_input(table, args, "DELTA_VERSIONS_NOT_CONTIGUOUS", f"_delta_log/{name}")


# --- two protocol or two metaData actions in one commit ------------------------------------------

@pytest.mark.parametrize("kind", ["protocol", "metaData"])
@pytest.mark.parametrize("command", ["inspect", "drop-dry-run", "drop"])
def test_two_protocol_or_metadata_actions_in_a_commit_are_refused(tmp_path, command, kind):
    table = _table(tmp_path)
    twice = [PROTOCOL, PROTOCOL] if kind == "protocol" else [_metadata(a="1"), _metadata(a="2")]
    (table / commit_path(3)).write_text(_lines(_info(3), *twice))
    _bad_input(table, COMMANDS[command](str(table)), "DELTA_DUPLICATE_ACTIONS_FOUND",
               commit_path(3), f"2 {kind} actions")


# --- INT96 stats_parsed out of the nanosecond range -----------------------------------------------

@pytest.mark.parametrize("command", ["inspect", "inspect-json", "vacuum", "drop-dry-run"])
def test_databricks_checkpoint_with_int96_stats_in_year_2960(tmp_path, command):
    table = _table(tmp_path, commits=5)
    result = checkpoint_table(DeltaLog(str(table)), 3, clock=ManualClock(T0))
    with_int96_stats_parsed(table / result.paths[0], year=2960)
    before = tree_hashes(table)
    args = ["vacuum", str(table), "--dry-run"] if command == "vacuum" else COMMANDS[command](str(table))
    done = _cli(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert tree_hashes(table) == before
    if command == "inspect-json":
        doc = json.loads(done.stdout)
        assert doc["files"]["live_files"] == 5
        assert doc["checkpoints"][0]["version"] == 3
