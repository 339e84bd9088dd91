"""Purge deletion vectors: rewrite every live file that has a DV without its deleted rows, on Spark
(delta-spark's ``REORG TABLE … APPLY (PURGE)``, PROTOCOL.md "Deletion Vectors").

How it works:

0. **Verify every DV of the latest version on the driver** (size, checksum, structure and
   cardinality, without expanding rows; a DV file shared by many data files is read once). A DV
   that cannot be found or read stops the purge *before anything is written or committed*:
   deleted rows never come back.

Then batch by batch (≤ ``batch_files`` files, ≤ ``batch_bytes`` bytes each; up to
``pipeline_depth`` batches rewritten at once, committed in order):

1. **Decode the batch's DVs** on the driver (only the bitmaps of its files).
2. **Rewrite on Spark**, one job per output directory (input files of one directory with the
   same partition values), the jobs of a batch running concurrently. The directory's input files
   are read in one scan with the table's *physical* schema (column-mapping tables stay physical;
   parquet field ids are written back), each row carrying ``_metadata.row_index`` and what
   identifies its file; a left anti join removes the deleted rows:

   - ``broadcast`` (while the batch deletes ≤ ``broadcast_max_rows`` rows): the driver turns the
     bitmaps into (64-row block, 64-bit mask) pairs — clustered deletes shrink a lot — and
     broadcasts them; nothing is shuffled, so Spark writes one file per input split (small files
     packed together as in any Spark scan, large ones split).
   - ``shuffle`` (huge DVs): only the *runs* of deleted rows leave the driver; executors expand
     them and a sort-merge anti join removes the rows.

   Rows are keyed by one long (``row_index`` scaled, plus a per-file residue of the file size or
   of a CRC of the file name; see ``dv_purge_join.JoinKey``) so that Spark uses its fastest hash relation.
   A single scan per directory (not one per file) matters: a union of per-file scans makes
   Spark push the join into every branch, with one broadcast each.

   Spark reads every file and writes every output at its ``storage.uri`` (the table's URI on
   a cluster); the driver reads DVs, footers and listings, and deletes an uncommitted batch's
   files, through the table's storage (never a local path).
   Outputs go to a fresh directory ``dv-purge-<id>/`` inside the input directory, named by
   Spark (``part-…-c000.snappy.parquet``); a fresh directory is the only portable way to know
   exactly which files a Spark write committed (Databricks' DBIO leaves uncommitted attempts
   visible in shared directories).
3. **Statistics** of the new files: exact ``numRecords`` and tight ``minValues``/``maxValues``/
   ``nullCount`` (PROTOCOL.md "Per-file Statistics", physical column names, the first
   ``delta.dataSkippingNumIndexedCols`` leaf columns or ``delta.dataSkippingStatsColumns``, and
   always the clustering columns of a clustered table, PROTOCOL.md "Clustered Table"). They come
   from a listing of each output directory and the parquet footers, read through the table's
   storage (pyarrow on ``storage.open_input``: ranged reads on an object store, footers only);
   on Databricks, whose commit protocol leaves uncommitted attempts visible in a listing, from
   one Spark aggregation per batch grouped by ``_metadata.file_path``.
4. **Check** that each output directory holds exactly Σ(numRecords − cardinality) rows of its
   inputs, then **commit** ``remove(old file with its DV, dataChange=false)`` +
   ``add(new file, dataChange=false, stats)`` as ``REORG`` with ``applyPurge``. Files whose DV
   deletes every row are only removed; a DV deleting nothing is dropped without a rewrite (the
   file is recommitted under its path, with its row IDs, tags and clustering provider).

Row tracking (PROTOCOL.md "Row Tracking"): the new files are new files, so the commit gives them
fresh row IDs and the commit's version (log/row_ids.py). When row tracking is enabled, every kept
row's stable row ID (its materialized row ID, else its old file's ``baseRowId`` + its
``_metadata.row_index``) and stable row commit version (materialized, else the old file's
``defaultRowCommitVersion``) are written into the materialized columns of the new file, the
per-file defaults looked up by the same per-file key as the join (rewrite/row_tracking.py).

A crash leaves the committed batches done; a rerun only sees the files that still carry DVs.
Files written by an uncommitted batch are orphans that VACUUM removes. Progress is reported as
``purged <done>/<total> files, <bytes done>/<bytes total> bytes``.
"""

from __future__ import annotations

