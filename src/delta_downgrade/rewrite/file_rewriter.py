"""Rewrite data files through Spark, one output file per input file: the session confs that keep
each input one split (row positions survive), where each output is written, concurrent jobs,
batches, and the footers read concurrently. Column-mapping removal and type widening use it.

Spark reads each input and writes each output at its ``storage.uri`` (the table's URI on a
cluster); the driver lists the output, reads footers and removes a failed write through the
table's storage (rewrite/data_files.py), never through a local path, so a table in a bucket
takes the same code as one on disk. An object store has no rename, so nothing is moved: Spark
writes straight into a fresh directory ``rewrite-<16 hex>/`` next to the input, and its file
(named by Spark, ``part-00000-<uuid>-c000.<codec>.parquet``) is the new data file. Spark's output
committer publishes the file only when the job succeeds, so nothing half-written ever has a
data-file name; a killed job leaves only the committer's hidden ``_temporary/`` in that directory.
"""

from __future__ import annotations

import contextlib
import posixpath
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar

from msgspec import Struct
from delta_downgrade.errors import FileLayoutError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.protocol.actions import AddFile
from delta_downgrade.rewrite.data_files import DataFiles, read_footer, remove_tree, written_parquet_files
from delta_downgrade.rewrite.file_plan import FilePlan, plan_file
from delta_downgrade.rewrite.physical_schema import Naming
from delta_downgrade.rewrite.row_tracking import (
    ROW_ID, MaterializedColumns, constant, stable_row_commit_version, stable_row_id,
)
from delta_downgrade.rewrite.spark_io import escape_glob, metadata_column, parquet_writer, quote_name
from delta_downgrade.rewrite.staging import new_rewrite_dir_name
from delta_downgrade.storage import typed_write_errors

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import Column, DataFrame, SparkSession

_T = TypeVar("_T")

DEFAULT_WORKERS = 4


# --- Spark: one output file per input file ---------------------------------------------------------

# Session confs for the rewrite. The first two make every input file exactly one split (so one
# task reads it front to back and row positions survive); the others make name resolution exact,
# keep Spark from matching by field id, and write timestamps the way Delta readers expect.
REWRITE_CONF = {
    "spark.sql.files.maxPartitionBytes": str(1 << 50),
    "spark.sql.files.openCostInBytes": str(1 << 50),
    "spark.sql.caseSensitive": "true",
    "spark.sql.parquet.fieldId.read.enabled": "false",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
    "spark.sql.files.ignoreMissingFiles": "false",
    "spark.sql.files.ignoreCorruptFiles": "false",
    "spark.sql.parquet.mergeSchema": "false",
}


@contextlib.contextmanager
def rewrite_conf(spark: "SparkSession", progress: Callable[[str], None]) -> Iterator[None]:
    """Set ``REWRITE_CONF`` for the duration of a rewrite and restore the previous values."""
    saved: dict[str, str | None] = {}
    for key, value in REWRITE_CONF.items():
        try:
            saved[key] = spark.conf.get(key, None)
            spark.conf.set(key, value)
        except Exception as exc:  # noqa: BLE001 - e.g. a serverless session refusing a conf
            progress(f"could not set {key}={value} ({type(exc).__name__}); continuing without it")
    try:
        yield
    finally:
        for key, old in saved.items():
            try:
                if old is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, old)
            except Exception:  # noqa: BLE001
                pass


