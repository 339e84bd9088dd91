"""Delta schemas (PROTOCOL.md "Schema Serialization Format") to and from Arrow types."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import TYPE_CHECKING, Any, Iterator

from delta_downgrade.protocol.json_values import JsonObject, JsonValue

if TYPE_CHECKING:
    # The schema helpers below the Arrow conversions are read by commands that never touch Arrow
    # (``inspect`` of a small table): pyarrow is imported by the conversions that use it.
    import pyarrow as pa


@cache
def _primitive_to_arrow() -> dict[str, pa.DataType]:
    import pyarrow as pa

    return {
        "byte": pa.int8(), "short": pa.int16(), "integer": pa.int32(), "long": pa.int64(),
        "float": pa.float32(), "double": pa.float64(), "string": pa.string(), "boolean": pa.bool_(),
        "binary": pa.binary(), "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"),
        "timestamp_ntz": pa.timestamp("us"),
    }


_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")


def delta_type_to_arrow(t: Any) -> pa.DataType:
    import pyarrow as pa

    if isinstance(t, str):
        primitive = _primitive_to_arrow().get(t)
        if primitive is not None:
            return primitive
        m = _DECIMAL.fullmatch(t)
        if m:
            return pa.decimal128(int(m.group(1)), int(m.group(2)))
        raise ValueError(f"unsupported Delta type {t!r}")
    kind = t["type"]
    if kind == "struct":
        return pa.struct([delta_field_to_arrow(f) for f in t["fields"]])
    if kind == "array":
        return pa.list_(pa.field("element", delta_type_to_arrow(t["elementType"]), t.get("containsNull", True)))
    if kind == "map":
        return pa.map_(delta_type_to_arrow(t["keyType"]), delta_type_to_arrow(t["valueType"]))
    raise ValueError(f"unsupported Delta type {t!r}")


def delta_field_to_arrow(f: dict[str, Any]) -> pa.Field[Any]:
    import pyarrow as pa

    return pa.field(f["name"], delta_type_to_arrow(f["type"]), f.get("nullable", True))


def delta_schema_to_arrow(schema: dict[str, Any] | str) -> pa.Schema:
    import pyarrow as pa

    parsed: dict[str, Any] = json.loads(schema) if isinstance(schema, str) else schema
    return pa.schema([delta_field_to_arrow(f) for f in parsed["fields"]])


def arrow_primitive_to_delta(t: pa.DataType) -> str | None:
    """The Delta primitive type an Arrow (or Parquet footer) type stores; None for nested types.
    INT96 and isAdjustedToUTC=false both read as a timestamp without a zone, so callers comparing
    against a Delta ``timestamp`` must accept either."""
    import pyarrow as pa

    if pa.types.is_int8(t):
        return "byte"
    if pa.types.is_int16(t):
        return "short"
    if pa.types.is_int32(t):
        return "integer"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz else "timestamp_ntz"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    return None


def arrow_type_to_delta(t: pa.DataType) -> JsonValue:
    import pyarrow as pa

    primitive = arrow_primitive_to_delta(t)
    if primitive is not None:
        return primitive
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [arrow_field_to_delta(t.field(i)) for i in range(t.num_fields)]}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "elementType": arrow_type_to_delta(t.value_type),
                "containsNull": t.value_field.nullable}
    if pa.types.is_map(t):
        return {"type": "map", "keyType": arrow_type_to_delta(t.key_type),
                "valueType": arrow_type_to_delta(t.item_type), "valueContainsNull": t.item_field.nullable}
    raise ValueError(f"no Delta type for Arrow type {t}")


def arrow_field_to_delta(f: pa.Field[Any]) -> JsonObject:
    return {"name": f.name, "type": arrow_type_to_delta(f.type), "nullable": f.nullable, "metadata": {}}


def arrow_schema_to_delta(schema: pa.Schema) -> JsonObject:
    return {"type": "struct", "fields": [arrow_field_to_delta(f) for f in schema]}


def schema_string(schema: pa.Schema) -> str:
    return json.dumps(arrow_schema_to_delta(schema), separators=(",", ":"))


# Column-mapping field metadata keys (PROTOCOL.md, "Column Mapping").
COLUMN_MAPPING_ID_KEY = "delta.columnMapping.id"
COLUMN_MAPPING_PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
COLUMN_MAPPING_NESTED_IDS_KEY = "delta.columnMapping.nested.ids"
PARQUET_FIELD_ID_KEY = "parquet.field.id"
CM_METADATA_KEYS = (COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY, COLUMN_MAPPING_NESTED_IDS_KEY,
                    PARQUET_FIELD_ID_KEY)
TYPE_CHANGES_KEY = "delta.typeChanges"


def iter_fields(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every struct field at every nesting level (structs, arrays, maps)."""
    def walk_type(t: Any) -> Iterator[dict[str, Any]]:
        if isinstance(t, dict):
            kind = t.get("type")
            if kind == "struct":
                for f in t.get("fields", []):
                    yield f
                    yield from walk_type(f.get("type"))
            elif kind == "array":
                yield from walk_type(t.get("elementType"))
            elif kind == "map":
                yield from walk_type(t.get("keyType"))
                yield from walk_type(t.get("valueType"))
    yield from walk_type(schema)


def type_change_fields(schema: dict[str, Any]) -> list[str]:
    return [f["name"] for f in iter_fields(schema) if TYPE_CHANGES_KEY in (f.get("metadata") or {})]


def schema_json(schema: dict[str, Any]) -> str:
    return json.dumps(schema, separators=(",", ":"))