import os
import posixpath
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Sequence
from urllib.parse import unquote

from msgspec import Struct, field
from msgspec.structs import replace
from delta_downgrade.deletion_vectors import DvFileReader, parse_dv_runs
from delta_downgrade.errors import (
    ConcurrentWriteError, DeletionVectorRowIndexError, DeltaDowngradeError, DvPurgeError,
    RowIdAssignmentWithoutStatsError,
)
from delta_downgrade.log.commit import rebase_unless_files_touched
from delta_downgrade.log.row_ids import RowTracking, row_tracking_of
from delta_downgrade.protocol.actions import AddFile, AnyAction, Metadata
from delta_downgrade.protocol.clustering import clustering_columns
from delta_downgrade.rewrite.actions import log_path, remove_action
from delta_downgrade.rewrite.data_files import (
    DataFiles, concurrent_map, read_footer, remove_tree, storage_options_of, written_parquet_files,
)
from delta_downgrade.rewrite.dv_purge_join import join_key, write_group
from delta_downgrade.rewrite.dv_purge_plan import (
    DEFAULT_BATCH_BYTES, DEFAULT_BATCH_FILES, PurgeFile, PurgeGroup, files_to_purge, group_batch,
    new_dir_name, plan_batches,
)
from delta_downgrade.rewrite.physical_schema import physical_schemas
from delta_downgrade.rewrite.row_tracking import MaterializedColumns, has_stable_values
from delta_downgrade.rewrite.spark_io import escape_glob, metadata_column
from delta_downgrade.rewrite.stats import (
    StatsLeaf, footer_stats, spark_leaf_aggregates, spark_leaf_stats, stats_json, stats_leaves,
)
from delta_downgrade.rewrite.writer_requirements import ensure_files_can_be_rewritten
from delta_downgrade.storage import Storage, typed_write_error

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from delta_downgrade.log.snapshot import Snapshot
    from delta_downgrade.drop.run import DropRun

PURGE_OPERATION = "REORG"
PURGE_PARAMETERS: dict[str, Any] = {"predicate": [], "applyPurge": True}
#: The name of the purge's progress counts (``DropRun.progress``).
PURGE_STEP = "purge deletion vectors"

DEFAULT_BROADCAST_MAX_ROWS = 5_000_000
DEFAULT_PARALLEL_JOBS = 4
DEFAULT_PIPELINE_DEPTH = 2
COMPRESSION_CODEC = "delta.parquet.compression.codec"


class NewFile(Struct):
    """A file the rewrite wrote: its log path (encoded, table-relative) and what the add needs."""

    path: str
    size: int
    modification_time: int
    num_records: int
    stats: str


def _compression(metadata: Metadata) -> str:
    codec = (metadata.configuration.get(COMPRESSION_CODEC) or "snappy").lower()
    return {"uncompressed": "none"}.get(codec, codec)


def _spark_new_files(spark: "SparkSession", storage: Storage, groups: Sequence[PurgeGroup], read_schema: Any,
                     leaves: Sequence[StatsLeaf]) -> dict[str, list[NewFile]]:
    """Row counts, sizes, modification times and statistics of the written files, by one Spark
    aggregation grouped by ``_metadata.file_path`` (works on any file system and honours the
    commit protocol's view of committed files)."""
    from pyspark.sql import functions as F

    if not groups:
        return {}
    paths = [escape_glob(storage.uri(unquote(g.out_rel))) for g in groups]
    df = spark.read.schema(read_schema).parquet(*paths)
    meta = metadata_column(df)
    aggs = [F.count(F.lit(1)).alias("n"), F.first(meta.getField("file_size")).alias("size"),
            F.first(F.unix_millis(meta.getField("file_modification_time"))).alias("mtime"),
            *spark_leaf_aggregates(leaves)]
    rows = df.groupBy(meta.getField("file_path").alias("path")).agg(*aggs).collect()
    by_dir = {g.dir_name: g for g in groups}
    out: dict[str, list[NewFile]] = {g.dir_name: [] for g in groups}
    for row in rows:
        segments = row["path"].rstrip("/").split("/")
        name, parent = unquote(segments[-1]), unquote(segments[-2])
        group = by_dir.get(parent)
        if group is None:
            raise DvPurgeError(f"Spark reported an unexpected output file {row['path']}")
        n = int(row["n"])
        out[group.dir_name].append(NewFile(
            path=f"{group.out_rel}/{log_path(name)}", size=int(row["size"]), modification_time=int(row["mtime"]),
            num_records=n, stats=stats_json(n, leaves, spark_leaf_stats(row, leaves))))
    return out


