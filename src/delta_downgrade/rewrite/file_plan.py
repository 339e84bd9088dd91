"""How one data file is rewritten: its Parquet footer matched with the table schema, level by
level — which column of the file holds each table column, the type to read it with, the name and
type to write (PROTOCOL.md "Column Mapping", "Type Widening"). Reads no data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from msgspec import Struct, field
from delta_downgrade.errors import FileLayoutError
from delta_downgrade.protocol.schema import arrow_primitive_to_delta
from delta_downgrade.rewrite.physical_schema import (
    Naming, all_nullable, column_id, column_mapping_mode, physical_name,
)
from delta_downgrade.protocol.table_config import MATERIALIZED_ROW_COMMIT_VERSION_COLUMN, MATERIALIZED_ROW_ID_COLUMN
from delta_downgrade.rewrite.type_widening_rules import is_widening, normalize_primitive

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from delta_downgrade.rewrite.row_tracking import MaterializedColumns

# Row tracking may materialize row ids / commit versions in hidden Parquet columns that are not in
# the table schema (PROTOCOL.md "Row Tracking"); a rewrite must keep them.
MATERIALIZED_COLUMN_KEYS = (MATERIALIZED_ROW_ID_COLUMN, MATERIALIZED_ROW_COMMIT_VERSION_COLUMN)

ARROW_FIELD_ID = b"PARQUET:field_id"


class ColumnPlan(Struct):
    """One top-level output column: read ``source`` (None: absent from the file, written as NULL)
    with ``read_type`` and cast it (positionally, at every level) to ``target_type``."""

    source: str | None
    read_type: Any
    target_type: Any
    out_name: str
    out_metadata: dict[str, Any] = field(default_factory=dict)
    # rewrite/row_tracking.ROW_ID or ROW_COMMIT_VERSION: the output is the row's stable value,
    # ``source`` (the materialised column, None when the file lacks it) where not null, else the
    # input file's default (PROTOCOL.md "Reader Requirements for Row Tracking")
    row_tracking: str | None = None


class FilePlan(Struct):
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
                out.append({"name": missing, "type": all_nullable(self.target(f["type"])),
                            "nullable": True, "metadata": {}})
                continue
            used.add(found.name)
            if found.name != self.naming.out_name(f) or _arrow_field_id(found) is not None:
                self.identity = False
            out.append({"name": found.name, "type": self.read(f["type"], found.type, here),
                        "nullable": True, "metadata": {}})
        return out, used


def plan_file(schema: dict[str, Any], partition_columns: Sequence[str], configuration: dict[str, str],
              arrow_schema: "pa.Schema", num_rows: int, naming: Naming, where: str,
              preserve: "MaterializedColumns | None" = None) -> FilePlan:
    """How to rewrite one file whose footer says ``arrow_schema``.

    Data columns absent from the file are written as NULL columns; partition columns are written
    only when the file materializes them. With ``preserve`` (row tracking enabled) both
    materialized row-tracking columns are written, with every row's stable value
    (``ColumnPlan.row_tracking``); without it, those the file has are kept as they are.
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
        target = all_nullable(planner.target(f["type"]))
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
        read_type = all_nullable(planner.read(f["type"], found.type, (physical_name(f, mode),)))
        read_fields.append({"name": found.name, "type": read_type, "nullable": True, "metadata": {}})
        columns.append(ColumnPlan(found.name, read_type, target, out_name, naming.out_metadata(f)))
    keep = {configuration[k] for k in MATERIALIZED_COLUMN_KEYS if configuration.get(k)}
    if preserve is not None:
        # Not part of the layout check (``identity``): a file kept as it is keeps its rows, path
        # and row IDs, so its stable values stay what they were.
        for name in preserve.names:
            found = next((c for c in children if c.name == name), None)
            if found is None:  # "This column may be omitted if all its values are null"
                columns.append(ColumnPlan(None, None, "long", name, row_tracking=preserve.kind(name)))
                continue
            stored = arrow_primitive_to_delta(found.type)
            if stored not in ("long", "integer", "short", "byte"):
                raise FileLayoutError(f"{where}: the materialized row-tracking column {name} holds "
                                      f"{found.type}, not integers (PROTOCOL.md \"Row Tracking\")")
            used.add(found.name)
            read_fields.append({"name": found.name, "type": stored, "nullable": True, "metadata": {}})
            columns.append(ColumnPlan(found.name, stored, "long", name, row_tracking=preserve.kind(name)))
        keep = set()
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
