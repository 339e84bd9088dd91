"""DV data: the serialized set of deleted row indexes (PROTOCOL.md, Appendix "Deletion Vector
Format").

DV data is::

    magicNumber   4 bytes, little endian: 1681511377
    bitmap        a 64-bit RoaringBitmap in the "portable" format of the RoaringFormatSpec
                  ("Extension for 64-bit implementations"):
                  numBuckets  8 bytes LE
                  per bucket, ascending key: key (4 bytes LE, the high 32 bits of the values;
                  Delta requires its top bit to be 0) + a standard 32-bit Roaring bitmap of the
                  low 32 bits.

The 32-bit Roaring serialization (RoaringFormatSpec, all numbers little endian):

- a cookie: ``12347 | (containers - 1) << 16`` (32 bits) followed by a bitset with one bit per
  container telling which are *run* containers — or, when there is no run container, the cookie
  ``12346`` (32 bits) followed by the container count (32 bits);
- per container its key (high 16 bits) and cardinality - 1 (16 bits each);
- an offset per container (32 bits each), omitted when the run cookie is used with fewer than 4
  containers;
- the containers: *run* (16-bit run count, then (start, length - 1) pairs), *array* (cardinality
  ≤ 4096: the sorted 16-bit values) or *bitmap* (8 KiB: 1024 little-endian 64-bit words).

Row indexes come back as a sorted ``pyarrow.UInt64Array`` (8 bytes per deleted row; large bitmap
containers are expanded with Arrow kernels, not Python loops). Everything here is pure Python plus
pyarrow: no Roaring library is needed at runtime.
"""

from __future__ import annotations

import struct
import sys
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

# --- constants of the format ----------------------------------------------------------------------

MAGIC_NUMBER = 1681511377            # "RoaringBitmapArray, portable serialization"
SERIAL_COOKIE_NO_RUNCONTAINER = 12346
SERIAL_COOKIE = 12347
NO_OFFSET_THRESHOLD = 4              # run-cookie bitmaps with fewer containers have no offsets
ARRAY_CONTAINER_MAX = 4096           # an array container holds at most this many values
BITMAP_CONTAINER_BYTES = 8192        # 2^16 bits
MAX_ROW_INDEX = (1 << 63) - 1        # bucket keys must have their top bit clear

_LITTLE_ENDIAN_HOST = sys.byteorder == "little"


class DeletionVectorFormatError(ValueError):
    """Bytes that do not follow the DV data format (pure parsing; no file context)."""


# --- the 32-bit Roaring bitmap: parsing ------------------------------------------------------------

def _u16_array(data: bytes | memoryview, count: int) -> pa.Array:
    """``count`` little-endian uint16 values as a pyarrow UInt16Array."""
    raw = bytes(data[: 2 * count])
    if len(raw) != 2 * count:
        raise DeletionVectorFormatError("array container runs past the end of the bitmap")
    if not _LITTLE_ENDIAN_HOST:  # pragma: no cover - Arrow buffers are native-endian
        return pa.array(struct.unpack(f"<{count}H", raw), pa.uint16())
    return pa.Array.from_buffers(pa.uint16(), count, [None, pa.py_buffer(raw)])


def _bitmap_container_values(data: bytes | memoryview) -> pa.Array:
    """The set bits of an 8 KiB bitmap container. Roaring's bit ``v`` is bit ``v % 64`` of the
    little-endian word ``v // 64``, i.e. bit ``v % 8`` of byte ``v // 8`` — Arrow's own boolean
    layout, so Arrow finds the set bits."""
    buf = pa.py_buffer(bytes(data))
    bools = pa.BooleanArray.from_buffers(pa.bool_(), 1 << 16, [None, buf])
    return pc.indices_nonzero(bools)


def _run_container_values(runs: Sequence[tuple[int, int]]) -> pa.Array:
    """(start, length - 1) pairs → the values they cover."""
    out: list[int] = []
    for start, length_minus_one in runs:
        out.extend(range(start, start + length_minus_one + 1))
    return pa.array(out, pa.uint64())


@dataclass(frozen=True)
class _ContainerHeader:
    key: int
    cardinality: int
    is_run: bool


def _read_u32_le(data: memoryview, pos: int) -> int:
    if pos + 4 > len(data):
        raise DeletionVectorFormatError("bitmap truncated")
    return int.from_bytes(data[pos:pos + 4], "little")


def _read_u16_le(data: memoryview, pos: int) -> int:
    if pos + 2 > len(data):
        raise DeletionVectorFormatError("bitmap truncated")
    return int.from_bytes(data[pos:pos + 2], "little")


