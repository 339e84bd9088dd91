"""Which engine writes a checkpoint: the Arrow path on the driver
(:func:`~delta_downgrade.log.checkpoint.on_driver.checkpoint_table`: one replay carried across a drop's
commits, streamed by hash part of the path above a few hundred thousand file actions) or Spark jobs
on the active session (:func:`~delta_downgrade.log.checkpoint.on_spark.spark_checkpoint_table`), as
delta-spark checkpoints, for logs that outgrow the driver.

``auto`` (the default) picks Spark only when a Spark session is active in this process and the
segment is estimated to hold at least :data:`SPARK_MIN_FILE_ACTIONS` file actions; ``spark``
asks for it (refused with a clear error without an active session); ``arrow`` never uses it. The
choice comes from the caller or the environment variable :data:`ENGINE_VARIABLE` (a job sets it
per task), the threshold from :data:`THRESHOLD_VARIABLE`. What the Spark path does not write (V2
checkpoints, typed statistics) falls back to the Arrow path, which writes every kind.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

from delta_downgrade.clock import SYSTEM_CLOCK, Clock
from delta_downgrade.errors import BadSettingsError, SparkCheckpointUnsupportedError
from delta_downgrade.log.replay.arrow_replay import estimated_file_actions
from delta_downgrade.log.checkpoint.classic_writer import CheckpointResult
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.checkpoint.on_driver import prepare_checkpoint as prepare_driver_checkpoint
from delta_downgrade.log.delta_log import DeltaLog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from delta_downgrade.log.snapshot import Snapshot

_log = logging.getLogger(__name__)

ENGINES = ("auto", "arrow", "spark")
ENGINE_VARIABLE = "DELTA_DOWNGRADE_CHECKPOINT_ENGINE"
THRESHOLD_VARIABLE = "DELTA_DOWNGRADE_SPARK_CHECKPOINT_MIN_ACTIONS"
#: At this many file actions (estimated from the segment's bytes) ``auto`` takes Spark: the
#: streamed Arrow path checkpoints 10M files in well under a GiB of driver memory, so Spark pays
#: off (its start-up and shuffle cost more than the driver's work below that) only beyond it.
SPARK_MIN_FILE_ACTIONS = 20_000_000


def _setting(value: str | None, table: str) -> str:
    engine = (value if value is not None else os.environ.get(ENGINE_VARIABLE, "auto")).strip().lower()
    if engine not in ENGINES:
        raise BadSettingsError(f"checkpoint engine {engine!r} is not one of {', '.join(ENGINES)} "
                               f"(argument or {ENGINE_VARIABLE})", table=table)
    return engine


def _threshold(table: str) -> int:
    raw = os.environ.get(THRESHOLD_VARIABLE)
    if raw is None:
        return SPARK_MIN_FILE_ACTIONS
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise BadSettingsError(f"{THRESHOLD_VARIABLE}={raw!r} is not a non-negative number of file "
                               f"actions", table=table)
    return value


def validate_engine(engine: str | None, table: str) -> str:
    """The engine setting (``engine`` or :data:`ENGINE_VARIABLE`), checked with the threshold
    before an operation's first write: a bad value, or ``spark`` without an active session, is
    refused with nothing written."""
    chosen = _setting(engine, table)
    _threshold(table)
    if chosen == "spark" and active_spark_session() is None:
        raise BadSettingsError(
            f"the Spark checkpoint engine was asked for ({ENGINE_VARIABLE} or the argument), but no "
            f"Spark session is active in this process; start one, or use the engine 'auto' or "
            f"'arrow'. Nothing was written", table=table)
    return chosen


def active_spark_session() -> SparkSession | None:
    """The Spark session active in this process, without importing PySpark when nothing has."""
    if "pyspark.sql" not in sys.modules:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def write_checkpoint(log: DeltaLog, version: int | None = None, *, engine: str | None = None,
                     clock: Clock = SYSTEM_CLOCK) -> CheckpointResult:
    """The checkpoint of ``version`` (latest by default) by the engine chosen as described in
    the module docstring; the Spark path runs on the active session."""
    chosen = validate_engine(engine, log.table)
    if chosen == "arrow":
        return checkpoint_table(log, version, clock=clock)
    session = active_spark_session()
    if chosen == "auto" and (session is None or
                             estimated_file_actions(log.storage, log.segment(version)) < _threshold(log.table)):
        return checkpoint_table(log, version, clock=clock)
    from delta_downgrade.log.checkpoint.on_spark import spark_checkpoint_table

    try:
        assert session is not None, "validate_engine refused spark without a session"
        result = spark_checkpoint_table(session, log, version, clock=clock)
    except SparkCheckpointUnsupportedError as exc:
        _log.info("Spark checkpoint of %s not possible (%s); writing it on the driver", log.table, exc)
        return checkpoint_table(log, version, clock=clock)
    log.note_written(result.checkpoint_files)
    return result


def prepare_checkpoint(log: DeltaLog, expected: Snapshot, *, engine: str | None = None,
                       clock: Clock = SYSTEM_CLOCK) -> None:
    """Begin the checkpoint of ``expected`` (the table after commits about to be written) ahead of
    its commits, when the Arrow path is sure to write it: the engine is ``arrow``, or ``auto``
    without a Spark session (:func:`~delta_downgrade.log.checkpoint.on_driver.prepare_checkpoint`).
    :func:`write_checkpoint` of that version publishes it or discards it, and
    :func:`~delta_downgrade.log.checkpoint.on_driver.discard_prepared_checkpoint` discards it."""
    chosen = validate_engine(engine, log.table)
    if chosen == "spark" or (chosen == "auto" and active_spark_session() is not None):
        return
    prepare_driver_checkpoint(log, expected, clock=clock)
