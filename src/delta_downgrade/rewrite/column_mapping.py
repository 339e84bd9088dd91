"""DROP FEATURE columnMapping: rewrite the data files with logical column names
(PROTOCOL.md "Column Mapping", delta-spark's ``RemoveColumnMappingCommand``), and the per-file
Parquet rewrite both this drop and the type-widening drop use.

PROTOCOL.md, "Column Mapping":

- every column (at every nesting level) has a logical name (``name``), a physical name
  (``delta.columnMapping.physicalName``) and an id (``delta.columnMapping.id``) in its field
  metadata; ``delta.columnMapping.mode`` says which of them the data files use: ``name`` mode
  resolves Parquet columns by physical name, ``id`` mode by Parquet field id;
- partition values and column statistics are keyed by physical names;
- ``delta.columnMapping.nested.ids`` holds the ids of array elements and map keys/values
  (icebergCompat); ``parquet.field.id`` may appear as well.

A table without column mapping (mode ``none``) reads every Parquet column, at every level, by its
logical name. So removing the feature means: every live data file must hold its columns under
their logical names and without field ids, partition values and stats must be keyed by logical
names, and the schema and configuration must lose every column-mapping key — all in ONE commit,
because a reader must never see the new schema with a file that still uses physical names
(delta-rs, for one, silently reads such columns as NULL).

The commit is ``REMOVE COLUMN MAPPING``: ``remove`` (dataChange=false) of every rewritten file,
``add`` (dataChange=false) of its replacement, ``add`` of files that already match (re-keyed
partition values and stats), and the new ``metaData``. Data files are written first; a crash
before the commit leaves only orphan files (VACUUM removes them later), and a rerun starts over.

The rewrite keeps row order within each file (each input file is read as exactly one split by one
task and written as one output file), so deletion vectors and row-tracking ids, which address rows
by their position in the file, stay valid and are carried over unchanged.
"""

from __future__ import annotations

import contextlib
import copy
import decimal
import json
import os
import posixpath
import re
import shutil
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence
from urllib.parse import quote

from delta_downgrade.protocol.actions import AddFile, AnyAction, RemoveFile
from delta_downgrade.errors import (  # noqa: F401 - FileLayoutError is re-exported
    BadInputError, FeatureDropError, FileLayoutError, InvalidColumnNamesForMappingRemovalError,
)
from delta_downgrade.log.commit import rebase_unless_files_touched
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.rewrite.staging import STAGING_DIR
from delta_downgrade.storage import typed_write_errors
from delta_downgrade.protocol.schema import arrow_primitive_to_delta

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from delta_downgrade.operations.drop_run import DropRun

# --- PROTOCOL.md "Column Mapping" ------------------------------------------------------------------

MODE_KEY = "delta.columnMapping.mode"
MAX_ID_KEY = "delta.columnMapping.maxColumnId"
ID_KEY = "delta.columnMapping.id"
PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
NESTED_IDS_KEY = "delta.columnMapping.nested.ids"
PARQUET_FIELD_ID_KEY = "parquet.field.id"
# The icebergCompat RFC spelled the nested-ids key this way; strip it too.
RFC_NESTED_IDS_KEY = "parquet.field.nested.ids"
COLUMN_MAPPING_FIELD_KEYS = (ID_KEY, PHYSICAL_NAME_KEY, NESTED_IDS_KEY, PARQUET_FIELD_ID_KEY,
                             RFC_NESTED_IDS_KEY)

# delta-spark refuses to remove column mapping when a column name holds one of these characters:
# without column mapping such names are not valid Parquet column names for Spark.
INVALID_NAME_CHARS = " ,;{}()\n\t="
INVALID_NAMES_ERROR = InvalidColumnNamesForMappingRemovalError.error_class

# Row tracking may materialize row ids / commit versions in hidden Parquet columns that are not in
# the table schema (PROTOCOL.md "Row Tracking"); a rewrite must keep them.
MATERIALIZED_COLUMN_KEYS = ("delta.rowTracking.materializedRowIdColumnName",
                            "delta.rowTracking.materializedRowCommitVersionColumnName")

ARROW_FIELD_ID = b"PARQUET:field_id"
DEFAULT_WORKERS = 4
FOOTER_READERS = 16


