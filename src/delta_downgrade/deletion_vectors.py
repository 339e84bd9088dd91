"""Deletion vectors: the bytes (PROTOCOL.md, Appendix "Deletion Vector Format" and "Deletion Vector
File Storage Format") and reading them for a data file ("Deletion Vectors" → "Deletion Vector
Descriptor Schema").

A deletion vector (DV) is the set of row indexes (0-based positions of rows in their parquet file)
that are deleted. Its serialized form, here called *DV data*, is::

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

DV files (all numbers big endian): one version byte ``1``, then per DV its size (4 bytes: the
length of the DV data, magic number included), the DV data and a CRC-32 of the DV data (4 bytes).
A descriptor's ``offset`` points at the size field (1 when absent). An inline DV (``i``) holds the
DV data Z85-encoded in ``pathOrInlineDv``, zero-padded to a multiple of 4 bytes before encoding;
``sizeInBytes`` is the length before padding.

Row indexes come back as a sorted ``pyarrow.UInt64Array`` (8 bytes per deleted row; large bitmap
containers are expanded with Arrow kernels, not Python loops). Everything here is pure Python plus
pyarrow: no Roaring library is needed at runtime.
"""

from __future__ import annotations

import os
import struct
import sys
import uuid
import zlib
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from delta_downgrade.actions import DeletionVectorDescriptor
from delta_downgrade.dv_paths import (
    STORAGE_INLINE, STORAGE_PATH, STORAGE_UUID, Z85_ALPHABET, dv_file_name, dv_relative_path,
    encode_uuid_dv, local_path_of_uri, table_relative_path, z85_decode, z85_encode,
)
from delta_downgrade.errors import CorruptLogError

# --- constants of the format ----------------------------------------------------------------------

MAGIC_NUMBER = 1681511377            # "RoaringBitmapArray, portable serialization"
DV_FILE_FORMAT_VERSION = 1
SERIAL_COOKIE_NO_RUNCONTAINER = 12346
SERIAL_COOKIE = 12347
NO_OFFSET_THRESHOLD = 4              # run-cookie bitmaps with fewer containers have no offsets
ARRAY_CONTAINER_MAX = 4096           # an array container holds at most this many values
BITMAP_CONTAINER_BYTES = 8192        # 2^16 bits
MAX_ROW_INDEX = (1 << 63) - 1        # bucket keys must have their top bit clear

_LITTLE_ENDIAN_HOST = sys.byteorder == "little"


# --- errors -----------------------------------------------------------------------------------------

class DeletionVectorFormatError(ValueError):
    """Bytes that do not follow the DV data format (pure parsing; no file context)."""


class DeletionVectorError(CorruptLogError):
    """A deletion vector of the table cannot be used. Nothing was committed when it is raised:
    the operation stops before it would drop the rows the DV deletes."""

    error_class = "DELTA_DOWNGRADE_DV_CORRUPT"
    sqlstate = "XXKDS"


class DeletionVectorNotFoundError(DeletionVectorError):
    """The DV file a descriptor resolves to does not exist or cannot be read."""

    error_class = "DELTA_DOWNGRADE_DV_FILE_NOT_FOUND"
    sqlstate = "42K03"


class DeletionVectorChecksumError(DeletionVectorError):
    error_class = "DELTA_DELETION_VECTOR_CHECKSUM_MISMATCH"


class DeletionVectorSizeError(DeletionVectorError):
    error_class = "DELTA_DELETION_VECTOR_SIZE_MISMATCH"


class DeletionVectorCardinalityError(DeletionVectorError):
    error_class = "DELTA_DOWNGRADE_DV_CARDINALITY_MISMATCH"


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


def _sorted_distinct(row_indexes: Iterable[int] | pa.Array | pa.ChunkedArray) -> list[int]:
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
    values = _sorted_distinct(row_indexes)
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


# --- DV files and inline DVs --------------------------------------------------------------------------

def frame_dv(dv_data: bytes) -> bytes:
    """One stored DV inside a DV file: size (4 bytes BE), the DV data, its CRC-32 (4 bytes BE)."""
    return struct.pack(">I", len(dv_data)) + dv_data + struct.pack(">I", zlib.crc32(dv_data) & 0xFFFFFFFF)


def dv_file_bytes(dv_datas: Sequence[bytes]) -> tuple[bytes, list[int]]:
    """A whole DV file (version byte + framed DVs) and the offset of each DV's size field."""
    out = bytearray([DV_FILE_FORMAT_VERSION])
    offsets: list[int] = []
    for data in dv_datas:
        offsets.append(len(out))
        out += frame_dv(data)
    return bytes(out), offsets


