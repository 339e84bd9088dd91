"""The log reader at its edges: incremental refresh and snapshots, stray versions, malformed
log lines, duplicate protocol/metaData actions, derived checkpoint columns and INT96 timestamps. The process-level checks (exit codes, stderr, bytes
unchanged) are in tests/integration/test_log_reader_refusals_cli.py."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.protocol.actions import MalformedActionError, parse_commit
from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import CorruptLogError, NotADeltaTableError, VersionsNotContiguousError
from delta_downgrade.log.replay.arrow_replay import replay_segment
from delta_downgrade.log.read.checkpoint_reader import CheckpointReader
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.format.file_names import LOG_DIR, classic_checkpoint_path, commit_path
from delta_downgrade.log.read.listing import list_whole_log, refreshed
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.storage import DirEntries, FileStatus
from delta_downgrade.storage.local import LocalStorage

T0 = 1_700_000_000_000
SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}}]})


# --- a log written line by line -------------------------------------------------------------------

def _metadata(**configuration: str) -> dict[str, Any]:
    return {"metaData": {"id": "11111111-2222-3333-4444-555555555555",
                         "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                         "partitionColumns": [], "configuration": dict(configuration),
                         "createdTime": T0}}


PROTOCOL = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}


def _info(v: int) -> dict[str, Any]:
    return {"commitInfo": {"timestamp": T0 + v, "operation": "WRITE"}}


def _add(path: str, size: int = 100) -> dict[str, Any]:
    return {"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": T0,
                    "dataChange": True, "stats": json.dumps({"numRecords": 1})}}


def _remove(path: str) -> dict[str, Any]:
    return {"remove": {"path": path, "deletionTimestamp": T0, "dataChange": True}}


def _write_commit(table: Path, version: int, lines: list[Any]) -> None:
    log = table / LOG_DIR
    log.mkdir(parents=True, exist_ok=True)
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    (log / f"{version:020d}.json").write_text(text)


def _table(tmp_path: Path, commits: int = 6, name: str = "t") -> Path:
    """Commit 0 creates the table; commit v adds f-v; every third commit removes an older file."""
    table = tmp_path / name
    _write_commit(table, 0, [_info(0), PROTOCOL, _metadata(), _add("f-0.parquet")])
    for v in range(1, commits):
        _add_commit(table, v)
    return table


def _add_commit(table: Path, v: int) -> None:
    lines: list[Any] = [_info(v), _add(f"f-{v}.parquet")]
    if v % 3 == 0:
        lines.append(_remove(f"f-{v - 2}.parquet"))
    _write_commit(table, v, lines)


class CountingStorage(LocalStorage):
    """A real local storage that counts what is read and stat'ed."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self.reads: Counter[str] = Counter()
        self.stats: Counter[str] = Counter()
        self.listings = 0

    def read_bytes(self, rel_path: str) -> bytes:
        self.reads[rel_path] += 1
        return super().read_bytes(rel_path)

    def status(self, rel_path: str) -> FileStatus:
        self.stats[rel_path] += 1
        return super().status(rel_path)

    def list_entries(self, rel_dir: str, *, start_after: str | None = None) -> DirEntries:
        # every listing with statuses of a local directory (list_dir too) is one list_entries
        self.listings += 1
        return super().list_entries(rel_dir, start_after=start_after)

    def reset(self) -> None:
        self.reads.clear()
        self.stats.clear()
        self.listings = 0


def _log_reads(storage: CountingStorage) -> set[str]:
    """The files of _delta_log that were read (the _last_checkpoint hint left out)."""
    return {p for p in storage.reads if p.startswith(f"{LOG_DIR}/0")}


def _state_summary(state: Any) -> tuple[Any, ...]:
    return (state.version, state.protocol_action, state.metadata, sorted(state.files),
            sorted(state.tombstones), sorted(state.txns), sorted(state.domains))


# --- incremental refresh and snapshots -------------------------------------------------------

