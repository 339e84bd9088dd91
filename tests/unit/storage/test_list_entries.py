"""``Storage.list_entries`` on a local directory: the files as ``list_dir`` gives them and the
names of the other entries (a folder, a link to nothing) from one read; and the first listing of
a local log reads ``_delta_log`` once (it used to read the directory a second time for names)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from delta_downgrade.errors import CorruptLogError
from delta_downgrade.log.format.file_names import LOG_DIR, commit_path
from delta_downgrade.log.read.listing import list_from_last_checkpoint, list_whole_log
from delta_downgrade.storage import DirEntries
from delta_downgrade.storage.local import LocalStorage


class CountingLocal(LocalStorage):
    """A real local storage that counts the reads of ``_delta_log``: a listing with statuses
    (``list_dir`` is one ``list_entries`` on a local directory) and a read of names only."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    def list_entries(self, rel_dir: str, *, start_after: str | None = None) -> DirEntries:
        if rel_dir == LOG_DIR:
            self.reads.append("list_entries")
        return super().list_entries(rel_dir, start_after=start_after)

    def list_names(self, rel_dir: str) -> set[str]:
        if rel_dir == LOG_DIR:
            self.reads.append("list_names")
        return super().list_names(rel_dir)


def _log(tmp_path: Path, commits: int) -> Path:
    log = tmp_path / "t" / LOG_DIR
    log.mkdir(parents=True)
    for v in range(commits):
        (log / f"{v:020d}.json").write_text('{"commitInfo":{}}\n')
    return tmp_path / "t"


def test_files_and_other_entries_from_one_read(tmp_path: Path) -> None:
    table = _log(tmp_path, 3)
    log = table / LOG_DIR
    (log / "_sidecars").mkdir()
    (log / "a-folder").mkdir()
    os.symlink(log / "nowhere", log / "dangling")
    storage = LocalStorage(table)
    entries = storage.list_entries(LOG_DIR)
    assert [s.path for s in entries.files] == [commit_path(v) for v in range(3)]
    assert entries.files == storage.list_dir(LOG_DIR)
    assert entries.others == {"_sidecars", "a-folder", "dangling"}
    tail = storage.list_entries(LOG_DIR, start_after=f"{0:020d}.json")
    assert [s.path for s in tail.files] == [commit_path(1), commit_path(2)]
    assert tail.others == {"_sidecars", "a-folder", "dangling"}  # every one sorts after the digits
    assert storage.list_entries("nope") == DirEntries([], frozenset())


def test_a_whole_listing_reads_the_log_directory_once(tmp_path: Path) -> None:
    table = _log(tmp_path, 50)
    storage = CountingLocal(table)
    listing = list_whole_log(storage, str(table))
    assert list(listing.commit_versions()) == list(range(50))
    assert storage.reads == ["list_entries"]
    storage.reads.clear()
    assert not list_from_last_checkpoint(storage, str(table)).is_partial  # no hint: whole
    assert storage.reads == ["list_entries"]


def test_a_folder_under_a_commit_name_is_still_refused(tmp_path: Path) -> None:
    table = _log(tmp_path, 3)
    (table / LOG_DIR / f"{3:020d}.json").mkdir()
    storage = CountingLocal(table)
    with pytest.raises(CorruptLogError, match="is a directory"):
        list_whole_log(storage, str(table))
    assert storage.reads == ["list_entries"]
