"""The tables whose ``checkpointProtection`` waits for its truncate retention, recorded for the
daily truncate job (``resources/truncate_history.job.yml``).

The drop task records each table that ends with ``needs_truncate`` (the Checkpoint Protection
RFC: the feature can only be dropped with history truncation, once
``delta.dropFeatureTruncateHistory.retentionDuration`` has passed); the truncate task handles the
recorded tables and removes a table's record once ``checkpointProtection`` is gone. One JSON file
per table in one directory (a Unity Catalog volume path on Databricks, ``/Volumes/…``), named by
a hash of the table: each file has one writer at a time, so the drop job and the truncate job
never rewrite each other's lines, and a record is created or removed whole (written to a
temporary name, then renamed).

A directory that does not exist yet is an empty list: a new deployment's first daily run has
nothing to do and says so.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

from delta_downgrade.app.tasks.task_values import replace_file
from delta_downgrade.errors import BadConfigError
from delta_downgrade.protocol.json_values import JsonValue

SUFFIX = ".waiting.json"


def _record_path(directory: str, table: str) -> Path:
    digest = hashlib.sha256(table.encode("utf-8")).hexdigest()[:24]
    return Path(directory) / f"{digest}{SUFFIX}"


def record_waiting(directory: str, table: str, truncate_after: JsonValue = None) -> Path:
    """Record ``table`` as waiting (again: the record is replaced with the newer
    ``truncate_after``). A directory that cannot be created or written is a
    :class:`BadConfigError` naming it: the drop is done, but nothing would ever finish it."""
    path = _record_path(directory, table)
    document = {"table": table, "truncate_after": truncate_after,
                "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, json.dumps(document, sort_keys=True), prefix=".record.")
    except OSError as exc:
        raise BadConfigError(
            f"waiting_dir {directory}: cannot record {table} for the daily truncate job "
            f"({exc.strerror or exc}); the drop is done, but checkpointProtection stays until the "
            f"table is truncated: create the volume (e.g. CREATE VOLUME main.default.delta_downgrade) "
            f"or deploy with --var waiting_dir=<a writable volume directory>, then run truncate_task "
            f"--table={table} once its retention has passed", table=table) from exc
    return path


def remove_record(directory: str, table: str) -> bool:
    """Forget ``table`` (its ``checkpointProtection`` is gone); False when it was not recorded."""
    try:
        _record_path(directory, table).unlink()
    except FileNotFoundError:
        return False
    return True


def waiting_tables(directory: str) -> list[str]:
    """The recorded tables, in the order they were recorded; ``[]`` when the directory does not
    exist. A record that cannot be read is a :class:`BadConfigError` naming the file."""
    root = Path(directory)
    if not root.exists():
        return []
    if not root.is_dir():
        raise BadConfigError(f"waiting_dir {directory} is not a directory")
    found: list[tuple[str, str]] = []
    for path in root.glob(f"*{SUFFIX}"):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            table = document["table"]
            if not isinstance(table, str) or not table.strip():
                raise ValueError("no table")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BadConfigError(f"waiting record {path} cannot be read ({exc}); remove it, or record "
                                 f"the table again with drop_feature_task") from exc
        found.append((str(document.get("recorded_at") or ""), table))
    return [table for _, table in sorted(found)]
