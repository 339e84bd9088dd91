"""delta-spark as a user of this package's tables and as the writer of tables this package works
on: the statements and reads the interoperability tests share (tests/integration/
test_delta_spark_after_native_drop.py, test_native_tools_after_delta_spark_drop.py,
test_delta_spark_racing_native_drops.py).

Rows are compared as multisets of canonical JSON strings (`canonical_rows`), the same for every
reader: delta-spark's ``Row`` objects and delta-rs's dictionaries.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import re
from typing import Any

#: delta-spark's table property that says how long the log is kept (PROTOCOL.md "Metadata
#: Cleanup"); its cleanup cuts off at a whole day (``truncateDay``), so backdated files must be
#: older than a day past it.
LOG_RETENTION = "delta.logRetentionDuration"
BOUNDARY = "delta.requireCheckpointProtectionBeforeVersion"
DAY_S = 24 * 3600


def condition(exc: BaseException) -> str:
    """The Delta/Spark error class of a failed statement."""
    get = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    cls = get() if get else None
    if cls:
        return cls
    found = re.search(r"\[([A-Z][A-Z0-9_]+)(?:\.[A-Z0-9_]+)?\]", str(exc))
    return found.group(1) if found else type(exc).__name__


def _plain(value: Any) -> Any:
    """One value as JSON, the same for a delta-spark ``Row`` field and a delta-rs (pyarrow) one."""
    if value is None or isinstance(value, (bool, int, str, float)):
        return value
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return value.isoformat()
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "hex:" + bytes(value).hex()
    if isinstance(value, dict):
        return sorted(([_plain(k), _plain(v)] for k, v in value.items()), key=json.dumps)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return repr(value)


def canonical_rows(rows: Any) -> list[str]:
    """A row multiset (``Row`` objects or dicts), sorted canonical JSON strings."""
    out = []
    for row in rows:
        as_dict = row.asDict() if hasattr(row, "asDict") else dict(row)
        out.append(json.dumps({k: _plain(v) for k, v in as_dict.items()}, sort_keys=True, default=str))
    return sorted(out)


def read_rows(spark: Any, path: str, version: int | None = None) -> list[str] | tuple[str, str]:
    """delta-spark's rows of ``path`` (at ``version``), canonical; a refusal as
    ``("refused", class)``."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    try:
        return canonical_rows(reader.load(path).collect())
    except Exception as exc:  # a refusal is an answer to compare
        return ("refused", condition(exc))


def detail(spark: Any, path: str) -> dict[str, Any]:
    """DESCRIBE DETAIL's protocol, table features and properties."""
    row = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0].asDict()
    return {"min_reader_version": row["minReaderVersion"], "min_writer_version": row["minWriterVersion"],
            "features": sorted(row.get("tableFeatures") or ()),
            "properties": dict(sorted((row.get("properties") or {}).items()))}


def history(spark: Any, path: str) -> list[tuple[int, str]]:
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation").collect()
    return sorted((r["version"], r["operation"]) for r in rows)


def remove_hadoop_checksums(path: str) -> str:
    """Remove Hadoop's hidden ``.<file>.crc`` checksums of a golden copy: some are stale (files
    edited after they were written), which Hadoop's local file system refuses to read past; they
    are no part of a Delta table."""
    for dirpath, _, files in os.walk(path):
        for name in files:
            if name.startswith(".") and name.endswith(".crc"):
                os.remove(os.path.join(dirpath, name))
    return path


_LOG_FILE_VERSION = re.compile(r"^(\d{20})\.")


def log_file_version(name: str) -> int | None:
    """The version a ``_delta_log`` file belongs to (commit, checkpoint, checksum, compaction:
    its first number), None for ``_last_checkpoint`` and the like."""
    found = _LOG_FILE_VERSION.match(name)
    return int(found.group(1)) if found else None


def backdate_log(path: str, before_version: int, age_s: float) -> list[str]:
    """Set the modification time of every ``_delta_log`` file of a version before
    ``before_version`` (and V2 sidecars, which carry no version) ``age_s`` seconds into the past:
    delta-spark takes a commit's time from its file when in-commit timestamps are off (PROTOCOL.md
    "Commit Provenance Information"), so its metadata cleanup sees that history as expired. The
    names changed."""
    import time

    when = time.time() - age_s
    log_dir = os.path.join(path, "_delta_log")
    changed = []
    for name in sorted(os.listdir(log_dir)):
        version = log_file_version(name)
        if version is not None and version < before_version:
            os.utime(os.path.join(log_dir, name), (when, when))
            changed.append(name)
    return changed


def log_names(path: str) -> set[str]:
    return set(os.listdir(os.path.join(path, "_delta_log")))


def commit_versions(path: str) -> list[int]:
    return sorted(int(n[:20]) for n in log_names(path) if re.fullmatch(r"\d{20}\.json", n))


_UTC_SUFFIX = re.compile(r"^(\d{4}-\d\d-\d\dT[\d:.]+)\+00:00$")


def _naive_utc(value: Any) -> Any:
    if isinstance(value, str):
        found = _UTC_SUFFIX.match(value)
        return found.group(1) if found else value
    if isinstance(value, dict):
        return {k: _naive_utc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_naive_utc(v) for v in value]
    return value


def delta_rs_rows(rows: list[dict]) -> list[str]:
    """delta-rs's rows (tests/oracle.py, values already as JSON) in `canonical_rows`' form: its
    timestamps carry ``+00:00``, delta-spark's (session time zone UTC) are naive."""
    return sorted(json.dumps(_naive_utc(r), sort_keys=True, default=str) for r in rows)