def test_second_snapshot_reads_only_the_new_commits(tmp_path):
    table = _table(tmp_path, commits=25)
    checkpoint_table(DeltaLog(str(table)), 20, clock=ManualClock(T0))
    storage = CountingStorage(table)
    log = DeltaLog(str(table), storage)
    first = log.snapshot()
    assert first.version == 24
    first.state()  # the file state is computed: the next snapshot derives it too

    new = 5
    for v in range(25, 25 + new):
        _add_commit(table, v)
    storage.reset()
    log.refresh()
    second = log.snapshot()
    state = second.state()

    assert second.version == 24 + new
    expected = {commit_path(v) for v in range(25, 25 + new)}
    assert _log_reads(storage) == expected  # no old commit, no checkpoint
    # the listing: names only (no list_entries, which stats every file), a stat only for the new
    # files and the checkpoint (which a writer may replace)
    assert storage.listings == 0
    assert set(storage.stats) == expected | {classic_checkpoint_path(20)}
    fresh = DeltaLog(str(table)).snapshot()
    assert _state_summary(state) == _state_summary(fresh.state())
    assert second.protocol_action == fresh.protocol_action and second.metadata == fresh.metadata


def test_protocol_and_metadata_of_a_newer_version_come_from_the_cached_snapshot(tmp_path):
    table = _table(tmp_path, commits=12)
    storage = CountingStorage(table)
    log = DeltaLog(str(table), storage)
    _ = log.snapshot().protocol
    for v in range(12, 15):
        _add_commit(table, v)
    _write_commit(table, 15, [_info(15), _metadata(k="v")])
    storage.reset()
    snap = log.refresh().snapshot()
    assert snap.metadata.configuration == {"k": "v"}
    # newest first, and the new metadata plus the cached protocol end the search at once
    assert _log_reads(storage) <= {commit_path(v) for v in range(12, 16)}
    assert snap.protocol_action == DeltaLog(str(table)).snapshot().protocol_action


def test_derived_state_equals_a_fresh_replay_across_a_new_checkpoint(tmp_path):
    table = _table(tmp_path, commits=8)
    log = DeltaLog(str(table))
    log.snapshot().state()
    for v in range(8, 14):
        _add_commit(table, v)
    checkpoint_table(DeltaLog(str(table)), 11, clock=ManualClock(T0))
    snap = log.refresh().snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 11
    assert _state_summary(snap.state()) == _state_summary(DeltaLog(str(table)).snapshot().state())
    # states handed out are copies: changing one changes nothing else
    mine = snap.state()
    mine.files.clear()
    assert snap.state().files


def test_a_new_unreadable_checkpoint_is_skipped_as_by_a_fresh_snapshot(tmp_path):
    table = _table(tmp_path, commits=8)
    log = DeltaLog(str(table))
    log.snapshot()
    for v in range(8, 12):
        _add_commit(table, v)
    (table / classic_checkpoint_path(10)).write_bytes(b"not parquet at all")
    derived = log.refresh().snapshot()
    fresh = DeltaLog(str(table)).snapshot()
    assert derived.segment == fresh.segment  # both fell back to the replay from commit 0
    assert derived.segment.checkpoint is None
    assert _state_summary(derived.state()) == _state_summary(fresh.state())