class ProgressThrottle:
    """When a per-file rewrite says how far it is: at the last file, at each further tenth of the
    files, and otherwise at most every ``interval_s`` seconds, so that a rewrite of thousands of
    files tells about as often as the deletion-vector purge, which tells once per committed batch
    (not one line per file)."""

    def __init__(self, total: int, interval_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.interval_s, self.clock = total, interval_s, clock
        self._last_at = clock()
        self._last_tenth = 0

    def due(self, done: int) -> bool:
        now = self.clock()
        tenth = (done * 10) // self.total if self.total else 10
        if done >= self.total or tenth > self._last_tenth or now - self._last_at >= self.interval_s:
            self._last_at, self._last_tenth = now, tenth
            return True
        return False


class Rewritten(Struct):
    """The new file of one rewritten input file (``path`` None: the input had no rows): its
    decoded table-relative path, and its footer (read once, for the statistics)."""

    source: AddFile
    path: str | None
    size: int
    num_rows: int
    modification_time: int
    footer: "pq.FileMetaData | None" = None


class FileRewriter:
    """Writes new data files next to the old ones, one per input, through Spark: each into a
    fresh directory ``rewrite-<16 hex>/`` in the input's directory (at the table root for an
    input outside the table), where Spark's output committer publishes it (module docstring).
    Files written but never committed are orphans that VACUUM removes.
    """

    def __init__(self, log: DeltaLog, *, spark: "SparkSession | None" = None,
                 workers: int = DEFAULT_WORKERS,
                 output_parent: Callable[[AddFile], str] | None = None) -> None:
        """``output_parent``: the table-relative directory under which the output of an input
        goes, instead of the input's own directory (whose name may mean nothing to the new
        table: a physical partition column's)."""
        self._spark = spark
        self.output_parent = output_parent
        self.storage = log.storage
        self.files = DataFiles(log.storage)
        self.table = log.table
        self.workers = max(1, workers)

    @property
    def session(self) -> "SparkSession":
        """The Spark session, started on first use (planning and dry runs need none)."""
        if self._spark is None:
            from delta_downgrade.spark import get_spark

            self._spark = get_spark()
        return self._spark

    def input_location(self, add: AddFile) -> str:
        """Where Spark reads ``add``: its ``storage.uri`` (decoded, glob characters not escaped)."""
        return self.files.spark_location(add.path)

    def footer_metadata(self, add: AddFile) -> "pq.FileMetaData":
        """The parquet footer of ``add``, through the storage (no data read)."""
        return self.files.footer(add.path)

    def footer(self, add: AddFile) -> tuple["pa.Schema", int]:
        meta = self.footer_metadata(add)
        return meta.schema.to_arrow_schema(), int(meta.num_rows)

    def _output_dir(self, add: AddFile) -> str:
        """The fresh directory (decoded, table-relative) the rewrite of ``add`` goes to."""
        relative = self.files.relative(add.path)
        if self.output_parent is not None:
            parent = self.output_parent(add)
        else:
            parent = posixpath.dirname(relative) if relative is not None else ""
        name = new_rewrite_dir_name()
        return f"{parent}/{name}" if parent else name

    def rewrite(self, add: AddFile, plan: FilePlan) -> Rewritten:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructType, _parse_datatype_json_value

        out_rel = self._output_dir(add)
        reader = self.session.read.schema(StructType.fromJson(plan.read_schema))
        df = reader.parquet(escape_glob(self.input_location(add)))
        selected = []
        for c in plan.columns:
            if c.row_tracking is not None:
                selected.append(self._stable_column(df, add, c.source, c.row_tracking).alias(c.out_name))
                continue
            source = F.col(quote_name(c.source)) if c.source is not None else F.lit(None)
            target = _parse_datatype_json_value(c.target_type)
            column = source.cast(target)
            selected.append(column.alias(c.out_name, metadata=c.out_metadata) if c.out_metadata
                            else column.alias(c.out_name))
        # Disk full / read-only while Spark writes: the typed storage errors, as for every other
        # write of the package (storage.typed_write_errors).
        with typed_write_errors(f"writing the rewrite of {add.path} (into {out_rel})", self.table):
            return self._write(add, plan, df.select(*selected), out_rel)

    @staticmethod
    def _stable_column(df: "DataFrame", add: AddFile, source: str | None, kind: str) -> "Column":
        """The stable row ID or row commit version of each row of ``add`` (rewrite/row_tracking).
        ``_metadata.row_index`` is the row's physical index in the input file, which is what a
        default generated row ID adds to ``baseRowId``."""
        from pyspark.sql import functions as F

        materialized = F.col(quote_name(source)) if source is not None else None
        if kind == ROW_ID:
            row_index = metadata_column(df).getField("row_index")
            return stable_row_id(materialized, constant(add.baseRowId), row_index)
        return stable_row_commit_version(materialized, constant(add.defaultRowCommitVersion))

    def _write(self, add: AddFile, plan: FilePlan, df: "DataFrame", out_rel: str) -> Rewritten:
        """Spark writes ``df`` as one file into ``out_rel``; the file is checked (one file, the
        planned row count) through the storage. Any failure removes what the write left."""
        try:
            parquet_writer(df.coalesce(1), "snappy").option("maxRecordsPerFile", 0) \
                .parquet(self.storage.uri(out_rel))
            written = written_parquet_files(self.storage, out_rel)
            if len(written) > 1:
                raise FileLayoutError(f"Spark wrote {len(written)} files for {add.path}; expected one",
                                      table=self.table)
            if not written:
                if plan.num_rows != 0:
                    raise FileLayoutError(f"Spark wrote no file for {add.path}, which has "
                                          f"{plan.num_rows} rows; nothing was committed", table=self.table)
                remove_tree(self.storage, out_rel)
                return Rewritten(add, None, 0, 0, 0)
            status = written[0]
            footer = read_footer(self.storage, status.path)
            rows = int(footer.num_rows)
            if rows != plan.num_rows:
                raise FileLayoutError(
                    f"the rewrite of {add.path} has {rows} rows instead of {plan.num_rows}; nothing was "
                    f"committed (check spark.sql.files.ignoreCorruptFiles/ignoreMissingFiles)", table=self.table)
            return Rewritten(add, status.path, status.size, rows, status.modification_time_ms, footer)
        except BaseException:
            remove_tree(self.storage, out_rel)
            raise

    def rewrite_all(self, items: Sequence[tuple[AddFile, FilePlan]], progress: Callable[..., None],
                    label: str) -> list[Rewritten]:
        """Rewrite ``items`` with up to ``workers`` concurrent Spark jobs; progress in files and
        bytes, told to ``progress`` with :meth:`DropRun.progress`'s counts (``step=label``). Any
        failure stops the rewrite (files already written become orphans)."""
        total_files = len(items)
        total_bytes = sum(a.size or 0 for a, _ in items)
        done: list[Rewritten] = []
        lock = threading.Lock()
        state = {"bytes": 0}
        progress(f"{label}: rewriting {total_files} files, {total_bytes} bytes", step=label, done=0,
                 total=total_files, done_bytes=0, total_bytes=total_bytes)

        throttle = ProgressThrottle(total_files)

        def one(item: tuple[AddFile, FilePlan]) -> Rewritten:
            result = self.rewrite(*item)
            with lock:
                done.append(result)
                state["bytes"] += item[0].size or 0
                if throttle.due(len(done)):
                    progress(f"{label}: rewrote {len(done)}/{total_files} files, "
                             f"{state['bytes']}/{total_bytes} bytes", step=label, done=len(done),
                             total=total_files, done_bytes=state["bytes"], total_bytes=total_bytes)
            return result

        if self.workers == 1 or total_files <= 1:
            return [one(item) for item in items]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = [pool.submit(one, item) for item in items]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()  # stop at the first failure; running jobs finish
                raise

    def footers(self, files: Sequence[AddFile]) -> Iterator[tuple["pa.Schema", int]]:
        """The footers of ``files`` (schema, row count) in order, read concurrently through the
        storage and yielded as they are consumed; no data is read."""
        for meta in self.files.footers([a.path for a in files]):
            yield meta.schema.to_arrow_schema(), int(meta.num_rows)

    def plans(self, files: Sequence[AddFile], schema: dict[str, Any], partition_columns: Sequence[str],
              configuration: dict[str, str], naming: Naming,
              preserve: MaterializedColumns | None = None) -> Iterator[tuple[AddFile, FilePlan]]:
        """Each of ``files`` with its rewrite plan (``file_plan.plan_file``), from its footer alone;
        ``preserve``: the materialized row-tracking columns to fill with stable values."""
        for add, (arrow_schema, num_rows) in zip(files, self.footers(files), strict=True):
            yield add, plan_file(schema, partition_columns, configuration, arrow_schema, num_rows, naming,
                                 where=f"data file {add.path}", preserve=preserve)


def in_batches(items: Sequence[_T], size: int) -> list[Sequence[_T]]:
    return [items[i:i + size] for i in range(0, len(items), max(1, size))]
