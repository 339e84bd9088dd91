"""Spark's hash partitioning of checkpoint rows (PROTOCOL.md "Multi-part checkpoint": "multi-part
checkpoints MUST be clustered by spark-style hash partitioning").

delta-spark writes a multi-part checkpoint with ``repartition(numParts, coalesce(add.path,
remove.path))``: a row goes to partition ``pmod(murmur3_32(path, seed=42), numParts)`` (part file
number one more), and rows without a file action hash as null, i.e. to ``42 % numParts``. Computing
the same hash lets a checkpoint written here hold, in every part, the rows a Spark writer racing
on the same version and part count would put there. (The spec names ``(path, dvId)`` as the key
for tables with deletion vectors; delta-spark hashes the path alone, and so does this module.)
"""

from __future__ import annotations

import functools
import struct
import sys
from typing import Sequence

import pyarrow as pa
from delta_downgrade import arrow_compute as ac
from delta_downgrade.log.format.arrow_columns import arange

_STR = pa.string()
_LONG = pa.int64()

_M32 = 0xFFFFFFFF
_SPARK_HASH_SEED = 42


def spark_murmur3_hash(data: bytes, seed: int = _SPARK_HASH_SEED) -> int:
    """Spark's ``Murmur3Hash`` of a string/binary value (signed 32-bit result).

    This is Murmur3 x86_32 as Spark's ``Murmur3_x86_32.hashUnsafeBytes`` computes it: 4-byte
    little-endian words, then each trailing byte mixed on its own as a sign-extended int (not the
    reference tail handling), then the finaliser with the byte length.
    """
    h = seed & _M32
    n = len(data)
    aligned = n - n % 4
    for (k,) in struct.iter_unpack("<I", data[:aligned]):
        k = (k * 0xCC9E2D51) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        h ^= (k * 0x1B873593) & _M32
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + 0xE6546B64) & _M32
    for b in data[aligned:]:
        k = ((b - 256 if b >= 128 else b) * 0xCC9E2D51) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        h ^= (k * 0x1B873593) & _M32
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + 0xE6546B64) & _M32
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def spark_partition_of(path: str | None, num_parts: int) -> int:
    """0-based partition of a row keyed by ``path`` under Spark's ``HashPartitioning``
    (``pmod(murmur3(key, 42), n)``; a null key hashes to the seed)."""
    h = _SPARK_HASH_SEED if path is None else spark_murmur3_hash(path.encode("utf-8"))
    return h % num_parts  # Python's % on a positive modulus is Spark's pmod


_U32 = pa.uint32()


@functools.cache
def _u32(value: int) -> pa.Scalar:
    return pa.scalar(value, _U32)


def _rotl(x: pa.Array, r: int) -> pa.Array:
    return ac.bit_wise_or(ac.shift_left(x, _u32(r)), ac.shift_right(x, _u32(32 - r)))


@functools.cache
def _bytes(value: bytes) -> pa.Scalar:
    return pa.scalar(value, pa.binary())


def _mix(h: pa.Array | pa.Scalar, k: pa.Array) -> pa.Array:
    k = ac.multiply(_rotl(ac.multiply(k, _u32(0xCC9E2D51)), 15), _u32(0x1B873593))
    h = _rotl(ac.bit_wise_xor(h, k), 13)
    return ac.add(ac.multiply(h, _u32(5)), _u32(0xE6546B64))


def spark_murmur3_hashes(values: Sequence[str]) -> list[int]:
    """:func:`spark_murmur3_hash` of many UTF-8 strings at once, vectorised with pyarrow
    kernels (unsigned 32-bit arithmetic wraps): one pass per 4-byte word position instead of a
    Python loop per word of every string. Falls back to the scalar code on big-endian hosts."""
    if sys.byteorder != "little":
        return [spark_murmur3_hash(v.encode("utf-8")) for v in values]
    if len(values) == 0:
        return []
    hashes: list[int] = _murmur3_arrow(pa.array(values, _STR)).to_pylist()
    return hashes


#: Rows hashed at a time: a slice's 32-bit columns (256 KiB each) stay in the CPU's cache through
#: the dozen kernels that mix one word, and the padded copy of its bytes stays small.
_SLICE_ROWS = 1 << 16
#: At most this many bytes in one padded copy (:func:`_murmur3_words`), whatever the paths' length:
#: a binary array's offsets are 32-bit.
_MAX_PADDED_BYTES = 1 << 28


def _murmur3_arrow(strings: pa.Array) -> pa.Array:
    """The vectorised hash of a non-null string array, as an int32 array (little-endian hosts)."""
    data = ac.cast(strings, pa.binary())
    if data.null_count:
        raise ValueError("file action paths must not be null")
    out = [_murmur3_slice(data.slice(start, _SLICE_ROWS)) for start in range(0, len(data), _SLICE_ROWS)]
    if not out:
        return pa.array([], pa.int32())
    return pa.concat_arrays(out) if len(out) != 1 else out[0]


