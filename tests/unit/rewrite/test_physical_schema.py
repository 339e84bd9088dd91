"""Physical schemas and schema walks (rewrite/physical_schema.py)."""

from __future__ import annotations

import json

from delta_downgrade.protocol.actions import Metadata
from delta_downgrade.rewrite.physical_schema import (
    Naming, all_nullable, column_mapping_mode, iter_named_fields, physical_name, physical_schemas, schema_string,
    strip_field_metadata,
)
from tests.schema_support import field


def _metadata(fields, partition=(), conf=None) -> Metadata:
    return Metadata(id="x", schemaString=json.dumps({"type": "struct", "fields": fields}),
                    partitionColumns=list(partition), configuration=dict(conf or {}))


# --- the column-mapping mode and physical names -------------------------------------------------------

def test_column_mapping_mode():
    assert column_mapping_mode({}) == "none"
    assert column_mapping_mode({"delta.columnMapping.mode": "ID"}) == "id"
    assert column_mapping_mode({"delta.columnMapping.mode": " Name "}) == "name"
    # the DV purge has always read the value as it stands
    assert column_mapping_mode({"delta.columnMapping.mode": " Name "}, strip=False) == " name "
    assert column_mapping_mode({"delta.columnMapping.mode": ""}, strip=False) == "none"


def test_physical_name_by_mode_and_reading():
    f = field("a", "long", "col-a", 1)
    assert physical_name(f, "name") == physical_name(f, "id") == "col-a"
    assert physical_name(f, "none") == "a"
    assert physical_name(f, "name", as_written=True) == "col-a"
    assert physical_name(f, "none", as_written=True) == "a"
    assert physical_name(field("b", "long"), "name") == physical_name(field("b", "long"), "id", as_written=True) == "b"
    # an empty physical name: the per-file rewrite falls back to the logical name, the purge keeps it
    empty = field("c", "long", "")
    assert physical_name(empty, "name") == "c"
    assert physical_name(empty, "name", as_written=True) == ""


def test_naming_of_outputs():
    f = field("a", "long", "col-a", 7)
    assert (Naming("id", logical=True).out_name(f), Naming("id", logical=True).out_metadata(f)) == ("a", {})
    assert (Naming("id", logical=False).out_name(f), Naming("id", logical=False).out_metadata(f)) == (
        "col-a", {"parquet.field.id": 7})
    # name mode: physical names, no field ids in the per-file rewrite's output
    assert (Naming("name", logical=False).out_name(f), Naming("name", logical=False).out_metadata(f)) == ("col-a", {})


# --- the DV purge's read and write schemas ------------------------------------------------------------

def test_physical_schemas_for_column_mapping():
    nested = {"type": "struct", "fields": [field("x", "long", "col-x", 3)]}
    md = _metadata([field("a", "integer", "col-a", 1), field("s", nested, "col-s", 2),
                    field("p", "string", "col-p", 4)], partition=["p"],
                   conf={"delta.columnMapping.mode": "name"})
    read, write = physical_schemas(md)
    assert [f["name"] for f in read["fields"]] == ["col-a", "col-s"]
    assert read["fields"][1]["type"]["fields"][0]["name"] == "col-x"
    assert all(f["metadata"] == {} for f in read["fields"])
    assert write["fields"][0]["metadata"] == {"parquet.field.id": 1}
    assert write["fields"][1]["type"]["fields"][0]["metadata"] == {"parquet.field.id": 3}
    materialized, _ = physical_schemas(md, materialized_partitions=True)
    assert [f["name"] for f in materialized["fields"]] == ["col-a", "col-s", "col-p"]


def test_physical_schemas_without_column_mapping_ignore_stale_physical_names():
    md = _metadata([field("a", "integer", "col-a", 1)])
    read, write = physical_schemas(md)
    assert read["fields"][0]["name"] == "a" and write["fields"][0]["metadata"] == {}


