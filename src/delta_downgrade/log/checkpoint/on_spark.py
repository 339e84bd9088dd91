"""Checkpoint a table whose file list outgrows the driver: reconciliation and the writing of the
file actions run as Spark jobs on the caller's session, as delta-spark checkpoints
(:func:`spark_checkpoint_table`); the driver holds the protocol, the metadata and counts, never the
file list.

It writes the checkpoint :func:`~delta_downgrade.log.checkpoint.on_driver.checkpoint_table` writes for the
same version - a classic one, or a multi-part one when the file actions exceed the part size
(``ceil((adds + removes) / part_size)`` parts, :func:`~delta_downgrade.log.checkpoint.classic_writer.resolve_part_size`;
one file for tables that support ``v2Checkpoint``, where multi-part is forbidden) - after the
same checks (the protocol, rule (b), the checkpoint gate and the checkpoint policy, asked of
:mod:`~delta_downgrade.log.checkpoint.on_driver` before any job runs).

Layout (PROTOCOL.md "Checkpoints", "Multi-part checkpoint"): the rows of the checkpoint schema
(``txn, add, remove, metaData, protocol, domainMetadata``) go to the parts by
``repartition(numParts, coalesce(add.path, remove.path))`` - Spark's hash partitioning, which
:mod:`~delta_downgrade.log.checkpoint.spark_hash` reproduces for the Arrow path, so both put every row in the
same part. Protocol, metadata, txns and domains have a null key and land in part
``pmod(42, numParts) + 1``. Spark writes the parts as ``part-<partition>-…`` files into a
temporary directory under ``_delta_log`` (same file system, so the final move is a rename); a part
Spark leaves unwritten because it is empty gets an empty file of the same schema (every part of a
multi-part checkpoint must exist). Then each part is moved to its checkpoint name (an atomic
rename on local storage, :meth:`Storage.write_atomic` elsewhere), in part order, and only then
``_last_checkpoint`` is written (never moved backwards). A failure removes the parts this call
moved and the temporary directory: no half checkpoint stays under a final name.

Jobs: the reconciled rows (:mod:`~delta_downgrade.log.replay.spark_replay`: one read of the segment,
one shuffle) are persisted; a first job counts them (the part count depends on the number of
file actions), the write reads them again - for one part without a shuffle, for several after
the hash repartitioning above (and one more small job counts the rows per part).

Why Spark's own parquet writer and not pyarrow in ``mapPartitions``: the executors then need no
Python (and no access to this package's ``Storage``): the write goes through Hadoop's file system
on every storage Spark can write to, as delta-spark's does. The price is Spark's parquet layout
(its row groups, dictionary and statistics choices) instead of the Arrow writer's; the actions
are the same.

Not written here (:class:`~delta_downgrade.errors.SparkCheckpointUnsupportedError`, raised before
any job, so the caller can use ``checkpoint_table`` instead): V2 checkpoints
(``delta.checkpointPolicy=v2``), ``delta.checkpoint.writeStatsAsStruct`` tables, and - found by
the first job - a source checkpoint whose live adds have statistics only in ``stats_parsed``
(the Arrow path turns those back into JSON).
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from msgspec.structs import replace
import pyarrow as pa

from delta_downgrade.clock import SYSTEM_CLOCK, Clock
from delta_downgrade.errors import CorruptLogError, SparkCheckpointUnsupportedError
from delta_downgrade.log.format.checkpoint_columns import action_batch, metadata_array, protocol_array
from delta_downgrade.log.format.checkpoint_schema import CHECKPOINT_SCHEMA
from delta_downgrade.log.format.stats_struct import writes_stats_as_struct
from delta_downgrade.log.checkpoint.classic_writer import (CheckpointResult, NewCheckpointFiles, resolve_part_size,
                                                   supports_v2_checkpoint)
from delta_downgrade.log.checkpoint.on_driver import _refuse_unwritable, uses_v2_checkpoint
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR, classic_checkpoint_path, multipart_checkpoint_path
from delta_downgrade.log.format.last_checkpoint import write_last_checkpoint
from delta_downgrade.log.read.segment import LogSegment
from delta_downgrade.log.replay.spark_replay import checkpoint_files, reconciled_actions, segment_actions
from delta_downgrade.log.format.spark_types import spark_struct
from delta_downgrade.protocol.actions import Metadata, ProtocolAction
from delta_downgrade.protocol.table_config import TableConfig
from delta_downgrade.storage import Storage
from delta_downgrade.storage.write_errors import typed_write_error, typed_write_errors

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

_log = logging.getLogger(__name__)

#: Prefix of the temporary directory under ``_delta_log`` the Spark writer writes into. Its name
#: parses as no log file, so readers of the log ignore it while it exists.
TEMP_DIR_PREFIX = "_spark_checkpoint_"
_PART_FILE = re.compile(r"^part-(\d+)-.*\.parquet$")
_KEY = "_part_key"
_STATS_LOST = "_stats_lost"


def _check_writable(log: DeltaLog, version: int | None) -> tuple[int, LogSegment, ProtocolAction, Metadata]:
    """The version, its segment, protocol and metadata, after the checks ``checkpoint_table``
    makes; and the refusals of what this path does not write. Nothing is written before."""
    if log.storage.local_file(LOG_DIR) is None:
        # Spark writes the parts into a temporary directory of the log and they are published
        # by os.replace + fsync (a rename in the same file system: whole or absent, no copy
        # through the driver). An object store has no rename and a file only through its own
        # client: there the Arrow path writes the checkpoint through the storage layer.
        raise SparkCheckpointUnsupportedError(
            "the Spark checkpoint path writes only tables on a local file system (it publishes "
            "its files by renames); nothing was written. Use checkpoint_table (the Arrow path), "
            "which writes through the table's storage", table=log.table)
    snapshot = log.snapshot(version, check_read=False)  # validates the protocol
    _refuse_unwritable(log, snapshot.version, snapshot.protocol_action, snapshot.metadata)
    if uses_v2_checkpoint(snapshot.protocol, snapshot.metadata):
        raise SparkCheckpointUnsupportedError(
            f"version {snapshot.version} gets a V2 checkpoint (delta.checkpointPolicy=v2), which the "
            f"Spark checkpoint path does not write yet; nothing was written. Use checkpoint_table "
            f"(the Arrow path)", table=log.table)
    if writes_stats_as_struct(snapshot.metadata):
        raise SparkCheckpointUnsupportedError(
            "the table sets delta.checkpoint.writeStatsAsStruct=true (add.stats_parsed), which the "
            "Spark checkpoint path does not write yet; nothing was written. Use checkpoint_table "
            "(the Arrow path)", table=log.table)
    return snapshot.version, snapshot.segment, snapshot.protocol_action, snapshot.metadata


def _has_stats_parsed(spark: "SparkSession", storage: Storage, segment: LogSegment) -> bool:
    """Whether a parquet file of the segment's checkpoint has ``add.stats_parsed`` (footers only;
    a footer Spark cannot merge counts as yes)."""
    parquet, _ = checkpoint_files(storage, segment)
    if not parquet:
        return False
    try:
        schema = spark.read.option("mergeSchema", "true").parquet(*[storage.uri(p) for p in parquet]).schema
    except Exception:  # noqa: BLE001 - conflicting footers: assume the worst, the caller falls back
        return True
    if "add" not in schema.fieldNames():
        return False
    add = schema["add"].dataType
    return "stats_parsed" in getattr(add, "fieldNames", lambda: [])()


def _meta_rows(spark: "SparkSession", protocol: ProtocolAction, metadata: Metadata) -> "DataFrame":
    """The protocol and metaData rows, built by the Arrow path's own column builders (so both
    paths write the same values), as a two-row DataFrame of the checkpoint schema."""
    table = pa.Table.from_batches([action_batch("protocol", protocol_array(protocol)),
                                   action_batch("metaData", metadata_array(metadata))])
    return spark.createDataFrame(table, schema=spark_struct(CHECKPOINT_SCHEMA))


def checkpoint_rows(spark: "SparkSession", storage: Storage, segment: LogSegment, protocol: ProtocolAction,
                    metadata: Metadata, tombstone_cutoff_ms: int, *, check_stats: bool = False) -> "DataFrame":
    """Every row of the checkpoint of ``segment.version``, in the checkpoint schema, plus the
    key of the hash partitioning, ``_part_key`` (``coalesce(add.path, remove.path)``), and
    ``_stats_lost``: with ``check_stats``, true for a live add of the source checkpoint without
    JSON stats (its statistics may be in ``stats_parsed``, which this path does not read)."""
    from pyspark.sql import functions as F

    reconciled = reconciled_actions(segment_actions(spark, storage, segment), tombstone_cutoff_ms)
    lost = (F.col("_add_from_checkpoint") & F.col("add.stats").isNull()) if check_stats else F.lit(False)
    columns = [f.name for f in CHECKPOINT_SCHEMA]
    rows = reconciled.select(*[F.col(c) if c in reconciled.columns else F.lit(None).alias(c) for c in columns],
                             lost.alias(_STATS_LOST))
    schema = spark_struct(CHECKPOINT_SCHEMA)
    rows = rows.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in schema], _STATS_LOST)
    out = _meta_rows(spark, protocol, metadata).withColumn(_STATS_LOST, F.lit(False)).unionByName(rows)
    return out.withColumn(_KEY, F.coalesce(F.col("add.path"), F.col("remove.path")))


# --- moving Spark's output into place -------------------------------------------------------------

def _fsync(path: str, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _move(storage: Storage, source: str, target: str) -> None:
    """Put ``source`` under its final name ``target`` (both table-relative) whole or not at all:
    a rename in the table's directory tree (same file system; this path runs only on local
    tables, :func:`_check_writable`)."""
    with typed_write_errors(f"writing {target}", storage.root):
        src = _local_file(storage, source)
        _fsync(src)  # Spark's writer does not sync: the rename must not publish a file still in cache
        os.replace(src, _local_file(storage, target))


def _local_file(storage: Storage, rel_path: str) -> str:
    path = storage.local_file(rel_path)
    assert path is not None, "the Spark checkpoint path runs on local tables only"
    return path


def _remove_tree(storage: Storage, rel_dir: str) -> None:
    """Best effort: the temporary directory and everything in it."""
    try:
        shutil.rmtree(_local_file(storage, rel_dir), ignore_errors=True)
    except Exception:  # noqa: BLE001 - a leftover temp dir is harmless to readers; the result matters
        pass


def _spark_files(storage: Storage, rel_dir: str) -> dict[int, str]:
    """Spark's part files in ``rel_dir`` by partition id."""
    out: dict[int, str] = {}
    for status in storage.list_dir(rel_dir):
        match = _PART_FILE.match(status.path.rsplit("/", 1)[-1])
        if match:
            part = int(match.group(1))
            if part in out:
                raise RuntimeError(f"Spark wrote two files for partition {part} in {rel_dir}")
            out[part] = status.path
    return out


