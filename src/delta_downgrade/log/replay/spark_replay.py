"""The reconciliation of a log segment as Spark jobs (PROTOCOL.md "Action Reconciliation"), for
logs whose file list does not fit the driver: the rules of :mod:`~delta_downgrade.log.replay.reconcile`,
executed by Spark the way :mod:`~delta_downgrade.log.replay.arrow_replay` executes them with Arrow, so
that a checkpoint written from either holds the same actions.

* **Read** - the segment's checkpoint (classic, multi-part, or V2: its top-level parquet or JSON
  file and its sidecars) and its commits, with the explicit schema of
  :mod:`~delta_downgrade.log.format.checkpoint_schema` (one schema for both paths, converted by
  :mod:`~delta_downgrade.log.format.spark_types`). Only ``txn``, ``add``, ``remove`` and
  ``domainMetadata`` are read: protocol and metadata come from the snapshot the caller validated.
  Commits are read ``FAILFAST``: a line that is not JSON of the schema fails the job instead of
  becoming a row of nulls (a dropped ``remove`` would resurrect a file).
* **Rank** - :func:`~delta_downgrade.log.replay.reconcile.commit_rank` by version: the checkpoint's
  actions rank :data:`~delta_downgrade.log.replay.reconcile.CHECKPOINT_RANK`, commit ``v``'s removes
  ``2v + 1`` and its adds ``2v + 2`` (the same order as the Arrow replay's per-segment ranks). Ties
  within one rank are broken by the row's place in its file: the file name, the start of the
  split that read it (``_metadata.file_block_start``) and ``monotonically_increasing_id()``, which
  grows with the row within one task's read of one split - so the last line of a commit is the
  last, however Spark splits or packs the files.
* **Identity** - the URL-decoded path (``try_url_decode`` with ``+`` kept a plus, as Python's
  ``unquote``; a path whose escapes do not decode keeps its raw spelling) and the deletion
  vector's unique id (``storageType + pathOrInlineDv + "@" + offset``, PROTOCOL.md "Deletion
  Vector Descriptor Schema").
* **Cancel and value** - per logical file, the action with the highest rank decides (an add over
  a remove of the same rank, which only a checkpoint can hold: its removes never cancel its
  adds): an add makes the file live, a remove a tombstone, and the last action of that kind and
  rank (by place) is the value - the action of the highest (rank, place) of its kind, as the
  Arrow replay takes it. One window sorted by (rank, add first, place) per key picks it: one
  shuffle and one sort, no aggregation buffer holding the large add structs. Tombstones older
  than the retention cutoff are left out. ``dataChange`` is false in every checkpointed add and
  remove.
* ``txn``: the last per ``appId``; ``domainMetadata``: the last per ``domain``, removed ones
  dropped ("excluding tombstones with removed=true").

Nothing here collects file actions to the driver; the only driver-side reads are the names of a
V2 checkpoint's sidecars.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import pyarrow as pa

from delta_downgrade.log.read.checkpoint_reader import CheckpointReader
from delta_downgrade.log.format.checkpoint_schema import ADD_TYPE, DOMAIN_TYPE, REMOVE_TYPE, TXN_TYPE
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.replay.reconcile import CHECKPOINT_RANK, RANK_OFFSET, RANKS_PER_COMMIT
from delta_downgrade.log.read.segment import LogSegment
from delta_downgrade.log.format.spark_types import spark_struct
from delta_downgrade.storage import Storage

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession

#: The action columns the Spark path reads from checkpoints and commits.
ACTIONS_READ_SCHEMA = pa.schema([("txn", TXN_TYPE), ("add", ADD_TYPE), ("remove", REMOVE_TYPE),
                                 ("domainMetadata", DOMAIN_TYPE)])
# The kinds of keys of the one grouping (:func:`reconciled_actions`).
_FILE, _TXN, _DOMAIN = 0, 1, 2
#: A commit file's name: its version, 20 digits (PROTOCOL.md "Delta Log Entries").
_COMMIT_NAME = r"^(\d+)\.json$"


def _placed(df: "DataFrame", rank_base: "Column | None") -> "DataFrame":
    """``df`` with its rank base (the version, or None for a checkpoint) and its place."""
    from pyspark.sql import functions as F

    return df.select(
        "txn", "add", "remove", "domainMetadata",
        (rank_base if rank_base is not None else F.lit(None).cast("long")).alias("_version"),
        F.col("_metadata.file_name").alias("_file"),
        F.col("_metadata.file_block_start").alias("_block"),
        F.monotonically_increasing_id().alias("_row"))


def _reader(spark: "SparkSession", fmt: str) -> "DataFrameReader":
    reader = spark.read.schema(spark_struct(ACTIONS_READ_SCHEMA))
    if fmt == "json":
        reader = reader.option("mode", "FAILFAST")
    return reader


def checkpoint_files(storage: Storage, segment: LogSegment) -> tuple[list[str], list[str]]:
    """The table-relative paths of the segment's checkpoint files to read: the parquet files
    (parts, a V2 top-level parquet file, sidecars) and the JSON ones (a V2 top-level JSON file).
    A V2 checkpoint's sidecars are named by its top-level file (read here, on the driver: one
    row per sidecar)."""
    checkpoint = segment.checkpoint
    if checkpoint is None:
        return [], []
    parquet = [p for p in checkpoint.paths if not p.endswith(".json")]
    json_files = [p for p in checkpoint.paths if p.endswith(".json")]
    if checkpoint.kind == "v2":
        parquet += CheckpointReader(storage, checkpoint).sidecar_paths()  # table-relative already
    return parquet, json_files


@contextmanager
def _listed_on_the_driver(spark: "SparkSession", storage: Storage, paths: int) -> Iterator[None]:
    """For local storage, Spark's listing of the ``paths`` files to read happens on the driver
    (a stat each) instead of as a job of one task per file (Spark lists more than
    ``parallelPartitionDiscovery.threshold`` paths with a job: 1000 commits, 1000 tasks, a fifth
    of the time of a local checkpoint). Object stores keep the parallel listing. The session's
    setting is restored once the DataFrames exist (the listing happens when they are created)."""
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    if storage.local_file(LOG_DIR) is None:
        yield
        return
    old = spark.conf.get(key, None)
    spark.conf.set(key, str(max(paths + 1, int(old or 0))))
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def segment_actions(spark: "SparkSession", storage: Storage, segment: LogSegment) -> "DataFrame":
    """Every ``txn``, ``add``, ``remove`` and ``domainMetadata`` of the segment, one per row, with
    ``_version`` (null for the checkpoint's rows) and the place columns ``_file``, ``_block``,
    ``_row`` (see the module's docstring)."""
    with _listed_on_the_driver(spark, storage, len(segment.commits)
                               + (len(segment.checkpoint.files) if segment.checkpoint else 0)):
        return _segment_actions(spark, storage, segment)


def _segment_actions(spark: "SparkSession", storage: Storage, segment: LogSegment) -> "DataFrame":
    from pyspark.sql import functions as F

    parts: list[DataFrame] = []
    parquet, json_files = checkpoint_files(storage, segment)
    if parquet:
        parts.append(_placed(_reader(spark, "parquet").parquet(*[storage.uri(p) for p in parquet]), None))
    if json_files:
        parts.append(_placed(_reader(spark, "json").json([storage.uri(p) for p in json_files]), None))
    if segment.commits:
        commits = _reader(spark, "json").json([storage.uri(s.path) for s in segment.commits])
        version = F.regexp_extract(F.col("_metadata.file_name"), _COMMIT_NAME, 1).cast("long")
        parts.append(_placed(commits, version))
    actions = parts[0]
    for other in parts[1:]:
        actions = actions.unionByName(other)
    return actions.where(F.col("add").isNotNull() | F.col("remove").isNotNull()
                         | F.col("txn").isNotNull() | F.col("domainMetadata").isNotNull())


def _rank(is_add: "Column") -> "Column":
    """:func:`~delta_downgrade.log.replay.reconcile.commit_rank` by version; the checkpoint's rank for
    rows without a version."""
    from pyspark.sql import functions as F

    offset = F.when(is_add, F.lit(RANK_OFFSET["add"])).otherwise(F.lit(RANK_OFFSET["remove"]))
    return F.coalesce(F.col("_version") * RANKS_PER_COMMIT + offset, F.lit(CHECKPOINT_RANK).cast("long"))


def decoded_path(path: "Column") -> "Column":
    """The URL-decoded path (PROTOCOL.md: "path: A relative path to a data file ... encoded as
    an RFC 2396 URI"), as Python's ``unquote`` decodes it: ``%XX`` escapes as UTF-8, ``+`` left a
    plus (``try_url_decode`` is form decoding, so ``+`` is escaped first). A path whose escapes
    do not decode keeps its raw spelling. Only paths with a ``%`` are decoded."""
    from pyspark.sql import functions as F

    decoded = F.call_function("try_url_decode", F.replace(path, F.lit("+"), F.lit("%2B")))
    return F.when(path.contains("%"), F.coalesce(decoded, path)).otherwise(path)


def dv_unique_id(dv: "Column") -> "Column":
    """The deletion vector's unique id, null without one: ``storageType + pathOrInlineDv`` and
    ``"@" + offset`` when the offset is set (PROTOCOL.md "Deletion Vector Descriptor Schema")."""
    from pyspark.sql import functions as F

    text = F.concat(F.coalesce(dv["storageType"], F.lit("")), F.coalesce(dv["pathOrInlineDv"], F.lit("")),
                    F.coalesce(F.concat(F.lit("@"), dv["offset"].cast("string")), F.lit("")))
    return F.when(dv.isNull(), F.lit(None).cast("string")).otherwise(text)


def reconciled_actions(actions: "DataFrame", tombstone_cutoff_ms: int) -> "DataFrame":
    """The checkpoint's actions but protocol and metadata, one per row in the columns ``txn``,
    ``add``, ``remove``, ``domainMetadata`` (the others null): every live file's add, the tombstone
    of every file that is not live and whose ``deletionTimestamp`` is null or after
    ``tombstone_cutoff_ms`` (``dataChange`` false in both), the last txn per ``appId`` and the last
    domain per ``domain`` that is not removed. And ``_add_from_checkpoint``: whether a live
    file's add is the source checkpoint's.

    One window for all: a row's key is its kind (file, txn, domain) and its identity (the
    logical file, the ``appId``, the ``domain``), so the segment is shuffled and sorted once. The
    first row of a key by (rank, add before remove, place), all descending, decides it: a file
    whose highest-ranked action is an add (or whose best add ties its best remove: only within a
    checkpoint, whose removes never cancel its adds) is live and that add, the last of its rank,
    is its value - the add of the highest (rank, place), as the rules say; otherwise the file is a
    tombstone whose value is the remove of the highest (rank, place). For txns and domains the
    first row is the last one."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    has_file = F.col("add").isNotNull() | F.col("remove").isNotNull()
    is_add = F.col("add").isNotNull()
    path = F.coalesce(F.col("add.path"), F.col("remove.path"))
    dv = F.when(is_add, F.col("add.deletionVector")).otherwise(F.col("remove.deletionVector"))
    kind = F.when(has_file, F.lit(_FILE)).when(F.col("txn").isNotNull(), F.lit(_TXN)).otherwise(F.lit(_DOMAIN))
    name = (F.when(has_file, decoded_path(path)).when(F.col("txn").isNotNull(), F.col("txn.appId"))
            .otherwise(F.col("domainMetadata.domain")))
    keyed = actions.select(
        kind.alias("_kind"), name.alias("_name"), F.when(has_file, dv_unique_id(dv)).alias("_dv"),
        is_add.alias("_is_add"), _rank(is_add).alias("_rank"), "_file", "_block", "_row",
        "txn", "add", "remove", "domainMetadata")
    first = Window.partitionBy("_kind", "_name", "_dv").orderBy(
        *[F.col(c).desc() for c in ("_rank", "_is_add", "_file", "_block", "_row")])
    winners = keyed.withColumn("_n", F.row_number().over(first)).where(F.col("_n") == 1)
    kind, is_add, stamp = F.col("_kind"), F.col("_is_add"), F.col("remove.deletionTimestamp")
    live = (kind == _FILE) & is_add
    unexpired = stamp.isNull() | (stamp > F.lit(tombstone_cutoff_ms))
    out = winners.select(
        F.when(kind == _TXN, F.col("txn")).alias("txn"),
        F.when(live, F.col("add").withField("dataChange", F.lit(False))).alias("add"),
        F.when((kind == _FILE) & ~is_add & unexpired,
               F.col("remove").withField("dataChange", F.lit(False))).alias("remove"),
        F.when((kind == _DOMAIN) & ~F.coalesce(F.col("domainMetadata.removed"), F.lit(False)),
               F.col("domainMetadata")).alias("domainMetadata"),
        (live & (F.col("_rank") == F.lit(CHECKPOINT_RANK))).alias("_add_from_checkpoint"))
    return out.where(F.col("txn").isNotNull() | F.col("add").isNotNull() | F.col("remove").isNotNull()
                     | F.col("domainMetadata").isNotNull())