def _murmur3_slice(data: pa.Array) -> pa.Array:
    """:func:`_murmur3_arrow` of one slice: its rows grouped by their number of whole 4-byte words,
    each group hashed without per-row masks over the words (:func:`_murmur3_words`)."""
    words = ac.divide(ac.cast(ac.binary_length(data), _U32), _u32(4))  # integer division
    counts = ac.value_counts(words)
    if len(counts) == 1:  # the usual case: every path of a table has about the same length
        return _murmur3_words(data, counts.field(0)[0].as_py())
    order = ac.sort_indices(words)  # rows of one word count next to each other
    hashes, start = [], 0
    for word_count, rows in sorted(zip(counts.field(0).to_pylist(), counts.field(1).to_pylist())):
        hashes.append(_murmur3_words(ac.take(data, order.slice(start, rows)), word_count))
        start += rows
    # hashes[i] belongs to row order[i]: the inverse permutation puts each back in its row
    return ac.take(pa.concat_arrays(hashes), ac.sort_indices(order))


def _murmur3_words(data: pa.Array, word_count: int) -> pa.Array:
    """Spark's murmur3 of binary values of ``word_count`` whole 4-byte words and 0-3 bytes more.

    Each value is copied with zero bytes after it to exactly ``word_count + 1`` words, one fixed
    stride, so that the bytes read as ``word_count + 1`` little-endian uint32 per row: word ``j``
    of every row is one gather. The last word holds the trailing bytes, which Spark mixes one at a
    time as sign-extended ints (``Murmur3_x86_32.hashUnsafeBytes``)."""
    n = len(data)
    width = 4 * (word_count + 1)
    if n > 1 and n * (width + 4) > _MAX_PADDED_BYTES:  # very long paths: fewer rows at a time
        half = n // 2
        return pa.concat_arrays([_murmur3_words(data.slice(0, half), word_count),
                                 _murmur3_words(data.slice(half), word_count)])
    lengths = ac.cast(ac.binary_length(data), _U32)
    padded = ac.binary_slice(ac.binary_join_element_wise(data, _bytes(b"\0\0\0\0"), _bytes(b"")), 0, width)
    offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, padded.buffers()[1]], offset=padded.offset)
    first = offsets[0].as_py()
    if first % 4 or offsets[n].as_py() - first != n * width:  # pragma: no cover - kernels return fresh arrays
        padded = pa.concat_arrays([pa.array([], pa.binary()), padded])  # a copy whose values start at 0
        first = 0
    values = pa.Array.from_buffers(_U32, n * (word_count + 1), [None, padded.buffers()[2].slice(first)])
    # word j of row i is values[i * (word_count + 1) + j]: one gather per word position
    starts = arange(0, n * (word_count + 1), word_count + 1)
    h: pa.Array | pa.Scalar = _u32(_SPARK_HASH_SEED)
    for j in range(word_count):
        h = _mix(h, ac.take(values, ac.add(starts, pa.scalar(j, _LONG))))
    tail = ac.take(values, ac.add(starts, pa.scalar(word_count, _LONG)))
    trailing = ac.subtract(lengths, _u32(4 * word_count))
    for t in range(3):
        has_byte = ac.greater(trailing, _u32(t))
        if not ac.any(has_byte).as_py():
            break
        byte = ac.bit_wise_and(ac.shift_right(tail, _u32(8 * t)), _u32(0xFF))
        signed = ac.subtract(ac.bit_wise_xor(byte, _u32(0x80)), _u32(0x80))  # sign-extended, mod 2**32
        h = ac.if_else(has_byte, _mix(h, signed), h)
    h = ac.bit_wise_xor(h, lengths)
    h = ac.bit_wise_xor(h, ac.shift_right(h, _u32(16)))
    h = ac.multiply(h, _u32(0x85EBCA6B))
    h = ac.bit_wise_xor(h, ac.shift_right(h, _u32(13)))
    h = ac.multiply(h, _u32(0xC2B2AE35))
    h = ac.bit_wise_xor(h, ac.shift_right(h, _u32(16)))
    return ac.cast(h, pa.int32(), safe=False)


def spark_partitions_of(paths: Sequence[str], num_parts: int) -> list[int]:
    """:func:`spark_partition_of` for many non-null paths."""
    return [h % num_parts for h in spark_murmur3_hashes(paths)]


def spark_partition_ids(paths: pa.Array | pa.ChunkedArray, num_parts: int) -> pa.Array:
    """:func:`spark_partitions_of` for an Arrow string array, as an int64 array."""
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks()
    if len(paths) == 0:
        return pa.array([], _LONG)
    if sys.byteorder != "little":
        return pa.array(spark_partitions_of(paths.to_pylist(), num_parts), _LONG)
    h = ac.cast(_murmur3_arrow(paths), _LONG)
    rem = ac.subtract(h, ac.multiply(ac.divide(h, num_parts), num_parts))  # truncating division
    return ac.if_else(ac.less(rem, 0), ac.add(rem, num_parts), rem)  # pmod

