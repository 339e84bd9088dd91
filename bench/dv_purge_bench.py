"""Benchmark: the deletion-vector purge next to a plain Spark rewrite of the same files.

Builds (once per run, in a temp dir) a table of ``--files`` parquet files (default 240) holding
``--rows`` rows (default 2.4 million; id, a double, a string, a date), written with pyarrow
through the repository tools' TableBuilder, then puts deletion vectors on ``--dv-fraction`` of the
files (default 30%) with dv_builder: a mix of scattered rows and a range, ~10% of each file's rows.

Then times, in the same run and on the same local Spark session:
  - ``purge``: the ``purge_deletion_vectors`` hook alone (read the DVs, rewrite the affected files
    without the deleted rows, statistics, commits), on a fresh copy of the table each time;
  - ``baseline``: a plain Spark job reading the same affected files and writing them back as
    parquet (no filter), one job, into a fresh directory;
and prints both (median of ``--repeat`` interleaved runs, after one warm-up of each) and the
ratio purge / baseline, also for the best runs (less sensitive to a busy machine). Target: ≤ 1.3.

Usage: .venv/bin/python bench/dv_purge_bench.py [--files N] [--rows N] [--dv-fraction F] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools", "src"))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import pyarrow as pa  # noqa: E402

from delta_downgrade.log.delta_log import DeltaLog  # noqa: E402
from delta_downgrade.drop.run import DropRun  # noqa: E402
from delta_downgrade.rewrite.dv_purge import purge_deletion_vectors  # noqa: E402
from delta_downgrade_tools.builders import TableBuilder  # noqa: E402
from delta_downgrade_tools.dv_builder import create_dv_table, delete_rows  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("label", pa.string()),
                    ("day", pa.date32())])


def build(path: str, files: int, rows: int, dv_fraction: float, seed: int = 7) -> dict:
    rng = random.Random(seed)
    ids = pa.array(range(rows), pa.int64())
    table = pa.table({
        "id": ids,
        "amount": pa.array([(i * 7919 % 100_003) / 100.0 for i in range(rows)], pa.float64()),
        "label": pa.array([f"label-{i % 5000:05d}-{i % 7}" for i in range(rows)], pa.string()),
        "day": pa.array([18_000 + i % 1500 for i in range(rows)], pa.int32()).cast(pa.date32()),
    })
    builder = TableBuilder(path)
    create_dv_table(builder, SCHEMA, table, files=files)
    live = sorted(DeltaLog(path).snapshot(check_read=False).state().files.values(), key=lambda a: a.path)
    chosen = rng.sample(live, max(1, round(len(live) * dv_fraction)))
    selection = {}
    for add in chosen:
        n = add.num_records
        scattered = set(rng.sample(range(n), n // 20))
        start = rng.randrange(0, n - n // 20)
        selection[add.path] = sorted(scattered | set(range(start, start + n // 20)))
    delete_rows(builder, selection, shared_file=True)
    return {"files": len(live), "rows": rows, "dv_files": len(chosen),
            "deleted_rows": sum(len(v) for v in selection.values()),
            "affected_bytes": sum(a.size for a in chosen), "affected": [a.path for a in chosen]}


def time_purge(src: str, work: str, spark) -> float:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    run = DropRun(DeltaLog(work), "deletionVectors")
    start = time.perf_counter()
    assert purge_deletion_vectors(run, spark=spark)
    return time.perf_counter() - start


def time_baseline(src: str, affected: list[str], out: str, spark) -> float:
    shutil.rmtree(out, ignore_errors=True)
    paths = [os.path.join(src, p) for p in affected]
    start = time.perf_counter()
    spark.read.parquet(*paths).write.mode("errorifexists").parquet(out)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=240)
    parser.add_argument("--rows", type=int, default=2_400_000)
    parser.add_argument("--dv-fraction", type=float, default=0.3)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from delta_downgrade.spark import get_spark

    spark = get_spark("dv-purge-bench")
    spark.sparkContext.setLogLevel("ERROR")
    tmp = tempfile.mkdtemp(prefix="dv-purge-bench-")
    try:
        src = os.path.join(tmp, "table")
        t0 = time.perf_counter()
        info = build(src, args.files, args.rows, args.dv_fraction)
        print(f"built {info['files']} files, {info['rows']} rows; DVs on {info['dv_files']} files "
              f"({info['affected_bytes']} bytes, {info['deleted_rows']} deleted rows) "
              f"in {time.perf_counter() - t0:.1f}s")
        work = os.path.join(tmp, "work")
        out = os.path.join(tmp, "baseline-out")
        # Warm-up (JIT, class loading), one of each, not counted.
        time_baseline(src, info["affected"], out, spark)
        time_purge(src, work, spark)
        purge_times, base_times = [], []
        for _ in range(args.repeat):
            base_times.append(time_baseline(src, info["affected"], out, spark))
            purge_times.append(time_purge(src, work, spark))
        purge, base = statistics.median(purge_times), statistics.median(base_times)
        print(f"purge (hook alone)       {purge:7.2f} s   runs {[round(t, 2) for t in purge_times]}")
        print(f"plain Spark read+write   {base:7.2f} s   runs {[round(t, 2) for t in base_times]}")
        print(f"ratio purge / baseline   {purge / base:7.2f}   (medians; target <= 1.3)")
        print(f"ratio of the best runs   {min(purge_times) / min(base_times):7.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
