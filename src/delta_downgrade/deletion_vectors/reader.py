"""Reading the DV of a data file (PROTOCOL.md, "Deletion Vectors" → "Deletion Vector Descriptor
Schema"): from its descriptor to the deleted row indexes, every failure a table error that names
the data file and the DV.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa

from delta_downgrade.protocol.actions import DeletionVectorDescriptor
from delta_downgrade.deletion_vectors.bitmap import (
    DeletionVectorFormatError,
    dv_data_cardinality,
    parse_dv_data,
)
from delta_downgrade.deletion_vectors.files import (
    DvChecksumMismatch,
    DvSizeMismatch,
    decode_inline,
    unframe_dv,
)
from delta_downgrade.protocol.dv_paths import (
    STORAGE_INLINE,
    STORAGE_PATH,
    STORAGE_UUID,
    dv_relative_path,
    local_path_of_uri,
    table_relative_path,
)
from delta_downgrade.errors import (  # noqa: F401 - re-exported: the DV reader's errors
    DeletionVectorCardinalityError, DeletionVectorChecksumError, DeletionVectorError,
    DeletionVectorNotFoundError, DeletionVectorSizeError,
)


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
        except DvChecksumMismatch as exc:
            raise DeletionVectorChecksumError(
                f"could not verify the integrity of the deletion vector of {where}: {exc}. Nothing "
                f"was committed", table=table, params=params) from None
        except DvSizeMismatch as exc:
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