def _footer_new_files(storage: Storage, groups: Sequence[PurgeGroup],
                      leaves: Sequence[StatsLeaf]) -> dict[str, list[NewFile]]:
    """The same from a listing of each output directory and the parquet footers, read through
    the storage (ranged reads on an object store; no Spark job)."""
    listed = [(g, status) for g in groups for status in written_parquet_files(storage, unquote(g.out_rel))]
    footers = concurrent_map(lambda item: read_footer(storage, item[1].path), listed)
    out: dict[str, list[NewFile]] = {g.dir_name: [] for g in groups}
    for (g, status), footer in zip(listed, footers, strict=True):
        rows, values = footer_stats(footer, leaves)
        if rows == 0:
            continue  # Spark writes an empty file when every row of a job is gone
        name = status.path.rsplit("/", 1)[-1]
        out[g.dir_name].append(NewFile(path=f"{g.out_rel}/{log_path(name)}", size=status.size,
                                       modification_time=status.modification_time_ms, num_records=rows,
                                       stats=stats_json(rows, leaves, values)))
    return out


def _count_input_rows(spark: "SparkSession", files: Sequence[PurgeFile], read_schema: Any) -> int:
    df = spark.read.schema(read_schema).parquet(*[f.spark_path for f in files])
    return int(df.count())


def _cleanup(storage: Storage, groups: Sequence[PurgeGroup]) -> None:
    """Best effort: delete what an uncommitted batch wrote, through the storage (files, then
    the emptied directories where the store has directories)."""
    for g in groups:
        remove_tree(storage, unquote(g.out_rel))


def _check_row_ids_assignable(snapshot: "Snapshot", tracking: RowTracking, files: Sequence[PurgeFile]) -> None:
    """Before anything is written: a file whose DV deletes nothing is recommitted under its path;
    without a ``baseRowId`` it needs fresh row IDs at commit time, hence its ``numRecords``
    (the rewritten files always have theirs)."""
    if not tracking.assigns:
        return
    for f in files:
        if f.cardinality == 0 and f.add.baseRowId is None and f.num_records is None:
            raise RowIdAssignmentWithoutStatsError(
                f"data file {f.add.path} has neither row IDs nor a numRecords statistic, and the "
                f"table supports rowTracking: recommitting it without its (empty) deletion vector "
                f"needs fresh row IDs (PROTOCOL.md \"Writer Requirements for Row Tracking\"); "
                f"nothing was written. Collect statistics for the table (ANALYZE TABLE … COMPUTE "
                f"DELTA STATISTICS), then rerun", table=snapshot.table, feature="deletionVectors",
                params={"path": f.add.path})


def verify_deletion_vectors(snapshot: "Snapshot", reader: DvFileReader | None = None) -> int:
    """Resolve, read and check every DV of the live files — size, checksum, structure and
    cardinality, without expanding row indexes — and raise a :class:`DeletionVectorError` naming
    the data file and the DV for the first that cannot be used. Returns the number checked."""
    reader = reader or DvFileReader(snapshot.storage, storage_options=storage_options_of(snapshot.storage))
    count = 0
    for add in sorted(snapshot.state().files.values(), key=lambda a: a.path):
        if add.dv is not None:
            reader.read_verified_bytes(add.dv, data_file=add.path)
            count += 1
    return count


class _Context(Struct):
    """What every batch of one purge shares."""

    run: "DropRun"
    spark: "SparkSession | None"  # None: no batch writes a file (nothing for Spark to do)
    storage: Storage
    reader: DvFileReader
    read_schema: Any
    write_schema: Any
    leaves: list[StatsLeaf]
    codec: str
    use_footers: bool
    strategy: str
    broadcast_max_rows: int
    parallel_jobs: int
    preserve: MaterializedColumns | None = None  # row tracking enabled: the stable-value columns

    @property
    def session(self) -> "SparkSession":
        """The Spark session of a batch that writes files (purge_deletion_vectors starts one
        whenever a batch does)."""
        if self.spark is None:
            raise AssertionError("a batch writes files, but no Spark session was started")
        return self.spark


class _Batch(Struct):
    files: list[PurgeFile]
    groups: list[PurgeGroup]
    new_files: dict[str, list[NewFile]] = field(default_factory=dict)

    @property
    def to_write(self) -> list[PurgeGroup]:
        return [g for g in self.groups if g.rewritten]