def unframe_dv(file_bytes: bytes | memoryview, offset: int | None, size_in_bytes: int) -> bytes:
    """The DV data stored at ``offset`` of a DV file, after checking the version byte, the size
    field against ``size_in_bytes`` and the CRC-32. Raises :class:`DeletionVectorFormatError`
    subclasses (``_SizeMismatch`` / ``_ChecksumMismatch``) that the caller turns into table errors."""
    view = memoryview(file_bytes)
    if len(view) < 1 or view[0] != DV_FILE_FORMAT_VERSION:
        got = view[0] if len(view) else None
        raise DeletionVectorFormatError(
            f"DV file format version {got!r}; only {DV_FILE_FORMAT_VERSION} is defined")
    start = 1 if offset is None else int(offset)
    if start < 1 or start + 4 > len(view):
        raise _SizeMismatch(f"offset {start} lies outside the {len(view)}-byte DV file")
    stored = int.from_bytes(view[start:start + 4], "big")
    if stored != size_in_bytes:
        raise _SizeMismatch(
            f"the DV file stores {stored} bytes at offset {start}, the log says {size_in_bytes}")
    end = start + 4 + stored
    if end + 4 > len(view):
        raise _SizeMismatch(f"the DV at offset {start} ({stored} bytes + checksum) runs past the "
                            f"end of the {len(view)}-byte file")
    data = bytes(view[start + 4:end])
    checksum = int.from_bytes(view[end:end + 4], "big")
    if zlib.crc32(data) & 0xFFFFFFFF != checksum:
        raise _ChecksumMismatch(f"CRC-32 of the DV at offset {start} does not match its stored checksum")
    return data


class _SizeMismatch(DeletionVectorFormatError):
    pass


class _ChecksumMismatch(DeletionVectorFormatError):
    pass


def encode_inline(dv_data: bytes) -> str:
    """DV data → ``pathOrInlineDv`` of an inline DV: Z85 of the data zero-padded to 4 bytes."""
    padding = (-len(dv_data)) % 4
    return z85_encode(dv_data + b"\0" * padding)


def decode_inline(text: str, size_in_bytes: int) -> bytes:
    """``pathOrInlineDv`` of an inline DV → DV data (the first ``size_in_bytes`` decoded bytes).

    Besides whole 5-character groups, a final partial group of k + 1 characters (k bytes, the
    padding some Z85 libraries use) is accepted.
    """
    tail = len(text) % 5
    if tail == 1:
        raise DeletionVectorFormatError("inline DV: a Z85 group of 1 character is invalid")
    if tail:
        padded = z85_decode(text + Z85_ALPHABET[-1] * (5 - tail))
        data = padded[: len(padded) - (5 - tail)]
    else:
        data = z85_decode(text)
    if len(data) < size_in_bytes:
        raise _SizeMismatch(f"inline DV decodes to {len(data)} bytes, the log says {size_in_bytes}")
    return data[:size_in_bytes]


def inline_descriptor(row_indexes: Iterable[int] | pa.Array) -> DeletionVectorDescriptor:
    """An inline (``i``) descriptor holding ``row_indexes``."""
    values = _sorted_distinct(row_indexes)
    data = serialize_bitmap(values)
    return DeletionVectorDescriptor(storageType=STORAGE_INLINE, pathOrInlineDv=encode_inline(data),
                                    sizeInBytes=len(data), cardinality=len(values))


