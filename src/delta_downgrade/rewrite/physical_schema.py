"""Physical schemas: the names (and Parquet field ids) under which data files store the table's
columns (PROTOCOL.md "Column Mapping"), and the walks over Delta types the rewrites share.

Under column mapping every field has a physical name (``delta.columnMapping.physicalName``) and an
id (``delta.columnMapping.id``) in its metadata; ``delta.columnMapping.mode`` says which of them
the data files use: ``name`` mode resolves Parquet columns by physical name, ``id`` mode by Parquet
field id. Without column mapping (mode ``none``) files use the logical names.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping, Sequence

from msgspec import Struct
from delta_downgrade.protocol.actions import Metadata
from delta_downgrade.protocol.schema import COLUMN_MAPPING_ID_KEY as ID_KEY
from delta_downgrade.protocol.schema import COLUMN_MAPPING_PHYSICAL_NAME_KEY as PHYSICAL_NAME_KEY
from delta_downgrade.protocol.schema import PARQUET_FIELD_ID_KEY

# --- PROTOCOL.md "Column Mapping" ------------------------------------------------------------------

MODE_KEY = "delta.columnMapping.mode"
#: The modes under which data files use physical names (and, in ``id`` mode, field ids).
MAPPED_MODES = ("name", "id")


def column_mapping_mode(configuration: Mapping[str, str], *, strip: bool = True) -> str:
    """``delta.columnMapping.mode``, lower case (``none`` when unset). ``strip``: ignore blanks
    around the value, as column-mapping removal and type widening always have; the DV purge reads
    the value as it stands (``strip=False``)."""
    mode = configuration.get(MODE_KEY) or "none"
    return (mode.strip() if strip else mode).lower()


def physical_name(f: Mapping[str, Any], mode: str, *, as_written: bool = False) -> Any:
    """The name the data files use for ``f``: its physical name under a mapped mode, else its
    logical name. ``as_written`` (the DV purge): the metadata value whenever the key is present,
    as delta-spark's ``DeltaColumnMapping.getPhysicalName`` reads it; otherwise (the per-file
    rewrite) an empty value falls back to the logical name and the name is a ``str``."""
    if as_written:
        return (f.get("metadata") or {}).get(PHYSICAL_NAME_KEY, f["name"]) if mode in MAPPED_MODES else f["name"]
    if mode in MAPPED_MODES:
        return str((f.get("metadata") or {}).get(PHYSICAL_NAME_KEY) or f["name"])
    return str(f["name"])


def column_id(f: Mapping[str, Any]) -> int | None:
    value = (f.get("metadata") or {}).get(ID_KEY)
    return int(value) if value is not None else None


class Naming(Struct, frozen=True):
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


# --- walks over Delta types -----------------------------------------------------------------------

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


def all_nullable(t: Any) -> Any:
    """``t`` with every nullability flag set: Spark reads files as nullable, and a cast may never
    narrow nullability, so read and target types are both fully nullable."""
    if not isinstance(t, dict):
        return t
    kind = t.get("type")
    if kind == "struct":
        return {**t, "fields": [{**f, "nullable": True, "type": all_nullable(f.get("type"))} for f in t["fields"]]}
    if kind == "array":
        return {**t, "containsNull": True, "elementType": all_nullable(t.get("elementType"))}
    if kind == "map":
        return {**t, "valueContainsNull": True, "keyType": all_nullable(t.get("keyType")),
                "valueType": all_nullable(t.get("valueType"))}
    return t


def schema_string(schema: dict[str, Any]) -> str:
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


# --- the read and write schemas of the deletion-vector purge ----------------------------------------

def _physical_type(t: Any, mode: str, with_ids: bool) -> Any:
    if isinstance(t, str):
        return t
    kind = t.get("type")
    if kind == "struct":
        return {"type": "struct", "fields": [_physical_field(f, mode, with_ids) for f in t["fields"]]}
    if kind == "array":
        return {**t, "elementType": _physical_type(t["elementType"], mode, with_ids)}
    if kind == "map":
        return {**t, "keyType": _physical_type(t["keyType"], mode, with_ids),
                "valueType": _physical_type(t["valueType"], mode, with_ids)}
    return t


def _physical_field(f: Mapping[str, Any], mode: str, with_ids: bool) -> dict[str, Any]:
    name = physical_name(f, mode, as_written=True)
    field_id = column_id(f) if with_ids and mode in MAPPED_MODES else None
    out_meta: dict[str, Any] = {PARQUET_FIELD_ID_KEY: field_id} if field_id is not None else {}
    return {"name": name, "type": _physical_type(f["type"], mode, with_ids),
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
    mode = column_mapping_mode(metadata.configuration, strip=False)
    fields = _data_fields(metadata, materialized_partitions)
    read = {"type": "struct", "fields": [_physical_field(f, mode, False) for f in fields]}
    write = {"type": "struct", "fields": [_physical_field(f, mode, True) for f in fields]}
    return read, write
