"""A drop whose data rewrite would break a writer requirement of another feature of the table is
refused before anything is written, naming that feature (rewrite/writer_requirements.py); a drop
that rewrites nothing still runs."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from delta_downgrade.errors import UnsupportedFeaturesError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol import Protocol
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import delete_rows

PHYSICAL = "delta.columnMapping.physicalName"


def _listing(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


def _iceberg_table(path: str, *, enabled: bool) -> None:
    builder = TableBuilder(path)
    arrow = pa.schema([pa.field("col-a", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    schema = {"type": "struct", "fields": [
        {"name": "a", "type": "long", "nullable": True,
         "metadata": {"delta.columnMapping.id": 1, PHYSICAL: "col-a"}}]}
    features = {"columnMapping", "deletionVectors"}
    builder.create(arrow, protocol=Protocol(3, 7, features, features | {"icebergCompatV2"}), delta_schema=schema,
                   configuration={"delta.columnMapping.mode": "id", "delta.columnMapping.maxColumnId": "1",
                                  "delta.enableDeletionVectors": "true",
                                  "delta.enableIcebergCompatV2": "true" if enabled else "false"},
                   rows=pa.Table.from_pylist([{"col-a": i} for i in range(6)], schema=arrow))
    delete_rows(builder, lambda row: row["col-a"] == 2)


def test_dv_purge_is_refused_while_iceberg_compat_v2_is_active(tmp_path):
    path = str(tmp_path / "t")
    _iceberg_table(path, enabled=True)
    before = _listing(path)
    with pytest.raises(UnsupportedFeaturesError) as info:
        drop_feature(path, "deletionVectors")
    assert info.value.features == ["icebergCompatV2"] and info.value.exit_code == 2
    assert "unset delta.enableIcebergCompatV2" in info.value.message
    assert _listing(path) == before


def _variant_table(path: str) -> None:
    builder = TableBuilder(path)
    # PROTOCOL.md "Variant data in Parquet": a struct of value and metadata binaries
    arrow = pa.schema([("id", pa.int32()), ("v", pa.struct([("value", pa.binary()), ("metadata", pa.binary())]))])
    schema = {"type": "struct", "fields": [{"name": "id", "type": "integer", "nullable": True, "metadata": {}},
                                           {"name": "v", "type": "variant", "nullable": True, "metadata": {}}]}
    features = {"deletionVectors", "variantType"}
    builder.create(arrow, protocol=Protocol(3, 7, features, features), delta_schema=schema,
                   configuration={"delta.enableDeletionVectors": "true"},
                   rows=pa.Table.from_pylist([{"id": i, "v": {"value": b"\x0c\x01", "metadata": b"\x01\x00\x00"}}
                                              for i in range(4)], schema=arrow))


def test_dv_purge_is_refused_for_a_variant_column_but_an_unused_feature_drops(tmp_path):
    path = str(tmp_path / "t")
    _variant_table(path)
    # nothing to rewrite yet: deletionVectors drops (protocol-only)
    assert drop_feature(path, "deletionVectors").status == "dropped"

    other = str(tmp_path / "dv")
    _variant_table(other)
    delete_rows(TableBuilder(other), {DeltaLog(other).snapshot().state().files.popitem()[1].path: [1]})
    before = _listing(other)
    with pytest.raises(UnsupportedFeaturesError) as info:
        drop_feature(other, "deletionVectors")
    assert info.value.features == ["variantType"]
    assert "variant column" in info.value.message and "Nothing was written" in info.value.message
    assert _listing(other) == before