def _write_parts(rows: "DataFrame", num_parts: int, storage: Storage, tmp: str) -> dict[int, str]:
    """Spark writes the rows, one file per partition of the hash partitioning; an empty
    partition gets an empty file of the same schema. Returns the file of every partition."""
    spark = rows.sparkSession
    # One part: no shuffle, one task writes the (persisted) rows. Several: Spark's hash
    # partitioning of the path, the clustering PROTOCOL.md asks of multi-part checkpoints.
    data = (rows.coalesce(1) if num_parts == 1 else rows.repartition(num_parts, _KEY)).drop(_KEY)
    writer_options = {"compression": "snappy", "maxRecordsPerFile": "0"}
    data.write.options(**writer_options).parquet(storage.uri(f"{tmp}/data"))
    files = _spark_files(storage, f"{tmp}/data")
    missing = [p for p in range(num_parts) if p not in files]
    if missing:
        # Spark writes no file for an empty partition; an empty DataFrame still gets one file
        # with the schema (the one to copy).
        spark.createDataFrame([], data.schema).coalesce(1).write.options(**writer_options) \
            .parquet(storage.uri(f"{tmp}/empty"))
        (empty,) = _spark_files(storage, f"{tmp}/empty").values()
        body = storage.read_bytes(empty)
        for part in missing:
            files[part] = f"{tmp}/empty/part-{part:05d}-empty.parquet"
            storage.write_atomic(files[part], body)
    return files


