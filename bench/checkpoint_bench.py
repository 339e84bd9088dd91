"""Benchmark: writing a checkpoint of a 100,000-file table, ours next to delta-rs, and our V2
checkpoint (parquet top-level file + sidecars) of the same table next to our classic one.

Builds (once per run, in a temp dir) the log of a table with 100,000 live files: 100 commits of
1,000 ``add`` actions each, written as commit JSON directly (no data files: a checkpoint needs
only the log). Every add is what a Spark append writes: a partitioned path, one partition value,
size, modificationTime, dataChange and a stats JSON string with numRecords and
minValues/maxValues/nullCount for three columns.

Then, for each repeat, on a fresh copy of that log (so that no run finds a checkpoint left by
an earlier one), in a fresh Python process each (same imports, same page cache):

- ours: ``checkpoint_table(DeltaLog(path))`` at the latest version (timed call only), and on
  another fresh copy our read of the full state (``DeltaLog(path).snapshot().state()``);
- delta-rs: ``DeltaTable(path)`` (open, timed separately), then ``dt.create_checkpoint()``;
- ours, V2: the same log, except that version 0 has the protocol (3, 7, v2Checkpoint) and
  ``delta.checkpointPolicy=v2``: ``checkpoint_table`` writes a UUID-named V2 checkpoint, a parquet
  top-level file and the file actions in sidecars (50,000 per sidecar). Timed the same way.

Prints the medians and two ratios:

- A: ours / delta-rs ``create_checkpoint()`` call alone. Target: < 1. Ours includes reading and
  replaying the log (``checkpoint_table`` starts from a fresh ``DeltaLog``); delta-rs's call
  starts from the state its ``DeltaTable(path)`` open has already loaded.
- B: ours / delta-rs open + ``create_checkpoint()``: both read the log and write the checkpoint.
- V2: our V2 checkpoint / our classic checkpoint (same replay, different layout).

Usage: .venv/bin/python bench/checkpoint_bench.py [--commits N] [--files-per-commit F] [--repeat R]
       [--profile]   (cProfile of one of our checkpoint calls, top functions by cumulative time)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
sys.path.insert(0, SRC)

START_MS = 1_700_000_000_000
PARTITIONS = 50
SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "name", "type": "string", "nullable": True, "metadata": {}},
    {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
    {"name": "part", "type": "integer", "nullable": True, "metadata": {}},
]}


def _iso(ms: int) -> str:
    secs, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{millis:03d}Z"


def _add(rng: random.Random, version: int, index: int, first_id: int) -> dict:
    part = rng.randrange(PARTITIONS)
    rows = rng.randrange(1_000, 100_000)
    ts_min = START_MS + rng.randrange(0, 86_400_000)
    stats = {
        "numRecords": rows,
        "minValues": {"id": first_id, "name": f"name-{rng.randrange(10**6):06d}", "ts": _iso(ts_min)},
        "maxValues": {"id": first_id + rows - 1, "name": f"name-{rng.randrange(10**6):06d}",
                      "ts": _iso(ts_min + rng.randrange(0, 3_600_000))},
        "nullCount": {"id": 0, "name": rng.randrange(0, 10), "ts": 0},
    }
    return {"add": {
        "path": f"part={part}/part-{index:05d}-{uuid.UUID(int=rng.getrandbits(128))}.c000.snappy.parquet",
        "partitionValues": {"part": str(part)},
        "size": rng.randrange(100_000, 50_000_000),
        "modificationTime": START_MS + version * 60_000 + index,
        "dataChange": True,
        "stats": json.dumps(stats, separators=(",", ":")),
    }}


V2_PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["v2Checkpoint"],
               "writerFeatures": ["v2Checkpoint"]}


def build(path: str, commits: int, per_commit: int, *, v2: bool = False) -> None:
    """Write the commit JSON of the table directly; with ``v2``, under ``delta.checkpointPolicy=v2``
    (the same actions otherwise: same seed)."""
    log_dir = os.path.join(path, "_delta_log")
    os.makedirs(log_dir)
    rng = random.Random(42)
    next_id = 0
    for v in range(commits):
        lines: list[dict] = [{"commitInfo": {
            "timestamp": START_MS + v * 60_000, "operation": "WRITE",
            "operationParameters": {"mode": "Append", "partitionBy": "[\"part\"]"},
            "readVersion": v - 1, "isBlindAppend": True,
            "engineInfo": "Apache-Spark/3.5.1 Delta-Lake/3.1.0", "txnId": str(uuid.UUID(int=rng.getrandbits(128)))}}]
        if v == 0:
            lines.append({"protocol": V2_PROTOCOL if v2 else {"minReaderVersion": 1, "minWriterVersion": 2}})
            lines.append({"metaData": {
                "id": str(uuid.UUID(int=rng.getrandbits(128))), "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(SCHEMA, separators=(",", ":")), "partitionColumns": ["part"],
                "configuration": {"delta.checkpointPolicy": "v2"} if v2 else {}, "createdTime": START_MS}})
        for i in range(per_commit):
            add = _add(rng, v, i, next_id)
            next_id += json.loads(add["add"]["stats"])["numRecords"]
            lines.append(add)
        with open(os.path.join(log_dir, f"{v:020d}.json"), "w") as fh:
            fh.write("\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n")


# --- the timed work, each in its own process --------------------------------------------------------

_OURS = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
path, mode = sys.argv[1], sys.argv[3]
out = {}
if mode == "checkpoint":
    t, c = time.perf_counter(), time.process_time()
    result = checkpoint_table(DeltaLog(path))
    out["checkpoint_s"] = time.perf_counter() - t
    out["checkpoint_cpu_s"] = time.process_time() - c
    out["version"] = result.version
    out["num_add_files"] = result.num_add_files
    out["bytes"] = result.size_in_bytes
    out["kind"] = result.checkpoint_kind
    out["files"] = len(result.paths)
else:
    t = time.perf_counter()
    state = DeltaLog(path).snapshot().state()
    out["read_s"] = time.perf_counter() - t
    out["files"] = len(state.files)
print(json.dumps(out))
"""

