"""Storage failures on real file systems: a full disk (a tiny tmpfs) and a
read-only mount (a read-only bind mount). No mocks: the kernel says ENOSPC / EROFS.

- Disk full: a typed error (``DELTA_DOWNGRADE_STORAGE_FULL``, exit 1, not bad input), no
  traceback, no temporary file and no partial commit left, and a rerun after space is freed
  finishes the job.
- Read-only: exit 2 (``DELTA_DOWNGRADE_STORAGE_NOT_WRITABLE``), no traceback, not a byte changed.
- Hadoop FileSystem (a Spark JVM): the same typed errors, and unserved or unreachable schemes are
  ``DELTA_DOWNGRADE_UNSUPPORTED_STORAGE`` / ``DELTA_DOWNGRADE_STORAGE_UNREACHABLE``.

Mounting needs root (CAP_SYS_ADMIN); without it these tests skip with the reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from typing import Any
from pathlib import Path

import pytest

from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.storage.local import LocalStorage
from tests.process_support import run_cli, tree_hashes

GOLDEN = "dv_enabled_no_dvs"   # DROP FEATURE deletionVectors writes commits and checkpoints, no Spark


def _mount(args: list[str]) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount ({' '.join(args)}): {proc.stderr.strip() or proc.returncode}")


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def tiny_fs(tmp_path):
    """A 256 KiB tmpfs: fill it up and every write gets a real ENOSPC."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    _mount(["-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)])
    yield mnt
    _umount(mnt)


def _fill(fs: Path) -> Path:
    """Fill ``fs`` to the last byte; returns the filler (delete it to free the space)."""
    filler = fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (65536, 4096, 512, 1):
            try:
                while os.write(fd, b"\0" * size) == size:
                    pass
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output and "at org.apache" not in output, output


def _log_leftovers(table: str) -> list[str]:
    """Temporary files, and empty (partly written) log files, in ``_delta_log``."""
    log_dir = Path(table, "_delta_log")
    return sorted(p.name for p in log_dir.iterdir()
                  if p.name.endswith(".tmp") or (p.is_file() and p.stat().st_size == 0))


# --- disk full ------------------------------------------------------------------------------------

