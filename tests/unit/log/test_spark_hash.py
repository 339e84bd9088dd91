"""Spark's hash partitioning (delta_downgrade.log.checkpoint.spark_hash) against values Spark computed.

The expected hashes are what Apache Spark 4.2's SQL ``hash(s)`` returned for each string (Murmur3Hash
with seed 42 over the UTF-8 bytes, ``Murmur3_x86_32.hashUnsafeBytes``), and the partitions what
``pmod(hash(s), 7)`` returned: the function delta-spark's ``repartition(n, path)`` clusters the
rows of a multi-part checkpoint by. The strings cover every tail length (0-3 trailing bytes after
the 4-byte words), bytes >= 0x80 in the tail (Spark mixes each one sign-extended), multi-byte
UTF-8, and a long path.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from delta_downgrade.log.checkpoint import spark_hash
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


def _random_paths(rng: random.Random, count: int, max_length: int) -> list[str]:
    """Paths of every length up to ``max_length`` code points, with multi-byte UTF-8 and bytes
    >= 0x80 anywhere (so in the trailing bytes too)."""
    alphabet = "abcXYZ019/-_.=%" + "éÿ€日本" + "\U0001F600"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_length))) for _ in range(count)]


def test_vectorised_hash_equals_the_scalar_hash_on_mixed_lengths():
    """Rows of many word counts in one slice (grouped, hashed per group, put back in row order)."""
    values = _random_paths(random.Random(7), 3000, 70)
    assert spark_murmur3_hashes(values) == [spark_murmur3_hash(v.encode("utf-8")) for v in values]


def test_vectorised_hash_equals_the_scalar_hash_across_slices(monkeypatch):
    """A column longer than one slice, and a group too long for one padded copy, each cut in
    pieces that are hashed on their own and joined in row order."""
    monkeypatch.setattr(spark_hash, "_SLICE_ROWS", 97)
    monkeypatch.setattr(spark_hash, "_MAX_PADDED_BYTES", 1000)
    rng = random.Random(11)
    values = _random_paths(rng, 700, 40) + ["part-00000-%08d.c000.snappy.parquet" % i for i in range(300)]
    rng.shuffle(values)
    expected = [spark_murmur3_hash(v.encode("utf-8")) for v in values]
    assert spark_murmur3_hashes(values) == expected
    column = pa.chunked_array([values[:333], values[333:]])
    assert spark_partition_ids(column, 13).to_pylist() == [h % 13 for h in expected]


def test_vectorised_hash_of_one_length_and_of_a_sliced_array():
    """Every path of one length (the usual table: one group, no reordering), given as a slice of
    a larger array (offsets not starting at zero)."""
    values = ["part-%05d-0c81-5fbf-dbb9-f6fdced8e847.c000.snappy.parquet" % i for i in range(5000)]
    expected = [spark_murmur3_hash(v.encode("utf-8")) % 50 for v in values]
    whole = pa.array(["x" * 9] + values + ["yy"])
    assert spark_partition_ids(whole.slice(1, len(values)), 50).to_pylist() == expected
