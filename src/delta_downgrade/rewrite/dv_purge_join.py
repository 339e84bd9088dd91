"""The Spark side of the deletion-vector purge (rewrite/dv_purge.py): one scan of a group's input
files, a left anti join that drops the deleted rows, and the write of the rest.
"""

from __future__ import annotations

import re
import zlib
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from msgspec import Struct
import pyarrow as pa
import pyarrow.compute as pc

from delta_downgrade.rewrite.dv_purge_plan import PurgeFile, PurgeGroup
from delta_downgrade.rewrite.row_tracking import (
    MaterializedColumns, per_file_value, stable_row_commit_version, stable_row_id,
)
from delta_downgrade.rewrite.spark_io import metadata_column, parquet_writer, quote_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

# Helper columns of the rewrite (dropped before writing); "_R" ones belong to the deleted side.
_KEY = "__dv_purge_file_name"
_RI = "__dv_purge_row_index"
_DISC = "__dv_purge_file_residue"
_BLOCK = "__dv_purge_block"
_BIT = "__dv_purge_bit"
_PAIR = "__dv_purge_key"
_KEY_R = "__dv_purge_deleted_file_name"
_BLOCK_R = "__dv_purge_deleted_block"
_MASK_R = "__dv_purge_deleted_mask"
_PAIR_R = "__dv_purge_deleted_key"


def _file_name_key(metadata: "Column") -> "Column":
    """The decoded file name of ``_metadata.file_path`` (a URI string). ``url_decode`` would
    read a literal ``+`` as a space, so ``+`` is escaped first."""
    from pyspark.sql import functions as F

    raw = F.substring_index(metadata.getField("file_path"), "/", -1)
    return F.url_decode(F.replace(raw, F.lit("+"), F.lit("%2B")))


MAX_PACKED_ROW_INDEX = 1 << 40
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")


def unique_residue_modulus(values: Sequence[int], max_bits: int = 20) -> int | None:
    """The smallest power of two K (≤ 2^max_bits) such that ``value mod K`` differs for every
    value, or None (duplicates, or no such K)."""
    n = len(values)
    if n == 0 or len(set(values)) != n:
        return None
    for bits in range(max(1, (n - 1).bit_length()), max_bits + 1):
        k = 1 << bits
        if len({v & (k - 1) for v in values}) == n:
            return k
    return None


class JoinKey(Struct, frozen=True):
    """How a group's rows are keyed for the anti join.

    Spark joins fastest on one long, so a row is ``row_index * K + r`` where ``r`` tells the
    files apart: ``file_size mod K`` when the sizes differ, else ``crc32(file name) mod K``
    (file names are unique within a directory). ``_metadata.file_size`` / ``file_name`` are
    per-file constants, so this costs a multiply and an add per row. When neither works (or the
    names need URI escaping) the key is the (decoded file name, row index) pair.
    """

    mode: str                        # "size" | "crc" | "name"
    modulus: int | None
    residues: Mapping[int, int]      # batch index → r
    names: Mapping[int, str]         # batch index → decoded file name


def join_key(group: PurgeGroup, *, allow_packed: bool = True) -> JoinKey:
    files = group.rewritten
    names = {i: f.file_name for i, f in files}
    small = all((f.num_records or MAX_PACKED_ROW_INDEX) < MAX_PACKED_ROW_INDEX for _i, f in files)
    if allow_packed and small:
        sizes = {i: f.add.size for i, f in files}
        k = unique_residue_modulus(list(sizes.values()))
        if k is not None:
            return JoinKey("size", k, {i: v & (k - 1) for i, v in sizes.items()}, names)
        if all(_PLAIN_NAME.fullmatch(n) for n in names.values()):
            crcs = {i: zlib.crc32(n.encode("utf-8")) for i, n in names.items()}
            k = unique_residue_modulus(list(crcs.values()))
            if k is not None:
                return JoinKey("crc", k, {i: v & (k - 1) for i, v in crcs.items()}, names)
    return JoinKey("name", None, {}, names)