def column_mapping_mode(configuration: dict[str, str]) -> str:
    return (configuration.get(MODE_KEY) or "none").strip().lower()


def physical_name(f: dict[str, Any], mode: str) -> str:
    """The name the data files use for ``f`` (its logical name when the mode is ``none``)."""
    if mode in ("name", "id"):
        return str((f.get("metadata") or {}).get(PHYSICAL_NAME_KEY) or f["name"])
    return str(f["name"])


def column_id(f: dict[str, Any]) -> int | None:
    value = (f.get("metadata") or {}).get(ID_KEY)
    return int(value) if value is not None else None


def iter_named_fields(t: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """(logical path, field) of every struct field at every level, through arrays and maps."""
    if not isinstance(t, dict):
        return
    kind = t.get("type")
    if kind == "struct":
        for f in t.get("fields", []):
            here = (*path, str(f["name"]))
            yield here, f
            yield from iter_named_fields(f.get("type"), here)
    elif kind == "array":
        yield from iter_named_fields(t.get("elementType"), (*path, "element"))
    elif kind == "map":
        yield from iter_named_fields(t.get("keyType"), (*path, "key"))
        yield from iter_named_fields(t.get("valueType"), (*path, "value"))


def invalid_column_names(schema: dict[str, Any]) -> list[str]:
    """Dotted paths of the fields whose own name holds a character of ``INVALID_NAME_CHARS``."""
    return [".".join(path) for path, f in iter_named_fields(schema)
            if any(c in str(f["name"]) for c in INVALID_NAME_CHARS)]


def strip_field_metadata(t: Any, keys: Sequence[str]) -> Any:
    """A copy of the Delta type ``t`` without ``keys`` in any field's metadata, at every level."""
    if not isinstance(t, dict):
        return t
    kind = t.get("type")
    if kind == "struct":
        fields_out = []
        for f in t.get("fields", []):
            g = dict(f)
            g["metadata"] = {k: v for k, v in (f.get("metadata") or {}).items() if k not in keys}
            g["type"] = strip_field_metadata(f.get("type"), keys)
            fields_out.append(g)
        return {**t, "fields": fields_out}
    if kind == "array":
        return {**t, "elementType": strip_field_metadata(t.get("elementType"), keys)}
    if kind == "map":
        return {**t, "keyType": strip_field_metadata(t.get("keyType"), keys),
                "valueType": strip_field_metadata(t.get("valueType"), keys)}
    return t


def schema_string(schema: dict[str, Any]) -> str:
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


# --- Type Widening: which stored types a reader widens (PROTOCOL.md "Type Widening") --------------

_INTEGRAL_RANK = {"byte": 0, "short": 1, "integer": 2, "long": 3}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def _decimal(t: str) -> tuple[int, int] | None:
    m = _DECIMAL.fullmatch(t)
    return (int(m.group(1)), int(m.group(2))) if m else None


def normalize_primitive(t: str) -> str:
    d = _decimal(t)
    return f"decimal({d[0]},{d[1]})" if d else t


def is_widening(from_type: str, to_type: str) -> bool:
    """Whether ``from_type`` -> ``to_type`` is one of the spec's supported type changes (or a chain
    of them): Byte -> Short -> Int -> Long; Float -> Double; Byte/Short/Int -> Double;
    Date -> TimestampNTZ; Decimal(p, s) -> Decimal(p + k1, s + k2) with k1 >= k2 >= 0;
    Byte/Short/Int -> Decimal(10 + k1, k2) and Long -> Decimal(20 + k1, k2) with k1 >= k2 >= 0."""
    a, b = normalize_primitive(from_type), normalize_primitive(to_type)
    if a == b:
        return False
    if a in _INTEGRAL_RANK and b in _INTEGRAL_RANK:
        return _INTEGRAL_RANK[a] < _INTEGRAL_RANK[b]
    if b == "double":
        return a == "float" or a in ("byte", "short", "integer")
    if a == "date":
        return b == "timestamp_ntz"
    db = _decimal(b)
    if db is None:
        return False
    p, s = db
    da = _decimal(a)
    if da is not None:
        k1, k2 = p - da[0], s - da[1]
        return k1 >= k2 >= 0
    if a in ("byte", "short", "integer"):
        return p - s >= 10
    if a == "long":
        return p - s >= 20
    return False


# --- per-file plan: how to read a file and what to write -------------------------------------------

@dataclass(frozen=True)
class Naming:
    """How the output file names its columns.

    ``logical``: the logical names, no field ids (column-mapping removal). Otherwise the table's
    own layout: physical names under ``name``/``id`` mode, plus Parquet field ids under ``id``.
    """

    mode: str
    logical: bool

    def out_name(self, f: dict[str, Any]) -> str:
        return str(f["name"]) if self.logical else physical_name(f, self.mode)

    def out_metadata(self, f: dict[str, Any]) -> dict[str, Any]:
        if not self.logical and self.mode == "id" and column_id(f) is not None:
            return {PARQUET_FIELD_ID_KEY: column_id(f)}
        return {}


@dataclass
class ColumnPlan:
    """One top-level output column: read ``source`` (None: absent from the file, written as NULL)
    with ``read_type`` and cast it (positionally, at every level) to ``target_type``."""

    source: str | None
    read_type: Any
    target_type: Any
    out_name: str
    out_metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class FilePlan:
    read_fields: list[dict[str, Any]]
    columns: list[ColumnPlan]
    num_rows: int
    # (physical path of the leaf, stored type, table type) of every widened primitive
    widened: list[tuple[tuple[str, ...], str, str]] = field(default_factory=list)
    # the file already has exactly the output layout: names, no field ids, no extra columns
    identity: bool = True

    @property
    def read_schema(self) -> dict[str, Any]:
        return {"type": "struct", "fields": self.read_fields}


def _arrow_field_id(f: "pa.Field") -> int | None:
    md = f.metadata or {}
    value = md.get(ARROW_FIELD_ID)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _has_field_ids(t: "pa.DataType") -> bool:
    import pyarrow as pa

    if pa.types.is_struct(t):
        return any(_arrow_field_id(t.field(i)) is not None or _has_field_ids(t.field(i).type)
                   for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _arrow_field_id(t.value_field) is not None or _has_field_ids(t.value_type)
    if pa.types.is_map(t):
        return any(_arrow_field_id(x) is not None or _has_field_ids(x.type) for x in (t.key_field, t.item_field))
    return False


def _nullable(t: Any) -> Any:
    """``t`` with every nullability flag set: Spark reads files as nullable, and a cast may never
    narrow nullability, so read and target types are both fully nullable."""
    if not isinstance(t, dict):
        return t
    kind = t.get("type")
    if kind == "struct":
        return {**t, "fields": [{**f, "nullable": True, "type": _nullable(f.get("type"))} for f in t["fields"]]}
    if kind == "array":
        return {**t, "containsNull": True, "elementType": _nullable(t.get("elementType"))}
    if kind == "map":
        return {**t, "valueContainsNull": True, "keyType": _nullable(t.get("keyType")),
                "valueType": _nullable(t.get("valueType"))}
    return t


class _Planner:
    """Matches the Delta schema with one file's footer, level by level."""

    def __init__(self, mode: str, naming: Naming, where: str) -> None:
        self.mode = mode
        self.naming = naming
        self.where = where
        self.widened: list[tuple[tuple[str, ...], str, str]] = []
        self.identity = True

    def find(self, children: list["pa.Field"], f: dict[str, Any]) -> "pa.Field | None":
        """The file column holding ``f``: by field id in ``id`` mode (by name when the file has no
        ids), else by physical name; exact match first, then a unique case-insensitive one."""
        if self.mode == "id":
            wanted = column_id(f)
            with_ids = [c for c in children if _arrow_field_id(c) is not None]
            if wanted is not None and with_ids:
                return next((c for c in with_ids if _arrow_field_id(c) == wanted), None)
        name = physical_name(f, self.mode)
        exact = [c for c in children if c.name == name]
        if exact:
            return exact[0]
        folded = [c for c in children if c.name.lower() == name.lower()]
        return folded[0] if len(folded) == 1 else None

    def target(self, t: Any) -> Any:
        """The output type: the table type with output names (and ids) at every level."""
        if not isinstance(t, dict):
            return normalize_primitive(t) if isinstance(t, str) else t
        kind = t.get("type")
        if kind == "struct":
            return {"type": "struct", "fields": [
                {"name": self.naming.out_name(f), "type": self.target(f["type"]), "nullable": True,
                 "metadata": self.naming.out_metadata(f)} for f in t["fields"]]}
        if kind == "array":
            return {"type": "array", "elementType": self.target(t["elementType"]), "containsNull": True}
        if kind == "map":
            return {"type": "map", "keyType": self.target(t["keyType"]),
                    "valueType": self.target(t["valueType"]), "valueContainsNull": True}
        return t

    def read(self, t: Any, a: "pa.DataType", path: tuple[str, ...]) -> Any:
        """The type to read the file's column ``a`` with, for the table type ``t``."""
        import pyarrow as pa

        if isinstance(t, str):
            table_type = normalize_primitive(t)
            stored = arrow_primitive_to_delta(a)
            if pa.types.is_struct(a) or pa.types.is_list(a) or pa.types.is_large_list(a) or pa.types.is_map(a):
                raise FileLayoutError(f"{self.where}: column {'.'.join(path)} is nested in the file but "
                                      f"{table_type} in the table schema")
            if stored is not None and is_widening(stored, table_type):
                self.widened.append((path, stored, table_type))
                self.identity = False
                return stored
            return t
        kind = t.get("type")
        if kind == "struct":
            if not pa.types.is_struct(a):
                raise FileLayoutError(f"{self.where}: column {'.'.join(path) or '<root>'} is a struct in "
                                      f"the table schema but {a} in the file")
            children = [a.field(i) for i in range(a.num_fields)]
            fields_out, used = self.struct_fields(t["fields"], children, path)
            if len(used) != len(children):
                self.identity = False  # columns dropped from the schema are still in the file
            return {"type": "struct", "fields": fields_out}
        if kind == "array":
            if not (pa.types.is_list(a) or pa.types.is_large_list(a)):
                raise FileLayoutError(f"{self.where}: column {'.'.join(path)} is an array in the table "
                                      f"schema but {a} in the file")
            return {"type": "array", "containsNull": True,
                    "elementType": self.read(t["elementType"], a.value_type, (*path, "element"))}
        if kind == "map":
            if not pa.types.is_map(a):
                raise FileLayoutError(f"{self.where}: column {'.'.join(path)} is a map in the table "
                                      f"schema but {a} in the file")
            return {"type": "map", "valueContainsNull": True,
                    "keyType": self.read(t["keyType"], a.key_type, (*path, "key")),
                    "valueType": self.read(t["valueType"], a.item_type, (*path, "value"))}
        return t

    def struct_fields(self, delta_fields: list[dict[str, Any]], children: list["pa.Field"],
                      path: tuple[str, ...]) -> tuple[list[dict[str, Any]], set[str]]:
        """Read fields in the order of ``delta_fields`` (the cast is positional)."""
        out: list[dict[str, Any]] = []
        used: set[str] = set()
        taken = {c.name for c in children}
        for i, f in enumerate(delta_fields):
            here = (*path, physical_name(f, self.mode))
            found = self.find(children, f)
            if found is None:
                # Absent from this file (added later): read a name the file does not have, which
                # Spark fills with NULL.
                self.identity = False
                missing = f"__delta_downgrade_missing_{i}"
                while missing in taken:
                    missing += "_"
                out.append({"name": missing, "type": _nullable(self.target(f["type"])),
                            "nullable": True, "metadata": {}})
                continue
            used.add(found.name)
            if found.name != self.naming.out_name(f) or _arrow_field_id(found) is not None:
                self.identity = False
            out.append({"name": found.name, "type": self.read(f["type"], found.type, here),
                        "nullable": True, "metadata": {}})
        return out, used


def plan_file(schema: dict[str, Any], partition_columns: Sequence[str], configuration: dict[str, str],
              arrow_schema: "pa.Schema", num_rows: int, naming: Naming, where: str) -> FilePlan:
    """How to rewrite one file whose footer says ``arrow_schema``.

    Data columns absent from the file are written as NULL columns; partition columns are written
    only when the file materializes them; materialized row-tracking columns are kept as they are.
    Columns of the file that the schema no longer has (dropped columns) are not written.
    """
    mode = column_mapping_mode(configuration)
    planner = _Planner(mode, naming, where)
    children = list(arrow_schema)
    partition = set(partition_columns)
    columns: list[ColumnPlan] = []
    read_fields: list[dict[str, Any]] = []
    used: set[str] = set()
    for f in schema.get("fields", []):
        found = planner.find(children, f)
        target = _nullable(planner.target(f["type"]))
        out_name = naming.out_name(f)
        if found is None:
            if f["name"] in partition:
                continue
            planner.identity = False
            columns.append(ColumnPlan(None, None, target, out_name, naming.out_metadata(f)))
            continue
        used.add(found.name)
        if found.name != out_name or _arrow_field_id(found) is not None:
            planner.identity = False
        read_type = _nullable(planner.read(f["type"], found.type, (physical_name(f, mode),)))
        read_fields.append({"name": found.name, "type": read_type, "nullable": True, "metadata": {}})
        columns.append(ColumnPlan(found.name, read_type, target, out_name, naming.out_metadata(f)))
    keep = {configuration[k] for k in MATERIALIZED_COLUMN_KEYS if configuration.get(k)}
    for child in children:
        if child.name in used:
            continue
        stored = arrow_primitive_to_delta(child.type)
        if child.name in keep and stored is not None:
            used.add(child.name)
            read_fields.append({"name": child.name, "type": stored, "nullable": True, "metadata": {}})
            columns.append(ColumnPlan(child.name, stored, stored, child.name))
        else:
            planner.identity = False
    if naming.logical and any(_arrow_field_id(c) is not None or _has_field_ids(c.type) for c in children):
        planner.identity = False
    return FilePlan(read_fields, columns, num_rows, planner.widened, planner.identity)


# --- statistics (PROTOCOL.md "Per-file Statistics") ------------------------------------------------

_STAT_MAPS = ("minValues", "maxValues", "nullCount")


def loads_exact(text: str) -> Any:
    """JSON with non-integral numbers kept as Decimal: a float would round a decimal bound such as
    123456789012345678.9, and a rounded bound may exclude the value it bounds."""
    return json.loads(text, parse_float=decimal.Decimal)


def dumps_exact(value: Any) -> str:
    """Compact JSON that writes Decimals with their exact digits (the inverse of loads_exact)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{dumps_exact(v)}"
                              for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps_exact(v) for v in value) + "]"
    if isinstance(value, decimal.Decimal):
        return str(value) if value.is_finite() else json.dumps(float(value))
    return json.dumps(value, ensure_ascii=False)


def _convert_stat(value: Any, stored: str, table_type: str) -> tuple[bool, Any]:
    """A min/max value written for ``stored`` as a value of ``table_type`` (ok=False: drop it)."""
    if value is None:
        return True, None
    if stored == "date" and table_type == "timestamp_ntz" and isinstance(value, str):
        return True, f"{value}T00:00:00.000"
    # Integers and decimals are exact in JSON and in every wider type. A float bound is not: the
    # float 3.4 widens to the double 3.4000000953674316, above a max bound written as 3.4.
    exact = {"byte", "short", "integer", "long"}
    if (stored in exact or _decimal(stored)) and (table_type in exact | {"double"} or _decimal(table_type)):
        return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool), value
    return False, None


def _pop_path(d: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    for key in path[:-1]:
        if not isinstance(d, dict) or key not in d:
            return False, None
        d = d[key]
    if isinstance(d, dict) and path and path[-1] in d:
        return True, d.pop(path[-1])
    return False, None


def _put_path(d: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        d = d.setdefault(key, {})
    d[path[-1]] = value


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
                ok, converted = _convert_stat(value, stored, table_type)
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

    result = {k: v for k, v in stats.items() if k not in _STAT_MAPS}
    for key in _STAT_MAPS:
        if key in stats:
            result[key] = walk(stats[key], schema.get("fields", []))
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


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _glob_escaped(path: str) -> str:
    """Hadoop expands glob characters in load paths; escape them so a path is read literally."""
    return re.sub(r"([\\{}\[\]*?])", r"\\\1", path)


def _is_absolute(path: str) -> bool:
    return path.startswith("/") or bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path))


@dataclass
class Rewritten:
    """The new file of one rewritten input file (``path`` None: the input had no rows)."""

    source: AddFile
    path: str | None
    size: int
    num_rows: int
    modification_time: int


class FileRewriter:
    """Writes new data files next to the old ones, one per input, through Spark.

    Each output is first written by Spark into a hidden staging directory of the table and then
    moved to its final name (``part-00000-<uuid>-c000.<codec>.parquet`` in the input's directory,
    or at the table root for an absolute input path), so that nothing half-written ever has a
    data-file name. The staging directory is removed at the end; files moved out of it but never
    committed are orphans that VACUUM removes.
    """

    def __init__(self, log: DeltaLog, *, spark: "SparkSession | None" = None,
                 workers: int = DEFAULT_WORKERS) -> None:
        self._spark = spark
        self.storage = log.storage
        self.table = log.table
        self.workers = max(1, workers)
        self.staging = f"{STAGING_DIR}/{uuid.uuid4()}"

    @property
    def session(self) -> "SparkSession":
        """The Spark session, started on first use (planning and dry runs need none)."""
        if self._spark is None:
            self._spark = get_session()
        return self._spark

    def local(self, rel: str) -> str:
        return self.storage.local_path(rel)

    def input_location(self, add: AddFile) -> str:
        path = add.decoded_path
        if _is_absolute(path):
            return path[len("file:"):] if path.startswith("file:") else path
        return self.local(path)

    def footer(self, add: AddFile) -> tuple["pa.Schema", int]:
        import pyarrow.parquet as pq

        meta = pq.read_metadata(self.input_location(add))
        return meta.schema.to_arrow_schema(), int(meta.num_rows)

    def _destination(self, add: AddFile, suffix: str) -> str:
        path = add.decoded_path
        parent = "" if _is_absolute(path) else posixpath.dirname(path)
        name = f"part-00000-{uuid.uuid4()}-c000{suffix}"
        return f"{parent}/{name}" if parent else name

    def rewrite(self, add: AddFile, plan: FilePlan) -> Rewritten:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructType, _parse_datatype_json_value

        staging_rel = f"{self.staging}/{uuid.uuid4()}"
        staging_local = self.local(staging_rel)
        reader = self.session.read.schema(StructType.fromJson(plan.read_schema))
        df = reader.parquet(_glob_escaped(self.input_location(add)))
        selected = []
        for c in plan.columns:
            source = F.col(_quoted(c.source)) if c.source is not None else F.lit(None)
            target = _parse_datatype_json_value(c.target_type)
            column = source.cast(target)
            selected.append(column.alias(c.out_name, metadata=c.out_metadata) if c.out_metadata
                            else column.alias(c.out_name))
        # Disk full / read-only while Spark stages or while we move the output: the typed
        # storage errors, as for every other write of the package (storage.typed_write_errors).
        with typed_write_errors(f"writing the rewrite of {add.path} (staging {staging_rel})", self.table):
            return self._stage_and_move(add, plan, df.select(*selected), staging_local)

    def _stage_and_move(self, add: AddFile, plan: FilePlan, df: Any, staging_local: str) -> Rewritten:
        (df.coalesce(1).write.mode("errorifexists")
           .option("compression", "snappy").option("maxRecordsPerFile", 0)
           .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
           .parquet(staging_local))
        try:
            written = sorted(n for n in os.listdir(staging_local)
                             if n.endswith(".parquet") and not n.startswith((".", "_")))
            if len(written) > 1:
                raise FileLayoutError(f"Spark wrote {len(written)} files for {add.path}; expected one",
                                      table=self.table)
            if not written:
                if plan.num_rows != 0:
                    raise FileLayoutError(f"Spark wrote no file for {add.path}, which has "
                                          f"{plan.num_rows} rows; nothing was committed", table=self.table)
                return Rewritten(add, None, 0, 0, 0)
            name = written[0]
            codec = re.search(r"(\.[A-Za-z0-9]+)?\.parquet$", name)
            dest = self._destination(add, codec.group(0) if codec else ".parquet")
            dest_local = self.local(dest)
            os.makedirs(os.path.dirname(dest_local), exist_ok=True)
            os.replace(os.path.join(staging_local, name), dest_local)
        finally:
            shutil.rmtree(staging_local, ignore_errors=True)
        import pyarrow.parquet as pq

        rows = int(pq.read_metadata(dest_local).num_rows)
        if rows != plan.num_rows:
            raise FileLayoutError(
                f"the rewrite of {add.path} has {rows} rows instead of {plan.num_rows}; nothing was "
                f"committed (check spark.sql.files.ignoreCorruptFiles/ignoreMissingFiles)", table=self.table)
        st = os.stat(dest_local)
        return Rewritten(add, dest, st.st_size, rows, int(st.st_mtime * 1000))

    def rewrite_all(self, items: Sequence[tuple[AddFile, FilePlan]], progress: Callable[[str], None],
                    label: str) -> list[Rewritten]:
        """Rewrite ``items`` with up to ``workers`` concurrent Spark jobs; progress in files and
        bytes. Any failure stops the rewrite (files already written become orphans)."""
        total_files = len(items)
        total_bytes = sum(a.size or 0 for a, _ in items)
        done: list[Rewritten] = []
        lock = threading.Lock()
        state = {"bytes": 0}

        def one(item: tuple[AddFile, FilePlan]) -> Rewritten:
            result = self.rewrite(*item)
            with lock:
                done.append(result)
                state["bytes"] += item[0].size or 0
                progress(f"{label}: rewrote {len(done)}/{total_files} files, "
                         f"{state['bytes']}/{total_bytes} bytes")
            return result

        try:
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
        finally:
            self.cleanup()

    def footers(self, files: Sequence[AddFile]) -> Iterator[tuple["pa.Schema", int]]:
        """The footers of ``files`` (schema, row count) in order, read concurrently and yielded as
        they are consumed; no data is read."""
        if len(files) <= 1:
            yield from (self.footer(a) for a in files)
            return
        with ThreadPoolExecutor(max_workers=FOOTER_READERS) as pool:
            yield from pool.map(self.footer, files)

    def cleanup(self) -> None:
        shutil.rmtree(self.local(self.staging), ignore_errors=True)
        root = self.local(STAGING_DIR)
        with contextlib.suppress(OSError):
            os.rmdir(root)  # only when empty: another run may be staging too


def remove_action(add: AddFile, now_ms: int) -> RemoveFile:
    """The ``remove`` of a live file replaced without changing data (dataChange=false); it carries
    the DV so that it matches the (path, DV) key of the ``add`` it removes."""
    return RemoveFile(path=add.path, deletionTimestamp=now_ms, dataChange=False, extendedFileMetadata=True,
                      partitionValues=add.partitionValues, size=add.size, stats=None, tags=add.tags,
                      deletionVector=add.deletionVector, baseRowId=add.baseRowId,
                      defaultRowCommitVersion=add.defaultRowCommitVersion)


def replacement_add(old: AddFile, new: Rewritten, *, partition_values: dict[str, str | None],
                    stats: str) -> AddFile:
    """The ``add`` of a rewritten file: same rows in the same order, so the same DV, row ids,
    tags and clustering provider; new path, size, time and stats."""
    return replace(old, path=quote(new.path or "", safe="/"), partitionValues=partition_values,
                   size=new.size, modificationTime=new.modification_time, dataChange=False,
                   stats=stats)


def get_session() -> "SparkSession":
    from delta_downgrade.spark import get_spark

    return get_spark()


# --- the drop ------------------------------------------------------------------------------------

def check_column_names(run: "DropRun", schema: dict[str, Any]) -> None:
    bad = invalid_column_names(schema)
    if bad:
        listed = ", ".join(f"`{b}`" for b in bad)
        raise InvalidColumnNamesForMappingRemovalError(
            f"cannot remove column mapping: column name(s) {listed} contain one of the characters "
            f"' ,;{{}}()\\n\\t=' that Parquet files without column mapping cannot hold. Rename the "
            f"column(s) first (ALTER TABLE … RENAME COLUMN); nothing was written",
            table=run.table, feature="columnMapping", params={"invalidColumnNames": ", ".join(bad)})


def remove_column_mapping(run: "DropRun", *, workers: int = DEFAULT_WORKERS,
                          spark: "SparkSession | None" = None) -> bool:
    """The pre-downgrade of columnMapping: one ``REMOVE COLUMN MAPPING`` commit (module doc).

    Returns True (performedChanges) when it committed (or, in a dry run, would commit) anything.
    """
    snapshot = run.latest()
    metadata = snapshot.metadata
    schema = snapshot.schema
    configuration = dict(metadata.configuration)
    mode = column_mapping_mode(configuration)
    check_column_names(run, schema)

    new_schema = strip_field_metadata(schema, COLUMN_MAPPING_FIELD_KEYS)
    new_metadata = replace(metadata.with_configuration({MODE_KEY: None, MAX_ID_KEY: None}),
                           schemaString=schema_string(new_schema))
    files = list(snapshot.state().files.values())
    partition_keys = {physical_name(f, mode): str(f["name"]) for f in schema.get("fields", [])
                      if f["name"] in metadata.partitionColumns}

    def rekeyed_partitions(add: AddFile) -> dict[str, str | None]:
        return {partition_keys.get(k, k): v for k, v in (add.partitionValues or {}).items()}

    if mode == "none":
        # Files already use logical names (a reader with mode none resolves by them); only the
        # leftover field metadata and properties go.
        if run.dry_run:
            run.progress("would strip column-mapping field metadata and properties (no file uses "
                         "physical names: the mode is none)")
        run.commit([new_metadata], "REMOVE COLUMN MAPPING", {"numRewrittenFiles": 0})
        return True

    naming = Naming(mode, logical=True)
    rewriter = FileRewriter(run.log, spark=spark, workers=workers)
    plans: list[tuple[AddFile, FilePlan]] = []
    keep: list[tuple[AddFile, FilePlan]] = []
    for add, (arrow_schema, num_rows) in zip(files, rewriter.footers(files), strict=True):
        plan = plan_file(schema, metadata.partitionColumns, configuration, arrow_schema, num_rows, naming,
                         where=f"data file {add.path}")
        (keep if plan.identity else plans).append((add, plan))
    total_bytes = sum(a.size or 0 for a, _ in plans)
    run.progress(f"REMOVE COLUMN MAPPING ({mode} mode): {len(plans)} of {len(files)} live file(s) "
                 f"to rewrite ({total_bytes} bytes); {len(keep)} already use logical names")

    def rekey(stats: dict[str, Any]) -> dict[str, Any]:
        return rekey_stats(stats, schema, mode)

    now = run.clock.now_ms()
    if run.dry_run:
        run.commit([*(remove_action(a, now) for a, _ in plans), new_metadata], "REMOVE COLUMN MAPPING",
                   {"numRewrittenFiles": len(plans)})
        return True

    rewritten: list[Rewritten] = []
    if plans:
        with rewrite_conf(rewriter.session, run.progress):
            rewritten = rewriter.rewrite_all(plans, run.progress, "REMOVE COLUMN MAPPING")
    by_source = {id(r.source): r for r in rewritten}
    actions: list[AnyAction] = []
    now = run.clock.now_ms()
    for add, plan in plans:
        result = by_source[id(add)]
        actions.append(remove_action(add, now))
        if result.path is not None:
            actions.append(replacement_add(add, result, partition_values=rekeyed_partitions(add),
                                           stats=stats_for_rewrite(add.stats, result.num_rows, plan.widened, rekey)))
    for add, plan in keep:
        stats = add.stats
        if stats:
            stats = stats_for_rewrite(stats, plan.num_rows, [], rekey)
        actions.append(replace(add, partitionValues=rekeyed_partitions(add), stats=stats, dataChange=False))
    actions.append(new_metadata)
    replaced = {a.decoded_path for a in files}
    resolver = rebase_unless_files_touched(replaced, actions, allow_new_files=False,
                                          operation="REMOVE COLUMN MAPPING")
    run.commit(actions, "REMOVE COLUMN MAPPING",
               {"numRewrittenFiles": len(plans), "numRekeyedFiles": len(keep)}, resolve=resolver)
    return True
