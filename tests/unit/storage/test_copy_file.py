"""``Storage.copy_file``: a checkpoint part written again under another name - replace-or-create,
a file of its own, and nothing written when the source is gone or not of the size it was written
with (another writer replaced it, a cleanup removed it)."""

from __future__ import annotations

import os

import pytest

from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.storage import open_storage
from delta_downgrade.storage.local import LocalStorage

LOG = "_delta_log"
SOURCE = f"{LOG}/00000000000000000003.checkpoint.parquet"
TARGET = f"{LOG}/00000000000000000004.checkpoint.parquet"
CONTENT = b"PAR1" + bytes(range(256)) * 64 + b"PAR1"


def _storages(tmp_path):
    yield LocalStorage(tmp_path / "local")
    yield open_storage(f"file://{tmp_path / 'obstore'}", options={"DELTA_DOWNGRADE_STORAGE": "object_store"})


def _names(storage) -> list[str]:
    return sorted(s.path for s in storage.list_dir(LOG))


@pytest.mark.parametrize("which", [0, 1], ids=["local", "object_store"])
def test_the_copy_is_the_source_bytes_under_the_new_name_replacing_an_old_file(tmp_path, which):
    storage = list(_storages(tmp_path))[which]
    storage.write_atomic(SOURCE, CONTENT)
    storage.write_atomic(TARGET, b"an older file under the name")
    assert storage.copy_file(SOURCE, TARGET, len(CONTENT)) is True
    assert storage.read_bytes(TARGET) == CONTENT and storage.read_bytes(SOURCE) == CONTENT
    assert _names(storage) == [SOURCE, TARGET]  # no temporary file left


@pytest.mark.parametrize("which", [0, 1], ids=["local", "object_store"])
def test_nothing_is_written_when_the_source_is_gone_or_of_another_size(tmp_path, which):
    storage = list(_storages(tmp_path))[which]
    storage.write_atomic(SOURCE, CONTENT)
    assert storage.copy_file(SOURCE, TARGET, len(CONTENT) + 1) is False
    assert _names(storage) == [SOURCE]
    storage.write_atomic(TARGET, b"kept")
    assert storage.copy_file(f"{LOG}/00000000000000000002.checkpoint.parquet", TARGET, len(CONTENT)) is False
    assert storage.read_bytes(TARGET) == b"kept" and _names(storage) == [SOURCE, TARGET]


def test_a_local_copy_is_a_file_of_its_own(tmp_path):
    """Not a second name of the source's file: what a later writer or a restore does to one
    checkpoint never changes the other."""
    storage = LocalStorage(tmp_path)
    storage.write_atomic(SOURCE, CONTENT)
    storage.copy_file(SOURCE, TARGET, len(CONTENT))
    source, target = (os.stat(storage.uri(p)) for p in (SOURCE, TARGET))
    assert source.st_ino != target.st_ino and source.st_nlink == target.st_nlink == 1
    with open(storage.uri(SOURCE), "r+b") as fh:  # overwritten in place, as no Delta writer does
        fh.write(b"XXXX")
    assert storage.read_bytes(TARGET) == CONTENT


def test_a_local_copy_that_cannot_be_written_is_a_typed_error_and_leaves_nothing(tmp_path, monkeypatch):
    import errno
    import shutil

    storage = LocalStorage(tmp_path)
    storage.write_atomic(SOURCE, CONTENT)
    real = shutil.copyfile

    def full_disk(src, dst, **kwargs):
        real(src, dst, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device", dst)

    monkeypatch.setattr(shutil, "copyfile", full_disk)
    with pytest.raises(DeltaDowngradeError, match="(?i)space"):
        storage.copy_file(SOURCE, TARGET, len(CONTENT))
    assert _names(storage) == [SOURCE]
