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

import struct
import sys
from typing import Sequence

import pyarrow as pa
from delta_downgrade import arrow_compute as ac

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


def _u32(value: int) -> pa.Scalar:
    return pa.scalar(value, _U32)


def _rotl(x: pa.Array, r: int) -> pa.Array:
    return ac.bit_wise_or(ac.shift_left(x, _u32(r)), ac.shift_right(x, _u32(32 - r)))


def _mix(h: pa.Array, k: pa.Array) -> pa.Array:
    k = ac.multiply(_rotl(ac.multiply(k, _u32(0xCC9E2D51)), 15), _u32(0x1B873593))
    h = _rotl(ac.bit_wise_xor(h, k), 13)
    return ac.add(ac.multiply(h, _u32(5)), _u32(0xE6546B64))


def _reinterpret(fixed: pa.Array, typ: pa.DataType) -> pa.Array:
    """The bytes of a fixed_size_binary array read as ``typ`` (same width, little endian)."""
    return pa.Array.from_buffers(typ, len(fixed), [None, fixed.buffers()[1]], offset=fixed.offset)


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


def _murmur3_arrow(strings: pa.Array) -> pa.Array:
    """The vectorised hash of a non-null string array, as an int32 array (little-endian hosts)."""
    n = len(strings)
    data = ac.cast(strings, pa.binary())
    if data.null_count:
        raise ValueError("file action paths must not be null")
    lengths = ac.cast(ac.binary_length(data), _U32)
    words = ac.divide(lengths, _u32(4))  # integer division on unsigned ints
    h = pa.array([_SPARK_HASH_SEED] * n, _U32)
    zero_word, zero_byte = pa.scalar(b"\0\0\0\0", pa.binary()), pa.scalar(b"\0", pa.binary())
    for j in range(int(ac.max(words).as_py()) + 1):
        full = ac.greater(words, _u32(j))
        if ac.any(full).as_py():
            word = ac.if_else(full, ac.binary_slice(data, 4 * j, 4 * j + 4), zero_word)
            h = ac.if_else(full, _mix(h, _reinterpret(ac.cast(word, pa.binary(4)), _U32)), h)
        # rows whose trailing bytes start at word j: mix each byte, sign-extended, on its own
        ends_here = ac.equal(words, _u32(j))
        remaining = ac.subtract(lengths, _u32(4 * j))
        for t in range(3):
            sel = ac.and_(ends_here, ac.greater(remaining, _u32(t)))
            if not ac.any(sel).as_py():
                break
            byte = ac.if_else(sel, ac.binary_slice(data, 4 * j + t, 4 * j + t + 1), zero_byte)
            signed = ac.cast(_reinterpret(ac.cast(byte, pa.binary(1)), pa.int8()), pa.int32())
            h = ac.if_else(sel, _mix(h, ac.cast(signed, _U32, safe=False)), h)
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

