"""``make demo``: build a sample table with the package's own builder, then run the bundle's jobs
on it locally, as a deployment would: the drop job for one named client (``for_client``: every
feature that keeps that client from the table; drop_feature → verify; it ends green with the
truncate waiting for its retention), then — once ``truncate_after`` has passed — the
truncate_history job over the tables the drop recorded as waiting. It prints the protocol after each task
and what the downgrade bought: before and after, how many clients of the catalogue can read and
write the table, and the named client's verdict; then it reads the result with that client (a
real one, in a subprocess: deltalake 0.18.2 from ``.venv/deltalake-0.18.2``, else the venv's
deltalake) and checks that the table's rows are exactly the rows it started with.

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


#: The client the demo drops for, as a user names it, and where its release is installed.
DEFAULT_CLIENT = "deltalake==0.18.2"
DELTALAKE_018_DIR = Path(os.environ.get("DELTA_DOWNGRADE_DELTALAKE_018", REPO / ".venv" / "deltalake-0.18.2"))
#: When deltalake 0.18.2 is not installed: the venv's own deltalake, whose pyarrow reader the
#: sample table blocks too (it refuses vacuumProtocolCheck).
FALLBACK_CLIENT = "deltalake==1.6.6"

#: Ends with ``os._exit``: deltalake 1.6.6 with pyarrow aborts at interpreter teardown now and then
#: ("terminate called without an active exception", after a successful read, on tables this
#: package never touched), which would turn a good read into a failed one.
_READ_WITH_DELTALAKE = """
import json, os, sys
import deltalake
table = deltalake.DeltaTable(sys.argv[1])
rows = table.to_pyarrow_table().to_pylist()
sys.stdout.write(json.dumps({"version": deltalake.__version__,
                             "rows": sorted([r["id"], r["category"], r["amount"]] for r in rows)}) + "\\n")
sys.stdout.flush()
os._exit(0)
"""


def catalogue_access(path: str) -> dict[str, Any]:
    """How many clients of the packaged catalogue read and write the table's latest version."""
    from delta_downgrade.compat import packaged_catalogue
    from delta_downgrade.operations.compat import table_compat

    summary = table_compat(path, packaged_catalogue()).summary
    return {"clients": summary["clients"], "read": summary["read"]["yes"], "write": summary["write"]["yes"],
            "writers": summary["clients"] - summary["write"]["n/a"]}


def client_access(path: str, spelled: str) -> tuple[str, str, str]:
    """(entry id, read verdict, write verdict) of the named client on the table's latest version;
    a blocked verdict names the features to blame ("no (checkConstraints)")."""
    from delta_downgrade.compat import client_verdict, packaged_catalogue

    client = packaged_catalogue().client(spelled)
    snapshot = DeltaLog(path).snapshot(check_read=False)
    verdict = client_verdict(client, snapshot.protocol, snapshot.schema)

    def said(access: Any) -> str:
        blamed = ", ".join(access.blocking_features)
        return access.verdict.value + (f" ({blamed})" if blamed and access.verdict.value != "yes" else "")

    return client.id, said(verdict.read), said(verdict.write)


def _access_line(counts: dict[str, Any]) -> str:
    return (f"{counts['read']} of {counts['clients']} catalogue clients can read it, "
            f"{counts['write']} of {counts['writers']} writing clients can write it")


def read_with_client(path: str, spelled: str) -> tuple[str, list[tuple[Any, ...]] | str]:
    """The table's rows as the named deltalake release reads them (``to_pyarrow_table``, in a
    subprocess); or why it could not read."""
    import json
    import subprocess

    env = dict(os.environ)
    if spelled == DEFAULT_CLIENT:
        env["PYTHONPATH"] = os.pathsep.join([str(DELTALAKE_018_DIR), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _READ_WITH_DELTALAKE, path], capture_output=True, text=True,
                          env=env, timeout=300)
    if done.returncode != 0:
        return "?", (done.stderr.strip().splitlines() or ["no output"])[-1]
    out = json.loads(done.stdout)
    return out["version"], sorted(tuple(r) for r in out["rows"])


def _pick_client(spelled: str | None) -> str:
    if spelled:
        return spelled
    if (DELTALAKE_018_DIR / "deltalake").is_dir():
        return DEFAULT_CLIENT
    print(f"   (deltalake 0.18.2 is not installed in {DELTALAKE_018_DIR}: the demo drops for "
          f"{FALLBACK_CLIENT}, the venv's deltalake, instead)", flush=True)
    return FALLBACK_CLIENT


def _epoch_s(iso_utc: str) -> float:
    return datetime.fromisoformat(iso_utc.replace("Z", "+00:00")).timestamp()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m delta_downgrade_tools.demo")
    parser.add_argument("--dir", default=str(REPO / ".runs" / "demo"), help="where the sample table goes")
    parser.add_argument("--for", dest="client", default=None,
                        help=f"the deltalake release to drop for and read with (default {DEFAULT_CLIENT}, "
                             f"or {FALLBACK_CLIENT} when 0.18.2 is not installed)")
    args = parser.parse_args(argv)

    from delta_downgrade_tools.local_runner import pending_truncates, run_job

    client = _pick_client(args.client)
    table = os.path.join(args.dir, "table")
    print(f"== building the sample table at {table}", flush=True)
    build_sample_table(table)
    before = visible_rows(table)
    print(f"   {describe(table)}; {len(before)} visible rows", flush=True)
    access_before = catalogue_access(table)
    entry, read_before, write_before = client_access(table, client)
    print(f"== before: {_access_line(access_before)}", flush=True)
    print(f"   {client} ({entry}): read {read_before}, write {write_before}", flush=True)

    def after_task(task: Any, run: Any) -> None:
        print(f"== after {task.task_key} ({task.status.lower()}"
              + (f", {task.attempts} attempts" if task.attempts > 1 else "") + f"): {describe(table)}", flush=True)

    print(f"== running resources/delta_downgrade.job.yml locally for_client={client} (drop-feature --for: "
          "every feature that keeps it from the table)", flush=True)
    # the drop job records the waiting table here; the truncate_history job finishes what it finds
    waiting = {"waiting_dir": os.path.join(args.dir, "waiting")}
    drop = run_job(REPO / "resources" / "delta_downgrade.job.yml",
                   params={"table": table, "for_client": client, "feature": ""}, variables=waiting,
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
    access_after = catalogue_access(table)
    _, read_after, write_after = client_access(table, client)
    print(f"== what the downgrade bought: before {_access_line(access_before)}; after {_access_line(access_after)} "
          f"({access_after['read'] - access_before['read']:+d} readers, "
          f"{access_after['write'] - access_before['write']:+d} writers)", flush=True)
    print(f"   {client} ({entry}): read {read_before} -> {read_after}, write {write_before} -> {write_after}", flush=True)
    version, read_back = read_with_client(table, client)
    if isinstance(read_back, str):
        print(f"   read with deltalake {version} (subprocess): FAILED: {read_back}", flush=True)
    else:
        print(f"   read with deltalake {version} (subprocess, to_pyarrow_table): {len(read_back)} rows, "
              f"identical to the rows before: {read_back == before}", flush=True)
    client_reads = not isinstance(read_back, str) and read_back == before and read_after == "yes"
    ok = all(r.succeeded for r in runs) and before == after and "checkpointProtection" not in final.protocol.features \
        and client_reads
    print("== demo " + ("succeeded" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
