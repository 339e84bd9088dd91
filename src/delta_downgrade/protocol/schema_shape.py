"""Whether a table's schema is one every reader can take, before a drop carries it forward.

PROTOCOL.md "Schema Serialization Format": a struct's fields each have a ``name`` (a string) and
a ``type`` (a primitive's name, or a struct, array or map object). Delta names are
case-preserving but case-insensitive (delta-spark refuses two fields of one struct whose names
differ only in case: ``DELTA_DUPLICATE_COLUMNS_FOUND``), and PROTOCOL.md "Change Metadata":
``partitionColumns`` names top-level columns of the schema, each read with that column's type
(delta-spark's partition schema is looked up by exact name). Parsing the metaData action checks
only that ``schemaString`` is a struct; this walks it whole.
"""

from __future__ import annotations

from typing import Any, Sequence

from delta_downgrade.errors import CorruptLogError, DuplicateColumnsError


def _where(path: Sequence[str]) -> str:
    return "the top level" if not path else "`" + ".".join(path) + "`"


def _walk_type(typ: Any, path: list[str]) -> None:
    if isinstance(typ, str):
        return
    if not isinstance(typ, dict):
        raise CorruptLogError(f"the schema's type at {_where(path)} is neither a type name nor a type object")
    kind = typ.get("type")
    if kind == "struct":
        _walk_struct(typ, path)
    elif kind == "array":
        _walk_type(typ.get("elementType"), path + ["element"])
    elif kind == "map":
        _walk_type(typ.get("keyType"), path + ["key"])
        _walk_type(typ.get("valueType"), path + ["value"])
    else:
        raise CorruptLogError(f"the schema's type at {_where(path)} is not a struct, array or map: {kind!r}")


def _walk_struct(struct: dict[str, Any], path: list[str]) -> None:
    fields = struct.get("fields")
    if not isinstance(fields, list):
        raise CorruptLogError(f"the schema's struct at {_where(path)} has no list of fields")
    seen: dict[str, str] = {}
    for field in fields:
        name = field.get("name") if isinstance(field, dict) else None
        if not isinstance(name, str):
            raise CorruptLogError(f"a field of the schema's struct at {_where(path)} has no name")
        if "type" not in field:
            raise CorruptLogError(f"the schema's field {_where(path + [name])} has no type")
        other = seen.get(name.lower())
        if other is not None:
            raise DuplicateColumnsError(
                f"the schema's struct at {_where(path)} has two fields named {other!r} and {name!r} "
                f"(Delta column names are case-insensitive)")
        seen[name.lower()] = name
        _walk_type(field["type"], path + [name])


def check_schema_shape(schema: dict[str, Any], partition_columns: Sequence[str]) -> None:
    """Raise a :class:`~delta_downgrade.errors.BadInputError` naming the first place where the
    table's schema (the parsed ``schemaString``) or its partition columns are malformed (see the
    module docstring)."""
    _walk_struct(schema, [])
    top = {f["name"] for f in schema["fields"]}
    for column in partition_columns:
        if column not in top:
            raise CorruptLogError(f"the partition column {column!r} is not a top-level column of the schema")