def test_incremental_listing_equals_a_full_listing(tmp_path):
    table = _table(tmp_path, commits=10)
    checkpoint_table(DeltaLog(str(table)), 5, clock=ManualClock(T0))
    storage = LocalStorage(table)
    log = DeltaLog(str(table), storage)
    log.whole_listing()

    previous = log.listing()

    def same() -> None:
        nonlocal previous
        full = list_whole_log(storage, str(table))
        # what refresh() does (names only), and the same with every file stat'ed
        stated = refreshed(previous, storage, str(table), stat_known=True)
        previous = log.refresh().listing()
        for incremental in (previous, stated):
            for name in ("commits", "checkpoints", "crcs", "compactions", "unknown", "last_checkpoint"):
                assert getattr(incremental, name) == getattr(full, name), name
            assert list(incremental.commit_versions()) == sorted(full.commits)
            assert [incremental.contiguous_start(v) for v in full.commits] == \
                [full.contiguous_start(v) for v in full.commits]
        assert log.latest_version() == max(full.commits)

    for v in range(10, 13):
        _add_commit(table, v)
    (table / LOG_DIR / f"{11:020d}.crc").write_text("{}")
    (table / LOG_DIR / "notes.txt").write_text("x")
    same()
    # a folder in the log (not hidden, not a log file name) is no file of the listing
    (table / LOG_DIR / "some-folder").mkdir()
    same()
    # a zero-byte checkpoint (a write in progress) that is then completed
    cp = table / classic_checkpoint_path(12)
    cp.write_bytes(b"")
    same()
    checkpoint_table(DeltaLog(str(table)), 12, clock=ManualClock(T0))
    same()
    # metadata cleanup deletes the oldest commits and the old checkpoint: the refresh notices
    for v in range(0, 5):
        (table / commit_path(v)).unlink()
    (table / classic_checkpoint_path(5)).unlink()
    (table / LOG_DIR / "notes.txt").unlink()
    same()
    assert log.earliest_version() == 12
    # a listing that stats every file takes a changed modification time, so does a full refresh
    storage.set_modification_time(commit_path(12), T0 - 86_400_000)
    stated = refreshed(log.listing(), storage, str(table), stat_known=True)
    assert stated.commits[12].modification_time_ms == T0 - 86_400_000
    assert log.refresh(Refresh.FROM_SCRATCH).whole_listing().commits[12].modification_time_ms == T0 - 86_400_000
    # a full refresh forgets everything
    assert log.refresh(Refresh.FROM_SCRATCH).whole_listing().commits == list_whole_log(storage, str(table)).commits


def test_cached_snapshot_is_dropped_when_its_commit_files_change(tmp_path):
    table = _table(tmp_path, commits=4)
    log = DeltaLog(str(table))
    assert log.snapshot().metadata.configuration == {}
    # rewrite commit 3 in place (never legal, but a full refresh must see it)
    _write_commit(table, 3, [_info(3), _metadata(k="rewritten"), _add("g.parquet", size=12345)])
    os.utime(table / commit_path(3), (time.time() + 5, time.time() + 5))
    snap = log.refresh(Refresh.FROM_SCRATCH).snapshot()
    assert snap.metadata.configuration == {"k": "rewritten"}


# --- stray files with huge versions -----------------------------------------------------------

@pytest.mark.parametrize("version", [100_000_000, 10 ** 18, (1 << 63) - 1])
def test_a_stray_commit_far_ahead_is_a_gap_found_in_bounded_time(tmp_path, version):
    table = _table(tmp_path, commits=3)
    stray = f"{version:020d}.json"
    _write_commit(table, version, [_info(version)])
    log = DeltaLog(str(table))
    with _time_limit(5):  # enumerating the missing versions would take forever
        for call in (log.earliest_version, log.snapshot, log.protocol_history, lambda: log.segment(version)):
            with pytest.raises(VersionsNotContiguousError) as error:
                call()
            assert stray in str(error.value)
            assert f"3..{version - 1}" in str(error.value)
            assert error.value.exit_code == 2
        assert error.value.params["missingVersions"] == list(range(3, 13))
        # versions before the gap are still there
        assert log.snapshot(2).version == 2


@contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    """Fail (TimeoutError) instead of hanging when the block takes longer than ``seconds``."""
    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_version_beyond_a_long_is_refused_by_name(tmp_path):
    table = _table(tmp_path, commits=3)
    (table / LOG_DIR / "99999999999999999999.json").write_text(json.dumps(_info(1)) + "\n")
    with _time_limit(5), pytest.raises(VersionsNotContiguousError, match="99999999999999999999.json"):
        DeltaLog(str(table)).snapshot()
    with pytest.raises(ValueError):
        commit_path(1 << 63)
    assert commit_path((1 << 63) - 1).endswith("09223372036854775807.json")


def test_gap_report_lists_each_gap_with_the_file_after_it(tmp_path):
    table = _table(tmp_path, commits=8)
    for v in (2, 3, 5):
        (table / commit_path(v)).unlink()
    with pytest.raises(VersionsNotContiguousError) as error:
        DeltaLog(str(table)).snapshot()
    assert error.value.params["missingVersions"] == [2, 3, 5]
    assert error.value.params["gaps"] == [[2, 3], [5, 5]]
    assert error.value.params["filesAfterGaps"] == [commit_path(4), commit_path(6)]


