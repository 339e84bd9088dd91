"""``make demo``: build a sample table with the package's own builder, then run the bundle's main
job on it locally — drop_feature → verify → truncate (retried until its one-minute retention has
passed) → verify — printing the protocol before and after each task, and checking at the end that
the table's rows are exactly the rows it started with.

The sample table: reader 3 / writer 7 with deletionVectors (some rows deleted through DVs),
vacuumProtocolCheck and a check constraint; ``delta.dropFeatureTruncateHistory.retentionDuration``
is one minute so that the whole downgrade finishes in a few minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.protocol import Protocol

REPO = Path(__file__).resolve().parents[3]  # tools/src/delta_downgrade_tools/demo.py
SCHEMA = pa.schema([("id", pa.int64()), ("category", pa.string()), ("amount", pa.float64())])
FEATURES = ("deletionVectors", "vacuumProtocolCheck", "checkConstraints")


def build_sample_table(path: str) -> None:
    from delta_downgrade_tools.dv_builder import delete_rows

    if os.path.exists(path):
        shutil.rmtree(path)
    protocol = Protocol(1, 2).denormalized()
    for feature in FEATURES:
        protocol = protocol.with_feature(feature)
    builder = TableBuilder(path)
    rows = [{"id": i, "category": ["books", "games", "music", "tools"][i % 4], "amount": round(i * 1.25, 2)}
            for i in range(4000)]
    builder.create(SCHEMA, protocol=protocol, rows=rows, files=4, configuration={
        "delta.enableDeletionVectors": "true",
        "delta.constraints.amount_not_negative": "amount >= 0",
        "delta.dropFeatureTruncateHistory.retentionDuration": "interval 1 minute",
    })
    builder.append([{"id": 4000 + i, "category": "extra", "amount": 1.0} for i in range(500)], files=2)
    delete_rows(builder, lambda row: row["id"] % 7 == 0)        # a DELETE with deletion vectors
    delete_rows(builder, lambda row: row["category"] == "extra" and row["id"] % 2 == 1)


def visible_rows(path: str) -> list[tuple[Any, ...]]:
    """The table's rows at its latest version, deletion vectors applied, read with pyarrow."""
    from delta_downgrade.deletion_vectors import read_deletion_vector, row_index_list

    state = DeltaLog(path).snapshot().state()
    out: list[tuple[Any, ...]] = []
    for add in state.files.values():
        table = pq.read_table(os.path.join(path, add.decoded_path))
        deleted = set(row_index_list(read_deletion_vector(path, add.dv))) if add.dv else set()
        for index, row in enumerate(table.to_pylist()):
            if index not in deleted:
                out.append(tuple(row[name] for name in SCHEMA.names))
    return sorted(out)


def describe(path: str) -> str:
    snap = DeltaLog(path).snapshot(check_read=False)
    files = snap.state().files.values()
    dvs = sum(1 for f in files if f.dv is not None)
    return f"v{snap.version} protocol {snap.protocol}; {dvs} file(s) with deletion vectors"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m delta_downgrade_tools.demo")
    parser.add_argument("--dir", default=str(REPO / ".runs" / "demo"), help="where the sample table goes")
    parser.add_argument("--retry-interval-ms", default="20000")
    args = parser.parse_args(argv)

    from delta_downgrade_tools.local_runner import run_job

    table = os.path.join(args.dir, "table")
    print(f"== building the sample table at {table}", flush=True)
    build_sample_table(table)
    before = visible_rows(table)
    print(f"   {describe(table)}; {len(before)} visible rows", flush=True)

    def after_task(task: Any, run: Any) -> None:
        print(f"== after {task.task_key} ({task.status.lower()}"
              + (f", {task.attempts} attempts" if task.attempts > 1 else "") + f"): {describe(table)}", flush=True)

    print("== running resources/delta_downgrade.job.yml locally", flush=True)
    run = run_job(REPO / "resources" / "delta_downgrade.job.yml",
                  params={"table": table, "feature": "deletionVectors", "truncate_in_job": "true"},
                  variables={"truncate_retry_interval_millis": args.retry_interval_ms, "truncate_max_retries": "12"},
                  run_dir=os.path.join(args.dir, "run"), after_task=after_task)
    after = visible_rows(table)
    final = DeltaLog(table).snapshot()
    print("== result", flush=True)
    print("   tasks: " + ", ".join(f"{k}={t.status.lower()}" for k, t in run.tasks.items()))
    print(f"   protocol now {final.protocol}")
    print(f"   rows: {len(before)} before, {len(after)} after, identical: {before == after}")
    ok = run.succeeded and before == after and "checkpointProtection" not in final.protocol.features \
        and "deletionVectors" not in final.protocol.features
    print("== demo " + ("succeeded" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
