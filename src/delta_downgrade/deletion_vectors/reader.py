"""Reading the DV of a data file (PROTOCOL.md, "Deletion Vectors" → "Deletion Vector Descriptor
Schema"): from its descriptor to the deleted row indexes, every failure a table error that names
the data file and the DV.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa

from delta_downgrade.protocol.actions import DeletionVectorDescriptor
from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.deletion_vectors.bitmap import (
    DeletionVectorFormatError,
    dv_data_cardinality,
    parse_dv_data,
)
from delta_downgrade.deletion_vectors.files import (
    DvChecksumMismatch,
    DvSizeMismatch,
    check_format_version,
    decode_inline,
    framed_length,
    unframe_slice,
)
from delta_downgrade.protocol.dv_paths import (
    STORAGE_INLINE,
    STORAGE_PATH,
    STORAGE_UUID,
    dv_relative_path,
    parent_and_name,
    table_relative_path,
)
from delta_downgrade.storage import Storage, open_storage
from delta_downgrade.errors import (  # noqa: F401 - re-exported: the DV reader's errors
    DeletionVectorCardinalityError, DeletionVectorChecksumError, DeletionVectorError,
    DeletionVectorNotFoundError, DeletionVectorSizeError,
)


class DvFileReader:
    """Reads the DVs of one table through its storage, each as the slice of its DV file that
    holds it (PROTOCOL.md "Deletion Vector Descriptor Schema": ``offset`` and ``sizeInBytes``
    locate it), with ranged reads: a DV file shared by many data files is never read whole,
    and each slice is cached so that verifying every DV before a purge and decoding them batch
    by batch read it once. The version byte of each DV file is checked once.

    ``source`` is the table's Storage, or a local table root (opened as a Storage). ``u`` DVs
    and ``p`` DVs inside the table are read through it; a ``p`` DV elsewhere through a storage
    opened on its parent location with the table's ``storage_options`` (another bucket of the
    same account, a shallow clone's source), or by ``read_absolute`` (whole file) when given.
    """

    def __init__(self, source: Storage | str | os.PathLike[str], *, storage_options: Mapping[str, str] | None = None,
                 read_absolute: Callable[[str], bytes] | None = None,
                 max_cached_bytes: int = 256 << 20) -> None:
        self.storage = open_storage(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else source
        self.root = getattr(self.storage, "root", None) or ""
        self.storage_options = storage_options
        self.read_absolute = read_absolute
        self.max_cached_bytes = max_cached_bytes
        self._cache: dict[tuple[str, int, int], bytes] = {}
        self._cached_bytes = 0
        self._version_checked: set[str] = set()
        self._outside: dict[str, Storage] = {}
        self._lock = threading.Lock()

    def location(self, dv: DeletionVectorDescriptor) -> str:
        """Where the DV lives, for messages: a table-relative path or the absolute URI."""
        if dv.storageType == STORAGE_UUID:
            try:
                return dv_relative_path(dv) or dv.pathOrInlineDv
            except ValueError:  # a damaged descriptor: shown as written
                return dv.pathOrInlineDv
        return dv.pathOrInlineDv

    def _file_of(self, dv: DeletionVectorDescriptor) -> tuple[Storage, str, str]:
        """(storage, path in it, cache key) of the DV file of a ``u``/``p`` descriptor."""
        if dv.storageType == STORAGE_UUID:
            try:
                rel = dv_relative_path(dv)
            except ValueError as exc:
                # PROTOCOL.md "Deletion Vector Descriptor Schema": a 'u' DV is an optional prefix
                # and a Z85-encoded UUID; anything else names no file - the log is damaged.
                raise DeletionVectorError(
                    f"the deletion vector {dv.pathOrInlineDv!r} (storage type 'u') names no file: {exc}. "
                    f"The commit or checkpoint holding it is damaged; restore it from a backup "
                    f"(nothing was written)") from None
            assert rel is not None
            return self.storage, rel, f"u:{rel}"
        if dv.storageType != STORAGE_PATH:
            raise ValueError(f"storage type {dv.storageType!r} has no file")
        relative = table_relative_path(self.root, dv.pathOrInlineDv) if self.root else None
        if relative is not None:
            return self.storage, relative, f"u:{relative}"
        parent, name = parent_and_name(dv.pathOrInlineDv)
        with self._lock:
            outside = self._outside.get(parent)
            if outside is None:
                outside = self._outside[parent] = open_storage(parent, options=self.storage_options)
        return outside, name, f"p:{dv.pathOrInlineDv}"

    def file_exists(self, dv: DeletionVectorDescriptor) -> bool:
        """Whether the DV file of a ``u``/``p`` descriptor exists: one status call, nothing read."""
        storage, path, _ = self._file_of(dv)
        return bool(storage.exists(path))

    def _remember(self, key: tuple[str, int, int], data: bytes) -> None:
        with self._lock:
            if self._cached_bytes + len(data) > self.max_cached_bytes:
                self._cache.clear()
                self._cached_bytes = 0
            self._cache[key] = data
            self._cached_bytes += len(data)

    def stored_slice(self, dv: DeletionVectorDescriptor) -> bytes:
        """The bytes of a ``u``/``p`` DV from its offset: size field, DV data, CRC-32 (fewer when
        the file ends early), read with one ranged read (cached)."""
        offset = 1 if dv.offset is None else int(dv.offset)
        if offset < 1:
            raise DvSizeMismatch(f"offset {offset} lies before the first DV of the file")
        length = framed_length(dv.sizeInBytes)
        if self.read_absolute is not None and dv.storageType == STORAGE_PATH and self.root and \
                table_relative_path(self.root, dv.pathOrInlineDv) is None:
            whole = self.read_absolute(dv.pathOrInlineDv)
            check_format_version(whole[:1])
            return whole[offset:offset + length]
        storage, rel, file_key = self._file_of(dv)
        key = (file_key, offset, length)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        if file_key in self._version_checked:
            framed = storage.read_range(rel, offset, length)
        else:
            # The first DV read of a file also checks its version byte: one read when the DV
            # is the file's first (offset 1, the common case), two otherwise.
            if offset == 1:
                head = storage.read_range(rel, 0, 1 + length)
                check_format_version(head[:1])
                framed = head[1:]
            else:
                check_format_version(storage.read_range(rel, 0, 1))
                framed = storage.read_range(rel, offset, length)
            with self._lock:
                self._version_checked.add(file_key)
        self._remember(key, framed)
        return framed

    def dv_data(self, dv: DeletionVectorDescriptor) -> bytes:
        """The DV data (magic number + bitmap) of a descriptor, verified against the log's size
        and the file's checksum. Raises :class:`DeletionVectorFormatError` subclasses and OSError."""
        if dv.storageType == STORAGE_INLINE:
            return decode_inline(dv.pathOrInlineDv, dv.sizeInBytes)
        offset = 1 if dv.offset is None else int(dv.offset)
        return unframe_slice(self.stored_slice(dv), offset, dv.sizeInBytes)

    def _load(self, dv: DeletionVectorDescriptor, where: str, params: JsonObject) -> bytes:
        """:meth:`dv_data` with its failures turned into table errors (the operation reading the
        table names it: :func:`~delta_downgrade.errors.naming_table`)."""
        try:
            return self.dv_data(dv)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
            raise DeletionVectorNotFoundError(
                f"the deletion vector of {where} cannot be read ({type(exc).__name__}: {exc}). Without it "
                f"the rows it deletes cannot be told apart, so nothing was committed. Restore the DV "
                f"file, or rewrite the data file with an engine that can resolve it",
                params=params) from None
        except OSError as exc:
            raise DeletionVectorNotFoundError(
                f"the deletion vector of {where} cannot be read ({exc}); nothing was committed",
                params=params) from None
        except DvChecksumMismatch as exc:
            raise DeletionVectorChecksumError(
                f"could not verify the integrity of the deletion vector of {where}: {exc}. Nothing "
                f"was committed", params=params) from None
        except DvSizeMismatch as exc:
            raise DeletionVectorSizeError(
                f"the deletion vector of {where} does not match its descriptor: {exc}. Nothing was "
                f"committed", params=params) from None
        except (DeletionVectorFormatError, ValueError) as exc:
            raise DeletionVectorError(
                f"the deletion vector of {where} is malformed: {exc}. Nothing was committed",
                params=params) from None

    def _context(self, descriptor: DeletionVectorDescriptor | Mapping[str, Any],
                 data_file: str | None) -> tuple[DeletionVectorDescriptor, str, JsonObject]:
        dv = DeletionVectorDescriptor.coerce(descriptor)
        return dv, self._describe(dv, data_file), self._params(dv, data_file)

    def _check_cardinality(self, dv: DeletionVectorDescriptor, found: int, where: str,
                           params: JsonObject) -> None:
        if found != dv.cardinality:
            raise DeletionVectorCardinalityError(
                f"the deletion vector of {where} holds {found} row indexes, its descriptor says "
                f"cardinality {dv.cardinality}. Nothing was committed", params=params)

    def read(self, descriptor: DeletionVectorDescriptor | Mapping[str, Any], *,
             data_file: str | None = None) -> pa.UInt64Array:
        """The sorted deleted row indexes of ``descriptor``; exactly ``cardinality`` of them.

        Errors name the data file and the DV location and are :class:`DeletionVectorError`
        subclasses (exit code 2): not found / unreadable, size mismatch, checksum mismatch,
        malformed bitmap, cardinality mismatch.
        """
        dv, where, params = self._context(descriptor, data_file)
        data = self._load(dv, where, params)
        try:
            values = parse_dv_data(data)
        except (DeletionVectorFormatError, ValueError, pa.ArrowException) as exc:
            raise DeletionVectorError(
                f"the deletion vector of {where} is malformed: {exc}. Nothing was committed",
                params=params) from None
        self._check_cardinality(dv, len(values), where, params)
        return values

    def read_verified_bytes(self, descriptor: DeletionVectorDescriptor | Mapping[str, Any], *,
                            data_file: str | None = None) -> bytes:
        """The DV data of ``descriptor``, checked like :meth:`read` (size, checksum, structure,
        cardinality) without expanding the row indexes: for DVs too large to hold as rows."""
        dv, where, params = self._context(descriptor, data_file)
        data = self._load(dv, where, params)
        try:
            found = dv_data_cardinality(data)
        except (DeletionVectorFormatError, ValueError) as exc:
            raise DeletionVectorError(
                f"the deletion vector of {where} is malformed: {exc}. Nothing was committed",
                params=params) from None
        self._check_cardinality(dv, found, where, params)
        return data

    def _describe(self, dv: DeletionVectorDescriptor, data_file: str | None) -> str:
        what = f"data file {data_file}" if data_file else "a data file"
        if dv.storageType == STORAGE_INLINE:
            return f"{what} (inline DV, {dv.sizeInBytes} bytes)"
        loc = self.location(dv)
        return f"{what} (DV file {loc}, offset {dv.offset if dv.offset is not None else 1})"

    def _params(self, dv: DeletionVectorDescriptor, data_file: str | None) -> JsonObject:
        loc = self.location(dv) if dv.storageType != STORAGE_INLINE else "<inline>"
        return {"dataFile": data_file or "", "deletionVector": loc, "storageType": dv.storageType,
                "offset": dv.offset, "sizeInBytes": dv.sizeInBytes, "cardinality": dv.cardinality}


def read_deletion_vector(storage_or_table_root: Storage | str | os.PathLike[str], descriptor: DeletionVectorDescriptor | Mapping[str, Any],
                         *, data_file: str | None = None) -> pa.UInt64Array:
    """The sorted row indexes deleted by ``descriptor`` (a one-off :class:`DvFileReader`)."""
    return DvFileReader(storage_or_table_root).read(descriptor, data_file=data_file)


def row_index_list(values: pa.Array | Iterable[int]) -> list[int]:
    """Row indexes as a plain sorted Python list."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return [int(v) for v in values.to_pylist()]
    return sorted(int(v) for v in values)


