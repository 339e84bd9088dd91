"""What each command lists, stats and reads of a long log: a fast drop and ``inspect --no-history``
list from the checkpoint ``_last_checkpoint`` names (PROTOCOL.md "Last Checkpoint File"), never the
whole directory; ``inspect`` with the protocol history lists the whole log once.

Counted in-process on the storage layer (LocalStorage's listing, stat and read calls) on a log of
10,000 commits with a checkpoint near its end.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter

import pytest

from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.replay import arrow_commits
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.operations.inspect import inspect_table
from delta_downgrade.storage.local import LocalStorage

COMMITS = 10_000
CHECKPOINT = 9_990   # _last_checkpoint names it: the tail is 9,990 .. 9,999


def _write_log(path: str) -> None:
    log_dir = os.path.join(path, "_delta_log")
    os.makedirs(log_dir)
    first = [
        {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                      "writerFeatures": ["deletionVectors"]}},
        {"metaData": {"id": "00000000-0000-4000-8000-000000010000", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps({"type": "struct", "fields": [
                          {"name": "id", "type": "long", "nullable": True, "metadata": {}}]}),
                      "partitionColumns": [], "configuration": {"delta.enableDeletionVectors": "true"},
                      "createdTime": 1_700_000_000_000}},
    ]
    with open(os.path.join(log_dir, f"{0:020d}.json"), "w") as fh:
        fh.write("\n".join(json.dumps(a) for a in first) + "\n")
    for v in range(1, COMMITS):
        add = {"add": {"path": f"part-{v:05d}.parquet", "partitionValues": {}, "size": 1000 + v,
                       "modificationTime": 1_700_000_000_000 + v, "dataChange": True,
                       "stats": '{"numRecords":1}'}}
        info = {"commitInfo": {"timestamp": 1_700_000_000_000 + v, "operation": "WRITE"}}
        with open(os.path.join(log_dir, f"{v:020d}.json"), "w") as fh:
            fh.write(json.dumps(info) + "\n" + json.dumps(add) + "\n")


@pytest.fixture(scope="module")
def long_log(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("long") / "table")
    _write_log(path)
    checkpoint_table(DeltaLog(path), CHECKPOINT)
    assert json.load(open(os.path.join(path, "_delta_log", "_last_checkpoint")))["version"] == CHECKPOINT
    return path


@pytest.fixture
def table(long_log, tmp_path) -> str:
    """A copy the test may write: the log's files hard-linked, ``_last_checkpoint`` copied."""
    dest = str(tmp_path / "table")
    shutil.copytree(long_log, dest, copy_function=lambda s, d: shutil.copy2(s, d) if s.endswith(
        "_last_checkpoint") else os.link(s, d))
    return dest


class Calls:
    """What the storage layer was asked for while a command ran."""

    def __init__(self) -> None:
        self.whole_listings = 0        # listings of _delta_log from its start
        self.statted: Counter[str] = Counter()   # file name -> stat'ed (a listing's entry or status())
        self.read: Counter[str] = Counter()      # file name -> times opened for reading

    @property
    def statted_total(self) -> int:
        return sum(self.statted.values())


@pytest.fixture
def calls(monkeypatch) -> Calls:
    found = Calls()
    list_entries, status = LocalStorage.list_entries, LocalStorage.status
    read_bytes, read_range, open_input = LocalStorage.read_bytes, LocalStorage.read_range, LocalStorage.open_input

    def counted_list_entries(self, rel_dir, *, start_after=None):
        # every listing of a local directory (list_dir too) is one list_entries
        out = list_entries(self, rel_dir, start_after=start_after)
        if rel_dir == "_delta_log" and start_after is None:
            found.whole_listings += 1
        found.statted.update(s.path.rsplit("/", 1)[-1] for s in out.files)
        return out

    def counted_status(self, rel_path):
        found.statted[rel_path.rsplit("/", 1)[-1]] += 1
        return status(self, rel_path)

    def reader(original):
        def counted(self, rel_path, *args, **kwargs):
            found.read[rel_path.rsplit("/", 1)[-1]] += 1
            return original(self, rel_path, *args, **kwargs)
        return counted

    monkeypatch.setattr(LocalStorage, "list_entries", counted_list_entries)
    monkeypatch.setattr(LocalStorage, "status", counted_status)
    monkeypatch.setattr(LocalStorage, "read_bytes", reader(read_bytes))
    monkeypatch.setattr(LocalStorage, "read_range", reader(read_range))
    monkeypatch.setattr(LocalStorage, "open_input", reader(open_input))
    # the Arrow parser reads a local store's commits straight into its buffers
    read_chunk = arrow_commits._read_chunk

    def counted_chunk(storage, statuses, lo, hi):
        found.read.update(statuses[i].path.rsplit("/", 1)[-1] for i in range(lo, hi))
        return read_chunk(storage, statuses, lo, hi)

    monkeypatch.setattr(arrow_commits, "_read_chunk", counted_chunk)
    return found


def _older_than_checkpoint(names) -> list[str]:
    """The names among ``names`` of versions before the hinted checkpoint's (the listing from it
    starts after the version before it: those few files are listed too)."""
    return sorted(n for n in names if n[:20].isdigit() and int(n[:20]) < CHECKPOINT - 1)


def test_fast_drop_lists_and_reads_only_the_tail(table, calls):
    outcome = drop_feature(table, "deletionVectors")
    assert outcome.status == "dropped" and outcome.truncate_after is not None
    assert calls.whole_listings == 0
    # the tail (10 commits, the checkpoint, their .crc if any) and the 5 commits and 4 checkpoints
    # the drop writes, each stat'ed a few times at most; never an older file
    assert _older_than_checkpoint(calls.statted) == []
    assert _older_than_checkpoint(calls.read) == []
    assert calls.statted_total <= 60, calls.statted
    # the tail's commits: read for the newest protocol and metaData lines, and once parsed whole
    # (the check before the first write, whose parse the Arrow replay the checkpoints are written
    # from takes); no more
    tail = {f"{v:020d}.json" for v in range(CHECKPOINT + 1, COMMITS)}
    assert {n: min(calls.read[n], 3) for n in tail} == {n: 2 for n in tail}


def test_inspect_without_history_lists_from_the_hinted_checkpoint(table, calls):
    report = inspect_table(table, history=False)
    assert report.latest_version == COMMITS - 1 and report.files.live_files == COMMITS - 1
    assert report.listed_from == CHECKPOINT and report.earliest_version is None
    assert [r.checkpoint.version for r in report.checkpoints] == [CHECKPOINT]
    assert calls.whole_listings == 0
    assert _older_than_checkpoint(calls.statted) == [] and _older_than_checkpoint(calls.read) == []
    assert calls.statted_total <= 15, calls.statted


def test_inspect_with_history_lists_the_whole_log_once(table, calls):
    report = inspect_table(table, history=True)
    assert report.listed_from is None and report.earliest_version == 0
    assert report.protocol_history is not None and len(report.protocol_history) == 1
    assert calls.whole_listings == 1
    assert max(calls.statted.values()) == 1   # every entry stat'ed once