def _publish(storage: Storage, version: int, files: dict[int, str], num_parts: int) -> list[str]:
    """Move the part files to their checkpoint names, part 1 first. On a failure the parts this
    call created are deleted (an incomplete multi-part checkpoint is ignored by readers but
    nothing else would delete it); parts that existed belong to another writer's checkpoint."""
    finals: list[str] = []
    with NewCheckpointFiles(storage) as new:
        for part in range(num_parts):
            final = (classic_checkpoint_path(version) if num_parts == 1
                     else multipart_checkpoint_path(version, part + 1, num_parts))
            new.publish(final, lambda: _move(storage, files[part], final))  # noqa: B023 - called at once
            finals.append(final)
        _fsync(_local_file(storage, LOG_DIR), directory=True)
    return finals


class _SparkErrors:
    """Context manager: a Spark job's failure as the package's typed error where there is one
    (storage full or not writable, a commit that is not JSON of the schema)."""

    def __init__(self, storage: Storage, version: int) -> None:
        self.storage, self.version = storage, version

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        if exc is None or not isinstance(exc, Exception) or type(exc).__module__.startswith("delta_downgrade"):
            return False
        typed = typed_write_error(exc, f"writing the checkpoint of version {self.version}", self.storage.root)
        if typed is not None:
            raise typed from exc
        text = str(exc)
        if "MALFORMED_RECORD_IN_PARSING" in text or "Malformed records" in text:
            raise CorruptLogError(
                f"a commit or checkpoint of the segment of version {self.version} holds a line that "
                f"is not a Delta action of the expected schema ({text.splitlines()[0][:300]}); the log "
                f"is damaged there, nothing was written", table=self.storage.root) from exc
        return False