def test_physical_schemas_walk_arrays_and_maps_and_keep_nullability():
    element = {"type": "struct", "fields": [field("e", "long", "col-e", 5)]}
    value = {"type": "struct", "fields": [field("v", "string", "col-v", 6)]}
    md = _metadata([
        {**field("arr", {"type": "array", "elementType": element, "containsNull": False}, "col-arr", 1),
         "nullable": False},
        field("m", {"type": "map", "keyType": "string", "valueType": value, "valueContainsNull": True}, "col-m", 2),
    ], conf={"delta.columnMapping.mode": "id"})
    read, write = physical_schemas(md)
    arr, m = write["fields"]
    assert (arr["name"], arr["nullable"], arr["type"]["containsNull"]) == ("col-arr", False, False)
    assert arr["type"]["elementType"]["fields"][0] == {"name": "col-e", "type": "long", "nullable": True,
                                                       "metadata": {"parquet.field.id": 5}}
    assert m["type"]["valueType"]["fields"][0]["name"] == "col-v"
    assert read["fields"][1]["type"]["valueType"]["fields"][0]["metadata"] == {}


# --- walks over Delta types ---------------------------------------------------------------------------

NESTED = {"type": "struct", "fields": [
    field("a", {"type": "array", "elementType": {"type": "struct", "fields": [field("x", "integer", "c2", 2)]},
                 "containsNull": False}, "c1", 1),
    field("m", {"type": "map", "keyType": "string",
                 "valueType": {"type": "struct", "fields": [field("y", "long", "c4", 4)]},
                 "valueContainsNull": False}, "c3", 3)]}


def test_iter_named_fields_paths_through_arrays_and_maps():
    assert [path for path, _f in iter_named_fields(NESTED)] == [
        ("a",), ("a", "element", "x"), ("m",), ("m", "value", "y")]


def test_strip_field_metadata_at_every_level():
    stripped = strip_field_metadata(NESTED, ("delta.columnMapping.physicalName",))
    assert [f["metadata"] for _p, f in iter_named_fields(stripped)] == [
        {"delta.columnMapping.id": 1}, {"delta.columnMapping.id": 2}, {"delta.columnMapping.id": 3},
        {"delta.columnMapping.id": 4}]
    assert NESTED["fields"][0]["metadata"]["delta.columnMapping.physicalName"] == "c1"  # a copy


def test_all_nullable():
    t = all_nullable(NESTED)
    assert t["fields"][0]["type"]["containsNull"] is True
    assert t["fields"][1]["type"]["valueContainsNull"] is True
    assert all(f["nullable"] for _p, f in iter_named_fields(t))


def test_schema_string_is_compact_and_keeps_non_ascii():
    assert schema_string({"type": "struct", "fields": [field("é", "long")]}) == (
        '{"type":"struct","fields":[{"name":"é","type":"long","nullable":true,"metadata":{}}]}')


def test_schema_changes_keep_collations_and_other_metadata():
    """Collated String Type RFC: "clients must preserve collations when they change the schema".
    Column-mapping removal and type widening strip only their own keys, at every level."""
    from delta_downgrade.protocol.schema import TYPE_CHANGES_KEY
    from delta_downgrade.rewrite.column_mapping import COLUMN_MAPPING_FIELD_KEYS

    kept = {"__COLLATIONS": {"m.key": "icu.de_DE"}, "delta.identity.start": 1, "CURRENT_DEFAULT": "'x'",
            "comment": "c"}
    leaf = {"name": "e", "type": "string", "nullable": True,
            "metadata": {"__COLLATIONS": {"e": "spark.UTF8_LCASE"}, "delta.columnMapping.id": 3,
                         "delta.columnMapping.physicalName": "col-e"}}
    schema = {"type": "struct", "fields": [
        {"name": "m", "nullable": True,
         "type": {"type": "map", "keyType": "string", "valueContainsNull": True,
                  "valueType": {"type": "array", "containsNull": True,
                                "elementType": {"type": "struct", "fields": [leaf]}}},
         "metadata": {**kept, "delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-m",
                      "delta.columnMapping.nested.ids": {"col-m.key": 5},
                      TYPE_CHANGES_KEY: [{"fromType": "integer", "toType": "long", "fieldPath": "value"}]}}]}
    for keys, gone in ((COLUMN_MAPPING_FIELD_KEYS, "delta.columnMapping"), ((TYPE_CHANGES_KEY,), TYPE_CHANGES_KEY)):
        out = strip_field_metadata(schema, keys)
        top = out["fields"][0]["metadata"]
        inner = out["fields"][0]["type"]["valueType"]["elementType"]["fields"][0]["metadata"]
        assert {k: v for k, v in top.items() if k in kept} == kept
        assert inner["__COLLATIONS"] == {"e": "spark.UTF8_LCASE"}
        assert not any(k.startswith(gone) for k in top) and not any(k.startswith(gone) for k in inner)
