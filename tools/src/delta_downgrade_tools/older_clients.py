"""The real Delta clients installed here (``make older-clients``), each tied to the catalogue entry
it checks, and a process per client that answers batches of operations (client_runner.py).

- delta-spark 2.2 and 2.3 on pyspark 3.3, 2.4 on pyspark 3.4, 3.0 to 3.3 on pyspark 3.5, 4.0 and
  4.1 (its Spark 4.0 build) on pyspark 4.0: one venv
  per pyspark line under ``.clients/``, the release's jars (``.clients/delta-<r>.classpath``,
  resolved by Maven from ``jars/clients/``) passed as ``spark.jars``;
- the current delta-spark (4.4, pyspark 4.2: the repository's ``.venv`` and ``.jars``), the
  reference the older Spark clients' rows are compared with;
- deltalake and Polars releases, each a ``pip install --target`` directory put first on
  ``PYTHONPATH`` of the ``.venv`` interpreter, and DuckDB's delta extension (the ``.venv``'s).

A `ClientProcess` starts its client once (a JVM for Spark: ~10-20 s) and keeps it for every
request until closed; a client that crashes is restarted for the next request, the crashed
request answered ``CLIENT_CRASHED``.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

REPO_ROOT = Path(__file__).resolve().parents[3]
CLIENTS_DIR = REPO_ROOT / ".clients"
RUNNER = Path(__file__).resolve().with_name("client_runner.py")
VENV_PYTHON = REPO_ROOT / ".venv" / "bin" / "python"
DELTALAKE_018 = REPO_ROOT / ".venv" / "deltalake-0.18.2"
DEFAULT_TIMEOUT = float(os.environ.get("DELTA_DOWNGRADE_CLIENT_TIMEOUT", "300"))
#: A JVM's start on a loaded 2-core machine: minutes, not seconds.
START_TIMEOUT = float(os.environ.get("DELTA_DOWNGRADE_CLIENT_START_TIMEOUT", "900"))


@dataclass(frozen=True)
class ClientSpec:
    """One installed client release checking one catalogue entry.

    ``read_via``: the read path (``spark``, ``pyarrow``, ``rust``, ``polars``, ``duckdb``) or None
    when this release cannot exercise the entry's read path; ``write_engine``: how it appends
    (``spark``, ``pyarrow``, ``rust``), None for an entry without a write side."""

    name: str
    catalogue_id: str
    kind: str  # "spark" or "python"
    python: Path
    read_via: str | None
    write_engine: str | None = None
    jars_file: Path | None = None
    pythonpath: tuple[Path, ...] = ()
    time_travel: bool = True

    @property
    def is_spark(self) -> bool:
        return self.kind == "spark"

    def missing(self) -> str | None:
        """Why this client cannot run here (not installed), or None."""
        if not self.python.exists():
            return f"{self.python} is missing: run `make older-clients`"
        if self.jars_file is not None and not self.jars_file.is_file():
            return f"{self.jars_file} is missing: run `make older-clients`"
        for p in self.pythonpath:
            if not p.is_dir():
                return f"{p} is missing: run `make older-clients`"
        return None

    def jars(self) -> str:
        if self.jars_file is None:
            return ""
        if self.jars_file.name == "spark.classpath":  # the repository's .jars: Delta only, no s3a
            from_file = self.jars_file.read_text().strip().split(",")
            return ",".join(j for j in from_file if "/io/delta/" in j or "unitycatalog" in j)
        return self.jars_file.read_text().strip()


def _spark(release: str, line: str, catalogue_id: str) -> ClientSpec:
    return ClientSpec(f"delta-spark {release}", catalogue_id, "spark",
                      CLIENTS_DIR / f"pyspark-{line}" / "bin" / "python", "spark", "spark",
                      jars_file=CLIENTS_DIR / f"delta-{release.rsplit('.', 1)[0]}.classpath")


def _py(name: str, catalogue_id: str, via: str | None, write: str | None, *dirs: str,
        time_travel: bool = True) -> ClientSpec:
    paths = tuple(DELTALAKE_018 if d == "deltalake-0.18.2" else CLIENTS_DIR / "py" / d for d in dirs)
    return ClientSpec(name, catalogue_id, "python", VENV_PYTHON, via, write, pythonpath=paths,
                      time_travel=time_travel)


#: The current delta-spark: the reference of every Spark client's rows.
CURRENT_SPARK = ClientSpec("delta-spark 4.4.0", "delta-spark-4.3-4.4", "spark", VENV_PYTHON, "spark",
                           "spark", jars_file=REPO_ROOT / ".jars" / "spark.classpath")

#: Older delta-spark releases: one per catalogue range that a pyspark installable here runs
#: (2.0 and 2.1 need Spark 3.2, not installed: 2.2 checks the 2.0-2.2 entry).
SPARK_CLIENTS: tuple[ClientSpec, ...] = (
    _spark("2.2.0", "3.3", "delta-spark-2.0-2.2"),
    _spark("2.3.0", "3.3", "delta-spark-2.3"),
    _spark("2.4.0", "3.4", "delta-spark-2.4"),
    _spark("3.0.0", "3.5", "delta-spark-3.0"),
    _spark("3.1.0", "3.5", "delta-spark-3.1"),
    _spark("3.2.1", "3.5", "delta-spark-3.2"),
    _spark("3.3.2", "3.5", "delta-spark-3.3"),
    _spark("4.0.1", "4.0", "delta-spark-4.0"),
    # Delta 4.1's build for Spark 4.0 (delta-spark_4.0_2.13): one pyspark 4.0 serves 4.0 and 4.1
    _spark("4.1.0", "4.0", "delta-spark-4.1-4.2"),
)

#: The older Spark clients of the RFC's promise: those that do not know checkpointProtection
#: (2.4, 3.1, 3.2) and the first that does (3.3).
RFC_SPARK_CLIENTS = ("delta-spark 2.4.0", "delta-spark 3.1.0", "delta-spark 3.2.1", "delta-spark 3.3.2")

PYTHON_CLIENTS: tuple[ClientSpec, ...] = (
    _py("deltalake 0.18.2 (pyarrow)", "deltalake-0.18-pyarrow", "pyarrow", "pyarrow", "deltalake-0.18.2"),
    _py("deltalake 0.18.2 (rust)", "deltalake-0.18-rust", None, "rust", "deltalake-0.18.2"),
    _py("deltalake 0.20.2 (pyarrow)", "deltalake-0.2x-pyarrow", "pyarrow", None, "deltalake-0.20.2"),
    _py("deltalake 0.25.5 (pyarrow)", "deltalake-0.2x-pyarrow", "pyarrow", None, "deltalake-0.25.5"),
    _py("deltalake 0.25.5 (rust)", "deltalake-0.2x-rust", "rust", "rust", "deltalake-0.25.5"),
    _py("deltalake 1.0.2 (pyarrow)", "deltalake-1.0-1.5-pyarrow", "pyarrow", None, "deltalake-1.0.2"),
    _py("deltalake 1.5.1 (pyarrow)", "deltalake-1.0-1.5-pyarrow", "pyarrow", None, "deltalake-1.5.1"),
    _py("deltalake 1.0.2 (rust)", "deltalake-1.0-1.3-rust", "rust", "rust", "deltalake-1.0.2"),
    _py("deltalake 1.6.3 (rust)", "deltalake-1.6-rust", "rust", "rust", "deltalake-1.6.3"),
    _py("deltalake 1.6.6 (rust)", "deltalake-1.6-rust", "rust", "rust"),
    _py("deltalake 1.6.6 (pyarrow)", "deltalake-1.6.6-pyarrow", "pyarrow", None),
    _py("polars 1.38.1 + deltalake 1.0.2", "polars-1.39", "polars", None, "polars-1.38.1", "deltalake-1.0.2"),
    _py("polars 1.41.2 + deltalake 1.6.3", "polars-1.40-1.43", "polars", None, "polars-1.41.2", "deltalake-1.6.3"),
    _py("polars 2.1.0 + deltalake 1.6.6", "polars-2.1", "polars", None, "polars-2.1.0"),
    _py("duckdb 1.5.5 delta extension", "duckdb-delta-1.5", "duckdb", None, time_travel=False),
)

#: The reference of the Python clients' rows: deltalake 1.6.6's Rust scan, DuckDB where it refuses.
PYTHON_REFERENCES = ("deltalake 1.6.6 (rust)", "duckdb 1.5.5 delta extension")


def all_clients() -> tuple[ClientSpec, ...]:
    return (CURRENT_SPARK, *SPARK_CLIENTS, *PYTHON_CLIENTS)


def client(name: str) -> ClientSpec:
    for spec in all_clients():
        if spec.name == name:
            return spec
    raise KeyError(name)


class ClientProcess:
    """A running client (client_runner.py): `run` sends a batch and returns the answers in order."""

    def __init__(self, spec: ClientSpec, timeout: float = DEFAULT_TIMEOUT, log_dir: Path | None = None) -> None:
        self.spec = spec
        self.timeout = timeout
        self.log_dir = log_dir
        self.proc: subprocess.Popen[str] | None = None
        self.starts = 0
        self.start_failure: dict[str, Any] | None = None  # once it failed to start, it is not retried

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        # Not the test session's: this client is a Spark of its own (classic, its own conf), and
        # the JVM a test starts here is no Spark Connect matter (tests/spark_use.py).
        for name in ("SPARK_REMOTE", "SPARK_CONF_DIR", "SPARK_HOME", "PYSPARK_PYTHON",
                     "PYSPARK_DRIVER_PYTHON", "DELTA_DOWNGRADE_TEST_NODEID", "PYTHONPATH",
                     "PYSPARK_SUBMIT_ARGS"):
            env.pop(name, None)
        env.update(CLIENT_KIND=self.spec.kind, CLIENT_JARS=self.spec.jars(), TZ="UTC",
                   PYTHONDONTWRITEBYTECODE="1", RUST_BACKTRACE="0")
        env["PYSPARK_PYTHON"] = str(self.spec.python)
        if self.spec.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(map(str, self.spec.pythonpath))
        return env

    def _start(self) -> dict[str, Any] | None:
        """Start the client; None when it is ready, else its failure (answered to the request)."""
        stderr: Any = subprocess.DEVNULL
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            stderr = open(self.log_dir / f"{self.spec.name.replace(' ', '_')}.{self.starts}.log", "w")
        self.proc = subprocess.Popen([str(self.spec.python), str(RUNNER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=stderr, text=True, env=self._env(),
                                     cwd=str(CLIENTS_DIR if CLIENTS_DIR.is_dir() else REPO_ROOT))
        self.starts += 1
        ready = self._answer(START_TIMEOUT)
        if not ready.get("ok"):
            self.close(kill=True)
            return ready
        return None

    def _answer(self, timeout: float | None = None) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close(kill=True)
                return {"ok": False, "error_class": "CLIENT_TIMEOUT", "error": f"no answer in {timeout}s"}
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    code = self.proc.wait()
                    self.proc = None
                    return {"ok": False, "error_class": "CLIENT_CRASHED", "error": f"exit status {code}"}
                return json.loads(line)

    def run(self, requests: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        answers = []
        for request in requests:
            if self.proc is None:
                failure = self.start_failure or self._start()
                if failure is not None:
                    self.start_failure = failure
                    answers.append({**failure, "error_class": "CLIENT_DID_NOT_START:" + str(failure.get("error_class"))})
                    continue
            assert self.proc is not None and self.proc.stdin is not None
            try:
                self.proc.stdin.write(json.dumps(request) + "\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                self.proc = None
                answers.append({"ok": False, "error_class": "CLIENT_CRASHED", "error": "stdin closed"})
                continue
            answers.append(self._answer())
        return answers

    def one(self, **request: Any) -> dict[str, Any]:
        return self.run([request])[0]

    def close(self, kill: bool = False) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if kill:
                proc.kill()
            else:
                assert proc.stdin is not None
                proc.stdin.close()
            proc.wait(timeout=60)
        except (subprocess.TimeoutExpired, OSError):
            proc.kill()
            proc.wait()


class SessionRunner:
    """The current delta-spark as a runner on a session the caller already has (the tests'
    ``delta_spark``): the same requests and answers as a `ClientProcess`, no second JVM. Rows
    are compared with the child clients' (which run with TZ=UTC): the caller's process must run
    in UTC too (pyspark converts timestamps to the local time zone)."""

    def __init__(self, session: Any) -> None:
        from delta_downgrade_tools.client_runner import SparkClient

        self.client = SparkClient(session)

    def run(self, requests: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        from delta_downgrade_tools.client_runner import handle

        return [handle(self.client, r) for r in requests]

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    """``python -m delta_downgrade_tools.older_clients [TABLE]``: every client installed here, its
    versions and (with TABLE) its read of the table's latest version."""
    args = list(sys.argv[1:] if argv is None else argv)
    for spec in all_clients():
        why = spec.missing()
        if why:
            print(f"{spec.name}: not installed ({why})")
            continue
        process = ClientProcess(spec)
        started = time.monotonic()
        try:
            answers = process.run([{"op": "version"}] + [{"op": "read", "path": t, "via": spec.read_via}
                                                          for t in args if spec.read_via])
        finally:
            process.close()
        print(f"{spec.name} ({spec.catalogue_id}): {time.monotonic() - started:.1f}s",
              json.dumps(answers)[:600])
    return 0


if __name__ == "__main__":
    sys.exit(main())
