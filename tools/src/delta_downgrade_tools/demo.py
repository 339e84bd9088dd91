"""``make demo``: build a sample table with the package's own builder, then run the bundle's jobs
on it locally, as a deployment would: the drop job (drop_feature → verify; it ends green with the
truncate waiting for its retention), then — once ``truncate_after`` has passed — the
truncate_history job over the tables the drop recorded as waiting. It prints the protocol after each task
and checks at the end that the table's rows are exactly the rows it started with.

The sample table: reader 3 / writer 7 with deletionVectors (some rows deleted through DVs),
vacuumProtocolCheck and a check constraint; ``delta.dropFeatureTruncateHistory.retentionDuration``
is one minute so that the whole downgrade finishes in a few minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from datetime import datetime
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


def build_sample_table(path: str, truncate_retention: str | None = "interval 1 minute") -> None:
    """The sample table; ``truncate_retention`` is its
    ``delta.dropFeatureTruncateHistory.retentionDuration`` (None: the property is not set, so the
    default 24 hours apply)."""
    from delta_downgrade_tools.dv_builder import delete_rows

    if os.path.exists(path):
        shutil.rmtree(path)
    protocol = Protocol(1, 2).denormalized()
    for feature in FEATURES:
        protocol = protocol.with_feature(feature)
    builder = TableBuilder(path)
    rows = [{"id": i, "category": ["books", "games", "music", "tools"][i % 4], "amount": round(i * 1.25, 2)}
            for i in range(4000)]
    configuration = {"delta.enableDeletionVectors": "true", "delta.constraints.amount_not_negative": "amount >= 0"}
    if truncate_retention is not None:
        configuration["delta.dropFeatureTruncateHistory.retentionDuration"] = truncate_retention
    builder.create(SCHEMA, protocol=protocol, rows=rows, files=4, configuration=configuration)
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


def _epoch_s(iso_utc: str) -> float:
    return datetime.fromisoformat(iso_utc.replace("Z", "+00:00")).timestamp()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m delta_downgrade_tools.demo")
    parser.add_argument("--dir", default=str(REPO / ".runs" / "demo"), help="where the sample table goes")
    args = parser.parse_args(argv)

    from delta_downgrade_tools.local_runner import pending_truncates, run_job

    table = os.path.join(args.dir, "table")
    print(f"== building the sample table at {table}", flush=True)
    build_sample_table(table)
    before = visible_rows(table)
    print(f"   {describe(table)}; {len(before)} visible rows", flush=True)

    def after_task(task: Any, run: Any) -> None:
        print(f"== after {task.task_key} ({task.status.lower()}"
              + (f", {task.attempts} attempts" if task.attempts > 1 else "") + f"): {describe(table)}", flush=True)

    print("== running resources/delta_downgrade.job.yml locally (the README's run-job line)", flush=True)
    # the drop job records the waiting table here; the truncate_history job finishes what it finds
    waiting = {"waiting_dir": os.path.join(args.dir, "waiting")}
    drop = run_job(REPO / "resources" / "delta_downgrade.job.yml",
                   params={"table": table, "feature": "deletionVectors"}, variables=waiting,
                   run_dir=os.path.join(args.dir, "drop-run"), after_task=after_task)
    pending = pending_truncates(drop)
    runs = [drop]
    if drop.succeeded and pending and pending[0].get("truncate_after"):
        due = pending[0]["truncate_after"]
        wait_s = max(0.0, _epoch_s(due) - time.time()) + 1
        print(f"== truncate waiting until {due} (the table's one-minute truncate retention); "
              f"sleeping {wait_s:.0f} s, then the truncate_history job runs as its schedule would", flush=True)
        time.sleep(wait_s)
        runs.append(run_job(REPO / "resources" / "truncate_history.job.yml", variables=waiting,
                            run_dir=os.path.join(args.dir, "truncate-run"), after_task=after_task))
    after = visible_rows(table)
    final = DeltaLog(table).snapshot()
    print("== result", flush=True)
    for run in runs:
        print(f"   {run.job_key}: " + ", ".join(f"{k}={t.status.lower()}" for k, t in run.tasks.items()))
    print(f"   protocol now {final.protocol}")
    print(f"   rows: {len(before)} before, {len(after)} after, identical: {before == after}")
    ok = all(r.succeeded for r in runs) and before == after and "checkpointProtection" not in final.protocol.features \
        and "deletionVectors" not in final.protocol.features
    print("== demo " + ("succeeded" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
