"""Tables on S3 (moto's server on a local port): ours next to delta-rs 1.6.6 on the same bucket.

What a bucket costs is round trips, not bytes: this measures the log work on object storage, where every
read is a request — the latest protocol, ``inspect --json --no-history`` and the fast drop of
deletionVectors — against delta-rs doing the same reads (``DeltaTable(uri).protocol()``, and
open + ``create_checkpoint()`` for the drop, which reads the whole log and writes one checkpoint;
ours writes four checkpoints and two commits). Both sides are whole processes, timed and measured
the same way as ``run_all.py`` (bench_process.py), each run on a fresh upload of a cached master
table (bench_tables.py). moto is a Python server: its latency per request is larger than S3's, so
a ratio here says how many requests each side makes rather than what a real bucket takes.

Usage (from the repository root, with the project's venv):
    .venv/bin/python bench/object_store_bench.py [--repeat R] [--cache DIR]
Not a timed test: CI does not run it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import uuid
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from bench_process import run_child  # noqa: E402
from bench_tables import TableSpec, cached  # noqa: E402

DEFAULT_CACHE = "/tmp/delta-downgrade-bench"
PY = sys.executable
REGION = "us-east-1"

OURS_PROTOCOL = r"""
import json, os, sys, time
from delta_downgrade.log.delta_log import DeltaLog
options = json.loads(os.environ["BENCH_STORAGE_OPTIONS"])
t = time.perf_counter()
protocol = DeltaLog(sys.argv[1], storage_options=options).snapshot().protocol
print(json.dumps({"call_s": time.perf_counter() - t,
                  "reader_features": sorted(protocol.reader_features or [])}))
"""

DELTA_RS_OPEN = r"""
import json, os, sys, time
from deltalake import DeltaTable
options = json.loads(os.environ["BENCH_STORAGE_OPTIONS"])
t = time.perf_counter()
protocol = DeltaTable(sys.argv[1], storage_options=options).protocol()
sys.stdout.write(json.dumps({"call_s": time.perf_counter() - t,
                             "reader_features": sorted(protocol.reader_features or [])}) + "\n")
sys.stdout.flush()
os._exit(0)
"""

DELTA_RS_OPEN_CHECKPOINT = r"""
import json, os, sys, time
from deltalake import DeltaTable
options = json.loads(os.environ["BENCH_STORAGE_OPTIONS"])
t = time.perf_counter()
dt = DeltaTable(sys.argv[1], storage_options=options)
dt.create_checkpoint()
sys.stdout.write(json.dumps({"call_s": time.perf_counter() - t, "version": dt.version()}) + "\n")
sys.stdout.flush()
os._exit(0)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bucket:
    """moto's S3 server in this process, one bucket, and an upload of a local table."""

    def __init__(self) -> None:
        import boto3
        from moto.server import ThreadedMotoServer

        port = _free_port()
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.server.start()
        self.url = f"http://127.0.0.1:{port}"
        self.bucket = "bench"
        boto3.client("s3", endpoint_url=self.url, aws_access_key_id="bench",
                     aws_secret_access_key="bench", region_name=REGION).create_bucket(Bucket=self.bucket)
        self.options = {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": "bench",
                        "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": REGION,
                        "AWS_ALLOW_HTTP": "true"}

    def upload(self, local: str) -> str:
        """Every file of ``local`` under a fresh prefix (concurrent PUTs); the table's URI."""
        from concurrent.futures import ThreadPoolExecutor

        import obstore
        import obstore.store

        prefix = f"t-{uuid.uuid4().hex[:8]}"
        store = obstore.store.S3Store(self.bucket, prefix=prefix, config={
            "endpoint": self.url, "access_key_id": "bench", "secret_access_key": "bench",
            "region": REGION}, client_options={"allow_http": True})
        root = Path(local)
        files = [p for p in root.rglob("*") if p.is_file()]
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda p: obstore.put(store, p.relative_to(root).as_posix(), p.read_bytes()),
                          files))
        return f"s3://{self.bucket}/{prefix}"

    def stop(self) -> None:
        self.server.stop()


def _cli(command: str, *after: str):
    def argv(uri: str, options: dict[str, str]) -> list[str]:
        flags = [f for k, v in options.items() for f in ("--storage-option", f"{k}={v}")]
        return [PY, "-m", "delta_downgrade.app.cli", command, uri, *after, *flags]
    return argv


def _program(source: str):
    return lambda uri, options: [PY, "-c", source, uri]


ROWS = (
    ("latest protocol", _program(OURS_PROTOCOL), _program(DELTA_RS_OPEN)),
    ("inspect --json --no-history", _cli("inspect", "--json", "--no-history"), _program(DELTA_RS_OPEN)),
    ("fast drop DV (delta-rs: open+create_checkpoint)", _cli("drop-feature", "deletionVectors"),
     _program(DELTA_RS_OPEN_CHECKPOINT)),
)
TABLES = (TableSpec("commits", 1_000, "every100"), TableSpec("files", 10_000))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", default=DEFAULT_CACHE)
    args = parser.parse_args(argv)
    bucket = Bucket()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "src"),
                                                        os.environ.get("PYTHONPATH", "")]),
           "BENCH_STORAGE_OPTIONS": json.dumps(bucket.options)}
    lines = ["| row | table | ours s med | delta-rs s med | ratio |", "|---|---|---|---|---|"]
    failed = False
    try:
        for spec in TABLES:
            master, _meta = cached(spec, args.cache, log=lambda m: print(m, file=sys.stderr))
            for name, ours, theirs in ROWS:
                times: dict[str, list[float]] = {"ours": [], "base": []}
                for i in range(args.repeat):
                    order = (("ours", ours), ("base", theirs))
                    for side, make in (order if i % 2 == 0 else order[::-1]):
                        uri = bucket.upload(master)
                        run = run_child(make(uri, bucket.options), env=env, timeout_s=600)
                        if run.failure():
                            print(f"{name} {spec.label} {side}: {run.failure()}", file=sys.stderr)
                            failed = True
                            continue
                        times[side].append(run.wall_s)
                        print(f"  {name} {spec.label} {side} {run.wall_s:.2f} s", file=sys.stderr)
                if times["ours"] and times["base"]:
                    o, b = statistics.median(times["ours"]), statistics.median(times["base"])
                    lines.append(f"| {name} | {spec.label} | {o:.2f} | {b:.2f} | {o / b:.2f} |")
    finally:
        bucket.stop()
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
