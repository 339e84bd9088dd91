"""The per-file plan (rewrite/file_plan.py): a Parquet footer matched with the table schema; no Spark."""

from __future__ import annotations

import pyarrow as pa
import pytest

from delta_downgrade.errors import FileLayoutError
from delta_downgrade.rewrite.file_plan import plan_file
from delta_downgrade.rewrite.physical_schema import Naming
from tests.schema_support import field

NAME_MODE = {"delta.columnMapping.mode": "name"}


def _arrow(name, type_, fid=None):
    return pa.field(name, type_, metadata={b"PARQUET:field_id": str(fid).encode()} if fid is not None else None)


def _schema(*fields):
    return {"type": "struct", "fields": list(fields)}


def test_column_mapping_removal_reads_physical_and_writes_logical_names():
    schema = _schema(field("a", "long", "col-a", 1), field("s", _schema(field("x", "integer", "col-x", 2)),
                                                             "col-s", 3))
    footer = pa.schema([_arrow("col-a", pa.int64()), _arrow("col-s", pa.struct([_arrow("col-x", pa.int32())]))])
    plan = plan_file(schema, [], NAME_MODE, footer, 5, Naming("name", logical=True), where="f")
    assert [(c.source, c.out_name) for c in plan.columns] == [("col-a", "a"), ("col-s", "s")]
    assert plan.columns[1].target_type["fields"][0]["name"] == "x"
    assert plan.read_schema["fields"][1]["type"]["fields"][0]["name"] == "col-x"
    assert not plan.identity and plan.widened == [] and plan.num_rows == 5


def test_a_file_already_in_the_output_layout_is_identity():
    # column mapping enabled on an existing table: its old files' physical names are the logical ones
    schema = _schema(field("a", "long", "a", 1))
    plan = plan_file(schema, [], NAME_MODE, pa.schema([_arrow("a", pa.int64())]), 1,
                     Naming("name", logical=True), where="f")
    assert plan.identity
    with_ids = plan_file(schema, [], NAME_MODE, pa.schema([_arrow("a", pa.int64(), fid=1)]), 1,
                         Naming("name", logical=True), where="f")
    assert not with_ids.identity  # field ids must go


def test_id_mode_finds_columns_by_field_id_and_keeps_ids():
    schema = _schema(field("a", "long", "col-a", 7))
    footer = pa.schema([_arrow("renamed-in-file", pa.int64(), fid=7)])
    plan = plan_file(schema, [], {"delta.columnMapping.mode": "id"}, footer, 1, Naming("id", logical=False), where="f")
    assert [(c.source, c.out_name, c.out_metadata) for c in plan.columns] == [
        ("renamed-in-file", "col-a", {"parquet.field.id": 7})]


def test_widened_leaves_at_every_level():
    schema = _schema(field("i", "long"), field("a", {"type": "array", "elementType": "double", "containsNull": True}),
                     field("m", {"type": "map", "keyType": "integer", "valueType": "decimal(12,2)",
                                  "valueContainsNull": True}))
    footer = pa.schema([_arrow("i", pa.int32()), _arrow("a", pa.list_(pa.float32())),
                        _arrow("m", pa.map_(pa.int16(), pa.decimal128(10, 2)))])
    plan = plan_file(schema, [], {}, footer, 1, Naming("none", logical=False), where="f")
    assert plan.widened == [(("i",), "integer", "long"), (("a", "element"), "float", "double"),
                            (("m", "key"), "short", "integer"), (("m", "value"), "decimal(10,2)", "decimal(12,2)")]
    assert plan.columns[0].read_type == "integer" and plan.columns[0].target_type == "long"
    assert not plan.identity


def test_missing_dropped_partition_and_row_tracking_columns():
    schema = _schema(field("a", "long"), field("new", "string"), field("p", "string"))
    conf = {"delta.rowTracking.materializedRowIdColumnName": "_row_id_col"}
    footer = pa.schema([_arrow("a", pa.int64()), _arrow("dropped", pa.int64()), _arrow("_row_id_col", pa.int64())])
    plan = plan_file(schema, ["p"], conf, footer, 1, Naming("none", logical=False), where="f")
    # "new" is written as NULL, the partition column is not written, "dropped" goes, row ids stay
    assert [(c.source, c.out_name) for c in plan.columns] == [("a", "a"), (None, "new"), ("_row_id_col", "_row_id_col")]
    assert [f["name"] for f in plan.read_fields] == ["a", "_row_id_col"]
    assert not plan.identity


def test_a_nested_file_column_for_a_primitive_table_column_is_refused():
    schema = _schema(field("a", "long"))
    footer = pa.schema([_arrow("a", pa.struct([_arrow("x", pa.int64())]))])
    with pytest.raises(FileLayoutError, match="data file x.parquet: column a is nested in the file but long"):
        plan_file(schema, [], {}, footer, 1, Naming("none", logical=False), where="data file x.parquet")


def test_row_tracking_enabled_writes_both_stable_columns():
    # With row tracking enabled (rewrite/row_tracking.MaterializedColumns) both hidden columns are
    # written with stable values: read from the file where it has them, computed where it lacks
    # them (PROTOCOL.md "Row Tracking": "This column may be omitted if all its values are null").
    from delta_downgrade.rewrite.row_tracking import ROW_COMMIT_VERSION, ROW_ID, MaterializedColumns

    preserve = MaterializedColumns("_rid", "_rcv")
    schema = _schema(field("a", "long"))
    footer = pa.schema([_arrow("a", pa.int64()), _arrow("_rid", pa.int64())])
    plan = plan_file(schema, [], {}, footer, 3, Naming("none", logical=False), where="f", preserve=preserve)
    assert [(c.source, c.out_name, c.target_type, c.row_tracking) for c in plan.columns] == [
        ("a", "a", "long", None), ("_rid", "_rid", "long", ROW_ID), (None, "_rcv", "long", ROW_COMMIT_VERSION)]
    assert [f["name"] for f in plan.read_fields] == ["a", "_rid"]
    assert plan.identity  # the file's layout is the output's: a column-mapping removal keeps it


def test_a_materialized_column_that_is_not_integers_is_refused():
    from delta_downgrade.rewrite.row_tracking import MaterializedColumns

    footer = pa.schema([_arrow("a", pa.int64()), _arrow("_rid", pa.string())])
    with pytest.raises(FileLayoutError, match="materialized row-tracking column _rid"):
        plan_file(_schema(field("a", "long")), [], {}, footer, 1, Naming("none", logical=False), where="f",
                  preserve=MaterializedColumns("_rid", "_rcv"))
