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
   of a CRC of the file name; see ``_JoinKey``) so that Spark uses its fastest hash relation.
   A single scan per directory (not one per file) matters: a union of per-file scans makes
   Spark push the join into every branch, with one broadcast each.

   Outputs go to a fresh directory ``dv-purge-<id>/`` inside the input directory, named by
   Spark (``part-…-c000.snappy.parquet``); a fresh directory is the only portable way to know
   exactly which files a Spark write committed (Databricks' DBIO leaves uncommitted attempts
   visible in shared directories).
3. **Statistics** of the new files: exact ``numRecords`` and tight ``minValues``/``maxValues``/
   ``nullCount`` (PROTOCOL.md "Per-file Statistics", physical column names, the first
   ``delta.dataSkippingNumIndexedCols`` leaf columns or ``delta.dataSkippingStatsColumns``). With
   local storage they come from the parquet footers (pyarrow, footers only); elsewhere from one
   Spark aggregation per batch grouped by ``_metadata.file_path``.
4. **Check** that each output directory holds exactly Σ(numRecords − cardinality) rows of its
   inputs, then **commit** ``remove(old file with its DV, dataChange=false)`` +
   ``add(new file, dataChange=false, stats)`` as ``REORG`` with ``applyPurge``. Files whose DV
   deletes every row are only removed; a DV deleting nothing is dropped without a rewrite.

A crash leaves the committed batches done; a rerun only sees the files that still carry DVs.
Files written by an uncommitted batch are orphans that VACUUM removes. Progress is reported as
``purged <done>/<total> files, <bytes done>/<bytes total> bytes``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os
import posixpath
import re
import uuid
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.compute as pc

