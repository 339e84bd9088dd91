"""The ``stats`` of an ``add`` (PROTOCOL.md "Per-file Statistics"): which leaf columns get
statistics, their values as JSON with exact numbers — from a Parquet footer or a Spark aggregation
for a file the DV purge wrote, carried over from the replaced file for the other rewrites.
"""

from __future__ import annotations

import copy
import datetime as dt
import decimal
import json
import math
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from msgspec import Struct
from delta_downgrade.protocol.actions import Metadata
from delta_downgrade.protocol.json_nesting import check_nesting
from delta_downgrade.rewrite.physical_schema import column_mapping_mode, physical_name
from delta_downgrade.rewrite.spark_io import quote_name
from delta_downgrade.rewrite.type_widening_rules import convert_bound

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, Row

STATS_STRING_PREFIX = 32          # delta-spark's string prefix length for min/max
DEFAULT_NUM_INDEXED_COLS = 32
NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
STATS_COLUMNS = "delta.dataSkippingStatsColumns"

_ATOMIC_STATS_TYPES = {"byte", "short", "integer", "long", "float", "double", "date", "timestamp",
                       "timestamp_ntz", "string"}

# --- JSON with exact numbers ------------------------------------------------------------------------

def loads_exact(text: str) -> Any:
    """JSON with non-integral numbers kept as Decimal: a float would round a decimal bound such as
    123456789012345678.9, and a rounded bound may exclude the value it bounds."""
    check_nesting(text, "stats")  # a ValueError, never a RecursionError
    return json.loads(text, parse_float=decimal.Decimal)


def dumps_exact(value: object, *, ascii_keys: bool = False) -> str:
    """Compact JSON that writes Decimals with their exact digits (the inverse of loads_exact).
    ``ascii_keys``: escape non-ASCII characters of object keys (never of values), as the DV purge
    has always written its stats; the other rewrites keep keys as they are."""
    if isinstance(value, dict):
        items = (f"{json.dumps(str(k), ensure_ascii=ascii_keys)}:{dumps_exact(v, ascii_keys=ascii_keys)}"
                 for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps_exact(v, ascii_keys=ascii_keys) for v in value) + "]"
    if isinstance(value, decimal.Decimal):
        return str(value) if value.is_finite() else json.dumps(float(value))
    return json.dumps(value, ensure_ascii=False)


def _pop_path(d: object, path: tuple[str, ...]) -> tuple[bool, object]:
    for key in path[:-1]:
        if not isinstance(d, dict) or key not in d:
            return False, None
        d = d[key]
    if isinstance(d, dict) and path and path[-1] in d:
        return True, d.pop(path[-1])
    return False, None


def _put_path(d: dict[str, Any], path: tuple[str, ...], value: object) -> None:
    for key in path[:-1]:
        d = d.setdefault(key, {})
    d[path[-1]] = value


# --- which leaf columns get statistics -------------------------------------------------------------

class StatsLeaf(Struct, frozen=True):
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


def _schema_leaves(metadata: Metadata) -> list[tuple[tuple[str, ...], tuple[str, ...], object]]:
    """(logical path, physical path, type) of every leaf column in schema order, through structs
    only; partition columns never (PROTOCOL.md "Per-file Statistics")."""
    mode = column_mapping_mode(metadata.configuration, strip=False)
    partition = {c.lower() for c in metadata.partitionColumns or []}
    leaves: list[tuple[tuple[str, ...], tuple[str, ...], object]] = []

    def walk(fields: Iterable[Mapping[str, Any]], logical: tuple[str, ...],
             physical: tuple[str, ...]) -> None:
        for f in fields:
            lname = f["name"]
            pname = physical_name(f, mode, as_written=True)
            if not logical and lname.lower() in partition:
                continue
            t = f["type"]
            if isinstance(t, dict) and t.get("type") == "struct":
                walk(t["fields"], logical + (lname,), physical + (pname,))
            else:
                leaves.append((logical + (lname,), physical + (pname,), t))

    walk(metadata.schema.get("fields", []), (), ())
    return leaves


def _is_clustering_leaf(physical: tuple[str, ...], clustering: Sequence[tuple[str, ...]]) -> bool:
    # Case-insensitive, as delta-spark resolves clustering columns (ClusteringColumnInfo).
    folded = tuple(str(p).lower() for p in physical)
    return any(tuple(c.lower() for c in column) == folded for column in clustering)


