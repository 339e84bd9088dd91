"""Partition values of widened partition columns spelled in the current type
(rewrite/partition_values.py; PROTOCOL.md "Partition Value Serialization", "Type Widening")."""

from __future__ import annotations

import struct

import pytest

from delta_downgrade.protocol.actions import AddFile, DeletionVectorDescriptor
from delta_downgrade.rewrite.partition_values import (
    java_double_string, reserialize, respelled_add, respelled_partition_values, widened_partition_columns,
)
from tests.schema_support import field

# Every widening of PROTOCOL.md "Type Widening" that a partition column can go through, with the
# old type's spelling (as delta-spark writes it) and the new type's.
WIDENINGS = [
    # integer -> wider integer: the spelling does not change
    ("byte", "short", "-128", "-128"), ("short", "integer", "32767", "32767"),
    ("integer", "long", "-2147483648", "-2147483648"), ("byte", "long", "0", "0"),
    # float / integer -> double: Java's Double.toString
    ("float", "double", "1.5", "1.5"), ("float", "double", "-0.0", "-0.0"), ("float", "double", "1.0E10", "1.0E10"),
    ("float", "double", "3.4028235E38", "3.4028235E38"), ("float", "double", "NaN", "NaN"),
    ("float", "double", "Infinity", "Infinity"), ("float", "double", "-Infinity", "-Infinity"),
    ("byte", "double", "-7", "-7.0"), ("short", "double", "0", "0.0"),
    ("integer", "double", "2147483647", "2.147483647E9"), ("integer", "double", "-2147483648", "-2.147483648E9"),
    ("integer", "double", "1000000", "1000000.0"), ("integer", "double", "10000000", "1.0E7"),
    # integer -> decimal(10 + k1, k2)
    ("byte", "decimal(10,0)", "-128", "-128"), ("integer", "decimal(12,2)", "1", "1.00"),
    ("integer", "decimal(12,2)", "-7", "-7.00"), ("integer", "decimal(12,2)", "2147483647", "2147483647.00"),
    ("integer", "decimal(12,2)", "-2147483648", "-2147483648.00"), ("short", "decimal(11, 1)", "0", "0.0"),
    ("long", "decimal(20,0)", "9223372036854775807", "9223372036854775807"),
    ("long", "decimal(38,18)", "-9223372036854775808", "-9223372036854775808.000000000000000000"),
    # decimal(p, s) -> decimal(p + k1, s + k2)
    ("decimal(5,2)", "decimal(8,4)", "123.45", "123.4500"), ("decimal(5,2)", "decimal(8,4)", "-0.01", "-0.0100"),
    ("decimal(5,2)", "decimal(7,2)", "999.99", "999.99"), ("decimal(3,0)", "decimal(5,2)", "-999", "-999.00"),
    ("decimal(5,2)", "decimal(6,3)", "0.00", "0.000"),
    # date -> timestamp_ntz
    ("date", "timestamp_ntz", "2024-06-19", "2024-06-19 00:00:00"),
    ("date", "timestamp_ntz", "2024-02-29", "2024-02-29 00:00:00"),
    ("date", "timestamp_ntz", "1969-12-31", "1969-12-31 00:00:00"),
    ("date", "timestamp_ntz", "0001-01-01", "0001-01-01 00:00:00"),
    ("date", "timestamp_ntz", "9999-12-31", "9999-12-31 00:00:00"),
]


@pytest.mark.parametrize("from_type,to_type,stored,expected", WIDENINGS,
                         ids=[f"{f}->{t}:{v}" for f, t, v, _ in WIDENINGS])
def test_every_widening(from_type, to_type, stored, expected):
    from delta_downgrade.rewrite.type_widening_rules import is_widening

    assert is_widening(from_type, to_type)
    assert reserialize(stored, to_type) == expected
    # a value already spelled in the current type stays as it is
    assert reserialize(expected, to_type) == expected


@pytest.mark.parametrize("to_type", ["long", "double", "decimal(12,2)", "timestamp_ntz"])
def test_null_and_empty_stay(to_type):
    # PROTOCOL.md: "An empty string for any type translates to a null partition value."
    assert reserialize(None, to_type) is None
    assert reserialize("", to_type) == ""


def test_timestamp_spellings_are_kept_as_written():
    for text in ["2024-06-19 10:00:00", "2024-06-19 10:00:00.5", "1970-01-01 00:00:00.123456",
                 "1970-01-01T00:00:00.123456"]:
        assert reserialize(text, "timestamp_ntz") == text


