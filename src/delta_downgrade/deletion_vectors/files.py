"""Stored DVs (PROTOCOL.md, Appendix "Deletion Vector File Storage Format", and "Deletion Vector
Descriptor Schema" for inline DVs): DV files, inline DVs, and writing either.

DV files (all numbers big endian): one version byte ``1``, then per DV its size (4 bytes: the
length of the DV data, magic number included), the DV data and a CRC-32 of the DV data (4 bytes).
A descriptor's ``offset`` points at the size field (1 when absent). An inline DV (``i``) holds the
DV data Z85-encoded in ``pathOrInlineDv``, zero-padded to a multiple of 4 bytes before encoding;
``sizeInBytes`` is the length before padding.
"""

from __future__ import annotations

import os
import struct
import uuid
import zlib
from collections.abc import Iterable, Sequence

import pyarrow as pa

from delta_downgrade.protocol.actions import DeletionVectorDescriptor
from delta_downgrade.deletion_vectors.bitmap import dv_data_of_sorted, sorted_row_indexes
from delta_downgrade.protocol.dv_paths import (
    STORAGE_INLINE,
    STORAGE_UUID,
    Z85_ALPHABET,
    dv_file_name,
    encode_uuid_dv,
    z85_decode,
    z85_encode,
)
from delta_downgrade.storage import Storage, open_storage
from delta_downgrade.errors import (  # noqa: F401 - the size and checksum errors are re-exported
    DeletionVectorFormatError, DvChecksumMismatch, DvSizeMismatch,
)

DV_FILE_FORMAT_VERSION = 1


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


def check_format_version(first_byte: bytes | memoryview) -> None:
    """The first byte of a DV file must be the format version (``1``)."""
    view = memoryview(first_byte)
    if len(view) < 1 or view[0] != DV_FILE_FORMAT_VERSION:
        got = view[0] if len(view) else None
        raise DeletionVectorFormatError(
            f"DV file format version {got!r}; only {DV_FILE_FORMAT_VERSION} is defined")


def framed_length(size_in_bytes: int) -> int:
    """Bytes of one stored DV from its offset: size field, DV data, CRC-32."""
    return 4 + int(size_in_bytes) + 4


def unframe_slice(framed: bytes | memoryview, offset: int, size_in_bytes: int) -> bytes:
    """The DV data of one stored DV, from the ``framed_length(size_in_bytes)`` bytes that start
    at its ``offset`` (fewer when the file ends early), after checking the size field against
    ``size_in_bytes`` and the CRC-32 (PROTOCOL.md "Deletion Vector File Storage Format")."""
    view = memoryview(framed)
    if len(view) < 4:
        raise DvSizeMismatch(f"offset {offset} lies outside the DV file")
    stored = int.from_bytes(view[0:4], "big")
    if stored != size_in_bytes:
        raise DvSizeMismatch(
            f"the DV file stores {stored} bytes at offset {offset}, the log says {size_in_bytes}")
    end = 4 + stored
    if end + 4 > len(view):
        raise DvSizeMismatch(f"the DV at offset {offset} ({stored} bytes + checksum) runs past the "
                             f"end of the DV file")
    data = bytes(view[4:end])
    checksum = int.from_bytes(view[end:end + 4], "big")
    if zlib.crc32(data) & 0xFFFFFFFF != checksum:
        raise DvChecksumMismatch(f"CRC-32 of the DV at offset {offset} does not match its stored checksum")
    return data


def unframe_dv(file_bytes: bytes | memoryview, offset: int | None, size_in_bytes: int) -> bytes:
    """The DV data stored at ``offset`` of a whole DV file, after checking the version byte, the
    size field against ``size_in_bytes`` and the CRC-32. Raises :class:`DeletionVectorFormatError`
    subclasses (``DvSizeMismatch`` / ``DvChecksumMismatch``) that the caller turns into table errors."""
    view = memoryview(file_bytes)
    check_format_version(view[:1])
    start = 1 if offset is None else int(offset)
    if start < 1 or start + 4 > len(view):
        raise DvSizeMismatch(f"offset {start} lies outside the {len(view)}-byte DV file")
    return unframe_slice(view[start:start + framed_length(size_in_bytes)], start, size_in_bytes)


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
        raise DvSizeMismatch(f"inline DV decodes to {len(data)} bytes, the log says {size_in_bytes}")
    return data[:size_in_bytes]


def inline_descriptor(row_indexes: Iterable[int] | pa.Array) -> DeletionVectorDescriptor:
    """An inline (``i``) descriptor holding ``row_indexes``."""
    values = sorted_row_indexes(row_indexes)
    data = dv_data_of_sorted(values)
    return DeletionVectorDescriptor(storageType=STORAGE_INLINE, pathOrInlineDv=encode_inline(data),
                                    sizeInBytes=len(data), cardinality=len(values))


def write_dv_file(target: Storage | str | os.PathLike[str], row_index_lists: Sequence[Iterable[int] | pa.Array], *,
                  prefix: str = "", dv_uuid: uuid.UUID | None = None) -> list[DeletionVectorDescriptor]:
    """Write one DV file holding one DV per entry of ``row_index_lists`` (several DVs may share a
    file) and return their ``u`` descriptors, in order.

    ``target`` is the table's Storage (or a local table root, opened as one); the file is
    ``[<prefix>/]deletion_vector_<uuid>.bin`` below it, created with ``put_if_absent`` (a fresh
    UUID never names an existing file). An empty list writes nothing.
    """
    if not row_index_lists:
        return []
    storage = target if hasattr(target, "put_if_absent") else open_storage(os.fspath(target))
    dv_uuid = dv_uuid or uuid.uuid4()
    datas: list[bytes] = []
    cards: list[int] = []
    for rows in row_index_lists:
        values = sorted_row_indexes(rows)
        datas.append(dv_data_of_sorted(values))
        cards.append(len(values))
    content, offsets = dv_file_bytes(datas)
    rel = f"{prefix}/{dv_file_name(dv_uuid)}" if prefix else dv_file_name(dv_uuid)
    storage.put_if_absent(rel, content)
    path_or_inline = encode_uuid_dv(dv_uuid, prefix)
    return [DeletionVectorDescriptor(storageType=STORAGE_UUID, pathOrInlineDv=path_or_inline,
                                     offset=off, sizeInBytes=len(data), cardinality=card)
            for off, data, card in zip(offsets, datas, cards)]


