"""Spark's hash partitioning (delta_downgrade.log.checkpoint.spark_hash) against values Spark computed.

The expected hashes are what Apache Spark 4.2's SQL ``hash(s)`` returned for each string (Murmur3Hash
with seed 42 over the UTF-8 bytes, ``Murmur3_x86_32.hashUnsafeBytes``), and the partitions what
``pmod(hash(s), 7)`` returned: the function delta-spark's ``repartition(n, path)`` clusters the
rows of a multi-part checkpoint by. The strings cover every tail length (0-3 trailing bytes after
the 4-byte words), bytes >= 0x80 in the tail (Spark mixes each one sign-extended), multi-byte
UTF-8, and a long path.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from delta_downgrade.log.checkpoint.spark_hash import (spark_murmur3_hash, spark_murmur3_hashes, spark_partition_ids,
                                            spark_partition_of, spark_partitions_of)

SPARK = [  # (value, hash(value), pmod(hash(value), 7))
    ("", 142593372, 5),
    ("a", 1485273170, 3),
    ("ab", -97053317, 3),
    ("abc", 1322437556, 6),
    ("abcd", -396302900, 0),
    ("abcde", 814637928, 6),
    ("Spark", 228093765, 4),
    ("part-00000-1.c000.snappy.parquet", 880182267, 6),
    ("é", 2119106806, 5),
    ("日本語", -1143049834, 4),
    ("a€b", 1764991697, 0),
    ("ÿþý", -1848368187, 6),
    ("x" * 33, 156528433, 5),
]


@pytest.mark.parametrize("value, expected, _", SPARK, ids=[repr(v) for v, _, _ in SPARK])
def test_scalar_hash_is_sparks(value, expected, _):
    assert spark_murmur3_hash(value.encode("utf-8")) == expected


def test_vectorised_hash_is_sparks():
    assert spark_murmur3_hashes([v for v, _, _ in SPARK]) == [h for _, h, _ in SPARK]
    assert spark_murmur3_hashes([]) == []


def test_partitions_are_sparks_pmod():
    values = [v for v, _, _ in SPARK]
    expected = [p for _, _, p in SPARK]
    assert [spark_partition_of(v, 7) for v in values] == expected
    assert spark_partitions_of(values, 7) == expected
    assert spark_partition_ids(pa.array(values), 7).to_pylist() == expected
    assert spark_partition_ids(pa.chunked_array([values[:4], values[4:]]), 7).to_pylist() == expected
    assert spark_partition_ids(pa.array([], pa.string()), 7).to_pylist() == []


def test_null_key_hashes_to_the_seed():
    """Spark: ``hash(NULL)`` is the seed, 42; rows without a file action go to ``42 % n``."""
    assert [spark_partition_of(None, n) for n in (1, 2, 5, 7, 50)] == [0, 0, 2, 0, 42]


def test_null_paths_are_refused_by_the_vectorised_hash():
    with pytest.raises(ValueError):
        spark_partition_ids(pa.array(["a", None]), 3)
