"""The writer requirements a Spark file rewrite cannot honour refuse it before anything is written,
naming the feature (rewrite/writer_requirements.py); everything else passes."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from delta_downgrade.errors import UnsupportedFeaturesError
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import AddFile, Metadata
from delta_downgrade.rewrite.file_plan import plan_file
from delta_downgrade.rewrite.physical_schema import Naming
from delta_downgrade.rewrite.writer_requirements import ensure_files_can_be_rewritten, ensure_partition_columns_kept
from tests.schema_support import field

BASE = {"appendOnly", "invariants"}


def _metadata(fields, conf=None, partition=()) -> Metadata:
    return Metadata(id="x", schemaString=json.dumps({"type": "struct", "fields": fields}),
                    partitionColumns=list(partition), configuration=dict(conf or {}))


def _writer(*features: str) -> Protocol:
    return Protocol(1, 7, None, frozenset(BASE | set(features)))


def test_the_writer_only_features_a_rewrite_honours_pass():
    fields = [field("a", "long"), field("s", "string")]
    features = ("checkConstraints", "generatedColumns", "identityColumns", "allowColumnDefaults",
                "changeDataFeed", "domainMetadata", "clustering", "liquid", "collations",
                "materializePartitionColumns", "rowTracking")
    ensure_files_can_be_rewritten(_writer(*features), _metadata(fields), purpose="x")


@pytest.mark.parametrize("feature,key", [("icebergCompatV1", "delta.enableIcebergCompatV1"),
                                         ("icebergCompatV2", "delta.enableIcebergCompatV2"),
                                         ("icebergCompatV3", "delta.enableIcebergCompatV3")])
def test_active_iceberg_compat_refuses_and_says_how_to_go_on(feature, key):
    protocol = Protocol(2, 7, None, frozenset(BASE | {"columnMapping", "rowTracking", "domainMetadata", feature}))
    fields = [field("a", "long")]
    # supported but not active: the writer requirements do not apply
    ensure_files_can_be_rewritten(protocol, _metadata(fields, {key: "false"}), purpose="x")
    with pytest.raises(UnsupportedFeaturesError) as info:
        ensure_files_can_be_rewritten(protocol, _metadata(fields, {key: " TRUE "}),
                                      purpose="purge deletion vectors")
    err = info.value
    assert err.features == [feature] and err.error_class == "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE"
    assert err.exit_code == 2
    assert "cannot purge deletion vectors" in err.message and f"unset {key}" in err.message
    assert "Nothing was written" in err.message


@pytest.mark.parametrize("variant_type", [
    "variant", {"type": "array", "elementType": "variant", "containsNull": True},
    {"type": "map", "keyType": "string", "valueType": "variant", "valueContainsNull": True},
    {"type": "struct", "fields": [field("v", "variant")]},
])
def test_a_variant_column_anywhere_refuses(variant_type):
    protocol = Protocol(3, 7, frozenset({"variantType"}), frozenset(BASE | {"variantType"}))
    with pytest.raises(UnsupportedFeaturesError) as info:
        ensure_files_can_be_rewritten(protocol, _metadata([field("a", "long"), field("v", variant_type)]),
                                      purpose="remove column mapping")
    assert info.value.features == ["variantType"]
    assert "variant column" in info.value.message
    # the feature alone (no variant column) is no obstacle
    ensure_files_can_be_rewritten(protocol, _metadata([field("a", "long")]), purpose="x")


def _plan(schema_fields, partition, footer):
    schema = {"type": "struct", "fields": schema_fields}
    return plan_file(schema, partition, {}, footer, 1, Naming("none", logical=False), where="f")


def test_materialize_partition_columns_needs_them_in_every_rewritten_file():
    fields = [field("a", "long"), field("p", "integer")]
    md = _metadata(fields, partition=["p"])
    with_p = _plan(fields, ["p"], pa.schema([("a", pa.int64()), ("p", pa.int32())]))
    without_p = _plan(fields, ["p"], pa.schema([("a", pa.int64())]))
    keeps = AddFile(path="p=1/a.parquet", partitionValues={"p": "1"}, size=1, modificationTime=1, dataChange=True)
    lacks = AddFile(path="p=1/b.parquet", partitionValues={"p": "1"}, size=1, modificationTime=1, dataChange=True)
    protocol = _writer("materializePartitionColumns")
    naming = Naming("none", logical=False)
    ensure_partition_columns_kept(protocol, md, [(keeps, with_p)], naming, purpose="x")
    # without the feature nothing is required
    ensure_partition_columns_kept(_writer(), md, [(lacks, without_p)], naming, purpose="x")
    with pytest.raises(UnsupportedFeaturesError) as info:
        ensure_partition_columns_kept(protocol, md, [(keeps, with_p), (lacks, without_p)], naming,
                                      purpose="rewrite")
    assert info.value.features == ["materializePartitionColumns"]
    assert "p=1/b.parquet" in info.value.message and "p=1/a.parquet" not in info.value.message
