"""delta-rs (`deltalake` on PyPI) as an independent oracle, run in a subprocess.

Every call starts ``sys.executable -c _CHILD`` with a JSON request on stdin; the child imports
``deltalake``, does one thing and prints one JSON line (prefixed by ``_MARK``) on stdout. A Python
exception in the child (``DeltaError``, ``DeltaProtocolError``, ``TableNotFoundError``, a Rust
``PanicException``, ...) comes back as ``ok=False`` with ``"<ExceptionType>: <message>"`` as the
error. A crash (abort, signal, non-zero exit, no result line) or a timeout is also ``ok=False``:
a check that did not run is never a pass. After printing its result the child leaves through
``os._exit`` so that interpreter teardown (where delta-rs was seen to abort) cannot turn a
finished check into a crash.

Read paths and their feature gates, as observed with deltalake 1.6.6 on the golden tables:

- `scan_rows` -- ``QueryBuilder().register("t", DeltaTable(path, version=v)).execute("select *
  from t")`` (Rust kernel + DataFusion; ``DeltaTable.scan()`` is the same engine). Reads deletion
  vectors, column mapping (name and id, also legacy 2/5), v2 checkpoints with sidecars and
  timestampNtz. Refuses typeWidening(-preview) and vacuumProtocolCheck:
  ``DeltaError: External error: Transaction failed: Unsupported table features required:
  [TypeWideningPreview]`` / ``[VacuumProtocolCheck]``. Use it as the reference for *data*.
- `pyarrow_rows` -- ``DeltaTable(path, version=v).to_pyarrow_table()``, the "older reader".
  Accepts only the reader features timestampNtz and variantType(-preview); refuses
  deletionVectors, columnMapping, v2Checkpoint, typeWidening(-preview) and vacuumProtocolCheck
  when they are listed as *reader features*: ``DeltaProtocolError: The table has set these reader
  features: {'deletionVectors'} but these are not yet supported by the deltalake reader.``
  Caution: on a legacy protocol (reader 2, writer 5, no feature lists) with column mapping it does
  NOT refuse; it silently returns every column as NULL. Likewise, DVs left behind under protocol
  (1,2) are silently ignored (deleted rows come back). Always compare rows, never only errors.
- Opening a table refuses unknown reader features and malformed protocols
  (``Kernel error: Unsupported: Feature 'fooBar' is not supported``); a missing path gives
  ``TableNotFoundError: Local path "..." does not exist or you don't have access!``.

Rows are lists of dicts with JSON-safe values (see `_jsonable` in the child script):
datetimes as ISO-8601 (timezone-aware ones converted to UTC first), dates/times as ISO-8601,
decimals as ``str(Decimal)`` (scale kept), bytes as ``"hex:<hex>"``, maps as lists of
``[key, value]`` pairs sorted canonically, structs as dicts, lists as lists. Compare row sets with
`same_rows`, which ignores row order (but not duplicates).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MARK = "@@DELTA_RS_ORACLE@@ "
DEFAULT_TIMEOUT = float(os.environ.get("DELTA_DOWNGRADE_ORACLE_TIMEOUT", "180"))

_CHILD = r'''
import base64, datetime, decimal, json, os, sys, traceback

MARK = "@@DELTA_RS_ORACLE@@ "


def emit(obj):
    sys.stdout.write("\n" + MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown: delta-rs was seen to abort there


def canon(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def jsonable(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v  # NaN/Infinity survive json.dumps/loads
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc)
        return v.isoformat()
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        return "timedelta:" + repr(v.total_seconds())
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "hex:" + bytes(v).hex()
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, list) and v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        # pyarrow renders a map as a list of (key, value) tuples; maps are unordered
        return sorted(([jsonable(k), jsonable(x)] for k, x in v), key=canon)
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return "repr:" + repr(v)


def rows_of(table):
    return [jsonable(r) for r in table.to_pylist()]


def open_table(path, version=None, storage_options=None):
    from deltalake import DeltaTable
    kwargs = {"storage_options": storage_options} if storage_options else {}
    if version is not None:
        kwargs["version"] = version
    return DeltaTable(path, **kwargs)


def op_protocol(path, version=None, storage_options=None):
    p = open_table(path, version, storage_options).protocol()
    return {
        "minReaderVersion": p.min_reader_version,
        "minWriterVersion": p.min_writer_version,
        "readerFeatures": sorted(p.reader_features) if p.reader_features is not None else None,
        "writerFeatures": sorted(p.writer_features) if p.writer_features is not None else None,
    }


def op_describe(path, version=None, storage_options=None):
    dt = open_table(path, version, storage_options)
    return {"version": dt.version(), "protocol": op_protocol(path, version, storage_options),
            "configuration": dict(dt.metadata().configuration)}


def op_version(path, storage_options=None):
    return open_table(path, None, storage_options).version()


def op_metadata_configuration(path, version=None):
    return dict(open_table(path, version).metadata().configuration)


def op_scan_rows(path, version=None, storage_options=None):
    import pyarrow as pa
    from deltalake import QueryBuilder
    dt = open_table(path, version, storage_options)
    reader = QueryBuilder().register("t", dt).execute("select * from t")
    return rows_of(pa.table(reader))


def op_pyarrow_rows(path, version=None, storage_options=None):
    return rows_of(open_table(path, version, storage_options).to_pyarrow_table())


def op_files(path, version=None):
    return sorted(open_table(path, version).file_uris())


def op_create_checkpoint(path):
    dt = open_table(path)
    dt.create_checkpoint()
    return dt.version()


def op_catalog_answers(path, history_limit=None):
    # What a Delta runtime's DESCRIBE DETAIL / DESCRIBE HISTORY draw from (tests/delta_sql_session.py)
    import pyarrow as pa
    dt = open_table(path)
    m = dt.metadata()
    adds = pa.table(dt.get_add_actions(flatten=True))
    return {"version": dt.version(), "protocol": op_protocol(path),
            "metadata": {"id": m.id, "name": m.name, "description": m.description,
                         "partitionColumns": list(m.partition_columns), "createdTime": m.created_time,
                         "configuration": dict(m.configuration)},
            "numFiles": adds.num_rows, "sizeInBytes": sum(adds.column("size_bytes").to_pylist()),
            "history": jsonable(dt.history(history_limit))}


def op_first_rows(path, limit=1):
    import pyarrow as pa
    from deltalake import QueryBuilder
    reader = QueryBuilder().register("t", open_table(path)).execute("select * from t limit %d" % int(limit))
    return rows_of(pa.table(reader))


def op_deltalake_version():
    import deltalake
    return deltalake.__version__


def op_duckdb_rows(path, version=None):
    # DuckDB's delta extension (delta-kernel-rs inside DuckDB), loaded from the wheel
    # duckdb-extension-delta: no download. It reads the latest version only.
    import glob
    import duckdb
    import duckdb_extension_delta
    if version is not None:
        raise ValueError("delta_scan reads the latest version only")
    root = os.path.dirname(duckdb_extension_delta.__file__)
    ext = sorted(glob.glob(os.path.join(root, "extensions", "*", "delta.duckdb_extension")))[-1]
    con = duckdb.connect()
    con.execute("LOAD '%s'" % ext.replace("'", "''"))
    table = con.execute("SELECT * FROM delta_scan(?)", [path]).arrow()
    if hasattr(table, "read_all"):  # a RecordBatchReader in newer duckdb releases
        table = table.read_all()
    return rows_of(table)


OPS = {k[3:]: v for k, v in globals().items() if k.startswith("op_")}

try:
    req = json.loads(sys.stdin.read())
    value = OPS[req["op"]](**req.get("args", {}))
    emit({"ok": True, "value": value})
except BaseException as exc:  # pyo3_runtime.PanicException is a BaseException
    emit({
        "ok": False,
        "error": "%s: %s" % (type(exc).__name__, exc),
        "traceback": traceback.format_exc(),
    })
'''


@dataclass(frozen=True)
class OracleResult:
    ok: bool
    value: Any = None
    error: str | None = None

    def unwrap(self) -> Any:
        """The value, or an AssertionError carrying the oracle's error."""
        if not self.ok:
            raise AssertionError(f"oracle failed: {self.error}")
        return self.value