from delta_downgrade.protocol.actions import AddFile, AnyAction, DeletionVectorDescriptor, Metadata, RemoveFile
from delta_downgrade.deletion_vectors import (
    DvFileReader, parse_dv_runs,
)
from delta_downgrade.protocol.dv_paths import is_absolute_log_path, table_relative_path
from delta_downgrade.log.commit import rebase_unless_files_touched
from delta_downgrade.rewrite.staging import PURGE_DIR_PREFIX
from delta_downgrade.storage import typed_write_error
from delta_downgrade.errors import (  # noqa: F401 - DvPurgeError is re-exported
    ConcurrentWriteError, DeletionVectorRowIndexError, DeltaDowngradeError, DvPurgeError,
    NotSupportedYetError,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from delta_downgrade.log.snapshot import Snapshot
    from delta_downgrade.operations.drop_run import DropRun

PURGE_OPERATION = "REORG"
PURGE_PARAMETERS: dict[str, Any] = {"predicate": [], "applyPurge": True}

DEFAULT_BATCH_FILES = 256
DEFAULT_BATCH_BYTES = 1 << 30
DEFAULT_BROADCAST_MAX_ROWS = 5_000_000
DEFAULT_PARALLEL_JOBS = 4
DEFAULT_PIPELINE_DEPTH = 2

STATS_STRING_PREFIX = 32          # delta-spark's string prefix length for min/max
DEFAULT_NUM_INDEXED_COLS = 32
NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
COMPRESSION_CODEC = "delta.parquet.compression.codec"

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

_ATOMIC_STATS_TYPES = {"byte", "short", "integer", "long", "float", "double", "date", "timestamp",
                       "timestamp_ntz", "string"}


# --- what to purge ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PurgeFile:
    """One live data file with a DV, and where its rewrite goes."""

    add: AddFile
    dv: DeletionVectorDescriptor
    spark_path: str            # what Spark reads: decoded (Hadoop quotes it), glob characters escaped
    out_dir: str               # log-encoded table-relative directory of the rewrite ("" = root)
    num_records: int | None

    @property
    def cardinality(self) -> int:
        return self.dv.cardinality

    @property
    def fully_deleted(self) -> bool:
        return self.num_records is not None and self.cardinality >= self.num_records

    @property
    def file_name(self) -> str:
        """The decoded file name: unique within the file's directory."""
        return posixpath.basename(unquote(self.add.path))

    @property
    def group_key(self) -> tuple[str, str, tuple[tuple[str, str | None], ...]]:
        """Files rewritten together: one source directory, one output directory, one set of
        partition values."""
        source_dir = posixpath.dirname(unquote(self.add.path))
        return self.out_dir, source_dir, tuple(sorted((self.add.partitionValues or {}).items()))


def _escape_glob(path: str) -> str:
    """Spark globs read paths; protect Hadoop glob characters with a backslash."""
    return "".join("\\" + c if c in "\\*?[]{}" else c for c in path)


def _root_path(table: str) -> str:
    """The table root as Spark should see it. Hadoop's ``Path(String)`` takes a *decoded* path
    (it quotes ``%`` itself), so the log's URL-encoded relative paths are decoded before they are
    appended."""
    if "://" in table or table.startswith(("file:", "dbfs:")):
        return table.rstrip("/")
    return os.path.abspath(table)


def _plan_file(root: str, table: str, add: AddFile) -> PurgeFile:
    dv = add.dv
    assert dv is not None
    if is_absolute_log_path(add.path):
        relative = table_relative_path(table, add.path)
        spark_path = unquote(add.path)
        encoded_rel = quote(relative, safe="/") if relative is not None else None
    else:
        encoded_rel = add.path
        spark_path = f"{root}/{add.decoded_path}"
    # A file outside the table (a shallow clone's source) is rewritten into the table root.
    out_dir = posixpath.dirname(encoded_rel) if encoded_rel is not None else ""
    return PurgeFile(add=add, dv=dv, spark_path=_escape_glob(spark_path), out_dir=out_dir,
                     num_records=add.num_records)


def files_to_purge(snapshot: "Snapshot") -> list[PurgeFile]:
    """Live files that carry a DV, in a stable order that keeps output directories together."""
    table = snapshot.table
    root = _root_path(table)
    files = [_plan_file(root, table, f) for f in snapshot.state().files.values() if f.dv is not None]
    files.sort(key=lambda p: (p.group_key, p.add.path))
    return files


def plan_batches(files: Sequence[PurgeFile], *, batch_files: int = DEFAULT_BATCH_FILES,
                 batch_bytes: int = DEFAULT_BATCH_BYTES) -> list[list[PurgeFile]]:
    """Consecutive batches of at most ``batch_files`` files and ``batch_bytes`` bytes (a single
    larger file forms its own batch). File counts are balanced: 72 files with a limit of 64 make
    two batches of 36, not 64 + 8."""
    if batch_files < 1 or batch_bytes < 1:
        raise ValueError("batch_files and batch_bytes must be positive")
    if files:
        batch_files = -(-len(files) // -(-len(files) // batch_files))
    batches: list[list[PurgeFile]] = []
    current: list[PurgeFile] = []
    size = 0
    for f in files:
        if current and (len(current) >= batch_files or size + f.add.size > batch_bytes):
            batches.append(current)
            current, size = [], 0
        current.append(f)
        size += f.add.size
    if current:
        batches.append(current)
    return batches


# --- the physical schema --------------------------------------------------------------------------

def _column_mapping_mode(metadata: Metadata) -> str:
    return (metadata.configuration.get("delta.columnMapping.mode") or "none").lower()


def _physical_type(t: Any, cm: bool, with_ids: bool) -> Any:
    if isinstance(t, str):
        return t
    kind = t.get("type")
    if kind == "struct":
        return {"type": "struct", "fields": [_physical_field(f, cm, with_ids) for f in t["fields"]]}
    if kind == "array":
        return {**t, "elementType": _physical_type(t["elementType"], cm, with_ids)}
    if kind == "map":
        return {**t, "keyType": _physical_type(t["keyType"], cm, with_ids),
                "valueType": _physical_type(t["valueType"], cm, with_ids)}
    return t


def _physical_field(f: Mapping[str, Any], cm: bool, with_ids: bool) -> dict[str, Any]:
    meta = f.get("metadata") or {}
    name = meta.get("delta.columnMapping.physicalName", f["name"]) if cm else f["name"]
    out_meta: dict[str, Any] = {}
    if cm and with_ids and meta.get("delta.columnMapping.id") is not None:
        out_meta["parquet.field.id"] = int(meta["delta.columnMapping.id"])
    return {"name": name, "type": _physical_type(f["type"], cm, with_ids),
            "nullable": f.get("nullable", True), "metadata": out_meta}


def _data_fields(metadata: Metadata, materialized_partitions: bool) -> list[dict[str, Any]]:
    partition = set(metadata.partitionColumns or [])
    return [f for f in metadata.schema.get("fields", [])
            if materialized_partitions or f["name"] not in partition]


def physical_schemas(metadata: Metadata, *,
                     materialized_partitions: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """(read schema, write schema) of the data files as Spark StructType JSON: physical names
    (column mapping), no Delta metadata; the write schema carries ``parquet.field.id`` from
    ``delta.columnMapping.id`` so that rewritten files keep their field ids. Partition columns
    are not in the files (unless materialized)."""
    cm = _column_mapping_mode(metadata) in ("name", "id")
    fields = _data_fields(metadata, materialized_partitions)
    read = {"type": "struct", "fields": [_physical_field(f, cm, False) for f in fields]}
    write = {"type": "struct", "fields": [_physical_field(f, cm, True) for f in fields]}
    return read, write


@dataclass(frozen=True)
class StatsLeaf:
    """A leaf column that gets statistics: its physical path and Delta type."""

    path: tuple[str, ...]
    delta_type: str

    @property
    def min_max(self) -> bool:
        return self.delta_type in _ATOMIC_STATS_TYPES or self.delta_type.startswith("decimal")


def _split_column_list(text: str) -> list[tuple[str, ...]]:
    """``delta.dataSkippingStatsColumns``: comma-separated, dotted, optionally back-quoted names."""
    out: list[tuple[str, ...]] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        parts: list[str] = []
        buf, quoted, i = "", False, 0
        while i < len(item):
            c = item[i]
            if c == "`":
                if quoted and i + 1 < len(item) and item[i + 1] == "`":
                    buf += "`"
                    i += 1
                else:
                    quoted = not quoted
            elif c == "." and not quoted:
                parts.append(buf)
                buf = ""
            else:
                buf += c
            i += 1
        parts.append(buf)
        out.append(tuple(p.lower() for p in parts))
    return out


def stats_leaves(metadata: Metadata) -> list[StatsLeaf]:
    """The leaf columns that get statistics, as delta-spark picks them: those listed in
    ``delta.dataSkippingStatsColumns``, else the first ``delta.dataSkippingNumIndexedCols``
    (default 32, -1 = all) leaves in schema order; partition columns never. Arrays and maps count
    as leaves but get no statistics here."""
    cm = _column_mapping_mode(metadata) in ("name", "id")
    conf = metadata.configuration
    partition = {c.lower() for c in metadata.partitionColumns or []}
    leaves: list[tuple[tuple[str, ...], tuple[str, ...], Any]] = []  # logical path, physical path, type

    def walk(fields: Iterable[Mapping[str, Any]], logical: tuple[str, ...],
             physical: tuple[str, ...]) -> None:
        for f in fields:
            meta = f.get("metadata") or {}
            lname = f["name"]
            pname = meta.get("delta.columnMapping.physicalName", lname) if cm else lname
            if not logical and lname.lower() in partition:
                continue
            t = f["type"]
            if isinstance(t, dict) and t.get("type") == "struct":
                walk(t["fields"], logical + (lname,), physical + (pname,))
            else:
                leaves.append((logical + (lname,), physical + (pname,), t))

    walk(metadata.schema.get("fields", []), (), ())
    listed = conf.get(STATS_COLUMNS)
    if listed:
        wanted = _split_column_list(listed)
        chosen = [leaf for leaf in leaves
                  if any(tuple(p.lower() for p in leaf[0][:len(w)]) == w for w in wanted)]
    else:
        try:
            n = int(conf.get(NUM_INDEXED_COLS, DEFAULT_NUM_INDEXED_COLS))
        except ValueError:
            n = DEFAULT_NUM_INDEXED_COLS
        chosen = leaves if n < 0 else leaves[:n]
    return [StatsLeaf(physical, t) for _logical, physical, t in chosen if isinstance(t, str)]


# --- statistics as JSON -----------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _format_timestamp_micros(micros: int, *, utc: bool) -> str:
    millis = micros // 1000  # truncated down to milliseconds (PROTOCOL.md "Per-file Statistics")
    value = _EPOCH + dt.timedelta(milliseconds=millis)
    text = value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    return text + "Z" if utc else text


def _datetime_micros(value: dt.datetime, *, utc: bool) -> int:
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    delta = value - dt.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def stat_value(delta_type: str, value: Any, *, is_max: bool) -> Any:
    """A min/max as it goes into the stats JSON, or None when it must be left out (non-finite
    floats, strings longer than the prefix for max)."""
    if value is None:
        return None
    if delta_type in ("byte", "short", "integer", "long"):
        return int(value)
    if delta_type in ("float", "double"):
        f = float(value)
        return f if math.isfinite(f) else None
    if delta_type.startswith("decimal"):
        d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        return d if d.is_finite() else None
    if delta_type == "string":
        s = value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)
        if len(s) <= STATS_STRING_PREFIX:
            return s
        return None if is_max else s[:STATS_STRING_PREFIX]
    if delta_type == "date":
        if isinstance(value, dt.datetime):
            value = value.date()
        return value.isoformat() if isinstance(value, dt.date) else str(value)
    if delta_type in ("timestamp", "timestamp_ntz"):
        utc = delta_type == "timestamp"
        micros = int(value) if isinstance(value, int) else _datetime_micros(value, utc=utc)
        return _format_timestamp_micros(micros, utc=utc)
    return None


def _json(value: Any) -> str:
    """JSON with decimals written exactly (``json`` would need floats)."""
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(str(k)) + ":" + _json(v) for k, v in value.items()) + "}"
    if isinstance(value, decimal.Decimal):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


LeafStats = tuple[Any, Any, int | None]  # (min, max, null count) of one leaf column


def _put(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for name in path[:-1]:
        tree = tree.setdefault(name, {})
    tree[path[-1]] = value


def stats_json(num_records: int, leaves: Sequence[StatsLeaf],
               values: Mapping[tuple[str, ...], LeafStats]) -> str:
    """``{"numRecords", "minValues", "maxValues", "nullCount"}`` from per-leaf (min, max, nulls)."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for leaf in leaves:
        found = values.get(leaf.path)
        if found is None:
            continue
        lo, hi, null_count = found
        if null_count is not None:
            _put(nulls, leaf.path, int(null_count))
        if leaf.min_max and (null_count is None or null_count < num_records):
            lo_v = stat_value(leaf.delta_type, lo, is_max=False)
            hi_v = stat_value(leaf.delta_type, hi, is_max=True)
            if lo_v is not None:
                _put(mins, leaf.path, lo_v)
            if hi_v is not None:
                _put(maxs, leaf.path, hi_v)
    out: dict[str, Any] = {"numRecords": int(num_records)}
    if mins:
        out["minValues"] = mins
    if maxs:
        out["maxValues"] = maxs
    if nulls:
        out["nullCount"] = nulls
    return _json(out)


# --- new files and their statistics -----------------------------------------------------------------

@dataclass
class NewFile:
    """A file the rewrite wrote: its log path (encoded, table-relative) and what the add needs."""

    path: str
    size: int
    modification_time: int
    num_records: int
    stats: str


def footer_stats(local_file: str,
                 leaves: Sequence[StatsLeaf]) -> tuple[int, dict[tuple[str, ...], LeafStats]]:
    """(row count, per-leaf (min, max, nulls)) from a parquet footer (row-group statistics merged).
    A leaf with a row group lacking min/max gets none; lacking null counts, none either."""
    import pyarrow.parquet as pq

    md = pq.read_metadata(local_file)
    by_path: dict[str, list[int]] = {}
    for i in range(md.num_columns):
        by_path.setdefault(md.schema.column(i).path, []).append(i)
    out: dict[tuple[str, ...], LeafStats] = {}
    for leaf in leaves:
        idx = by_path.get(".".join(leaf.path))
        if not idx or len(idx) != 1:
            continue
        col = idx[0]
        lo = hi = None
        nulls: int | None = 0
        has_min_max = True
        for rg in range(md.num_row_groups):
            chunk = md.row_group(rg).column(col)
            st = chunk.statistics
            if st is None:
                has_min_max = False
                nulls = None
                break
            if st.has_null_count and nulls is not None:
                nulls += st.null_count
            else:
                nulls = None
            if md.row_group(rg).num_rows == (st.null_count if st.has_null_count else -1):
                continue  # all null in this row group: no min/max expected
            if not st.has_min_max:
                has_min_max = False
                continue
            lo = st.min if lo is None or st.min < lo else lo
            hi = st.max if hi is None or st.max > hi else hi
        out[leaf.path] = (lo if has_min_max else None, hi if has_min_max else None, nulls)
    return md.num_rows, out


# --- the purge ----------------------------------------------------------------------------------------

def _new_dir_name() -> str:
    return PURGE_DIR_PREFIX + uuid.uuid4().hex[:16]


@dataclass
class _Group:
    """Input files of a batch sharing an output directory and partition values."""

    files: list[tuple[int, PurgeFile]]
    out_dir: str
    partition_values: dict[str, str | None]
    dir_name: str = field(default_factory=lambda: _new_dir_name())

    @property
    def out_rel(self) -> str:
        """Log-encoded table-relative directory of the rewritten files."""
        return f"{self.out_dir}/{self.dir_name}" if self.out_dir else self.dir_name

    @property
    def rewritten(self) -> list[tuple[int, PurgeFile]]:
        return [(i, f) for i, f in self.files if not f.fully_deleted and f.cardinality > 0]

    @property
    def expected_rows(self) -> int | None:
        total = 0
        for _i, f in self.rewritten:
            if f.num_records is None:
                return None
            total += f.num_records - f.cardinality
        return total


def _group_batch(batch: Sequence[PurgeFile]) -> list[_Group]:
    groups: dict[Any, _Group] = {}
    for i, f in enumerate(batch):
        g = groups.get(f.group_key)
        if g is None:
            g = groups[f.group_key] = _Group([], f.out_dir, dict(f.add.partitionValues or {}))
        g.files.append((i, f))
    return list(groups.values())


def _quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _metadata_column(df: "DataFrame") -> Any:
    from pyspark.sql import functions as F

    if hasattr(df, "metadataColumn"):  # works even when the data has a column named _metadata
        return df.metadataColumn("_metadata")
    return F.col("_metadata")  # pragma: no cover - Spark 3.5


def _file_name_key(metadata: Any) -> Any:
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


@dataclass(frozen=True)
class _JoinKey:
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


def _join_key(group: _Group, *, allow_packed: bool = True) -> _JoinKey:
    files = group.rewritten
    names = {i: f.file_name for i, f in files}
    small = all((f.num_records or MAX_PACKED_ROW_INDEX) < MAX_PACKED_ROW_INDEX for _i, f in files)
    if allow_packed and small:
        sizes = {i: f.add.size for i, f in files}
        k = unique_residue_modulus(list(sizes.values()))
        if k is not None:
            return _JoinKey("size", k, {i: v & (k - 1) for i, v in sizes.items()}, names)
        if all(_PLAIN_NAME.fullmatch(n) for n in names.values()):
            crcs = {i: zlib.crc32(n.encode("utf-8")) for i, n in names.items()}
            k = unique_residue_modulus(list(crcs.values()))
            if k is not None:
                return _JoinKey("crc", k, {i: v & (k - 1) for i, v in crcs.items()}, names)
    return _JoinKey("name", None, {}, names)


def _read_inputs(spark: "SparkSession", files: Sequence[tuple[int, PurgeFile]], read_schema: Any,
                 key: _JoinKey) -> "DataFrame":
    """One scan of a group's input files: the data columns, each row's index and what tells its
    file apart (``_DISC``: the residue of :class:`_JoinKey`, or ``_KEY``: the file name)."""
    from pyspark.sql import functions as F

    df = spark.read.schema(read_schema).parquet(*[f.spark_path for _i, f in files])
    meta = _metadata_column(df)
    data = [F.col(_quote_name(n)) for n in read_schema.fieldNames()]
    row_index = meta.getField("row_index").alias(_RI)
    if key.mode == "name":
        return df.select(*data, row_index, _file_name_key(meta).alias(_KEY))
    if key.mode == "size":
        discriminator = meta.getField("file_size")
    else:
        discriminator = F.crc32(meta.getField("file_name").cast("binary"))
    return df.select(*data, row_index, discriminator.bitwiseAND(F.lit(key.modulus - 1)).alias(_DISC))


def _packed(values: pa.Array, key: _JoinKey, i: int) -> pa.Array:
    """int64 ``values * K + residue`` (or the values themselves when keyed by name)."""
    values = values.cast(pa.int64())
    if not key.modulus:
        return values
    return pc.add(pc.multiply(values, key.modulus), key.residues[i])


def _with_names(columns: dict[str, list[pa.Array]], key: _JoinKey, i: int, n: int) -> None:
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


def _deleted_masks_table(key: _JoinKey, rows: Mapping[int, pa.Array]) -> pa.Table:
    columns: dict[str, list[pa.Array]] = {_BLOCK_R: [], _MASK_R: []}
    for i, values in rows.items():
        blocks, masks = deleted_masks(values)
        columns[_BLOCK_R].append(_packed(blocks, key, i))
        columns[_MASK_R].append(masks)
        _with_names(columns, key, i, len(blocks))
    return _table(columns, {_BLOCK_R: pa.int64(), _MASK_R: pa.int64(), _KEY_R: pa.string()})


def _deleted_runs_table(key: _JoinKey, runs: Mapping[int, tuple[pa.Array, pa.Array]]) -> pa.Table:
    columns: dict[str, list[pa.Array]] = {"start": [], "end": []}
    for i, (s, e) in runs.items():
        columns["start"].append(_packed(s, key, i))
        columns["end"].append(_packed(e, key, i))
        _with_names(columns, key, i, len(s))
    return _table(columns, {"start": pa.int64(), "end": pa.int64(), _KEY_R: pa.string()})


def _without_deleted(spark: "SparkSession", data: "DataFrame", group: _Group, dvs: Mapping[int, Any],
                     strategy: str, key: _JoinKey) -> "DataFrame":
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


def _compression(metadata: Metadata) -> str:
    codec = (metadata.configuration.get(COMPRESSION_CODEC) or "snappy").lower()
    return {"uncompressed": "none"}.get(codec, codec)


def _write_group(spark: "SparkSession", root: str, group: _Group, dvs: Mapping[int, Any], strategy: str,
                 read_schema: Any, write_schema: Any, codec: str, allow_packed: bool = True) -> None:
    from pyspark.sql import functions as F

    key = _join_key(group, allow_packed=allow_packed)
    data = _read_inputs(spark, group.rewritten, read_schema, key)
    kept = _without_deleted(spark, data, group, dvs, strategy, key)
    columns = []
    for f in write_schema.fields:
        col = F.col(_quote_name(f.name))
        if f.metadata:
            col = col.cast(f.dataType).alias(f.name, metadata=f.metadata)
        columns.append(col)
    out = f"{root}/{unquote(group.out_rel)}"
    (kept.select(*columns).write.mode("errorifexists")
     .option("compression", codec)
     .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
     .parquet(out))


def _spark_new_files(spark: "SparkSession", root: str, groups: Sequence[_Group], read_schema: Any,
                     leaves: Sequence[StatsLeaf]) -> dict[str, list[NewFile]]:
    """Row counts, sizes, modification times and statistics of the written files, by one Spark
    aggregation grouped by ``_metadata.file_path`` (works on any file system and honours the
    commit protocol's view of committed files)."""
    from pyspark.sql import functions as F

    if not groups:
        return {}
    paths = [_escape_glob(f"{root}/{unquote(g.out_rel)}") for g in groups]
    df = spark.read.schema(read_schema).parquet(*paths)
    meta = df.metadataColumn("_metadata") if hasattr(df, "metadataColumn") else F.col("_metadata")
    aggs = [F.count(F.lit(1)).alias("n"), F.first(meta.getField("file_size")).alias("size"),
            F.first(F.unix_millis(meta.getField("file_modification_time"))).alias("mtime")]
    names: list[tuple[StatsLeaf, str, str, str]] = []
    for k, leaf in enumerate(leaves):
        col = F.col(_quote_name(leaf.path[0]))
        for part in leaf.path[1:]:
            col = col.getField(part)
        lo_name, hi_name, null_name = f"min{k}", f"max{k}", f"nulls{k}"
        aggs.append(F.sum(F.when(col.isNull(), 1).otherwise(0)).alias(null_name))
        if leaf.min_max:
            if leaf.delta_type == "timestamp":
                lo, hi = F.unix_micros(F.min(col)), F.unix_micros(F.max(col))
            elif leaf.delta_type == "string":
                lo = F.substring(F.min(col), 1, STATS_STRING_PREFIX)
                hi = F.when(F.length(F.max(col)) <= STATS_STRING_PREFIX, F.max(col))
            else:
                lo, hi = F.min(col), F.max(col)
            aggs += [lo.alias(lo_name), hi.alias(hi_name)]
        names.append((leaf, lo_name, hi_name, null_name))
    rows = df.groupBy(meta.getField("file_path").alias("path")).agg(*aggs).collect()
    by_dir = {g.dir_name: g for g in groups}
    out: dict[str, list[NewFile]] = {g.dir_name: [] for g in groups}
    for row in rows:
        segments = row["path"].rstrip("/").split("/")
        name, parent = unquote(segments[-1]), unquote(segments[-2])
        group = by_dir.get(parent)
        if group is None:
            raise DvPurgeError(f"Spark reported an unexpected output file {row['path']}")
        values = {leaf.path: (row[lo] if leaf.min_max else None, row[hi] if leaf.min_max else None, row[nl])
                  for leaf, lo, hi, nl in names}
        n = int(row["n"])
        out[group.dir_name].append(NewFile(
            path=f"{group.out_rel}/{quote(name)}", size=int(row["size"]), modification_time=int(row["mtime"]),
            num_records=n, stats=stats_json(n, leaves, values)))
    return out


def _local_new_files(storage: Any, groups: Sequence[_Group],
                     leaves: Sequence[StatsLeaf]) -> dict[str, list[NewFile]]:
    """The same from a local listing and the parquet footers (no Spark job)."""
    out: dict[str, list[NewFile]] = {}
    for g in groups:
        rel_dir = unquote(g.out_rel)
        files: list[NewFile] = []
        for status in storage.list_dir(rel_dir):
            name = status.path.rsplit("/", 1)[-1]
            if name.startswith((".", "_")) or not name.endswith(".parquet"):
                continue
            rows, values = footer_stats(storage.local_path(status.path), leaves)
            if rows == 0:
                continue  # Spark writes an empty file when every row of a job is gone
            files.append(NewFile(path=f"{g.out_rel}/{quote(name)}", size=status.size,
                                 modification_time=status.modification_time_ms, num_records=rows,
                                 stats=stats_json(rows, leaves, values)))
        out[g.dir_name] = files
    return out


def _count_input_rows(spark: "SparkSession", files: Sequence[PurgeFile], read_schema: Any) -> int:
    df = spark.read.schema(read_schema).parquet(*[f.spark_path for f in files])
    return int(df.count())


def _remove_of(add: AddFile, now: int) -> RemoveFile:
    return RemoveFile(path=add.path, deletionTimestamp=now, dataChange=False, extendedFileMetadata=True,
                      partitionValues=add.partitionValues, size=add.size, stats=add.stats, tags=add.tags,
                      deletionVector=add.deletionVector, baseRowId=add.baseRowId,
                      defaultRowCommitVersion=add.defaultRowCommitVersion)


def _cleanup(storage: Any, groups: Sequence[_Group]) -> None:
    """Best effort: delete the files of an uncommitted batch (local storage only)."""
    if not hasattr(storage, "walk_files"):
        return
    for g in groups:
        rel = unquote(g.out_rel)
        try:
            for status in list(storage.walk_files(rel)):
                storage.delete(status.path)
            os.rmdir(storage.local_path(rel))
        except OSError:
            pass


def _check_supported(snapshot: "Snapshot") -> None:
    if "rowTracking" in snapshot.protocol.features:
        raise NotSupportedYetError(
            "purging deletion vectors of a table with rowTracking would have to carry row IDs into "
            "the rewritten files, which delta-downgrade cannot do yet; nothing was written. Drop "
            "rowTracking first or purge with delta-spark (REORG TABLE … APPLY (PURGE))",
            table=snapshot.table, feature="deletionVectors")


def verify_deletion_vectors(snapshot: "Snapshot", reader: DvFileReader | None = None) -> int:
    """Resolve, read and check every DV of the live files — size, checksum, structure and
    cardinality, without expanding row indexes — and raise a :class:`DeletionVectorError` naming
    the data file and the DV for the first that cannot be used. Returns the number checked."""
    reader = reader or DvFileReader(snapshot.storage)
    count = 0
    for add in sorted(snapshot.state().files.values(), key=lambda a: a.path):
        if add.dv is not None:
            reader.read_verified_bytes(add.dv, data_file=add.path, table=snapshot.table)
            count += 1
    return count


def check_deletion_vectors(run: "DropRun") -> int:
    """Hook for DROP FEATURE deletionVectors, run before its first commit: fail (nothing
    committed) when a DV of the latest version cannot be read. No Spark."""
    return verify_deletion_vectors(run.latest())


@dataclass
class _Context:
    """What every batch of one purge shares."""

    run: "DropRun"
    spark: Any
    storage: Any
    reader: DvFileReader
    root: str
    read_schema: Any
    write_schema: Any
    leaves: list[StatsLeaf]
    codec: str
    use_footers: bool
    strategy: str
    broadcast_max_rows: int
    parallel_jobs: int


@dataclass
class _Batch:
    files: list[PurgeFile]
    groups: list[_Group]
    new_files: dict[str, list[NewFile]] = field(default_factory=dict)

    @property
    def to_write(self) -> list[_Group]:
        return [g for g in self.groups if g.rewritten]


def _load_dvs(ctx: _Context, batch: _Batch, strategy: str) -> dict[int, Any]:
    """The batch's DVs: row indexes (``broadcast``) or runs (``shuffle``) per batch index."""
    dvs: dict[int, Any] = {}
    for i, f in enumerate(batch.files):
        if f.cardinality == 0 or f.fully_deleted:
            continue
        if strategy == "shuffle":
            data = ctx.reader.read_verified_bytes(f.dv, data_file=f.add.path, table=ctx.run.table)
            dvs[i] = parse_dv_runs(data)
            continue
        values = ctx.reader.read(f.dv, data_file=f.add.path, table=ctx.run.table)
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
                futures = [pool.submit(_write_group, ctx.spark, ctx.root, g, dvs, strategy, ctx.read_schema,
                                       ctx.write_schema, ctx.codec, allow_packed) for g in to_write]
                for fut in futures:
                    fut.result()
            if ctx.use_footers:
                batch.new_files = _local_new_files(ctx.storage, to_write, ctx.leaves)
            else:
                batch.new_files = _spark_new_files(ctx.spark, ctx.root, to_write, ctx.read_schema, ctx.leaves)
            _verify_counts(ctx, batch)
            return batch
        except DvPurgeError:
            _cleanup(ctx.storage, to_write)
            # A log whose file sizes are wrong defeats the size-keyed join: retry once with names.
            if allow_packed and any(_join_key(g).mode == "size" for g in to_write):
                for g in to_write:
                    g.dir_name = _new_dir_name()
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
            physical = _count_input_rows(ctx.spark, inputs, ctx.read_schema)
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
            actions.append(_remove_of(f.add, now))
            if f.cardinality == 0:  # a DV deleting nothing: the same file, without the DV
                actions.append(AddFile(
                    path=f.add.path, partitionValues=f.add.partitionValues, size=f.add.size,
                    modificationTime=f.add.modificationTime, dataChange=False, stats=f.add.stats,
                    tags=f.add.tags, clusteringProvider=f.add.clusteringProvider))
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
    try:
        return ctx.run.commit(actions, PURGE_OPERATION, PURGE_PARAMETERS,
                              resolve=rebase_unless_files_touched(paths, actions, allow_new_files=True,
                                                                                 operation="REORG"))
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
    (local storage) | ``spark``. ``on_batch_committed(version, files_done)`` runs after each
    committed batch (tests use it to simulate a crash).
    """
    if strategy not in ("auto", "broadcast", "shuffle"):
        raise ValueError(f"unknown strategy {strategy!r}")
    if stats not in ("auto", "footer", "spark"):
        raise ValueError(f"unknown stats mode {stats!r}")
    snapshot = run.latest()
    files = files_to_purge(snapshot)
    if not files:
        return False
    _check_supported(snapshot)
    batches = plan_batches(files, batch_files=batch_files, batch_bytes=batch_bytes)
    total_files = len(files)
    total_bytes = sum(f.add.size for f in files)
    storage = run.log.storage
    reader = DvFileReader(storage)
    # Every DV must be usable before anything is written: deleted rows never come back.
    verify_deletion_vectors(snapshot, reader)
    if run.dry_run:
        for batch in batches:
            removes = [_remove_of(f.add, run.clock.now_ms()) for f in batch]
            run.commit(removes, PURGE_OPERATION, PURGE_PARAMETERS)
        run.progress(f"would purge {total_files} file(s) with deletion vectors ({total_bytes} bytes) "
                     f"in {len(batches)} batch(es)")
        return True

    metadata = snapshot.metadata
    materialized = "materializePartitionColumns" in snapshot.protocol.features
    read_json, write_json = physical_schemas(metadata, materialized_partitions=materialized)
    local = hasattr(storage, "list_dir") and hasattr(storage, "local_path") and \
        not os.environ.get("DATABRICKS_RUNTIME_VERSION")
    plans = [_Batch(b, _group_batch(b)) for b in batches]
    session = spark
    if session is None and any(p.to_write for p in plans):
        from delta_downgrade.spark import get_spark
        session = get_spark()
    read_schema = write_schema = None
    if session is not None:
        from pyspark.sql.types import StructType

        read_schema, write_schema = StructType.fromJson(read_json), StructType.fromJson(write_json)
    ctx = _Context(run=run, spark=session, storage=storage, reader=reader, root=_root_path(run.table),
                   read_schema=read_schema, write_schema=write_schema, leaves=stats_leaves(metadata),
                   codec=_compression(metadata), use_footers=stats == "footer" or (stats == "auto" and local),
                   strategy=strategy, broadcast_max_rows=broadcast_max_rows, parallel_jobs=parallel_jobs)
    run.progress(f"purging deletion vectors of {total_files} file(s), {total_bytes} bytes, "
                 f"in {len(plans)} batch(es)")
    done = [0, 0]  # files, bytes
    in_flight: deque[Future] = deque()

    def commit_oldest() -> None:
        batch = in_flight.popleft().result()
        version = _commit_batch(ctx, batch)
        done[0] += len(batch.files)
        done[1] += sum(f.add.size for f in batch.files)
        run.progress(f"purged {done[0]}/{total_files} files, {done[1]}/{total_bytes} bytes")
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
    "purge_deletion_vectors", "check_deletion_vectors", "verify_deletion_vectors", "unique_residue_modulus",
    "files_to_purge", "plan_batches", "physical_schemas", "deleted_masks", "stats_leaves", "stats_json",
    "stat_value", "footer_stats", "PurgeFile",
    "DvPurgeError", "PURGE_OPERATION", "PURGE_PARAMETERS",
]