def _load_dvs(ctx: _Context, batch: _Batch, strategy: str) -> dict[int, Any]:
    """The batch's DVs: row indexes (``broadcast``) or runs (``shuffle``) per batch index."""
    dvs: dict[int, Any] = {}
    for i, f in enumerate(batch.files):
        if f.cardinality == 0 or f.fully_deleted:
            continue
        if strategy == "shuffle":
            data = ctx.reader.read_verified_bytes(f.dv, data_file=f.add.path)
            dvs[i] = parse_dv_runs(data)
            continue
        values = ctx.reader.read(f.dv, data_file=f.add.path)
        if f.num_records is not None and len(values) and int(values[-1].as_py()) >= f.num_records:
            raise DeletionVectorRowIndexError(
                f"the deletion vector of data file {f.add.path} deletes row {values[-1].as_py()}, but the "
                f"file has {f.num_records} rows. Nothing was committed for it", table=ctx.run.table)
        dvs[i] = values
    return dvs


def _rewrite_batch(ctx: _Context, batch: _Batch) -> _Batch:
    """Write the batch's new files, describe them and check their row counts. On failure the
    batch's new files are deleted (best effort) and the error propagates."""
    to_write = batch.to_write
    if not to_write:
        return batch
    deleted = sum(f.cardinality for _g in to_write for _i, f in _g.rewritten)
    strategy = ctx.strategy if ctx.strategy != "auto" else (
        "broadcast" if deleted <= ctx.broadcast_max_rows else "shuffle")
    dvs = None
    for allow_packed in (True, False):
        try:
            if dvs is None:
                dvs = _load_dvs(ctx, batch, strategy)
            with ThreadPoolExecutor(max_workers=max(1, min(ctx.parallel_jobs, len(to_write)))) as pool:
                futures = [pool.submit(write_group, ctx.session, ctx.storage.uri(unquote(g.out_rel)), g, dvs,
                                       strategy, ctx.read_schema, ctx.write_schema, ctx.codec, allow_packed,
                                       ctx.preserve)
                           for g in to_write]
                for fut in futures:
                    fut.result()
            if ctx.use_footers:
                batch.new_files = _footer_new_files(ctx.storage, to_write, ctx.leaves)
            else:
                batch.new_files = _spark_new_files(ctx.session, ctx.storage, to_write, ctx.read_schema, ctx.leaves)
            _verify_counts(ctx, batch)
            return batch
        except DvPurgeError:
            _cleanup(ctx.storage, to_write)
            # A log whose file sizes are wrong defeats the size-keyed join: retry once with names.
            if allow_packed and any(join_key(g).mode == "size" for g in to_write):
                for g in to_write:
                    g.dir_name = new_dir_name()
                continue
            raise
        except DeltaDowngradeError:
            _cleanup(ctx.storage, to_write)
            raise
        except Exception as exc:  # Spark / storage failures: name the files, say nothing was committed
            _cleanup(ctx.storage, to_write)
            dirs = ", ".join(sorted({posixpath.dirname(unquote(f.add.path)) or "." for f in batch.files}))
            # Disk full / read-only: the storage layer's typed errors (storage.typed_write_error).
            typed = typed_write_error(exc, f"writing the purged copies of {len(batch.files)} file(s) "
                                           f"(in {dirs})", ctx.run.table)
            if typed is not None:
                raise typed from exc
            raise DvPurgeError(
                f"rewriting {len(batch.files)} file(s) with deletion vectors (in {dirs}) failed: "
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}. Nothing was "
                f"committed for these files; earlier batches stay committed, rerun to continue",
                table=ctx.run.table) from exc
        except BaseException:
            _cleanup(ctx.storage, to_write)
            raise
    raise AssertionError("unreachable")


def _verify_counts(ctx: _Context, batch: _Batch) -> None:
    """Each output directory must hold exactly the live rows of its inputs."""
    for g in batch.to_write:
        written = sum(n.num_records for n in batch.new_files.get(g.dir_name, []))
        expected = g.expected_rows
        if expected is None:
            inputs = [f for _i, f in g.rewritten]
            physical = _count_input_rows(ctx.session, inputs, ctx.read_schema)
            expected = physical - sum(f.cardinality for f in inputs)
        if written != expected:
            raise DvPurgeError(
                f"rewriting {len(g.rewritten)} file(s) into {unquote(g.out_rel)} kept {written} rows, but "
                f"the log says {expected} rows are live; nothing was committed for these files",
                table=ctx.run.table, params={"directory": unquote(g.out_rel), "written": written,
                                             "expected": expected})