def test_canonical_spelling_of_the_new_type_also_fixes_odd_spellings():
    assert reserialize("+5", "long") == "5"
    assert reserialize("007", "integer") == "7"
    assert reserialize("-0", "decimal(5,2)") == "0.00"
    assert reserialize("1.5E+2", "decimal(6,2)") == "150.00"
    assert reserialize("2024-6-9", "timestamp_ntz") == "2024-06-09 00:00:00"
    assert reserialize("1", "double") == "1.0"
    assert reserialize("0.1", "double") == "0.1"


@pytest.mark.parametrize("stored,to_type", [
    ("1.234", "decimal(12,2)"),            # would round
    ("12345678901", "decimal(12,2)"),      # 11 integer digits > 12 - 2
    ("x", "decimal(12,2)"), ("NaN", "decimal(12,2)"),
    ("40000", "short"), ("9223372036854775808", "long"), ("1.5", "long"), ("abc", "integer"),
    ("one", "double"),
    ("2023-02-29", "timestamp_ntz"), ("2024-13-01", "timestamp_ntz"), ("yesterday", "timestamp_ntz"),
])
def test_values_of_no_possible_type_are_refused(stored, to_type):
    with pytest.raises(ValueError):
        reserialize(stored, to_type)


def test_other_types_are_left_alone():
    assert reserialize("abc", "string") == "abc"
    assert reserialize("2024-06-19", "date") == "2024-06-19"


@pytest.mark.parametrize("value,expected", [
    (1.0, "1.0"), (0.001, "0.001"), (0.0001, "1.0E-4"), (9999999.0, "9999999.0"), (1e7, "1.0E7"),
    (123456789.0, "1.23456789E8"), (-1.5e-10, "-1.5E-10"), (1e300, "1.0E300"), (0.0, "0.0"), (-0.0, "-0.0"),
    (struct.unpack("<f", struct.pack("<f", 1.1))[0], "1.100000023841858"),
    (5e-324, "4.9E-324"), (1.7976931348623157e308, "1.7976931348623157E308"),
])
def test_java_double_string(value, expected):
    assert java_double_string(value) == expected


def test_widened_partition_columns_are_keyed_like_partition_values():
    change = [{"fromType": "integer", "toType": "long"}]
    schema = {"type": "struct", "fields": [
        field("p", "long", metadata={"delta.typeChanges": change}), field("q", "date"),
        field("v", "long", metadata={"delta.typeChanges": change}),
        field("m", "decimal(12,2)", "col-m",
              metadata={"delta.typeChanges": [{"fromType": "integer", "toType": "decimal(12,2)"}]})]}
    assert widened_partition_columns(schema, ["p", "q", "m"]) == {"p": "long", "col-m": "decimal(12,2)"}
    assert widened_partition_columns(schema, []) == {}


def test_respelled_partition_values_and_the_metadata_only_add():
    widened = {"p": "decimal(12,2)", "d": "timestamp_ntz"}
    assert respelled_partition_values({"p": "1", "d": "2024-06-19", "x": "a"}, widened) == \
        {"p": "1.00", "d": "2024-06-19 00:00:00", "x": "a"}
    assert respelled_partition_values({"p": "1.00", "d": None}, widened) is None
    assert respelled_partition_values({}, widened) is None
    assert respelled_partition_values({"p": "1"}, {}) is None
    dv = DeletionVectorDescriptor(storageType="u", pathOrInlineDv="ab", offset=1, sizeInBytes=4, cardinality=1)
    add = AddFile(path="p=1/f.parquet", partitionValues={"p": "1"}, size=10, modificationTime=5, dataChange=True,
                  stats='{"numRecords":2}', tags={"t": "1"}, deletionVector=dv, baseRowId=7,
                  defaultRowCommitVersion=3, clusteringProvider="liquid")
    again = respelled_add(add, {"p": "1.00"})
    assert again.partitionValues == {"p": "1.00"} and again.dataChange is False
    assert (again.path, again.size, again.modificationTime, again.stats, again.tags, again.deletionVector,
            again.baseRowId, again.defaultRowCommitVersion, again.clusteringProvider) == \
        (add.path, add.size, add.modificationTime, add.stats, add.tags, add.deletionVector, 7, 3, "liquid")