# --- a table path that is a file, malformed lines ---------------------------------------------

def test_a_file_is_not_a_table(tmp_path):
    path = tmp_path / "file.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(NotADeltaTableError, match="is a file"):
        DeltaLog(str(path)).snapshot()
    table = tmp_path / "t"
    table.mkdir()
    (table / LOG_DIR).write_text("")
    with pytest.raises(NotADeltaTableError, match="_delta_log is a file"):
        DeltaLog(str(table)).snapshot()


MALFORMED = [
    ("[1,2]", "must be a JSON object"),
    ('"x"', "must be a JSON object"),
    ("3", "must be a JSON object"),
    ('{"add": {"path": 5, "size": "x"}}', "field 'path' must be a string"),
    ('{"add": {"path": "a", "size": "x"}}', "field 'size' must be a long"),
    ('{"protocol": {"minReaderVersion": "abc", "minWriterVersion": 2}}', "'minReaderVersion' must be a long"),
    ('{"metaData": "oops"}', "malformed metaData action: expected a JSON object"),
    ('{"remove": {"path": "a", "deletionVector": {"storageType": 1}}}', "deletion vector"),
    ('{"txn": {"appId": "a", "version": true}}', "must be a long"),
    ('{"add": {"path": null, "size": 1}}', "'path' is null"),
    ('{"metaData": {"id": "x", "schemaString": "{\\"type\\": \\"struct\\", \\"fields\\": []}", '
     '"format": {"provider": "parquet", "options": {"a": 1}}}}', "format.options must be a map of strings"),
    ('{"metaData": {"id": "x", "schemaString": "{\\"type\\": \\"struct\\", \\"fields\\": []}", '
     '"format": {"provider": 7}}}', "format.provider must be a string"),
]


@pytest.mark.parametrize("line,why", MALFORMED)
def test_malformed_lines_name_file_and_line_in_both_replays(tmp_path, line, why):
    table = _table(tmp_path, commits=2)
    _write_commit(table, 2, [_info(2), _add("ok.parquet"), line])
    storage = LocalStorage(table)
    log = DeltaLog(str(table), storage)
    with pytest.raises(CorruptLogError) as python_error:
        log.snapshot(check_read=False).state()
    message = str(python_error.value)
    assert python_error.value.error_class == "DELTA_STATE_RECOVER_ERROR"
    assert python_error.value.exit_code == 2
    assert commit_path(2) in message and "line 3" in message and why in message
    with pytest.raises(CorruptLogError) as arrow_error:
        replay_segment(storage, str(table), log.segment())
    assert str(arrow_error.value) == message


def test_integral_numbers_are_longs_other_numbers_are_not():
    (add,) = parse_commit('{"add": {"path": "a", "size": 7.0, "modificationTime": 1}}')
    assert add.size == 7 and type(add.size) is int
    with pytest.raises(MalformedActionError, match="line 1"):
        parse_commit('{"add": {"path": "a", "size": 7.5}}')
    with pytest.raises(MalformedActionError):
        parse_commit('{"add": {"path": "a", "partitionValues": {"p": 1}}}')
    # commitInfo is free-form (PROTOCOL.md "Commit Provenance Information"), unknown actions too
    assert len(parse_commit('{"commitInfo": {"timestamp": "x", "operation": 5}}\n{"future": 3}')) == 2


# --- at most one protocol and one metaData per commit -------------------------------------------

DUPLICATE = "DELTA_DUPLICATE_ACTIONS_FOUND"


@contextmanager
def _duplicate(match: str | None = None) -> Iterator[Any]:
    """Like ``pytest.raises``, for a CorruptLogError (exit 2) of the duplicate-actions class."""
    with pytest.raises(CorruptLogError, match=match) as info:
        yield info
    assert info.value.error_class == DUPLICATE, str(info.value)


def test_two_metadata_actions_in_a_commit_are_refused_everywhere(tmp_path):
    table = _table(tmp_path, commits=3)
    _write_commit(table, 3, [_info(3), _metadata(k="1"), _metadata(k="2")])
    log = DeltaLog(str(table))
    with _duplicate() as error:
        log.snapshot()
    assert error.value.exit_code == 2
    assert commit_path(3) in str(error.value) and "2 metaData actions" in str(error.value)
    with _duplicate():
        replay_segment(LocalStorage(table), str(table), log.segment())
    with _duplicate():
        Snapshot(LocalStorage(table), str(table), log.segment()).state()