def _batch_actions(batch: _Batch, now: int) -> list[AnyAction]:
    actions: list[AnyAction] = []
    for g in batch.groups:
        for _i, f in g.files:
            actions.append(remove_action(f.add, now, with_stats=True))
            if f.cardinality == 0:
                # A DV deleting nothing: the same file recommitted without the DV. It keeps its
                # baseRowId and defaultRowCommitVersion (PROTOCOL.md "Writer Requirements for Row
                # Tracking": recommitted adds carry those of the last add of the path), tags,
                # clustering provider and any field this package does not know.
                actions.append(replace(f.add, deletionVector=None, dataChange=False))
        providers = {f.add.clusteringProvider for _i, f in g.files}
        provider = providers.pop() if len(providers) == 1 else None
        for n in batch.new_files.get(g.dir_name, []):
            actions.append(AddFile(path=n.path, partitionValues=dict(g.partition_values), size=n.size,
                                   modificationTime=n.modification_time, dataChange=False,
                                   stats=n.stats, clusteringProvider=provider))
    return actions


def _commit_batch(ctx: _Context, batch: _Batch) -> int:
    actions = _batch_actions(batch, ctx.run.clock.now_ms())
    paths = {unquote(f.add.path) for f in batch.files}
    # PROTOCOL.md "Writer Requirements for Row Tracking": preserved when every copied row's stable
    # values went into the materialized columns (true when no row was copied).
    copied = [f for g in batch.to_write for _i, f in g.rewritten]
    preserved = not copied or (ctx.preserve is not None and all(has_stable_values(f.add) for f in copied))
    try:
        return ctx.run.commit(actions, PURGE_OPERATION, PURGE_PARAMETERS,
                              resolve=rebase_unless_files_touched(paths, actions, allow_new_files=True,
                                                                                 operation="REORG"),
                              row_tracking_preserved=preserved)
    except ConcurrentWriteError:
        _cleanup(ctx.storage, batch.to_write)  # raised before anything was committed
        raise


