"""``Storage.atomic_file``: a large file streamed to a local file and published atomically under
its final name - replace-or-create, never a partial file under the name, nothing left on failure."""

from __future__ import annotations

import os

import pytest

from delta_downgrade.storage.local import LocalStorage
from delta_downgrade.storage.temp_files import is_package_temp


def test_publishes_the_written_file_over_the_old_one(tmp_path):
    storage = LocalStorage(tmp_path)
    storage.write_atomic("_delta_log/x.parquet", b"old")
    with storage.atomic_file("_delta_log/x.parquet") as local:
        assert os.path.dirname(local) == storage.uri("_delta_log")  # same file system: a rename
        assert is_package_temp(local)
        with open(local, "wb") as fh:
            fh.write(b"new content")
        assert storage.read_bytes("_delta_log/x.parquet") == b"old"  # not before the block ends
    assert storage.read_bytes("_delta_log/x.parquet") == b"new content"
    assert os.listdir(storage.uri("_delta_log")) == ["x.parquet"]


def test_a_failure_in_the_block_leaves_the_old_file_and_no_temporary(tmp_path):
    storage = LocalStorage(tmp_path)
    storage.write_atomic("_delta_log/x.parquet", b"old")
    with pytest.raises(RuntimeError):
        with storage.atomic_file("_delta_log/x.parquet") as local:
            with open(local, "wb") as fh:
                fh.write(b"half")
            raise RuntimeError("writer died")
    assert storage.read_bytes("_delta_log/x.parquet") == b"old"
    assert os.listdir(storage.uri("_delta_log")) == ["x.parquet"]