def stats_leaves(metadata: Metadata, clustering: Sequence[tuple[str, ...]] = ()) -> list[StatsLeaf]:
    """The leaf columns that get statistics, as delta-spark picks them: those listed in
    ``delta.dataSkippingStatsColumns``, else the first ``delta.dataSkippingNumIndexedCols``
    (default 32, -1 = all) leaves in schema order; partition columns never. Arrays and maps count
    as leaves but get no statistics here.

    ``clustering``: the table's clustering columns (physical name parts,
    ``protocol.clustering.clustering_columns``); PROTOCOL.md "Clustered Table" asks writers for
    their statistics in every ``add``, so they are chosen even when the two properties leave them
    out."""
    conf = metadata.configuration
    leaves = _schema_leaves(metadata)
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
    if clustering:
        picked = {id(leaf) for leaf in chosen}
        chosen = [leaf for leaf in leaves
                  if id(leaf) in picked or _is_clustering_leaf(leaf[1], clustering)]
    return [StatsLeaf(physical, t) for _logical, physical, t in chosen if isinstance(t, str)]


def clustering_stats_leaves(metadata: Metadata, clustering: Sequence[tuple[str, ...]], *,
                            logical: bool = False) -> list[StatsLeaf]:
    """The leaves of the clustering columns only, named as the file being described names them:
    physical names (the table's layout), or ``logical`` ones (a file written by column-mapping
    removal)."""
    return [StatsLeaf(lpath if logical else ppath, t) for lpath, ppath, t in _schema_leaves(metadata)
            if isinstance(t, str) and _is_clustering_leaf(ppath, clustering)]


# --- statistics of a new file ----------------------------------------------------------------------

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


LeafStats = tuple[Any, Any, int | None]  # (min, max, null count) of one leaf column


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
            _put_path(nulls, leaf.path, int(null_count))
        if leaf.min_max and (null_count is None or null_count < num_records):
            lo_v = stat_value(leaf.delta_type, lo, is_max=False)
            hi_v = stat_value(leaf.delta_type, hi, is_max=True)
            if lo_v is not None:
                _put_path(mins, leaf.path, lo_v)
            if hi_v is not None:
                _put_path(maxs, leaf.path, hi_v)
    out: dict[str, Any] = {"numRecords": int(num_records)}
    if mins:
        out["minValues"] = mins
    if maxs:
        out["maxValues"] = maxs
    if nulls:
        out["nullCount"] = nulls
    return dumps_exact(out, ascii_keys=True)


def footer_stats(footer: Any,
                 leaves: Sequence[StatsLeaf]) -> tuple[int, dict[tuple[str, ...], LeafStats]]:
    """(row count, per-leaf (min, max, nulls)) from a parquet footer (row-group statistics merged).
    ``footer``: a ``pyarrow.parquet.FileMetaData`` (read through the table's storage,
    ``rewrite/data_files.py``) or what ``pq.read_metadata`` opens. A leaf with a row group
    lacking min/max gets none; lacking null counts, none either."""
    import pyarrow.parquet as pq

    md = footer if isinstance(footer, pq.FileMetaData) else pq.read_metadata(footer)
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


def spark_leaf_aggregates(leaves: Sequence[StatsLeaf]) -> list["Column"]:
    """Spark aggregates of ``leaves`` over a scan with the physical schema, as ``stat_value``
    takes them: ``nulls<k>`` for leaf ``k`` and, for leaves with bounds, ``min<k>``/``max<k>``
    (timestamps as microseconds; a string min cut to the prefix, a longer string max left out)."""
    from pyspark.sql import functions as F

    aggs: list["Column"] = []
    for k, leaf in enumerate(leaves):
        col = F.col(quote_name(leaf.path[0]))
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
    return aggs


def spark_leaf_stats(row: "Row", leaves: Sequence[StatsLeaf]) -> dict[tuple[str, ...], LeafStats]:
    """Per-leaf (min, max, nulls) from a row of ``spark_leaf_aggregates``."""
    return {leaf.path: (row[f"min{k}"] if leaf.min_max else None, row[f"max{k}"] if leaf.min_max else None,
                        row[f"nulls{k}"]) for k, leaf in enumerate(leaves)}


# --- statistics carried over from the file a rewrite replaces ---------------------------------------

_STAT_MAPS = ("minValues", "maxValues", "nullCount")
#: Collated String Type RFC: min/max values per collation, keyed like the top-level ones.
STATS_WITH_COLLATION = "statsWithCollation"


def widen_stats(stats: dict[str, Any], widened: Iterable[tuple[tuple[str, ...], str, str]]) -> dict[str, Any]:
    """Stats (keyed by physical names) of a file whose widened leaves were cast to the table
    type: numeric bounds stay valid as they are, date bounds become midnight timestamps, other
    bounds are dropped (missing bounds only cost data skipping, never correctness)."""
    out = copy.deepcopy(stats)
    for path, stored, table_type in widened:
        for key in ("minValues", "maxValues"):
            bounds = out.get(key)
            if not isinstance(bounds, dict):
                continue
            present, value = _pop_path(bounds, path)
            if present:
                ok, converted = convert_bound(value, stored, table_type)
                if ok:
                    _put_path(bounds, path, converted)
    return out