def purge_deletion_vectors(run: "DropRun", *, batch_files: int = DEFAULT_BATCH_FILES,
                           batch_bytes: int = DEFAULT_BATCH_BYTES,
                           broadcast_max_rows: int = DEFAULT_BROADCAST_MAX_ROWS,
                           strategy: str = "auto", stats: str = "auto",
                           parallel_jobs: int = DEFAULT_PARALLEL_JOBS,
                           pipeline_depth: int = DEFAULT_PIPELINE_DEPTH,
                           spark: "SparkSession | None" = None,
                           on_batch_committed: Callable[[int, int], None] | None = None) -> bool:
    """Rewrite every live file that has a DV without its deleted rows; returns whether there was
    anything to purge.

    Every DV is verified before the first batch is written. Batches are rewritten up to
    ``pipeline_depth`` at a time (so that one batch's tail overlaps the next) and committed in
    order. ``strategy``: ``auto`` | ``broadcast`` | ``shuffle``; ``stats``: ``auto`` | ``footer``
    (through the storage) | ``spark``. ``on_batch_committed(version, files_done)`` runs after each
    committed batch (tests use it to simulate a crash).
    """
    if strategy not in ("auto", "broadcast", "shuffle"):
        raise ValueError(f"unknown strategy {strategy!r}")
    if stats not in ("auto", "footer", "spark"):
        raise ValueError(f"unknown stats mode {stats!r}")
    snapshot = run.latest()
    storage = run.log.storage
    data_files = DataFiles(storage)
    files = files_to_purge(snapshot, data_files)
    if not files:
        return False
    ensure_files_can_be_rewritten(snapshot.protocol, snapshot.metadata,
                                  purpose="purge deletion vectors")
    tracking = row_tracking_of(snapshot.protocol, snapshot.metadata)
    _check_row_ids_assignable(snapshot, tracking, files)
    batches = plan_batches(files, batch_files=batch_files, batch_bytes=batch_bytes)
    total_files = len(files)
    total_bytes = sum(f.add.size for f in files)
    reader = DvFileReader(storage, storage_options=data_files.storage_options)
    # Every DV must be usable before anything is written: deleted rows never come back.
    verify_deletion_vectors(snapshot, reader)
    if not run.writes:
        # One planned commit per batch, as the run commits them: the removes (with their DVs:
        # the DV tombstones step is decided from them) and the re-adds of files whose DV deletes
        # nothing; only the adds of the files Spark will write are unknown before it writes them.
        # The rewritten files are planned at their old path without their DV (a remove and an add
        # of one path with different DVs, as a DELETE commits them), so that a drop planned after
        # this one (drop-feature --for chains them) still sees every file.
        for batch in batches:
            actions = _batch_actions(_Batch(batch, group_batch(batch)), run.clock.now_ms())
            actions += [replace(f.add, deletionVector=None, dataChange=False) for f in batch if f.cardinality]
            run.commit(actions, PURGE_OPERATION, PURGE_PARAMETERS)
        run.progress(f"would purge {total_files} file(s) with deletion vectors ({total_bytes} bytes) "
                     f"in {len(batches)} batch(es)")
        return True

    metadata = snapshot.metadata
    materialized = "materializePartitionColumns" in snapshot.protocol.features
    read_json, write_json = physical_schemas(metadata, materialized_partitions=materialized)
    # Footers unless on Databricks, where DBIO's commit protocol leaves uncommitted task
    # attempts visible in a listing: there only Spark's own read of the directory is exact.
    footers_exact = not os.environ.get("DATABRICKS_RUNTIME_VERSION")
    plans = [_Batch(b, group_batch(b)) for b in batches]
    session = spark
    if session is None and any(p.to_write for p in plans):
        from delta_downgrade.spark import get_spark

        session = get_spark()
    read_schema = write_schema = None
    if session is not None:
        from pyspark.sql.types import StructType

        read_schema, write_schema = StructType.fromJson(read_json), StructType.fromJson(write_json)
    ctx = _Context(run=run, spark=session, storage=storage, reader=reader,
                   read_schema=read_schema, write_schema=write_schema,
                   leaves=stats_leaves(metadata, clustering_columns(snapshot.state().live_domains.values())),
                   codec=_compression(metadata), use_footers=stats == "footer" or (stats == "auto" and footers_exact),
                   strategy=strategy, broadcast_max_rows=broadcast_max_rows, parallel_jobs=parallel_jobs,
                   preserve=MaterializedColumns.of(tracking))
    run.progress(f"purging deletion vectors of {total_files} file(s), {total_bytes} bytes, "
                 f"in {len(plans)} batch(es)", step=PURGE_STEP, done=0, total=total_files,
                 done_bytes=0, total_bytes=total_bytes)
    if ctx.preserve is not None:
        run.progress(f"row tracking is enabled: stable row IDs and row commit versions go into "
                     f"{ctx.preserve.row_id} and {ctx.preserve.row_commit_version}")
    elif tracking.enabled:
        run.progress("row tracking is enabled but the table names no materialized columns: the "
                     "rewritten rows get fresh row IDs only (commits tagged "
                     "delta.rowTracking.preserved=false)")
    done = [0, 0]  # files, bytes
    in_flight: deque[Future] = deque()

    def commit_oldest() -> None:
        batch = in_flight.popleft().result()
        version = _commit_batch(ctx, batch)
        done[0] += len(batch.files)
        done[1] += sum(f.add.size for f in batch.files)
        run.progress(f"purged {done[0]}/{total_files} files, {done[1]}/{total_bytes} bytes",
                     step=PURGE_STEP, done=done[0], total=total_files, done_bytes=done[1],
                     total_bytes=total_bytes)
        if on_batch_committed is not None:
            on_batch_committed(version, done[0])

    with ThreadPoolExecutor(max_workers=max(1, pipeline_depth)) as pool:
        try:
            for plan in plans:
                in_flight.append(pool.submit(_rewrite_batch, ctx, plan))
                if len(in_flight) >= max(1, pipeline_depth):
                    commit_oldest()
            while in_flight:
                commit_oldest()
        except BaseException:
            # Batches rewritten but not committed leave orphans: delete them (best effort).
            for fut in in_flight:
                try:
                    _cleanup(storage, fut.result().to_write)
                except BaseException:  # noqa: BLE001 - a failed rewrite cleaned up after itself
                    pass
            raise
    return True


__all__ = [
    "purge_deletion_vectors", "verify_deletion_vectors",
    "PURGE_OPERATION", "PURGE_PARAMETERS",
]
