"""DV data: the serialized set of deleted row indexes (PROTOCOL.md, Appendix "Deletion Vector
Format").

DV data is::

    magicNumber   4 bytes, little endian: 1681511377
    bitmap        a RoaringBitmapArray in the "portable" 64-bit format of the RoaringFormatSpec
                  ("Extension for 64-bit implementations"):
                  numBuckets  8 bytes LE
                  per bucket, ascending key: key (4 bytes LE, the high 32 bits of the values;
                  Delta requires its top bit to be 0) + a standard 32-bit Roaring bitmap of the
                  low 32 bits.

The magic number is Delta's and is handled here; the 64-bit bitmap is encoded and decoded by
CRoaring's 64-bit bitmap (pyroaring's ``BitMap64``), whose portable serialization is the one the
spec names (``run_optimize`` picks a run container exactly when it is the smallest encoding, so
our bytes are the bytes CRoaring and Delta write).

Before CRoaring decodes a bitmap, its headers are walked here (RoaringFormatSpec): Delta's own
rules (bucket keys ascending, their top bit clear) are checked, where the bitmap ends and its
cardinality are known without expanding a row, and the cardinality the headers declare is
checked against what CRoaring decodes, so a bitmap whose header and contents disagree is refused
instead of read one way by one reader and another way by the next.

Row indexes come back as a sorted ``pyarrow.UInt64Array``; maximal runs as two int64 arrays.
"""

from __future__ import annotations

import array
import struct
from collections.abc import Iterable, Iterator
from itertools import pairwise

import pyarrow as pa
from delta_downgrade import arrow_compute as ac
from pyroaring import BitMap, BitMap64

from delta_downgrade.errors import DeletionVectorFormatError  # noqa: F401 - re-exported

MAGIC_NUMBER = 1681511377            # "RoaringBitmapArray, portable serialization"
MAX_ROW_INDEX = (1 << 63) - 1        # bucket keys must have their top bit clear

# RoaringFormatSpec constants, for reading the headers.
SERIAL_COOKIE_NO_RUNCONTAINER = 12346
SERIAL_COOKIE = 12347
NO_OFFSET_THRESHOLD = 4              # run-cookie bitmaps with fewer containers have no offsets
ARRAY_CONTAINER_MAX = 4096           # an array container holds at most this many values
BITMAP_CONTAINER_BYTES = 8192        # 2^16 bits

# parse_dv_runs expands at most this range of row indexes at a time (one bucket may hold up to
# 2^32 rows): memory follows the number of runs, not of deleted rows.
_RUNS_WINDOW = 1 << 24


# --- headers of a 32-bit Roaring bitmap ----------------------------------------------------------

def _read_u32_le(view: memoryview, pos: int) -> int:
    if pos + 4 > len(view):
        raise DeletionVectorFormatError("bitmap truncated")
    return int.from_bytes(view[pos:pos + 4], "little")