def rekey_stats(stats: dict[str, Any], schema: dict[str, Any], mode: str) -> dict[str, Any]:
    """Stats keyed by logical names: under column mapping the stats JSON uses physical names at
    every level of nested structs; keys the schema no longer has (dropped columns) are left out."""

    def walk(node: Any, fields_: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if not isinstance(node, dict):
            return out
        for f in fields_:
            key = physical_name(f, mode)
            if key not in node:
                continue
            value = node[key]
            t = f.get("type")
            if isinstance(value, dict) and isinstance(t, dict) and t.get("type") == "struct":
                out[str(f["name"])] = walk(value, t["fields"])
            else:
                out[str(f["name"])] = value
        return out

    fields = schema.get("fields", [])
    result = {k: v for k, v in stats.items() if k not in _STAT_MAPS}
    for key in _STAT_MAPS:
        if key in stats:
            result[key] = walk(stats[key], fields)
    collated = stats.get(STATS_WITH_COLLATION)
    if isinstance(collated, dict):
        # Collated String Type RFC: per collation, minValues/maxValues mirroring the physical
        # stats schema, so they are re-keyed like the top-level ones (a stale physical key would
        # name no column once column mapping is gone).
        result[STATS_WITH_COLLATION] = {
            collation: ({k: (walk(v, fields) if k in _STAT_MAPS else v) for k, v in by_kind.items()}
                        if isinstance(by_kind, dict) else by_kind)
            for collation, by_kind in collated.items()}
    return result


def stats_for_rewrite(old: str | None, num_rows: int, widened: Sequence[tuple[tuple[str, ...], str, str]],
                      rekey: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> str:
    """The stats of a rewritten file: the old ones (the same rows, so still exact) with widened
    bounds converted and, for column-mapping removal, logical keys; ``numRecords`` comes from the
    new file's footer. Without old stats: ``numRecords`` only."""
    try:
        stats = loads_exact(old) if old else None
    except ValueError:
        stats = None
    if not isinstance(stats, dict):
        stats = {}
    stats = widen_stats(stats, widened) if widened else stats
    if rekey is not None:
        stats = rekey(stats)
    stats["numRecords"] = num_rows
    ordered = {"numRecords": num_rows, **{k: v for k, v in stats.items() if k != "numRecords"}}
    return dumps_exact(ordered)


def _has_path(d: object, path: tuple[str, ...]) -> bool:
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return False
        d = d[key]
    return True


def with_missing_leaf_stats(stats: str, leaves: Sequence[StatsLeaf],
                            values: Mapping[tuple[str, ...], LeafStats], *, wide: bool = False) -> str:
    """``stats`` (a rewritten file's, already complete for ``numRecords``) with the statistics of
    ``leaves`` it lacks taken from ``values`` (the new file's footer): what it has is kept as it
    is. PROTOCOL.md "Clustered Table" asks every ``add`` for statistics of the clustering columns;
    a file carried over without them, or whose widened bounds had to be dropped, gets them here.

    ``wide``: the file has a deletion vector, so the footer describes rows that are no longer
    valid: its bounds still bound the valid rows but its null count is no exact count of them.
    When anything is added the stats then say ``tightBounds: false`` (PROTOCOL.md "Per-file
    Statistics": with wide bounds a null count means something only at 0 or ``numRecords``)."""
    current = loads_exact(stats)
    num_records = current.get("numRecords")
    added = False
    for leaf in leaves:
        found = values.get(leaf.path)
        if found is None:
            continue
        lo, hi, null_count = found
        if null_count is not None and not _has_path(current.get("nullCount"), leaf.path):
            _put_path(current.setdefault("nullCount", {}), leaf.path, int(null_count))
            added = True
        if not leaf.min_max or (null_count is not None and num_records is not None
                                and null_count >= num_records):
            continue
        for key, value, is_max in (("minValues", lo, False), ("maxValues", hi, True)):
            bound = stat_value(leaf.delta_type, value, is_max=is_max)
            if bound is not None and not _has_path(current.get(key), leaf.path):
                _put_path(current.setdefault(key, {}), leaf.path, bound)
                added = True
    if added and wide:
        current["tightBounds"] = False
    return dumps_exact(current) if added else stats


def with_footer_stats(stats: str, footer: Any, leaves: Sequence[StatsLeaf], *, wide: bool = False) -> str:
    """``with_missing_leaf_stats`` from the footer of the new file (no data read); ``footer`` as
    for :func:`footer_stats`, or a callable giving it, called only when there are leaves."""
    if not leaves:
        return stats
    _rows, values = footer_stats(footer() if callable(footer) else footer, leaves)
    return with_missing_leaf_stats(stats, leaves, values, wide=wide)
