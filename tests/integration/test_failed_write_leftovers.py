"""Leftovers of failed or killed writes.

- A multi-part checkpoint whose second part hits a full disk (a real tmpfs) leaves no part behind.
- ``cleanup`` deletes this package's stale temporary files in ``_delta_log`` (dry run lists
  them), keeps fresh ones and never touches another engine's files.
- A killed rewrite (a real Spark write killed with SIGKILL, which leaves the output committer's
  ``_temporary/`` in a ``dv-purge-<id>/`` directory, and a column-mapping staging directory):
  VACUUM keeps them within the retention and removes them after it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.vacuum import vacuum
from tests.process_support import run_cli
from tests.spark_connect_server import classic_environment

HOUR = 3600


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


# --- checkpoint parts on a full disk ---------------------------------------------------------------

@pytest.fixture
def tiny_fs(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.strip() or proc.returncode}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_failed_multipart_checkpoint_leaves_no_part(golden_root, tiny_fs, tmp_path):
    from delta_downgrade.log.checkpoint.classic_writer import write_checkpoint
    from tests.python_checkpoint_content import checkpoint_content
    from delta_downgrade.storage.local import LocalStorage

    # Sizes of the parts, from the same checkpoint written on an ordinary disk.
    probe = tmp_path / "probe"
    shutil.copytree(golden_root / "dv_partitioned_checkpoint", probe)
    snap = DeltaLog(str(probe)).snapshot()
    content = checkpoint_content(snap, int(time.time() * 1000))
    done = write_checkpoint(LocalStorage(str(probe)), snap.version, content, part_size=4,
                            update_last_checkpoint=False)
    assert len(done.paths) >= 2
    first = (probe / done.paths[0]).stat().st_size

    table = tiny_fs / "t"
    shutil.copytree(golden_root / "dv_partitioned_checkpoint", table, ignore=shutil.ignore_patterns("*.parquet"))
    shutil.copytree(golden_root / "dv_partitioned_checkpoint" / "_delta_log", table / "_delta_log",
                    dirs_exist_ok=True)
    before = sorted(os.listdir(table / "_delta_log"))
    # Fill the disk but for room for the first part (tmpfs counts whole pages).
    free = os.statvfs(tiny_fs).f_bavail * os.statvfs(tiny_fs).f_frsize
    room = (first // 4096 + 2) * 4096
    with open(tiny_fs / "filler", "wb") as fh:
        fh.write(b"\0" * (free - room))
    with pytest.raises(DeltaDowngradeError) as info:
        write_checkpoint(LocalStorage(str(table)), snap.version, content, part_size=4,
                         update_last_checkpoint=False)
    assert info.value.error_class == "DELTA_DOWNGRADE_STORAGE_FULL"
    # The first part was written, a later one failed: the written part must be gone too.
    assert done.paths[0] not in info.value.message and "checkpoint" in info.value.message
    assert sorted(os.listdir(table / "_delta_log")) == before


# --- cleanup of stale temporary files ----------------------------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args)


def test_cleanup_removes_stale_package_temps_only(golden_table):
    table = Path(golden_table("classic_checkpoint"))
    log = table / "_delta_log"
    # What a crash leaves: this package's temps, empty or partly written (pid, 12 hex digits).
    stale = [log / ".00000000000000000004.json.4242.0123456789ab.tmp",
             log / ".00000000000000000002.checkpoint.parquet.77.a1b2c3d4e5f6.tmp",
             log / "._last_checkpoint.77.ffffffffffff.tmp"]
    stale[0].write_bytes(b"")
    stale[1].write_bytes(b"PAR1 partial")
    stale[2].write_bytes(b'{"version": 2')
    fresh = log / ".00000000000000000004.json.4243.00000000abcd.tmp"
    fresh.write_bytes(b"{}")
    # Another engine's files: delta-spark's temp (a UUID) and a Hadoop checksum; never ours.
    foreign = [log / f".00000000000000000004.json.{uuid.uuid4()}.tmp",
               log / ".00000000000000000003.json.crc",
               log / "notes.tmp"]
    for f in foreign:
        f.write_bytes(b"x")
    for f in [*stale, *foreign]:
        _age(f, 2 * HOUR)

    dry = _cli("cleanup", str(table), "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    listed = json.loads(dry.stdout)["plan"]["delete_temps"]
    assert sorted(listed) == sorted(f"_delta_log/{f.name}" for f in stale)
    assert all(f.exists() for f in stale)            # a dry run deletes nothing

    text = _cli("cleanup", str(table), "--dry-run")
    assert all(f.name in text.stdout for f in stale), text.stdout

    run = _cli("cleanup", str(table))
    assert run.returncode == 0, run.stderr
    assert not any(f.exists() for f in stale)
    assert fresh.exists() and all(f.exists() for f in foreign)
    DeltaLog(str(table)).snapshot().state()          # the log is intact


# --- a killed Spark write: the purge's _temporary/ and the column-mapping staging -------------------

_KILLED_WRITE = textwrap.dedent("""
    import os, sys, time
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf
    from pyspark.sql.types import LongType

    staging, purge = sys.argv[1], sys.argv[2]
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    # Column-mapping removal stages a whole write, then moves the file out: killed in between.
    spark.range(0, 10, 1, 1).write.parquet(staging)

    @udf(LongType())
    def slow(x):
        if x >= 50:
            time.sleep(600)   # the last task never finishes: the driver is killed meanwhile
        return x

    print("WRITING", flush=True)
    spark.range(0, 100, 1, 2).select(slow("id").alias("id")).write.parquet(purge)
