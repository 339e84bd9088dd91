"""Task values: how a task hands its outputs to the next one.

On Databricks (``DATABRICKS_RUNTIME_VERSION`` set) values go through ``dbutils.jobs.taskValues``
(:func:`runtime_dbutils`: the runtime's own ``dbutils`` as ``databricks.sdk.runtime`` exposes it,
the documented route from code on serverless and classic compute; ``pyspark.dbutils`` on runtimes
whose SDK does not expose it);
elsewhere into a local store, one JSON file per task under a run directory, which the local job
runner resolves ``{{tasks.<task_key>.values.<name>}}`` references from. Every value must fit the
Databricks limit of 48 KiB of JSON.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Protocol

from delta_downgrade.errors import BadTaskValueError, TaskValueTooLargeError
from delta_downgrade.protocol.json_values import JsonObject, JsonValue

MAX_VALUE_BYTES = 48 * 1024
RUN_DIR_ENV = "DELTA_DOWNGRADE_RUN_DIR"

# What Databricks accepts for a task_key and for a task-value key. Both become file names here
# (``<run dir>/task_values/<task_key>.json``), so nothing else may reach the file system: a
# ``/``, ``..`` or an absolute name would read or write outside the run directory.
KEY_PATTERN = re.compile(r"[A-Za-z0-9_-]+")
MAX_KEY_LENGTH = 100


def check_key(key: object, what: str = "task key") -> str:
    """``key`` when it is a valid task key / task-value key, else :class:`BadTaskValueError`."""
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key) or len(key) > MAX_KEY_LENGTH:
        raise BadTaskValueError(f"{what} {key!r} is invalid: use 1 to {MAX_KEY_LENGTH} characters "
                                f"of A-Z, a-z, 0-9, '_' and '-'")
    return key


def encode_value(key: str, value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    if len(text.encode("utf-8")) > MAX_VALUE_BYTES:
        raise TaskValueTooLargeError(
            f"task value {key!r} is {len(text)} bytes of JSON, over the 48 KiB limit")
    return text


class TaskValues(Protocol):
    def set(self, key: str, value: JsonValue) -> None: ...


class LocalTaskValues:
    """``<run_dir>/task_values/<task_key>.json``: a flat JSON object of this task's values."""

    def __init__(self, run_dir: str | os.PathLike[str], task_key: str) -> None:
        self.path = Path(run_dir) / "task_values" / f"{check_key(task_key)}.json"

    def read_all(self) -> JsonObject:
        try:
            # O_NOFOLLOW: a symlink planted at the values file is not ours to read.
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise BadTaskValueError(f"task values file {self.path} cannot be read: {exc}") from exc
        with os.fdopen(fd, "rb") as fh:
            data = fh.read()
        try:
            values = json.loads(data.decode("utf-8"))
        except ValueError:
            return {}
        return values if isinstance(values, dict) else {}

    def set(self, key: str, value: JsonValue) -> None:
        check_key(key, "task value key")
        encode_value(key, value)
        values = self.read_all()
        values[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(self.path, json.dumps(values, sort_keys=True, indent=1, default=str),
                     prefix=f".{self.path.stem}.")


def replace_file(path: Path, text: str, *, prefix: str) -> None:
    """Write ``text`` to ``path`` whole or not at all. The temporary file gets a random name and is
    created exclusively (mkstemp opens with O_CREAT|O_EXCL, mode 0600): a file or symlink planted
    at any predictable name is never opened or followed. os.replace then swaps it in atomically;
    the rename replaces a symlink at the final name itself instead of writing through it."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def runtime_dbutils() -> Any:
    """The Databricks runtime's ``dbutils`` (only on a Databricks runtime).

    First ``databricks.sdk.runtime.dbutils``, when the SDK took it from the runtime's namespace
    (``is_local_implementation`` False). Off a runtime, or where the runtime's namespace is not
    reachable, that module holds the SDK's remote stand-in instead, whose ``taskValues.set`` does
    nothing: then the classic route, ``pyspark.dbutils.DBUtils`` over the session. Imported here,
    never at module level: off Databricks importing ``databricks.sdk.runtime`` may raise for want
    of credentials."""
    try:
        import databricks.sdk.runtime as runtime_module  # only on Databricks
        runtime: Any = runtime_module
    except Exception:  # noqa: BLE001 - ImportError, or the SDK's ValueError without credentials
        runtime = None
    found = getattr(runtime, "dbutils", None) if runtime is not None else None
    if found is not None and getattr(runtime, "is_local_implementation", True) is False:
        return found
    try:
        from pyspark.dbutils import DBUtils  # type: ignore[import-not-found]  # only on Databricks
    except ImportError:
        raise BadTaskValueError(
            "task values cannot be set: DATABRICKS_RUNTIME_VERSION is set, but neither "
            "databricks.sdk.runtime nor pyspark.dbutils gives the runtime's dbutils") from None
    from pyspark.sql import SparkSession

    return DBUtils(SparkSession.builder.getOrCreate())


class DatabricksTaskValues:
    """``dbutils.jobs.taskValues.set`` on a Databricks runtime (:func:`runtime_dbutils`)."""

    def __init__(self, dbutils: Any = None) -> None:
        self._dbutils = dbutils if dbutils is not None else runtime_dbutils()

    def set(self, key: str, value: JsonValue) -> None:
        check_key(key, "task value key")
        encode_value(key, value)
        self._dbutils.jobs.taskValues.set(key=key, value=value)


class NullTaskValues:
    def set(self, key: str, value: JsonValue) -> None:
        check_key(key, "task value key")
        encode_value(key, value)


def task_values_for(task_key: str, run_dir: str | None = None) -> TaskValues:
    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return DatabricksTaskValues()
    run_dir = run_dir or os.environ.get(RUN_DIR_ENV)
    if run_dir:
        return LocalTaskValues(run_dir, task_key)
    return NullTaskValues()


def read_task_values(run_dir: str | os.PathLike[str], task_key: str) -> JsonObject:
    return LocalTaskValues(run_dir, task_key).read_all()