def _roaring32_headers(view: memoryview, pos: int) -> tuple[list[_ContainerHeader], int]:
    """The cookie, run flags, descriptive header and (skipped) offset header of a 32-bit Roaring
    bitmap starting at ``pos`` → (container headers, position of the first container)."""
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
    headers: list[_ContainerHeader] = []
    previous_key = -1
    for i in range(size):
        key = _read_u16_le(view, pos)
        card = _read_u16_le(view, pos + 2) + 1
        pos += 4
        if key <= previous_key:
            raise DeletionVectorFormatError("container keys are not strictly ascending")
        previous_key = key
        is_run = bool(run_flags) and bool(run_flags[i // 8] & (1 << (i % 8)))
        headers.append(_ContainerHeader(key, card, is_run))
    if has_offsets:
        pos += 4 * size
    return headers, pos


def _read_container(view: memoryview, pos: int, header: _ContainerHeader) -> tuple[pa.Array, int]:
    """One container's low-16-bit values (run, array or bitmap) → (values, position after it)."""
    if header.is_run:
        n_runs = _read_u16_le(view, pos)
        pos += 2
        if pos + 4 * n_runs > len(view):
            raise DeletionVectorFormatError("run container truncated")
        pairs = struct.unpack_from(f"<{2 * n_runs}H", view, pos)
        pos += 4 * n_runs
        values = _run_container_values(list(zip(pairs[0::2], pairs[1::2])))
    elif header.cardinality <= ARRAY_CONTAINER_MAX:
        values = _u16_array(view[pos:], header.cardinality)
        pos += 2 * header.cardinality
    else:
        if pos + BITMAP_CONTAINER_BYTES > len(view):
            raise DeletionVectorFormatError("bitmap container truncated")
        values = _bitmap_container_values(view[pos:pos + BITMAP_CONTAINER_BYTES])
        pos += BITMAP_CONTAINER_BYTES
    if len(values) != header.cardinality:
        raise DeletionVectorFormatError(
            f"container {header.key} holds {len(values)} values, its header says {header.cardinality}")
    return values, pos


def parse_roaring32(data: bytes | memoryview, pos: int = 0) -> tuple[list[tuple[int, pa.Array]], int]:
    """One standard 32-bit Roaring bitmap starting at ``pos`` (RoaringFormatSpec).

    Returns ([(container key, low-16-bit values as an Arrow array)], position after the bitmap).
    Containers are read in order; the offset header, when present, is only skipped.
    """
    view = memoryview(data)
    headers, pos = _roaring32_headers(view, pos)
    containers: list[tuple[int, pa.Array]] = []
    for header in headers:
        values, pos = _read_container(view, pos, header)
        containers.append((header.key, values))
    return containers, pos


def _iter_bitmap64(view: memoryview, pos: int) -> Iterator[tuple[int, pa.Array]]:
    """The containers of a portable 64-bit bitmap, one at a time: (base value, low values)."""
    if pos + 8 > len(view):
        raise DeletionVectorFormatError("bitmap truncated before its bucket count")
    n_buckets = int.from_bytes(view[pos:pos + 8], "little")
    pos += 8
    if n_buckets > len(view):  # every bucket needs several bytes: a cheap sanity bound
        raise DeletionVectorFormatError(f"implausible bucket count {n_buckets}")
    previous_bucket = -1
    for _ in range(n_buckets):
        bucket = _read_u32_le(view, pos)
        pos += 4
        if bucket & 0x80000000:
            raise DeletionVectorFormatError(f"bucket key {bucket:#x} has its top bit set (Delta forbids it)")
        if bucket <= previous_bucket:
            raise DeletionVectorFormatError("bucket keys are not strictly ascending")
        previous_bucket = bucket
        headers, pos = _roaring32_headers(view, pos)
        for header in headers:
            values, pos = _read_container(view, pos, header)
            yield (bucket << 32) | (header.key << 16), values


def _with_base(base: int, low: pa.Array) -> pa.Array:
    values = pc.cast(low, pa.uint64())
    return pc.add(values, pa.scalar(base, pa.uint64())) if base else values


def parse_portable_bitmap64(data: bytes | memoryview, pos: int = 0) -> tuple[pa.UInt64Array, int]:
    """The 64-bit "portable" RoaringBitmap (numBuckets, then key + 32-bit bitmap per bucket) →
    (sorted row indexes, position after it)."""
    view = memoryview(data)
    chunks = [_with_base(base, low) for base, low in _iter_bitmap64(view, pos)]
    # The end position: re-walk the headers only (cheap), so that callers can frame the bitmap.
    end = _bitmap64_end(view, pos)
    if not chunks:
        return pa.array([], pa.uint64()), end
    return pa.concat_arrays(chunks), end


def _bitmap64_end(view: memoryview, pos: int) -> int:
    n_buckets = int.from_bytes(view[pos:pos + 8], "little")
    pos += 8
    for _ in range(n_buckets):
        _count, pos = _roaring32_cardinality(view, pos + 4)
    return pos


def parse_dv_data(data: bytes | memoryview) -> pa.UInt64Array:
    """DV data (magic number + portable 64-bit bitmap) → sorted row indexes."""
    values, _end = parse_portable_bitmap64(_check_magic(data), 4)
    return values


def _check_magic(data: bytes | memoryview) -> memoryview:
    view = memoryview(data)
    if len(view) < 4:
        raise DeletionVectorFormatError("DV data shorter than its magic number")
    magic = int.from_bytes(view[:4], "little")
    if magic != MAGIC_NUMBER:
        raise DeletionVectorFormatError(
            f"unknown DV serialization (magic number {magic}); PROTOCOL.md defines {MAGIC_NUMBER}")
    return view


def _runs_of_sorted(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Sorted distinct uint64 values → (run starts, run ends inclusive), vectorized."""
    n = len(values)
    if n == 0:
        empty = pa.array([], pa.uint64())
        return empty, empty
    signed = pc.cast(values, pa.int64())
    gaps = pc.not_equal(pc.subtract(signed.slice(1), signed.slice(0, n - 1)), 1)
    starts = pa.concat_arrays([signed.slice(0, 1), pc.filter(signed.slice(1), gaps)])
    ends = pa.concat_arrays([pc.filter(signed.slice(0, n - 1), gaps), signed.slice(n - 1)])
    return starts, ends


def parse_dv_runs(data: bytes | memoryview) -> tuple[pa.Int64Array, pa.Int64Array]:
    """DV data → the deleted row indexes as maximal runs (starts, inclusive ends; int64), one
    container at a time: memory grows with the number of runs, not of rows."""
    view = _check_magic(data)
    starts: list[pa.Array] = []
    ends: list[pa.Array] = []
    for base, low in _iter_bitmap64(view, 4):
        s, e = _runs_of_sorted(_with_base(base, low))
        if len(s) and ends and len(ends[-1]) and ends[-1][-1].as_py() + 1 == s[0].as_py():
            # A run continuing across a container boundary: merge it.
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


def _roaring32_cardinality(view: memoryview, pos: int) -> tuple[int, int]:
    """(cardinality, end position) of a 32-bit Roaring bitmap from its headers; container bodies
    are skipped, not expanded."""
    headers, pos = _roaring32_headers(view, pos)
    for header in headers:
        if header.is_run:
            pos += 2 + 4 * _read_u16_le(view, pos)
        elif header.cardinality <= ARRAY_CONTAINER_MAX:
            pos += 2 * header.cardinality
        else:
            pos += BITMAP_CONTAINER_BYTES
        if pos > len(view):
            raise DeletionVectorFormatError("bitmap truncated")
    return sum(h.cardinality for h in headers), pos


def dv_data_cardinality(data: bytes | memoryview) -> int:
    """The number of row indexes in DV data, read from the container headers only."""
    view = _check_magic(data)
    if len(view) < 12:
        raise DeletionVectorFormatError("DV data too short for a bucket count")
    n_buckets = int.from_bytes(view[4:12], "little")
    if n_buckets > len(view):
        raise DeletionVectorFormatError(f"implausible bucket count {n_buckets}")
    pos = 12
    total = 0
    for _ in range(n_buckets):
        pos += 4
        count, pos = _roaring32_cardinality(view, pos)
        total += count
    return total


# --- the 32-bit Roaring bitmap: writing -------------------------------------------------------------

def _runs_of(values: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted distinct values → maximal runs as (start, length - 1)."""
    runs: list[tuple[int, int]] = []
    start = prev = values[0]
    for v in values[1:]:
        if v != prev + 1:
            runs.append((start, prev - start))
            start = v
        prev = v
    runs.append((start, prev - start))
    return runs


def _container_bytes(values: Sequence[int], use_runs: bool) -> tuple[bool, bytes]:
    """The smallest encoding of one container's low-16-bit values: (is_run, bytes).

    Array containers may only hold ≤ 4096 values (a reader infers the kind from the
    cardinality), so an array is chosen for small sets, a bitmap for large ones, and a run
    container when it is strictly smaller than both.
    """
    card = len(values)
    plain_size = 2 * card if card <= ARRAY_CONTAINER_MAX else BITMAP_CONTAINER_BYTES
    if use_runs:
        runs = _runs_of(values)
        if 2 + 4 * len(runs) < plain_size:
            flat = [x for run in runs for x in run]
            return True, struct.pack(f"<H{len(flat)}H", len(runs), *flat)
    if card <= ARRAY_CONTAINER_MAX:
        return False, struct.pack(f"<{card}H", *values)
    bits = bytearray(BITMAP_CONTAINER_BYTES)
    for v in values:
        bits[v >> 3] |= 1 << (v & 7)
    return False, bytes(bits)


def serialize_roaring32(values: Sequence[int], *, use_runs: bool = True) -> bytes:
    """Sorted distinct values < 2^32 → a standard 32-bit Roaring bitmap (RoaringFormatSpec)."""
    containers: list[tuple[int, int, bool, bytes]] = []  # key, cardinality, is_run, body
    i = 0
    n = len(values)
    while i < n:
        key = values[i] >> 16
        j = bisect_left(values, (key + 1) << 16, i)
        low = [v & 0xFFFF for v in values[i:j]]
        is_run, body = _container_bytes(low, use_runs)
        containers.append((key, j - i, is_run, body))
        i = j
    size = len(containers)
    any_run = any(c[2] for c in containers)
    out = bytearray()
    if any_run:
        out += struct.pack("<I", SERIAL_COOKIE | ((size - 1) << 16))
        flags = bytearray((size + 7) // 8)
        for idx, c in enumerate(containers):
            if c[2]:
                flags[idx // 8] |= 1 << (idx % 8)
        out += flags
        with_offsets = size >= NO_OFFSET_THRESHOLD
    else:
        out += struct.pack("<II", SERIAL_COOKIE_NO_RUNCONTAINER, size)
        with_offsets = True
    for key, card, _is_run, _body in containers:
        out += struct.pack("<HH", key, card - 1)
    if with_offsets:
        offset = len(out) + 4 * size
        for c in containers:
            out += struct.pack("<I", offset)
            offset += len(c[3])
    for c in containers:
        out += c[3]
    return bytes(out)


def sorted_row_indexes(row_indexes: Iterable[int] | pa.Array | pa.ChunkedArray) -> list[int]:
    """Row indexes → sorted distinct values; negative ones and ones ≥ 2^63 are refused."""
    if isinstance(row_indexes, (pa.Array, pa.ChunkedArray)):
        if row_indexes.null_count:
            raise ValueError("row indexes must not be null")
        unique = pc.unique(row_indexes)
        out = pc.take(unique, pc.array_sort_indices(unique)).to_pylist()
    else:
        out = sorted({int(v) for v in row_indexes})
    if out and (out[0] < 0 or out[-1] > MAX_ROW_INDEX):
        raise ValueError(f"row indexes must lie in [0, 2^63); got {out[0]}..{out[-1]}")
    return out


def serialize_bitmap(row_indexes: Iterable[int] | pa.Array, *, use_runs: bool = True) -> bytes:
    """Row indexes → DV data: the magic number and the portable 64-bit Roaring bitmap.

    Duplicates are ignored; negative indexes and indexes ≥ 2^63 are refused (Delta requires the
    top bit of every bucket key to be 0).
    """
    return dv_data_of_sorted(sorted_row_indexes(row_indexes), use_runs=use_runs)


def dv_data_of_sorted(values: Sequence[int], *, use_runs: bool = True) -> bytes:
    """Sorted distinct values < 2^63 → DV data. The values are grouped by their high 32 bits
    (one bucket each, ascending); each bucket's low 32 bits are one 32-bit bitmap."""
    buckets: list[tuple[int, bytes]] = []
    i = 0
    while i < len(values):
        bucket = values[i] >> 32
        j = bisect_left(values, (bucket + 1) << 32, i)
        low = [v & 0xFFFFFFFF for v in values[i:j]]
        buckets.append((bucket, serialize_roaring32(low, use_runs=use_runs)))
        i = j
    out = bytearray(struct.pack("<I", MAGIC_NUMBER))
    out += struct.pack("<Q", len(buckets))
    for bucket, body in buckets:
        out += struct.pack("<I", bucket)
        out += body
    return bytes(out)