def _roaring32_extent(view: memoryview, pos: int) -> tuple[list[int], list[int], int]:
    """The headers of the 32-bit Roaring bitmap starting at ``pos`` → (container keys, their
    cardinalities, position after the bitmap). Container bodies are skipped, not read: a run
    container's size comes from its run count, the others' from their cardinality (≤ 4096 values
    is an array container, more a bitmap container)."""
    cookie = _read_u32_le(view, pos)
    if cookie & 0xFFFF == SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        pos += 4
        run_flags_len = (size + 7) // 8
        if pos + run_flags_len > len(view):
            raise DeletionVectorFormatError("bitmap truncated in the run-container flags")
        run_flags = bytes(view[pos:pos + run_flags_len])
        pos += run_flags_len
        has_offsets = size >= NO_OFFSET_THRESHOLD
    elif cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        size = _read_u32_le(view, pos + 4)
        pos += 8
        run_flags = b""
        has_offsets = True
    else:
        raise DeletionVectorFormatError(f"not a Roaring bitmap: cookie {cookie}")
    if size > (1 << 16):
        raise DeletionVectorFormatError(f"a 32-bit Roaring bitmap has at most 65536 containers, not {size}")
    if pos + 4 * size > len(view):
        raise DeletionVectorFormatError("bitmap truncated")
    pairs = struct.unpack_from(f"<{2 * size}H", view, pos)
    keys = list(pairs[0::2])
    cards = [c + 1 for c in pairs[1::2]]
    if any(a >= b for a, b in pairwise(keys)):
        raise DeletionVectorFormatError("container keys are not strictly ascending")
    pos += 4 * size
    if has_offsets:
        pos += 4 * size
    for i, card in enumerate(cards):
        if run_flags and run_flags[i // 8] & (1 << (i % 8)):
            if pos + 2 > len(view):
                raise DeletionVectorFormatError("bitmap truncated")
            pos += 2 + 4 * int.from_bytes(view[pos:pos + 2], "little")
        elif card <= ARRAY_CONTAINER_MAX:
            pos += 2 * card
        else:
            pos += BITMAP_CONTAINER_BYTES
    if pos > len(view):
        raise DeletionVectorFormatError("bitmap truncated")
    return keys, cards, pos


def _roaring32_bitmap(view: memoryview, start: int, end: int, cardinality: int) -> BitMap:
    """The 32-bit bitmap between ``start`` and ``end``, decoded by CRoaring, holding exactly the
    ``cardinality`` its headers declare."""
    try:
        bitmap = BitMap.deserialize(view[start:end])  # type: ignore[arg-type]  # any buffer, not only bytes
    except ValueError as exc:
        raise DeletionVectorFormatError(f"malformed Roaring bitmap: {exc}") from None
    if len(bitmap) != cardinality:
        raise DeletionVectorFormatError(
            f"a Roaring bitmap holds {len(bitmap)} values, its headers say {cardinality}")
    return bitmap


def _uint32_values(bitmap: BitMap) -> pa.UInt32Array:
    """The values of a 32-bit bitmap as a sorted Arrow array (CRoaring's buffer, not a Python loop)."""
    values = bitmap.to_array()
    return pa.Array.from_buffers(pa.uint32(), len(values), [None, pa.py_buffer(values)])


# --- the RoaringBitmapArray: reading --------------------------------------------------------------

def _check_magic(data: bytes | memoryview) -> memoryview:
    view = memoryview(data)
    if len(view) < 4:
        raise DeletionVectorFormatError("DV data shorter than its magic number")
    magic = int.from_bytes(view[:4], "little")
    if magic != MAGIC_NUMBER:
        raise DeletionVectorFormatError(
            f"unknown DV serialization (magic number {magic}); PROTOCOL.md defines {MAGIC_NUMBER}")
    return view


def _buckets(view: memoryview, pos: int) -> Iterator[tuple[int, int, int, int]]:
    """The buckets of a portable 64-bit bitmap starting at ``pos``, one at a time, from their
    headers only: (key, start of its 32-bit bitmap, end of it, cardinality)."""
    if pos + 8 > len(view):
        raise DeletionVectorFormatError("bitmap truncated before its bucket count")
    n_buckets = int.from_bytes(view[pos:pos + 8], "little")
    pos += 8
    if n_buckets > len(view):  # every bucket needs several bytes: a cheap sanity bound
        raise DeletionVectorFormatError(f"implausible bucket count {n_buckets}")
    previous_key = -1
    for _ in range(n_buckets):
        key = _read_u32_le(view, pos)
        pos += 4
        if key & 0x80000000:
            raise DeletionVectorFormatError(f"bucket key {key:#x} has its top bit set (Delta forbids it)")
        if key <= previous_key:
            raise DeletionVectorFormatError("bucket keys are not strictly ascending")
        previous_key = key
        _keys, cards, end = _roaring32_extent(view, pos)
        yield key, pos, end, sum(cards)
        pos = end


def parse_roaring32(data: bytes | memoryview, pos: int = 0) -> tuple[list[tuple[int, pa.Array]], int]:
    """One standard 32-bit Roaring bitmap starting at ``pos`` (RoaringFormatSpec).

    Returns ([(container key, low-16-bit values as an Arrow array)], position after the bitmap).
    """
    view = memoryview(data)
    keys, cards, end = _roaring32_extent(view, pos)
    values = _uint32_values(_roaring32_bitmap(view, pos, end, sum(cards)))
    containers: list[tuple[int, pa.Array]] = []
    offset = 0
    for key, card in zip(keys, cards):
        chunk = values.slice(offset, card)
        if chunk[0].as_py() >> 16 != key or chunk[-1].as_py() >> 16 != key:
            raise DeletionVectorFormatError(f"container {key} does not hold the {card} values its header says")
        containers.append((key, ac.cast(ac.bit_wise_and(chunk, pa.scalar(0xFFFF, pa.uint32())), pa.uint16())))
        offset += card
    return containers, end


def _roaring64_bitmap(view: memoryview, pos: int) -> tuple[BitMap64, int]:
    """The portable 64-bit bitmap starting at ``pos``, its headers checked (:func:`_buckets`) and
    then decoded by CRoaring, holding exactly the cardinality its headers declare → (the bitmap,
    position after it)."""
    end, cardinality = pos + 8, 0
    for _key, _start, end, card in _buckets(view, pos):
        cardinality += card
    try:
        bitmap = BitMap64.deserialize(view[pos:end])  # type: ignore[arg-type]  # any buffer, not only bytes
    except ValueError as exc:
        raise DeletionVectorFormatError(f"malformed Roaring bitmap: {exc}") from None
    if len(bitmap) != cardinality:
        raise DeletionVectorFormatError(
            f"a Roaring bitmap holds {len(bitmap)} values, its headers say {cardinality}")
    return bitmap, end


def _uint64_values(bitmap: BitMap64) -> pa.UInt64Array:
    """The values of a 64-bit bitmap as a sorted Arrow array (CRoaring's buffer, not a Python loop)."""
    values = bitmap.to_array()
    return pa.Array.from_buffers(pa.uint64(), len(values), [None, pa.py_buffer(values)])


def parse_portable_bitmap64(data: bytes | memoryview, pos: int = 0) -> tuple[pa.UInt64Array, int]:
    """The 64-bit "portable" RoaringBitmap (numBuckets, then key + 32-bit bitmap per bucket) →
    (sorted row indexes, position after it)."""
    bitmap, end = _roaring64_bitmap(memoryview(data), pos)
    return _uint64_values(bitmap), end


def parse_dv_data(data: bytes | memoryview) -> pa.UInt64Array:
    """DV data (magic number + portable 64-bit bitmap) → sorted row indexes."""
    values, _end = parse_portable_bitmap64(_check_magic(data), 4)
    return values


def dv_data_cardinality(data: bytes | memoryview) -> int:
    """The number of row indexes in DV data, read from the container headers only."""
    view = _check_magic(data)
    return sum(card for _key, _start, _end, card in _buckets(view, 4))


def _runs_of_sorted(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Sorted distinct uint64 values → (run starts, run ends inclusive), vectorized."""
    n = len(values)
    if n == 0:
        empty = pa.array([], pa.int64())
        return empty, empty
    signed = ac.cast(values, pa.int64())
    gaps = ac.not_equal(ac.subtract(signed.slice(1), signed.slice(0, n - 1)), 1)
    starts = pa.concat_arrays([signed.slice(0, 1), ac.filter(signed.slice(1), gaps)])
    ends = pa.concat_arrays([ac.filter(signed.slice(0, n - 1), gaps), signed.slice(n - 1)])
    return starts, ends


def _windows(bitmap: BitMap64) -> Iterator[BitMap64]:
    """A bitmap in value windows of ``_RUNS_WINDOW`` (the whole bitmap when it is small); empty
    windows are jumped over, so sparse values far apart cost one step each."""
    if len(bitmap) <= _RUNS_WINDOW:
        yield bitmap
        return
    last = bitmap.max()
    low = bitmap.min() - bitmap.min() % _RUNS_WINDOW
    while low <= last:
        window = BitMap64()
        window.add_range(low, low + _RUNS_WINDOW)
        yield bitmap & window
        if low + _RUNS_WINDOW > last:
            break
        following = bitmap.next_set_bit(low + _RUNS_WINDOW)
        low = following - following % _RUNS_WINDOW


def parse_dv_runs(data: bytes | memoryview) -> tuple[pa.Int64Array, pa.Int64Array]:
    """DV data → the deleted row indexes as maximal runs (starts, inclusive ends; int64), one
    window of row indexes at a time: memory grows with the number of runs, not of rows."""
    bitmap, _end = _roaring64_bitmap(_check_magic(data), 4)
    starts: list[pa.Array] = []
    ends: list[pa.Array] = []
    for window in _windows(bitmap):
        s, e = _runs_of_sorted(_uint64_values(window))
        if len(s) and ends and len(ends[-1]) and ends[-1][-1].as_py() + 1 == s[0].as_py():
            # A run continuing across a window boundary: merge it.
            merged_start = starts[-1][-1]
            starts[-1] = starts[-1].slice(0, len(starts[-1]) - 1)
            ends[-1] = ends[-1].slice(0, len(ends[-1]) - 1)
            s = pa.concat_arrays([pa.array([merged_start.as_py()], pa.int64()), s.slice(1)])
        starts.append(s)
        ends.append(e)
    if not starts:
        empty = pa.array([], pa.int64())
        return empty, empty
    return pa.concat_arrays(starts), pa.concat_arrays(ends)


# --- the RoaringBitmapArray: writing --------------------------------------------------------------

def serialize_roaring32(values: Iterable[int], *, use_runs: bool = True) -> bytes:
    """Sorted distinct values < 2^32 → a standard 32-bit Roaring bitmap (RoaringFormatSpec)."""
    bitmap = BitMap(values, optimize=False)  # pyroaring would run-optimize by default
    if use_runs:
        bitmap.run_optimize()
    return bitmap.serialize()


def _sorted_unique(values: pa.Array) -> pa.Array:
    """Sorted distinct values of an Arrow array: a sort and an adjacent-duplicate filter (cheaper
    than hashing), skipped when the values are already strictly ascending."""
    n = len(values)
    if n < 2 or ac.all(ac.less(values.slice(0, n - 1), values.slice(1))).as_py():
        return values
    values = ac.take(values, ac.sort_indices(values))
    fresh = ac.not_equal(values.slice(1), values.slice(0, n - 1))
    return pa.concat_arrays([values.slice(0, 1), ac.filter(values.slice(1), fresh)])


def sorted_row_indexes(row_indexes: Iterable[int] | pa.Array | pa.ChunkedArray) -> pa.UInt64Array:
    """Row indexes → sorted distinct uint64 values; negative ones and ones ≥ 2^63 are refused."""
    if isinstance(row_indexes, (pa.Array, pa.ChunkedArray)):
        if row_indexes.null_count:
            raise ValueError("row indexes must not be null")
        values = _sorted_unique(row_indexes.combine_chunks() if isinstance(row_indexes, pa.ChunkedArray)
                                else row_indexes)
        first, last = (values[0].as_py(), values[-1].as_py()) if len(values) else (0, 0)
    else:
        as_list = sorted({int(v) for v in row_indexes})
        first, last = (as_list[0], as_list[-1]) if as_list else (0, 0)
        values = None
    if first < 0 or last > MAX_ROW_INDEX:
        raise ValueError(f"row indexes must lie in [0, 2^63); got {first}..{last}")
    if values is None:
        return pa.array(as_list, pa.uint64())
    return ac.cast(values, pa.uint64())


def serialize_bitmap(row_indexes: Iterable[int] | pa.Array, *, use_runs: bool = True) -> bytes:
    """Row indexes → DV data: the magic number and the portable 64-bit Roaring bitmap.

    Duplicates are ignored; negative indexes and indexes ≥ 2^63 are refused (Delta requires the
    top bit of every bucket key to be 0).
    """
    return dv_data_of_sorted(sorted_row_indexes(row_indexes), use_runs=use_runs)


def dv_data_of_sorted(values: pa.UInt64Array, *, use_runs: bool = True) -> bytes:
    """Sorted distinct uint64 values < 2^63 → DV data: the magic number, then CRoaring's portable
    64-bit serialization (one bucket per high 32 bits, ascending). With ``use_runs`` a container
    becomes a run container when that is strictly smaller."""
    as_array = array.array("Q")
    if len(values):
        as_array.frombytes(memoryview(values.buffers()[1])[8 * values.offset:8 * (values.offset + len(values))])
    bitmap = BitMap64(as_array, optimize=False)  # pyroaring would run-optimize by default
    if use_runs:
        bitmap.run_optimize()
    return struct.pack("<I", MAGIC_NUMBER) + bitmap.serialize()
