"""Incremental listings where a listing returns statuses anyway (object stores, Hadoop): only the
tail of the log is listed (``list_dir(start_after=<last known version>)``), and the listing it
gives equals a full one. The storage is a real local one that lists like an object store
(``lists_names_cheaply = False``) and records what it was asked; the same on real S3 and Azure
endpoints is in tests/integration/test_object_store_log.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.read.listing import LogListing, list_whole_log
from delta_downgrade.storage import FileStatus
from delta_downgrade.storage.local import LocalStorage

T0 = 1_700_000_000_000
SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}}]})


class ListsLikeAnObjectStore(LocalStorage):
    """A real local storage whose incremental listing takes the object-store path, recording the
    ``list_dir`` calls on ``_delta_log`` (their ``start_after``)."""

    lists_names_cheaply = False

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self.log_listings: list[str | None] = []

    def list_dir(self, rel_dir: str, *, start_after: str | None = None) -> list[FileStatus]:
        if rel_dir == LOG_DIR:
            self.log_listings.append(start_after)
        return super().list_dir(rel_dir, start_after=start_after)


def _commit(table: Path, version: int, *actions: dict[str, Any]) -> None:
    log = table / LOG_DIR
    log.mkdir(parents=True, exist_ok=True)
    lines = [{"commitInfo": {"timestamp": T0 + version, "operation": "WRITE"}}, *actions]
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def _add(path: str) -> dict[str, Any]:
    return {"add": {"path": path, "partitionValues": {}, "size": 10, "modificationTime": T0,
                    "dataChange": True}}


def _table(tmp_path: Path, commits: int) -> Path:
    table = tmp_path / "t"
    _commit(table, 0, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {"metaData": {"id": "11111111-2222-3333-4444-555555555555",
                          "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                          "partitionColumns": [], "configuration": {}, "createdTime": T0}},
            _add("f-0.parquet"))
    for v in range(1, commits):
        _commit(table, v, _add(f"f-{v}.parquet"))
    return table


def _same(a: LogListing, b: LogListing) -> None:
    assert a.commits == b.commits
    assert a.crcs == b.crcs
    assert a.checkpoints == b.checkpoints
    assert a.unknown == b.unknown
    assert a.last_checkpoint == b.last_checkpoint


def test_refresh_lists_only_the_tail_and_equals_a_full_listing(tmp_path: Path) -> None:
    table = _table(tmp_path, 12)
    storage = ListsLikeAnObjectStore(table)
    log = DeltaLog(str(table), storage)
    assert log.snapshot().version == 11
    assert storage.log_listings == [None]  # the first listing: the whole log

    _commit(table, 12, _add("f-12.parquet"))
    _commit(table, 13, _add("f-13.parquet"))
    storage.log_listings.clear()
    assert log.refresh().snapshot().version == 13
    # the tail from the last known version on: its own files and every later one
    assert storage.log_listings == [f"{11:020d}"]
    _same(log.listing(), list_whole_log(LocalStorage(table)))
    assert {path for path, _dv in log.snapshot().state().files} == {f"f-{v}.parquet" for v in range(14)}


def test_a_refresh_for_new_commits_after_another_writers_commit_lists_the_tail(tmp_path: Path) -> None:
    table = _table(tmp_path, 5)
    storage = ListsLikeAnObjectStore(table)
    log = DeltaLog(str(table), storage)
    log.snapshot()
    storage.log_listings.clear()
    log.refresh(Refresh.NEW_COMMITS)
    assert log.latest_version() == 4 and storage.log_listings == []  # nothing new: no listing
    _commit(table, 5, _add("f-5.parquet"))
    log.refresh(Refresh.NEW_COMMITS)
    assert log.latest_version() == 5
    assert storage.log_listings == [f"{4:020d}"]


def test_a_checkpoint_at_the_last_known_version_is_found(tmp_path: Path) -> None:
    # "<v>.checkpoint.parquet" sorts before "<v>.json": the tail starts at the bare version so
    # that a checkpoint written at the last known version is in it.
    table = _table(tmp_path, 6)
    storage = ListsLikeAnObjectStore(table)
    log = DeltaLog(str(table), storage)
    log.snapshot()
    checkpoint_table(DeltaLog(str(table)), 5)
    storage.log_listings.clear()
    listing = log.refresh().listing()
    assert storage.log_listings == [f"{5:020d}"]
    assert [c.version for c in listing.checkpoints] == [5]
    _same(listing, list_whole_log(LocalStorage(table)))


def test_files_removed_in_the_tail_are_dropped(tmp_path: Path) -> None:
    table = _table(tmp_path, 6)
    storage = ListsLikeAnObjectStore(table)
    log = DeltaLog(str(table), storage)
    log.snapshot()
    _commit(table, 6, _add("f-6.parquet"))
    log.refresh().listing()
    crc = table / LOG_DIR / f"{6:020d}.crc"
    crc.write_text("{}")
    assert 6 in log.refresh().whole_listing().crcs
    crc.unlink()
    assert 6 not in log.refresh().whole_listing().crcs
    _same(log.listing(), list_whole_log(LocalStorage(table)))


def test_the_last_known_commit_gone_lists_everything_again(tmp_path: Path) -> None:
    # The log was replaced under us (a table deleted and written again, shorter): the tail does
    # not hold the commit it starts from, so the whole log is listed.
    table = _table(tmp_path, 6)
    storage = ListsLikeAnObjectStore(table)
    log = DeltaLog(str(table), storage)
    log.snapshot()
    for v in (4, 5):
        (table / LOG_DIR / f"{v:020d}.json").unlink()
    storage.log_listings.clear()
    assert log.refresh().latest_version() == 3
    assert storage.log_listings == [f"{5:020d}", None]
    _same(log.listing(), list_whole_log(LocalStorage(table)))