def write_dv_file(target: Any, row_index_lists: Sequence[Iterable[int] | pa.Array], *,
                  prefix: str = "", dv_uuid: uuid.UUID | None = None) -> list[DeletionVectorDescriptor]:
    """Write one DV file holding one DV per entry of ``row_index_lists`` (several DVs may share a
    file) and return their ``u`` descriptors, in order.

    ``target`` is the table root (a local directory) or a Storage; the file is
    ``[<prefix>/]deletion_vector_<uuid>.bin`` below it. An empty list writes nothing.
    """
    if not row_index_lists:
        return []
    dv_uuid = dv_uuid or uuid.uuid4()
    datas: list[bytes] = []
    cards: list[int] = []
    for rows in row_index_lists:
        values = _sorted_distinct(rows)
        datas.append(serialize_bitmap(values))
        cards.append(len(values))
    content, offsets = dv_file_bytes(datas)
    rel = f"{prefix}/{dv_file_name(dv_uuid)}" if prefix else dv_file_name(dv_uuid)
    if hasattr(target, "put_if_absent"):
        target.put_if_absent(rel, content)
    else:
        full = os.path.join(os.fspath(target), *rel.split("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "xb") as fh:
            fh.write(content)
    path_or_inline = encode_uuid_dv(dv_uuid, prefix)
    return [DeletionVectorDescriptor(storageType=STORAGE_UUID, pathOrInlineDv=path_or_inline,
                                     offset=off, sizeInBytes=len(data), cardinality=card)
            for off, data, card in zip(offsets, datas, cards)]


# --- reading the DV of a data file --------------------------------------------------------------------

class DvFileReader:
    """Reads DV files of one table and caches them, so that a file holding the DVs of many data
    files is read once.

    ``source`` is a Storage (``read_bytes(relative path)`` + ``root``) or a local table root path.
    Absolute (``p``) DVs inside the table are read through it; others only when they are local.
    ``read_absolute`` may read any other absolute URI (e.g. through Spark).
    """

    def __init__(self, source: Any, *, read_absolute: Callable[[str], bytes] | None = None,
                 max_cached_bytes: int = 256 << 20) -> None:
        self.source = source
        if hasattr(source, "read_bytes"):
            self.root = getattr(source, "root", None) or ""
        else:
            self.root = os.path.abspath(os.fspath(source))
        self.read_absolute = read_absolute
        self.max_cached_bytes = max_cached_bytes
        self._cache: dict[str, bytes] = {}
        self._cached_bytes = 0

    def _read_relative(self, rel: str) -> bytes:
        if hasattr(self.source, "read_bytes"):
            return self.source.read_bytes(rel)
        with open(os.path.join(self.root, *rel.split("/")), "rb") as fh:
            return fh.read()

    def location(self, dv: DeletionVectorDescriptor) -> str:
        """Where the DV lives, for messages: a table-relative path or the absolute URI."""
        if dv.storageType == STORAGE_UUID:
            return dv_relative_path(dv) or dv.pathOrInlineDv
        return dv.pathOrInlineDv

    def file_bytes(self, dv: DeletionVectorDescriptor) -> bytes:
        """The whole DV file of a ``u``/``p`` descriptor (cached)."""
        if dv.storageType == STORAGE_UUID:
            key, relative, absolute = f"u:{dv_relative_path(dv)}", dv_relative_path(dv), None
        elif dv.storageType == STORAGE_PATH:
            relative = table_relative_path(self.root, dv.pathOrInlineDv) if self.root else None
            key, absolute = f"p:{dv.pathOrInlineDv}", dv.pathOrInlineDv
        else:
            raise ValueError(f"storage type {dv.storageType!r} has no file")
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        if relative is not None:
            data = self._read_relative(relative)
        else:
            local = local_path_of_uri(absolute or "")
            if local is not None:
                with open(local, "rb") as fh:
                    data = fh.read()
            elif self.read_absolute is not None:
                data = self.read_absolute(absolute or "")
            else:
                raise FileNotFoundError(f"{absolute} is outside the table and not a local path")
        if self._cached_bytes + len(data) > self.max_cached_bytes:
            self._cache.clear()
            self._cached_bytes = 0
        self._cache[key] = data
        self._cached_bytes += len(data)
        return data

    def dv_data(self, dv: DeletionVectorDescriptor) -> bytes:
        """The DV data (magic number + bitmap) of a descriptor, verified against the log's size
        and the file's checksum. Raises :class:`DeletionVectorFormatError` subclasses and OSError."""
        if dv.storageType == STORAGE_INLINE:
            return decode_inline(dv.pathOrInlineDv, dv.sizeInBytes)
        return unframe_dv(self.file_bytes(dv), dv.offset, dv.sizeInBytes)

    def _load(self, dv: DeletionVectorDescriptor, where: str, table: str | None,
              params: dict[str, Any]) -> bytes:
        """:meth:`dv_data` with its failures turned into table errors."""
        try:
            return self.dv_data(dv)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
            raise DeletionVectorNotFoundError(
                f"the deletion vector of {where} cannot be read ({type(exc).__name__}: {exc}). Without it "
                f"the rows it deletes cannot be told apart, so nothing was committed. Restore the DV "
                f"file, or rewrite the data file with an engine that can resolve it",
                table=table, params=params) from None
        except OSError as exc:
            raise DeletionVectorNotFoundError(
                f"the deletion vector of {where} cannot be read ({exc}); nothing was committed",
                table=table, params=params) from None
        except _ChecksumMismatch as exc:
            raise DeletionVectorChecksumError(
                f"could not verify the integrity of the deletion vector of {where}: {exc}. Nothing "
                f"was committed", table=table, params=params) from None
        except _SizeMismatch as exc:
            raise DeletionVectorSizeError(
                f"the deletion vector of {where} does not match its descriptor: {exc}. Nothing was "
                f"committed", table=table, params=params) from None
        except (DeletionVectorFormatError, ValueError) as exc:
            raise DeletionVectorError(
                f"the deletion vector of {where} is malformed: {exc}. Nothing was committed",
                table=table, params=params) from None

    def _context(self, descriptor: Any, data_file: str | None,
                 table: str | None) -> tuple[DeletionVectorDescriptor, str, str | None, dict[str, Any]]:
        dv = DeletionVectorDescriptor.coerce(descriptor)
        return (dv, self._describe(dv, data_file), table if table is not None else (self.root or None),
                self._params(dv, data_file))

    def _check_cardinality(self, dv: DeletionVectorDescriptor, found: int, where: str,
                           table: str | None, params: dict[str, Any]) -> None:
        if found != dv.cardinality:
            raise DeletionVectorCardinalityError(
                f"the deletion vector of {where} holds {found} row indexes, its descriptor says "
                f"cardinality {dv.cardinality}. Nothing was committed", table=table, params=params)

    def read(self, descriptor: DeletionVectorDescriptor | Mapping[str, Any], *,
             data_file: str | None = None, table: str | None = None) -> pa.UInt64Array:
        """The sorted deleted row indexes of ``descriptor``; exactly ``cardinality`` of them.

        Errors name the data file and the DV location and are :class:`DeletionVectorError`
        subclasses (exit code 2): not found / unreadable, size mismatch, checksum mismatch,
        malformed bitmap, cardinality mismatch.
        """
        dv, where, table, params = self._context(descriptor, data_file, table)
        data = self._load(dv, where, table, params)
        try:
            values = parse_dv_data(data)
        except (DeletionVectorFormatError, ValueError, pa.ArrowException) as exc:
            raise DeletionVectorError(
                f"the deletion vector of {where} is malformed: {exc}. Nothing was committed",
                table=table, params=params) from None
        self._check_cardinality(dv, len(values), where, table, params)
        return values

    def read_verified_bytes(self, descriptor: DeletionVectorDescriptor | Mapping[str, Any], *,
                            data_file: str | None = None, table: str | None = None) -> bytes:
        """The DV data of ``descriptor``, checked like :meth:`read` (size, checksum, structure,
        cardinality) without expanding the row indexes: for DVs too large to hold as rows."""
        dv, where, table, params = self._context(descriptor, data_file, table)
        data = self._load(dv, where, table, params)
        try:
            found = dv_data_cardinality(data)
        except (DeletionVectorFormatError, ValueError) as exc:
            raise DeletionVectorError(
                f"the deletion vector of {where} is malformed: {exc}. Nothing was committed",
                table=table, params=params) from None
        self._check_cardinality(dv, found, where, table, params)
        return data

    def _describe(self, dv: DeletionVectorDescriptor, data_file: str | None) -> str:
        what = f"data file {data_file}" if data_file else "a data file"
        if dv.storageType == STORAGE_INLINE:
            return f"{what} (inline DV, {dv.sizeInBytes} bytes)"
        try:
            loc = self.location(dv)
        except ValueError:
            loc = dv.pathOrInlineDv
        return f"{what} (DV file {loc}, offset {dv.offset if dv.offset is not None else 1})"

    def _params(self, dv: DeletionVectorDescriptor, data_file: str | None) -> dict[str, Any]:
        try:
            loc = self.location(dv) if dv.storageType != STORAGE_INLINE else "<inline>"
        except ValueError:
            loc = dv.pathOrInlineDv
        return {"dataFile": data_file or "", "deletionVector": loc, "storageType": dv.storageType,
                "offset": dv.offset, "sizeInBytes": dv.sizeInBytes, "cardinality": dv.cardinality}


def read_deletion_vector(storage_or_table_root: Any, descriptor: DeletionVectorDescriptor | Mapping[str, Any],
                         *, data_file: str | None = None) -> pa.UInt64Array:
    """The sorted row indexes deleted by ``descriptor`` (a one-off :class:`DvFileReader`)."""
    return DvFileReader(storage_or_table_root).read(descriptor, data_file=data_file)


def row_index_list(values: pa.Array | Iterable[int]) -> list[int]:
    """Row indexes as a plain sorted Python list."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return [int(v) for v in values.to_pylist()]
    return sorted(int(v) for v in values)


__all__ = [
    "MAGIC_NUMBER", "DV_FILE_FORMAT_VERSION", "DeletionVectorFormatError", "DeletionVectorError",
    "DeletionVectorNotFoundError", "DeletionVectorChecksumError", "DeletionVectorSizeError",
    "DeletionVectorCardinalityError", "parse_roaring32", "parse_portable_bitmap64", "parse_dv_data",
    "parse_dv_runs", "serialize_roaring32", "serialize_bitmap", "dv_data_cardinality", "frame_dv",
    "dv_file_bytes", "unframe_dv",
    "encode_inline", "decode_inline", "inline_descriptor", "write_dv_file", "DvFileReader",
    "read_deletion_vector", "row_index_list",
]
