"""``LocalStorage.list_entries`` stats each name relative to the directory it opened once; where
that cannot be done (no ``dir_fd`` support, the directory not openable so) it stats full paths,
and the listing is the same: files with their sizes and times, folders and links to nothing among
the other entries."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from delta_downgrade.log.format.file_names import LOG_DIR, commit_path
from delta_downgrade.storage import local as local_module
from delta_downgrade.storage.local import LocalStorage


def _table(tmp_path: Path) -> Path:
    log = tmp_path / "t" / LOG_DIR
    log.mkdir(parents=True)
    for v in range(3):
        (log / f"{v:020d}.json").write_text("x" * (10 + v))
    (log / "a-folder").mkdir()
    os.symlink(log / "nowhere", log / "dangling")
    os.symlink(log / f"{0:020d}.json", log / "a-link-to-a-commit")
    return tmp_path / "t"


def test_the_listing_by_full_paths_is_the_listing_relative_to_the_directory(tmp_path, monkeypatch):
    table = _table(tmp_path)
    relative = LocalStorage(table).list_entries(LOG_DIR)
    monkeypatch.setattr(local_module, "open_dir", lambda path, call=os.stat: None)
    by_path = LocalStorage(table).list_entries(LOG_DIR)
    assert by_path == relative
    assert [s.path for s in relative.files] == sorted([commit_path(v) for v in range(3)]
                                                      + [f"{LOG_DIR}/a-link-to-a-commit"])
    assert [s.size for s in relative.files] == [10, 11, 12, 10]  # the link's size is its target's
    assert relative.others == {"a-folder", "dangling"}


def test_the_directory_is_closed_after_the_listing(tmp_path, monkeypatch):
    table = _table(tmp_path)
    opened: list[int] = []
    closed: list[int] = []
    real_open_dir, real_close = local_module.open_dir, os.close

    def open_dir(path: str, call=os.stat) -> int | None:
        fd = real_open_dir(path, call)
        if fd is not None:
            opened.append(fd)
        return fd

    def close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(local_module, "open_dir", open_dir)
    monkeypatch.setattr(local_module.os, "close", close)
    LocalStorage(table).list_entries(LOG_DIR)
    if os.stat not in os.supports_dir_fd:
        pytest.skip("no dir_fd on this platform: the listing stats full paths")
    assert len(opened) == 1 and opened == [fd for fd in closed if fd in opened]
