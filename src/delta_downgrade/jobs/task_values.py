"""Task values: how a task hands its outputs to the next one.

On Databricks (``DATABRICKS_RUNTIME_VERSION`` set) values go through ``dbutils.jobs.taskValues``;
elsewhere into a local store, one JSON file per task under a run directory, which the local job
runner resolves ``{{tasks.<task_key>.values.<name>}}`` references from. Every value must fit the
Databricks limit of 48 KiB of JSON.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Protocol

from delta_downgrade.errors import BadInputError

MAX_VALUE_BYTES = 48 * 1024
RUN_DIR_ENV = "DELTA_DOWNGRADE_RUN_DIR"


def encode_value(key: str, value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    if len(text.encode("utf-8")) > MAX_VALUE_BYTES:
        raise BadInputError(f"task value {key!r} is {len(text)} bytes of JSON, over the 48 KiB limit",
                            error_class="DELTA_DOWNGRADE_TASK_VALUE_TOO_LARGE")
    return text


class TaskValues(Protocol):
    def set(self, key: str, value: Any) -> None: ...


class LocalTaskValues:
    """``<run_dir>/task_values/<task_key>.json``: a flat JSON object of this task's values."""

    def __init__(self, run_dir: str | os.PathLike[str], task_key: str) -> None:
        self.path = Path(run_dir) / "task_values" / f"{task_key}.json"

    def read_all(self) -> dict[str, Any]:
        try:
            return json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            return {}

    def set(self, key: str, value: Any) -> None:
        encode_value(key, value)
        values = self.read_all()
        values[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(values, sort_keys=True, indent=1, default=str))
        os.replace(tmp, self.path)


class DatabricksTaskValues:
    """``dbutils.jobs.taskValues.set`` through ``pyspark.dbutils`` (only on a Databricks runtime)."""

    def __init__(self) -> None:
        from pyspark.dbutils import DBUtils  # type: ignore[import-not-found]
        from pyspark.sql import SparkSession

        self._dbutils = DBUtils(SparkSession.builder.getOrCreate())

    def set(self, key: str, value: Any) -> None:
        encode_value(key, value)
        self._dbutils.jobs.taskValues.set(key=key, value=value)


class NullTaskValues:
    def set(self, key: str, value: Any) -> None:
        encode_value(key, value)


def task_values_for(task_key: str, run_dir: str | None = None) -> TaskValues:
    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return DatabricksTaskValues()
    run_dir = run_dir or os.environ.get(RUN_DIR_ENV)
    if run_dir:
        return LocalTaskValues(run_dir, task_key)
    return NullTaskValues()


def read_task_values(run_dir: str | os.PathLike[str], task_key: str) -> dict[str, Any]:
    return LocalTaskValues(run_dir, task_key).read_all()