""")


@pytest.fixture
def killed_rewrite(golden_table, tmp_path):
    """A table with what a killed rewrite leaves: ``<dir>/dv-purge-<id>/_temporary/…`` of a Spark
    write killed by SIGKILL, and ``_delta_downgrade_staging/<run>/<file>/part-…``."""
    pytest.importorskip("pyspark")
    table = Path(golden_table("classic_checkpoint"))
    staging = table / "_delta_downgrade_staging" / str(uuid.uuid4()) / str(uuid.uuid4())
    purge = table / f"dv-purge-{uuid.uuid4().hex[:16]}"
    script = tmp_path / "killed_write.py"
    script.write_text(_KILLED_WRITE)
    # A classic session of its own even under the Spark Connect switch: what is killed must be
    # the process that runs the write's tasks (a Connect server would outlive its client).
    env = classic_environment()
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.Popen([sys.executable, str(script), str(staging), str(purge)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            temporary = purge / "_temporary"
            # The fast task has committed its file into _temporary/0/task_…/ (or is writing it).
            if temporary.is_dir() and any(f.endswith(".parquet") for _d, _s, fs in os.walk(temporary)
                                          for f in fs):
                break
            if proc.poll() is not None:
                pytest.fail(f"the Spark write ended on its own (exit {proc.returncode})")
            time.sleep(0.5)
        else:
            pytest.fail("the Spark write never produced a task file")
        time.sleep(1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)   # the driver, its JVM and Python workers
        proc.wait(timeout=60)
    assert any(staging.glob("part-*.parquet"))
    return table, staging, purge


def _leftover_files(table: Path, staging: Path, purge: Path) -> list[str]:
    out = []
    for root in (staging.parent, purge / "_temporary"):
        for dirpath, _dirs, files in os.walk(root):
            out += [os.path.relpath(os.path.join(dirpath, f), table).replace(os.sep, "/") for f in files]
    return sorted(out)


def test_vacuum_removes_a_killed_rewrites_staging_after_the_retention(killed_rewrite):
    table, staging, purge = killed_rewrite
    leftovers = _leftover_files(table, staging, purge)
    assert any("/_temporary/" in p for p in leftovers) and any(p.startswith("_delta_downgrade_staging/")
                                                               for p in leftovers)
    clock = ManualClock()

    # Within the retention (a rewrite might still be running): listed as recent, kept.
    within = vacuum(str(table), clock=clock)
    assert not set(leftovers) & set(within.files_to_delete)
    assert _leftover_files(table, staging, purge) == leftovers

    dry = vacuum(str(table), clock=clock.advance(days=8), dry_run=True)
    assert set(leftovers) <= set(dry.files_to_delete)
    assert _leftover_files(table, staging, purge) == leftovers

    after = vacuum(str(table), clock=clock)
    assert set(leftovers) <= set(after.deleted) and after.ok
    assert _leftover_files(table, staging, purge) == []
    assert not (purge / "_temporary").exists() and not (table / "_delta_downgrade_staging").exists()
    assert (table / "_delta_log").is_dir()
    DeltaLog(str(table)).snapshot().state()