def _counts(rows: "DataFrame") -> tuple[int, int, int, int]:
    """Rows, adds, removes, and live adds of the source checkpoint without JSON stats."""
    from pyspark.sql import functions as F

    got = rows.agg(F.count(F.lit(1)), F.count("add"), F.count("remove"),
                   F.count(F.when(F.col(_STATS_LOST), F.lit(1)))).collect()[0]
    return int(got[0]), int(got[1]), int(got[2]), int(got[3])


def _part_rows(rows: "DataFrame", num_parts: int) -> list[int]:
    """Rows per part: ``pmod(hash(key), n)`` is the partition ``repartition(n, key)`` gives."""
    from pyspark.sql import functions as F

    part = F.pmod(F.hash(F.col(_KEY)), F.lit(num_parts))
    found = {int(r[0]): int(r[1]) for r in rows.groupBy(part).count().collect()}
    return [found.get(p, 0) for p in range(num_parts)]


def spark_checkpoint_table(spark: "SparkSession", log: DeltaLog, version: int | None = None, *,
                           clock: Clock = SYSTEM_CLOCK, part_size: int | None = None) -> CheckpointResult:
    """Write the checkpoint of ``version`` (latest by default) with Spark jobs on ``spark``: the
    same files and actions as :func:`~delta_downgrade.log.checkpoint.on_driver.checkpoint_table`, for logs
    whose file list should not be held by the driver.

    Raises what ``checkpoint_table`` raises before writing (protocol, rule (b), features, policy),
    :class:`~delta_downgrade.errors.SparkCheckpointUnsupportedError` for what this path does not
    write (the caller falls back to ``checkpoint_table``), a typed storage error when the storage
    refuses the write, :class:`~delta_downgrade.errors.CorruptLogError` for a commit line that is
    not an action of the schema. A failure leaves no file under a checkpoint name that this call
    created, and no temporary directory."""
    from pyspark import StorageLevel

    log.refresh()
    version, segment, protocol, metadata = _check_writable(log, version)
    storage = log.storage
    now_ms = clock.now_ms()
    cutoff = TableConfig(metadata.configuration).tombstone_cutoff_ms(now_ms)
    check_stats = _has_stats_parsed(spark, storage, segment)
    tmp = f"{LOG_DIR}/{TEMP_DIR_PREFIX}{uuid.uuid4().hex}"
    cached: DataFrame | None = None
    started = time.monotonic()
    try:
        with _SparkErrors(storage, version):
            with typed_write_errors(f"creating {tmp}", storage.root):
                Path(_local_file(storage, tmp)).mkdir()
            # persisted: the counts (which decide the part count) and the write read it once
            cached = checkpoint_rows(spark, storage, segment, protocol, metadata, cutoff,
                                     check_stats=check_stats).persist(StorageLevel.MEMORY_AND_DISK)
            total, num_adds, num_removes, stats_lost = _counts(cached)
            if stats_lost:
                raise SparkCheckpointUnsupportedError(
                    f"{stats_lost} live files of the checkpoint of version {segment.start_version - 1} "
                    f"have statistics only in add.stats_parsed, which the Spark checkpoint path does "
                    f"not turn back into JSON; nothing was written. Use checkpoint_table (the Arrow "
                    f"path)", table=log.table)
            rows = cached.drop(_STATS_LOST)
            num_parts = 1 if supports_v2_checkpoint(protocol) else \
                max(1, math.ceil((num_adds + num_removes) / resolve_part_size(metadata, part_size)))
            _log.info("Spark checkpoint of %s at version %d: %d adds, %d tombstones reconciled in %.1f s; "
                      "%d part(s)", log.table, version, num_adds, num_removes, time.monotonic() - started,
                      num_parts)
            part_rows = [total] if num_parts == 1 else _part_rows(rows, num_parts)
            files = _write_parts(rows, num_parts, storage, tmp)
            finals = _publish(storage, version, files, num_parts)
            _log.info("Spark checkpoint of %s at version %d written in %.1f s", log.table, version,
                      time.monotonic() - started)
    finally:
        if cached is not None:
            cached.unpersist()
        _remove_tree(storage, tmp)
    assert sum(part_rows) == total
    result = CheckpointResult(
        version=version, paths=tuple(finals), num_actions=total, num_add_files=num_adds,
        size_in_bytes=sum(storage.status(p).size for p in finals),
        parts=num_parts if num_parts > 1 else None, last_checkpoint_updated=False,
        created_ms=now_ms, part_rows=tuple(part_rows))
    updated = write_last_checkpoint(storage, result.last_checkpoint_info())
    log.refresh()
    return replace(result, last_checkpoint_updated=updated)