def _read_inputs(spark: "SparkSession", files: Sequence[tuple[int, PurgeFile]], read_schema: Any,
                 key: JoinKey) -> "DataFrame":
    """One scan of a group's input files: the data columns, each row's index and what tells its
    file apart (``_DISC``: the residue of :class:`JoinKey`, or ``_KEY``: the file name)."""
    from pyspark.sql import functions as F

    df = spark.read.schema(read_schema).parquet(*[f.spark_path for _i, f in files])
    meta = metadata_column(df)
    data = [F.col(quote_name(n)) for n in read_schema.fieldNames()]
    row_index = meta.getField("row_index").alias(_RI)
    if key.mode == "name":
        return df.select(*data, row_index, _file_name_key(meta).alias(_KEY))
    if key.mode == "size":
        discriminator = meta.getField("file_size")
    else:
        discriminator = F.crc32(meta.getField("file_name").cast("binary"))
    assert key.modulus is not None, "a size or CRC key always has its modulus"
    return df.select(*data, row_index, discriminator.bitwiseAND(F.lit(key.modulus - 1)).alias(_DISC))


def _packed(values: pa.Array, key: JoinKey, i: int) -> pa.Array:
    """int64 ``values * K + residue`` (or the values themselves when keyed by name)."""
    values = values.cast(pa.int64())
    if not key.modulus:
        return values
    return pc.add(pc.multiply(values, key.modulus), key.residues[i])


def _with_names(columns: dict[str, list[pa.Array]], key: JoinKey, i: int, n: int) -> None:
    if not key.modulus:
        columns.setdefault(_KEY_R, []).append(pa.array([key.names[i]] * n, pa.string()))


def _table(columns: dict[str, list[pa.Array]], types: dict[str, pa.DataType]) -> pa.Table:
    return pa.table({name: pa.concat_arrays(parts) if parts else pa.array([], types[name])
                     for name, parts in columns.items()})