def test_drop_feature_on_a_full_disk_is_typed_leaves_nothing_and_resumes(golden_root, tiny_fs):
    table = str(tiny_fs / "t")
    shutil.copytree(golden_root / GOLDEN, table)
    for dirpath, dirnames, filenames in os.walk(table):
        for name in [*dirnames, *filenames]:
            os.chmod(os.path.join(dirpath, name), 0o755 if name in dirnames else 0o644)
    latest_before = DeltaLog(table).latest_version()
    filler = _fill(tiny_fs)

    proc = run_cli("drop-feature", table, "deletionVectors")
    _no_traceback(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[DELTA_DOWNGRADE_STORAGE_FULL]" in proc.stderr
    assert "rerun" in proc.stderr and "_delta_log/" in proc.stderr   # what failed, what to do
    assert _log_leftovers(table) == []
    assert DeltaLog(table).latest_version() == latest_before   # nothing could be written

    filler.unlink()
    again = run_cli("drop-feature", table, "deletionVectors")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "deletionVectors" not in DeltaLog(table).snapshot().protocol.features
    assert _log_leftovers(table) == []


def _write(storage: Any, method: str, rel_path: str, data: bytes) -> None:
    """``storage.<method>(rel_path, data)``; for ``atomic_file``, ``data`` written to its file."""
    if method != "atomic_file":
        getattr(storage, method)(rel_path, data)
        return
    with storage.atomic_file(rel_path) as local:
        with open(local, "wb") as fh:
            fh.write(data)


@pytest.mark.parametrize("method", ["put_if_absent", "write_atomic", "atomic_file"])
def test_local_writes_on_a_full_disk_remove_their_temporary_files(tiny_fs, method):
    storage = LocalStorage(str(tiny_fs / "t"))
    os.makedirs(storage.uri("_delta_log"))
    _fill(tiny_fs)
    with pytest.raises(DeltaDowngradeError) as info:
        _write(storage, method, "_delta_log/00000000000000000000.json", b"x" * 100_000)
    assert info.value.error_class == "DELTA_DOWNGRADE_STORAGE_FULL"
    assert os.listdir(storage.uri("_delta_log")) == []


# --- read-only ------------------------------------------------------------------------------------

@pytest.fixture
def read_only_copy(golden_root, tmp_path):
    """A writable copy of a golden table, seen through a read-only bind mount."""
    def make(name: str) -> str:
        src = tmp_path / f"src-{name}"
        shutil.copytree(golden_root / name, src)
        old = time.time() - 3 * 86400   # every commit expired: a cleanup has work to do
        for dirpath, dirnames, filenames in os.walk(src):
            for n in [*dirnames, *filenames]:
                os.chmod(os.path.join(dirpath, n), 0o755 if n in dirnames else 0o644)
                os.utime(os.path.join(dirpath, n), (old, old))
        ro = tmp_path / f"ro-{name}"
        ro.mkdir()
        _mount(["--bind", str(src), str(ro)])
        mounted.append(ro)
        proc = subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot remount read-only: {proc.stderr.strip()}")
        return str(ro)

    mounted: list[Path] = []
    yield make
    for m in mounted:
        _umount(m)


@pytest.mark.parametrize("command", [
    ["drop-feature", "{t}", "deletionVectors"],
    ["cleanup", "{t}", "--retention=0 days"],
])
def test_read_only_storage_is_bad_input_and_untouched(read_only_copy, command):
    table = read_only_copy(GOLDEN if command[0] == "drop-feature" else "classic_checkpoint")
    if command[0] == "cleanup":   # there must be something to delete for the test to mean anything
        from delta_downgrade.operations.cleanup import plan_cleanup
        assert plan_cleanup(DeltaLog(table), retention_ms=0).num_deletions > 0
    before = tree_hashes(table)
    proc = run_cli(*[c.format(t=table) for c in command])
    _no_traceback(proc)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "[DELTA_DOWNGRADE_STORAGE_NOT_WRITABLE]" in proc.stderr
    assert tree_hashes(table) == before


# --- Hadoop FileSystem in a Spark JVM ---------------------------------------------------------------

@pytest.mark.classic_spark(reason="Hadoop FileSystem storage lives in a classic session's JVM")
@pytest.mark.parametrize("method", ["put_if_absent", "write_atomic", "atomic_file"])
def test_hadoop_writes_on_a_full_disk_are_typed_and_leave_nothing(spark, tiny_fs, method):
    from delta_downgrade.storage.hadoop import HadoopStorage

    os.makedirs(tiny_fs / "t" / "_delta_log")
    storage = HadoopStorage(f"file://{tiny_fs}/t", spark)
    _fill(tiny_fs)
    with pytest.raises(DeltaDowngradeError) as info:
        _write(storage, method, "_delta_log/00000000000000000000.json", os.urandom(200_000))
    assert info.value.error_class == "DELTA_DOWNGRADE_STORAGE_FULL"
    assert os.listdir(tiny_fs / "t" / "_delta_log") == []


@pytest.mark.classic_spark(reason="Hadoop FileSystem storage lives in a classic session's JVM")
def test_hadoop_scheme_without_file_system_is_typed(spark):
    from delta_downgrade.storage.hadoop import HadoopStorage

    with pytest.raises(DeltaDowngradeError) as info:
        HadoopStorage(f"gs://bucket-{uuid.uuid4().hex[:8]}/t", spark).exists("_delta_log")
    assert info.value.error_class == "DELTA_DOWNGRADE_UNSUPPORTED_STORAGE"
    assert info.value.exit_code == 2 and "gs://" in info.value.message


@pytest.mark.classic_spark(reason="Hadoop FileSystem storage lives in a classic session's JVM")
def test_unreachable_hdfs_is_typed_and_bounded(spark):
    from delta_downgrade.storage.hadoop import HadoopStorage

    with socket.socket() as s:   # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(DeltaDowngradeError) as info:
        HadoopStorage(f"hdfs://127.0.0.1:{port}/t", spark).list_dir("_delta_log")
    assert info.value.error_class == "DELTA_DOWNGRADE_STORAGE_UNREACHABLE"
    assert info.value.exit_code == 2
    assert time.monotonic() - started < 15   # Hadoop's default retries take ~10 s and more