def canonical_row(row: Any) -> str:
    return json.dumps(row, sort_keys=True, separators=(",", ":"), default=str)


def same_rows(a: list[dict] | OracleResult, b: list[dict] | OracleResult) -> bool:
    """Order-insensitive (multiset) equality of two row lists; failed results never compare equal."""
    rows = []
    for x in (a, b):
        if isinstance(x, OracleResult):
            if not x.ok:
                return False
            x = x.value
        rows.append(sorted(canonical_row(r) for r in x))
    return rows[0] == rows[1]


class DeltaRsOracle:
    """delta-rs run in a fresh subprocess per call; see the module docstring for the read paths."""

    def __init__(self, python: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 pythonpath: str | None = None, name: str = "delta-rs"):
        """``pythonpath``: a directory put first on the child's ``sys.path``, e.g. one holding
        another deltalake release (``pip install --target DIR deltalake==0.18.2``)."""
        self.python = python or sys.executable
        self.timeout = timeout
        self.pythonpath = pythonpath
        self.name = name

    # -- public API ---------------------------------------------------------------------------
    # ``storage_options`` (deltalake's keys) open a table on an object store (tests/object_stores.py).
    def protocol(self, path, version: int | None = None, storage_options: dict | None = None) -> OracleResult:
        """{minReaderVersion, minWriterVersion, readerFeatures, writerFeatures} (sorted or None)."""
        return self.run("protocol", path=path, version=version, **_opts(storage_options))

    def describe(self, path, version: int | None = None, storage_options: dict | None = None) -> OracleResult:
        """{version, protocol, configuration} in one subprocess."""
        return self.run("describe", path=path, version=version, **_opts(storage_options))

    def version(self, path, storage_options: dict | None = None) -> OracleResult:
        return self.run("version", path=path, **_opts(storage_options))

    def metadata_configuration(self, path, version: int | None = None) -> OracleResult:
        return self.run("metadata_configuration", path=path, version=version)

    def scan_rows(self, path, version: int | None = None, storage_options: dict | None = None) -> OracleResult:
        """Rows via QueryBuilder/DataFusion: reads DVs, column mapping, v2 checkpoints."""
        return self.run("scan_rows", path=path, version=version, **_opts(storage_options))

    def pyarrow_rows(self, path, version: int | None = None, storage_options: dict | None = None) -> OracleResult:
        """Rows via ``to_pyarrow_table()``: the older reader refusing DV/CM/v2Checkpoint/... ."""
        return self.run("pyarrow_rows", path=path, version=version, **_opts(storage_options))

    def files(self, path, version: int | None = None) -> OracleResult:
        """Sorted absolute URIs of the live data files (``DeltaTable.file_uris()``)."""
        return self.run("files", path=path, version=version)

    def create_checkpoint(self, path) -> OracleResult:
        """Write a checkpoint at the latest version; the value is that version."""
        return self.run("create_checkpoint", path=path)

    def catalog_answers(self, path, history_limit: int | None = None) -> OracleResult:
        """Version, protocol, metadata, file count and size, and ``history(limit)`` (newest
        first) of the latest version: what a runtime's DESCRIBE DETAIL / HISTORY report."""
        return self.run("catalog_answers", path=path, history_limit=history_limit)

    def first_rows(self, path, limit: int = 1) -> OracleResult:
        return self.run("first_rows", path=path, limit=limit)

    def deltalake_version(self) -> OracleResult:
        """``deltalake.__version__`` as the child imports it."""
        return self.run("deltalake_version")

    def duckdb_rows(self, path) -> OracleResult:
        """Rows of the latest version through DuckDB's delta extension (``delta_scan``), a reader
        built on delta-kernel-rs; values normalised as for the delta-rs reads."""
        return self.run("duckdb_rows", path=path)

    # -- machinery ----------------------------------------------------------------------------
    def run(self, op: str, **args: Any) -> OracleResult:
        args = {k: (str(v) if isinstance(v, Path) else v) for k, v in args.items()}
        request = json.dumps({"op": op, "args": args})
        env = dict(os.environ, RUST_BACKTRACE=os.environ.get("RUST_BACKTRACE", "1"))
        if self.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (self.pythonpath, env.get("PYTHONPATH")) if p)
        try:
            proc = subprocess.run(
                [self.python, "-c", _CHILD],
                input=request,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env=env,
            )
        except subprocess.TimeoutExpired as exc:
            return OracleResult(False, None, f"timeout: {self.name} {op}({args}) ran over {self.timeout}s"
                                f"{_tail(exc.stderr)}")
        except OSError as exc:
            return OracleResult(False, None, f"could not start {self.python}: {exc}")

        payload = None
        for line in reversed(proc.stdout.splitlines()):
            if line.startswith(_MARK):
                try:
                    payload = json.loads(line[len(_MARK):])
                except ValueError:
                    payload = None
                break
        if proc.returncode != 0 or payload is None:
            return OracleResult(
                False, None,
                f"crash: {self.name} {op}({args}) exited with {proc.returncode} and "
                f"{'no result' if payload is None else 'a result'}{_tail(proc.stderr)}",
            )
        if payload.get("ok"):
            return OracleResult(True, payload.get("value"), None)
        return OracleResult(False, None, payload.get("error") or "unknown error")


def _opts(storage_options: dict | None) -> dict:
    """The child's ``storage_options`` argument, only when there are options (older children and
    local paths take none)."""
    return {"storage_options": dict(storage_options)} if storage_options else {}


def _tail(text: Any, limit: int = 2000) -> str:
    if not text:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = text.strip()
    return "; stderr: " + (text[-limit:] if len(text) > limit else text)