_DELTA_RS = r"""
import json, os, sys, time
from deltalake import DeltaTable
path = sys.argv[1]
t = time.perf_counter()
dt = DeltaTable(path)
open_s = time.perf_counter() - t
t, c = time.perf_counter(), time.process_time()
dt.create_checkpoint()
checkpoint_s, checkpoint_cpu_s = time.perf_counter() - t, time.process_time() - c
sys.stdout.write(json.dumps({"open_s": open_s, "checkpoint_s": checkpoint_s,
                             "checkpoint_cpu_s": checkpoint_cpu_s, "version": dt.version()}) + "\n")
sys.stdout.flush()
os._exit(0)  # delta-rs was seen to abort at interpreter teardown
"""


def _run(script: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fresh_copy(master: str, scratch: str, name: str) -> str:
    dest = os.path.join(scratch, name)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(master, dest)
    return dest


def _checkpoint_files(path: str) -> list[str]:
    """The checkpoint files of a table: in ``_delta_log`` and, for a V2 checkpoint, its sidecars."""
    log_dir = os.path.join(path, "_delta_log")
    found = [n for n in os.listdir(log_dir) if ".checkpoint." in n and n.endswith(".parquet")]
    sidecars = os.path.join(log_dir, "_sidecars")
    if os.path.isdir(sidecars):
        found += [os.path.join("_sidecars", n) for n in os.listdir(sidecars) if n.endswith(".parquet")]
    return sorted(found)


def _verify(expected_files: int, *tables: str) -> None:
    """Every checkpoint must hold the same live files (read each with pyarrow)."""
    import pyarrow.parquet as pq

    def paths(table_path: str) -> list[str]:
        out: list[str] = []
        for name in _checkpoint_files(table_path):
            column = pq.read_table(os.path.join(table_path, "_delta_log", name), columns=["add"]).column("add")
            out += [row["path"] for row in column.to_pylist() if row is not None]
        return sorted(out)

    found = [paths(t) for t in tables]
    if len(found[0]) != expected_files or any(f != found[0] for f in found):
        raise AssertionError(f"checkpoints differ: {[len(f) for f in found]} adds")


def profile(path: str) -> None:
    import cProfile
    import pstats

    from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
    from delta_downgrade.log.delta_log import DeltaLog

    profiler = cProfile.Profile()
    profiler.enable()
    checkpoint_table(DeltaLog(path))
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--files-per-commit", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    total = args.commits * args.files_per_commit
    with tempfile.TemporaryDirectory() as tmp:
        master = os.path.join(tmp, "master")
        master_v2 = os.path.join(tmp, "master-v2")
        t0 = time.perf_counter()
        build(master, args.commits, args.files_per_commit)
        build(master_v2, args.commits, args.files_per_commit, v2=True)
        log_bytes = sum(os.path.getsize(os.path.join(master, "_delta_log", n))
                        for n in os.listdir(os.path.join(master, "_delta_log")))
        print(f"built {args.commits} commits x {args.files_per_commit} adds = {total:,} files, "
              f"{log_bytes / 1e6:.1f} MB of JSON (and the same under checkpointPolicy=v2), in "
              f"{time.perf_counter() - t0:.1f} s")

        if args.profile:
            profile(_fresh_copy(master, tmp, "profiled"))
            return 0

        ours, reads, theirs, opens, ours_cpu, theirs_cpu = [], [], [], [], [], []
        v2, v2_cpu, v2_files = [], [], 0
        for i in range(args.repeat):
            # Rotate who goes first, so none always runs on a cooler machine.
            order = ("ours", "ours-v2", "delta-rs")[i % 3:] + ("ours", "ours-v2", "delta-rs")[:i % 3]
            for who in order:
                if who == "ours-v2":
                    path = _fresh_copy(master_v2, tmp, "ours-v2")
                    r = _run(_OURS, path, SRC, "checkpoint")
                    assert r["kind"] == "v2" and r["num_add_files"] == total, r
                    v2.append(r["checkpoint_s"])
                    v2_cpu.append(r["checkpoint_cpu_s"])
                    v2_files = r["files"]
                elif who == "ours":
                    path = _fresh_copy(master, tmp, "ours")
                    r = _run(_OURS, path, SRC, "checkpoint")
                    assert r["version"] == args.commits - 1 and r["num_add_files"] == total, r
                    ours.append(r["checkpoint_s"])
                    ours_cpu.append(r["checkpoint_cpu_s"])
                    reads.append(_run(_OURS, _fresh_copy(master, tmp, "ours-read"), SRC, "read")["read_s"])
                else:
                    path = _fresh_copy(master, tmp, "delta-rs")
                    r = _run(_DELTA_RS, path)
                    assert r["version"] == args.commits - 1, r
                    theirs.append(r["checkpoint_s"])
                    theirs_cpu.append(r["checkpoint_cpu_s"])
                    opens.append(r["open_s"])
            print(f"  run {i + 1}: ours checkpoint {ours[-1]:.2f} s (cpu {ours_cpu[-1]:.2f} s; Python "
                  f"state read {reads[-1]:.2f} s) | ours V2 {v2[-1]:.2f} s (cpu {v2_cpu[-1]:.2f} s) | "
                  f"delta-rs open {opens[-1]:.2f} s + checkpoint {theirs[-1]:.2f} s (cpu {theirs_cpu[-1]:.2f} s)")
        _verify(total, os.path.join(tmp, "ours"), os.path.join(tmp, "delta-rs"), os.path.join(tmp, "ours-v2"))

        ours_s, theirs_s = statistics.median(ours), statistics.median(theirs)
        both = statistics.median(o + c for o, c in zip(opens, theirs))
        print(f"ours     checkpoint_table (reads the log, Arrow replay, writes)   median {ours_s:6.2f} s")
        print(f"         (for comparison, the Python state read Snapshot.state() alone: "
              f"{statistics.median(reads):.2f} s)")
        print(f"delta-rs create_checkpoint() call alone                        median {theirs_s:6.2f} s")
        print(f"delta-rs DeltaTable(path) open                                 median "
              f"{statistics.median(opens):6.2f} s")
        print(f"delta-rs open + create_checkpoint()                            median {both:6.2f} s")
        print(f"ratio A  ours / delta-rs create_checkpoint() call alone      : {ours_s / theirs_s:.2f}"
              f"   (target < 1; ours also reads the log, theirs does not)")
        print(f"ratio B  ours / delta-rs open + create_checkpoint()          : {ours_s / both:.2f}"
              f"   (both read the log and write the checkpoint)")
        v2_s = statistics.median(v2)
        print(f"ours V2  checkpoint_table, parquet top-level + {v2_files - 1} sidecar(s)       median {v2_s:6.2f} s"
              f"   (cpu {statistics.median(v2_cpu):.2f} s)")
        print(f"ratio V2 ours V2 / ours classic                              : {v2_s / ours_s:.2f}")
        print(f"CPU time of the checkpoint call (all threads): ours {statistics.median(ours_cpu):.2f} s, "
              f"delta-rs {statistics.median(theirs_cpu):.2f} s (ours parses the log on every CPU: its "
              f"wall time is below its CPU time; on a busy machine it rises toward it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