def test_two_protocol_actions_in_an_older_commit_are_refused_by_the_history(tmp_path):
    table = _table(tmp_path, commits=2)
    _write_commit(table, 2, [_info(2), PROTOCOL, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 3}}])
    _write_commit(table, 3, [_info(3), {"protocol": {"minReaderVersion": 1, "minWriterVersion": 4}},
                             _metadata(k="newest")])
    log = DeltaLog(str(table))
    # the latest protocol and metadata are in commit 3: reading them does not reach commit 2
    assert log.snapshot().metadata.configuration == {"k": "newest"}
    with _duplicate("2 protocol actions"):
        log.protocol_history()
    with _duplicate():
        log.snapshot().state()
    with _duplicate():
        replay_segment(LocalStorage(table), str(table), log.segment())


def test_a_checkpoint_with_two_protocol_rows_is_refused(tmp_path):
    table = _table(tmp_path, commits=4)
    result = checkpoint_table(DeltaLog(str(table)), 3, clock=ManualClock(T0))
    (path,) = result.paths
    data = pq.read_table(table / path)
    rows = data.filter(pa.compute.is_valid(data.column("protocol")))
    pq.write_table(pa.concat_tables([data, rows]), table / path)
    for v in range(0, 3):
        (table / commit_path(v)).unlink()  # only the checkpoint knows the protocol now
    log = DeltaLog(str(table))
    with _duplicate("checkpoint"):
        log.snapshot()
    with _duplicate():
        replay_segment(LocalStorage(table), str(table), log.segment())


# --- derived checkpoint columns, INT96 ----------------------------------------------------------

def with_int96_stats_parsed(checkpoint: Path, year: int = 2960) -> None:
    """Rewrite a checkpoint as Databricks writes it: ``add.stats_parsed`` with a timestamp column
    stored as INT96 (here one in ``year``, outside the range of nanosecond timestamps)."""
    import datetime

    data = pq.read_table(checkpoint)
    add = data.column("add").combine_chunks()
    n = len(add)
    ts = pa.array([datetime.datetime(year, 1, 1)] * n, pa.timestamp("us"))
    stats_parsed = pa.StructArray.from_arrays(
        [pa.array([1] * n, pa.int64()),
         pa.StructArray.from_arrays([ts], ["ts"]), pa.StructArray.from_arrays([ts], ["ts"])],
        ["numRecords", "minValues", "maxValues"])
    fields = [add.type.field(i) for i in range(add.type.num_fields)]
    new_add = pa.StructArray.from_arrays([add.field(i) for i in range(len(fields))] + [stats_parsed],
                                         fields=fields + [pa.field("stats_parsed", stats_parsed.type)],
                                         mask=add.is_null())
    data = data.set_column(data.schema.get_field_index("add"), "add", new_add)
    pq.write_table(data, checkpoint, use_deprecated_int96_timestamps=True)
    assert "int96" in str(pq.ParquetFile(checkpoint).schema).lower()


def test_int96_stats_parsed_in_year_2960_is_never_decoded(tmp_path):
    table = _table(tmp_path, commits=6)
    result = checkpoint_table(DeltaLog(str(table)), 4, clock=ManualClock(T0))
    expected = _state_summary(DeltaLog(str(table)).snapshot().state())
    with_int96_stats_parsed(table / result.paths[0])
    log = DeltaLog(str(table))
    snap = log.snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 4
    assert _state_summary(snap.state()) == expected
    # the Arrow replay reads the same checkpoint (a new checkpoint is written from it)
    state = replay_segment(LocalStorage(table), str(table), log.segment())
    assert sorted(r["path"] for r in state.adds.to_pylist()) == sorted(p for p, _ in snap.state().files)
    rows = CheckpointReader(LocalStorage(table), snap.segment.checkpoint).rows(["add"])["add"]
    assert rows and all("stats_parsed" not in r for r in rows)
