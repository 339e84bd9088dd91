"""VACUUM and what a really killed rewrite leaves in a ``rewrite-<16 hex>/`` output directory.

Column-mapping removal and type widening (rewrite/file_rewriter.py) have Spark write each output
into a fresh ``<dir>/rewrite-<16 hex>/`` next to its input, with the package's own writer options
(rewrite/spark_io.parquet_writer). Here such a write is killed with SIGKILL (driver, JVM and Python
workers) while its only task is still running, so the output committer's ``_temporary/`` stays
behind, exactly as a killed drop-feature leaves it. VACUUM keeps it within the retention (a
rewrite might still be running) and deletes it after, on local disk and on S3 (the same directory
uploaded to a moto bucket; tests/vacuum_backends.py). The Spark write runs once per module.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade_tools.builders import TableBuilder

from tests.vacuum_backends import BACKENDS, make_backend
from tests.spark_connect_server import classic_environment

_KILLED_REWRITE = textwrap.dedent("""
    import sys, time
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf
    from pyspark.sql.types import LongType
    from delta_downgrade.rewrite.spark_io import parquet_writer

    output = sys.argv[1]
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .getOrCreate())

    @udf(LongType())
    def slow(x):
        if x >= 50:
            time.sleep(600)   # the task never finishes: the driver is killed meanwhile
        return x

    df = spark.range(0, 100, 1, 1).select(slow("id").alias("id"))
    # As FileRewriter._write: one file, the package's writer options, into a fresh directory.
    parquet_writer(df.coalesce(1), "snappy").option("maxRecordsPerFile", 0).parquet(output)
""")


def _files_below(root: Path, table: Path) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), table).replace(os.sep, "/")
                  for d, _s, fs in os.walk(root) for f in fs)


@pytest.fixture(scope="module")
def killed_rewrite_template(tmp_path_factory) -> tuple[Path, str]:
    """A partitioned table, and in ``p=b/rewrite-<hex>/`` what a Spark write killed mid-task
    leaves; the table and the output directory (table-relative)."""
    pytest.importorskip("pyspark")
    root = tmp_path_factory.mktemp("killed-rewrite")
    table = root / "t"
    builder = TableBuilder(table)
    builder.create(pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_columns=["p"],
                   rows=[{"id": 1, "p": "a"}, {"id": 2, "p": "b"}])
    output_rel = f"p=b/rewrite-{uuid.uuid4().hex[:16]}"
    output = table / output_rel
    script = root / "killed_rewrite.py"
    script.write_text(_KILLED_REWRITE)
    # A classic session of its own even under the Spark Connect switch: what is killed must be
    # the process that runs the write's tasks (a Connect server would outlive its client).
    env = classic_environment()
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.Popen([sys.executable, str(script), str(output)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            # The task has opened its file in _temporary/0/_temporary/attempt_…/.
            if any(".parquet" in f for f in _files_below(output / "_temporary", table)):
                break
            if proc.poll() is not None:
                pytest.fail(f"the Spark write ended on its own (exit {proc.returncode})")
            time.sleep(0.5)
        else:
            pytest.fail("the Spark write never opened its task file")
        time.sleep(1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)   # the driver, its JVM and Python workers
        proc.wait(timeout=60)
    return table, output_rel


@pytest.fixture(params=BACKENDS)
def vacuum_backend(request):
    """Local disk, or S3 compared with local disk (tests/vacuum_backends.py)."""
    return make_backend(request)


def test_vacuum_removes_a_killed_rewrites_work_area_after_the_retention(
        killed_rewrite_template, tmp_path, vacuum_backend):
    template, output_rel = killed_rewrite_template
    table = Path(shutil.copytree(template, tmp_path / "t"))   # copy2: modification times kept
    output = table / output_rel
    leftovers = _files_below(output, table)
    assert leftovers and all(p.startswith(f"{output_rel}/_temporary/") for p in leftovers), leftovers
    live = {f.decoded_path for f in DeltaLog(str(table)).snapshot().state().files.values()}
    clock = ManualClock()

    within = vacuum_backend.vacuum(str(table), clock=clock)

    assert within.files_to_delete == [] and within.recent_unreferenced_count == len(leftovers)
    assert vacuum_backend.files(str(table)) == live | set(leftovers)

    dry = vacuum_backend.vacuum(str(table), clock=clock.advance(days=8), dry_run=True)
    assert dry.files_to_delete == leftovers and dry.staging_dirs == [f"{output_rel}/_temporary"]
    assert vacuum_backend.files(str(table)) == live | set(leftovers)

    after = vacuum_backend.vacuum(str(table), clock=clock)

    assert after.deleted == leftovers and after.ok
    assert vacuum_backend.files(str(table)) == live
    if vacuum_backend.has_directories:
        # The work area and the output directory it left empty are gone; the partition stays.
        assert not output.exists() and (table / "p=b").is_dir()
        assert output_rel in after.removed_dirs
    assert {f.decoded_path for f in DeltaLog(str(table)).snapshot().state().files.values()} == live
