"""Benchmark: `inspect` on a 10,000-commit log, next to delta-rs opening the same table.

Builds (once per run, in a temp dir) a table of 10,000 one-file commits with a classic
checkpoint every 100 commits and one protocol change in the middle (vacuumProtocolCheck added at
version 5,000), then times, in the same run:
  - our latest protocol (`DeltaLog.snapshot().protocol`, what drop/verify need first),
  - our full `inspect` of the latest version without and with the protocol history,
  - delta-rs `DeltaTable(path)` (open latest) and `.protocol()`, in the same process,
and prints each time and the ratios ours / delta-rs. Target: the latest protocol well under 1 s.

Usage: .venv/bin/python bench/inspect_bench.py [--commits N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from delta_downgrade.clock import ManualClock  # noqa: E402
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table  # noqa: E402
from delta_downgrade.log.delta_log import DeltaLog  # noqa: E402
from delta_downgrade.app.render.inspect import inspect_document  # noqa: E402
from delta_downgrade.operations.inspect import inspect_table  # noqa: E402

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})


def build(path: str, commits: int, every: int) -> None:
    log_dir = os.path.join(path, "_delta_log")
    os.makedirs(log_dir)
    clock = ManualClock(1_700_000_000_000)
    change_at = commits // 2
    for v in range(commits):
        lines = [{"commitInfo": {"timestamp": clock.now_ms() + v, "operation": "WRITE"}}]
        if v == 0:
            lines.append({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
            lines.append({"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                                       "schemaString": SCHEMA, "partitionColumns": [], "configuration": {},
                                       "createdTime": clock.now_ms()}})
        if v == change_at:
            lines.append({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                       "readerFeatures": ["vacuumProtocolCheck"],
                                       "writerFeatures": ["appendOnly", "invariants", "vacuumProtocolCheck"]}})
        lines.append({"add": {"path": f"part-{v:05d}.parquet", "partitionValues": {}, "size": 500,
                              "modificationTime": clock.now_ms() + v, "dataChange": True,
                              "stats": json.dumps({"numRecords": 1})}})
        with open(os.path.join(log_dir, f"{v:020d}.json"), "w") as fh:
            fh.write("\n".join(json.dumps(line) for line in lines) + "\n")
        if v > 0 and v % every == 0:
            checkpoint_table(DeltaLog(path), v, clock=clock)


def timed(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "table")
        t0 = time.perf_counter()
        build(path, args.commits, args.every)
        print(f"built {args.commits} commits, checkpoint every {args.every}: {time.perf_counter() - t0:.1f} s")

        ours_protocol = timed(lambda: DeltaLog(path).snapshot().protocol, args.repeat)
        ours_inspect = timed(lambda: inspect_document(inspect_table(path, history=False)), args.repeat)
        ours_history = timed(lambda: inspect_document(inspect_table(path, history=True)), max(1, args.repeat // 2))
        try:
            from deltalake import DeltaTable
        except ImportError:
            print("deltalake is not installed: no baseline")
            return 1
        theirs_open = timed(lambda: DeltaTable(path).protocol(), args.repeat)
        theirs_history = timed(lambda: [DeltaTable(path, version=v).protocol()
                                        for v in (args.commits // 2 - 1, args.commits - 1)], max(1, args.repeat // 2))

        doc = inspect_document(inspect_table(path))
        assert doc["protocol"]["readerFeatures"] == ["vacuumProtocolCheck"], doc["protocol"]
        assert len(doc["protocol_history"]) == 2, doc["protocol_history"]

        print(f"{'measure':<52}{'seconds':>10}")
        rows = [("ours: latest protocol (DeltaLog.snapshot().protocol)", ours_protocol),
                ("ours: inspect latest, no history", ours_inspect),
                ("ours: inspect latest + full protocol history", ours_history),
                ("delta-rs: open latest + protocol()", theirs_open),
                ("delta-rs: load 2 versions (before/after the change)", theirs_history)]
        for name, secs in rows:
            print(f"{name:<52}{secs:>10.3f}")
        print(f"ratio latest protocol / delta-rs open:           {ours_protocol / theirs_open:.2f}")
        print(f"ratio inspect (no history) / delta-rs open:      {ours_inspect / theirs_open:.2f}")
        print(f"ratio full history / delta-rs two-version load:  {ours_history / theirs_history:.2f}")
        print(f"target: latest protocol < 1 s -> {'met' if ours_protocol < 1.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