def deleted_masks(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Sorted row indexes → (64-row block numbers, 64-bit masks of the deleted rows in each
    block, as signed int64). A block ``b`` with mask ``m`` deletes row ``64 b + k`` when bit ``k``
    of ``m`` is set. Clustered deletes shrink a lot; scattered ones never grow."""
    if len(values) == 0:
        empty = pa.array([], pa.int64())
        return empty, empty
    values = values.cast(pa.uint64())
    blocks = pc.shift_right(values, 6)
    bits = pc.shift_left(pa.scalar(1, pa.uint64()), pc.bit_wise_and(values, pa.scalar(63, pa.uint64())))
    grouped = pa.table({"b": blocks, "v": bits}).group_by("b", use_threads=False).aggregate([("v", "sum")])
    return grouped.column("b").combine_chunks().cast(pa.int64()), \
        grouped.column("v_sum").combine_chunks().cast(pa.int64(), safe=False)


def _deleted_masks_table(key: JoinKey, rows: Mapping[int, pa.Array]) -> pa.Table:
    columns: dict[str, list[pa.Array]] = {_BLOCK_R: [], _MASK_R: []}
    for i, values in rows.items():
        blocks, masks = deleted_masks(values)
        columns[_BLOCK_R].append(_packed(blocks, key, i))
        columns[_MASK_R].append(masks)
        _with_names(columns, key, i, len(blocks))
    return _table(columns, {_BLOCK_R: pa.int64(), _MASK_R: pa.int64(), _KEY_R: pa.string()})


def _deleted_runs_table(key: JoinKey, runs: Mapping[int, tuple[pa.Array, pa.Array]]) -> pa.Table:
    columns: dict[str, list[pa.Array]] = {"start": [], "end": []}
    for i, (s, e) in runs.items():
        columns["start"].append(_packed(s, key, i))
        columns["end"].append(_packed(e, key, i))
        _with_names(columns, key, i, len(s))
    return _table(columns, {"start": pa.int64(), "end": pa.int64(), _KEY_R: pa.string()})


def _without_deleted(spark: "SparkSession", data: "DataFrame", group: PurgeGroup, dvs: Mapping[int, Any],
                     strategy: str, key: JoinKey) -> "DataFrame":
    """``data`` minus the deleted rows, by a left anti join.

    ``broadcast``: the deleted rows go to the executors as (64-row block, mask) pairs built on
    the driver from the bitmaps; a row is dropped when its block matches and its bit is set.
    ``shuffle``: only the *runs* of deleted rows leave the driver; executors expand them
    (``explode(sequence(start, end, step))``) and a sort-merge anti join removes the rows.
    """
    from pyspark.sql import functions as F

    wanted = {i: dvs[i] for i, _f in group.rewritten}
    scale = F.lit(key.modulus or 1)
    residue = F.col(_DISC) if key.modulus else F.lit(0)
    if strategy == "broadcast":
        masks = F.broadcast(spark.createDataFrame(_deleted_masks_table(key, wanted)))
        left = data.select("*", (F.shiftright(F.col(_RI), 6) * scale + residue).alias(_BLOCK),
                           F.expr(f"shiftleft(CAST(1 AS BIGINT), CAST({_RI} & 63 AS INT))").alias(_BIT))
        cond = (left[_BLOCK] == masks[_BLOCK_R]) & (masks[_MASK_R].bitwiseAND(left[_BIT]) != 0)
        if not key.modulus:
            cond = cond & (left[_KEY] == masks[_KEY_R])
        return left.join(masks, cond, "left_anti")
    runs = spark.createDataFrame(_deleted_runs_table(key, wanted))
    expanded = F.explode(F.sequence(F.col("start"), F.col("end"), scale.cast("long"))).alias(_PAIR_R)
    pairs = runs.repartition(max(1, min(64, len(wanted) * 4))).select(
        *([expanded] if key.modulus else [F.col(_KEY_R), expanded])).hint("shuffle_merge")
    left = data.select("*", (F.col(_RI) * scale + residue).alias(_PAIR))
    cond = left[_PAIR] == pairs[_PAIR_R]
    if not key.modulus:
        cond = cond & (left[_KEY] == pairs[_KEY_R])
    return left.join(pairs, cond, "left_anti")


def _with_materialized_columns(read_schema: "StructType", preserve: MaterializedColumns) -> "StructType":
    """``read_schema`` plus the two materialized row-tracking columns (long, nullable): a file
    without them reads them as null ("This column may be omitted if all its values are null")."""
    from pyspark.sql.types import LongType, StructField, StructType

    present = set(read_schema.fieldNames())
    return StructType(list(read_schema.fields)
                      + [StructField(n, LongType(), True) for n in preserve.names if n not in present])


def _stable_columns(group: PurgeGroup, key: JoinKey, preserve: MaterializedColumns) -> list["Column"]:
    """Each kept row's stable row ID and row commit version (rewrite/row_tracking.py), the old
    file's ``baseRowId`` / ``defaultRowCommitVersion`` found by the row's file key (the join's
    residue, or its file name), the row's index in the old file by ``_metadata.row_index``."""
    from pyspark.sql import functions as F

    files = dict(group.rewritten)
    keys = key.residues if key.modulus else key.names
    row_key = F.col(_DISC) if key.modulus else F.col(_KEY)
    base = per_file_value({keys[i]: f.add.baseRowId for i, f in files.items()}, row_key)
    version = per_file_value({keys[i]: f.add.defaultRowCommitVersion for i, f in files.items()}, row_key)
    return [stable_row_id(F.col(quote_name(preserve.row_id)), base, F.col(_RI)).alias(preserve.row_id),
            stable_row_commit_version(F.col(quote_name(preserve.row_commit_version)), version)
            .alias(preserve.row_commit_version)]


def write_group(spark: "SparkSession", output: str, group: PurgeGroup, dvs: Mapping[int, Any], strategy: str,
                read_schema: Any, write_schema: Any, codec: str, allow_packed: bool = True,
                preserve: MaterializedColumns | None = None) -> None:
    """Write the kept rows of ``group``'s files into the new directory ``output`` (its
    ``storage.uri``: Spark writes straight to the final location); with ``preserve`` (row tracking enabled) each
    with its stable row ID and row commit version in the materialized columns."""
    from pyspark.sql import functions as F

    key = join_key(group, allow_packed=allow_packed)
    if preserve is not None:
        read_schema = _with_materialized_columns(read_schema, preserve)
    data = _read_inputs(spark, group.rewritten, read_schema, key)
    kept = _without_deleted(spark, data, group, dvs, strategy, key)
    columns = []
    for f in write_schema.fields:
        col = F.col(quote_name(f.name))
        if f.metadata:
            col = col.cast(f.dataType).alias(f.name, metadata=f.metadata)
        columns.append(col)
    if preserve is not None:
        columns += _stable_columns(group, key, preserve)
    parquet_writer(kept.select(*columns), codec).parquet(output)
