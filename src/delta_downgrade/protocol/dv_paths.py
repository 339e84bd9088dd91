"""Where a deletion vector lives (PROTOCOL.md, "Deletion Vectors" → "Deletion Vector Descriptor
Schema" and its "Derived Fields").

A descriptor's ``storageType`` says how ``pathOrInlineDv`` is to be read:

- ``u``: ``<random prefix (optional)><base85-encoded UUID>``. The encoded UUID is always the last
  20 characters; whatever comes before is the random prefix. The file is
  ``<table root>/<prefix>/deletion_vector_<uuid>.bin``, without the prefix directory when the
  prefix is empty.
- ``p``: an absolute path, in the same (URL-encoded URI) format as the ``path`` of add/remove.
- ``i``: the DV itself, base85-encoded inline in the log; there is no file.

The spec's base85 is the Z85 variant ("ZeroMQ" alphabet): every 4 bytes, read as a big-endian
32-bit number, become 5 characters, most significant digit first. A UUID (16 bytes, most
significant half first) is therefore exactly 20 characters.

Everything here is pure string work: no storage access.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from typing import Any
from urllib.parse import unquote, urlparse

from delta_downgrade.protocol.actions import DeletionVectorDescriptor

Z85_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(Z85_ALPHABET)}

UUID_ENCODED_LENGTH = 20
DV_FILE_PREFIX = "deletion_vector_"
DV_FILE_SUFFIX = ".bin"

STORAGE_UUID = "u"
STORAGE_PATH = "p"
STORAGE_INLINE = "i"


# --- Z85 ----------------------------------------------------------------------------------------

def z85_encode(data: bytes) -> str:
    """Z85-encode ``data``, whose length must be a multiple of 4 (a UUID is 16 bytes)."""
    if len(data) % 4:
        raise ValueError(f"Z85 encodes whole 4-byte groups; got {len(data)} bytes")
    out: list[str] = []
    for start in range(0, len(data), 4):
        value = int.from_bytes(data[start:start + 4], "big")
        digits = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            digits.append(Z85_ALPHABET[digit])
        out.extend(reversed(digits))
    return "".join(out)


def z85_decode(text: str) -> bytes:
    """Decode Z85 ``text``, whose length must be a multiple of 5."""
    if len(text) % 5:
        raise ValueError(f"Z85 decodes whole 5-character groups; got {len(text)} characters")
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for char in text[start:start + 5]:
            digit = _Z85_INDEX.get(char)
            if digit is None:
                raise ValueError(f"{char!r} is not a Z85 character")
            value = value * 85 + digit
        if value > 0xFFFFFFFF:
            raise ValueError(f"Z85 group {text[start:start + 5]!r} overflows 32 bits")
        out += value.to_bytes(4, "big")
    return bytes(out)


# --- descriptors --------------------------------------------------------------------------------

def split_uuid_dv(path_or_inline_dv: str) -> tuple[str, uuid.UUID]:
    """``u`` descriptor payload → (random prefix, UUID). The UUID is the last 20 characters."""
    if len(path_or_inline_dv) < UUID_ENCODED_LENGTH:
        raise ValueError(f"a 'u' deletion vector needs at least {UUID_ENCODED_LENGTH} characters; "
                         f"got {path_or_inline_dv!r}")
    prefix = path_or_inline_dv[:-UUID_ENCODED_LENGTH]
    encoded = path_or_inline_dv[-UUID_ENCODED_LENGTH:]
    return prefix, uuid.UUID(bytes=z85_decode(encoded))


def encode_uuid_dv(dv_uuid: uuid.UUID, prefix: str = "") -> str:
    """The ``pathOrInlineDv`` of a ``u`` descriptor for ``dv_uuid`` (inverse of :func:`split_uuid_dv`)."""
    return prefix + z85_encode(dv_uuid.bytes)


def dv_file_name(dv_uuid: uuid.UUID) -> str:
    return f"{DV_FILE_PREFIX}{dv_uuid}{DV_FILE_SUFFIX}"


def dv_relative_path(dv: DeletionVectorDescriptor | dict[str, Any],
                     table_root: str | None = None) -> str | None:
    """The table-relative path (``/``-separated, not URL-encoded) of the file holding ``dv``.

    ``u``: ``[<prefix>/]deletion_vector_<uuid>.bin``. ``p``: the absolute path made relative to
    ``table_root`` when it lies inside the table, else None (also None without ``table_root``).
    ``i`` (inline) has no file: None. An unknown storage type raises ValueError.
    """
    desc = DeletionVectorDescriptor.coerce(dv)
    if desc.storageType == STORAGE_UUID:
        prefix, dv_uuid = split_uuid_dv(desc.pathOrInlineDv)
        name = dv_file_name(dv_uuid)
        return f"{prefix}/{name}" if prefix else name
    if desc.storageType == STORAGE_PATH:
        if table_root is None:
            return None
        return table_relative_path(table_root, desc.pathOrInlineDv)
    if desc.storageType == STORAGE_INLINE:
        return None
    raise ValueError(f"unknown deletion vector storage type {desc.storageType!r}")


def dv_absolute_path(table_root: str, dv: DeletionVectorDescriptor | dict[str, Any]) -> str | None:
    """The local absolute path of the file holding ``dv``; None for inline DVs and for ``p``
    paths that are not local files."""
    desc = DeletionVectorDescriptor.coerce(dv)
    if desc.storageType == STORAGE_PATH:
        return local_path_of_uri(desc.pathOrInlineDv)
    relative = dv_relative_path(desc)
    if relative is None:
        return None
    return os.path.join(os.path.abspath(table_root), *relative.split("/"))


# --- paths of the log ---------------------------------------------------------------------------

def local_path_of_uri(path: str) -> str | None:
    """An absolute path or ``file:`` URI from the log → a local absolute path (decoded).

    Other schemes (``s3://``, ``abfss://`` …) and relative paths give None.
    """
    parsed = urlparse(path)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            return None
        return os.path.normpath(unquote(parsed.path))
    if parsed.scheme == "" and path.startswith("/"):
        return os.path.normpath(unquote(path))
    return None


def is_absolute_log_path(path: str) -> bool:
    """True for a path of the log that names its own location (a URI or a rooted path)."""
    parsed = urlparse(path)
    return path.startswith("/") or (bool(parsed.scheme) and len(parsed.scheme) > 1)


def table_relative_path(table_root: str, path: str) -> str | None:
    """A ``path`` from the log (URL-encoded, relative or absolute) → the decoded path relative
    to ``table_root``; None when it points outside the table (a shallow clone's source, another
    file system or bucket).

    PROTOCOL.md "Add File and Remove File": ``path`` is a URI (RFC 2396); relative paths are
    relative to the table root. ``table_root`` is a local path, a ``file:`` URI or an object
    store URI (``s3://bucket/t``): an absolute ``path`` lies inside it when it has the same
    scheme and authority and its decoded path continues the root's.
    """
    if not is_absolute_log_path(path):
        relative = posixpath.normpath(unquote(path))
        if relative.startswith("../") or relative == ".." or relative == ".":
            return None
        return relative
    root_local = local_path_of_uri(table_root) if is_absolute_log_path(table_root) \
        else os.path.abspath(table_root)
    if root_local is None:
        return _relative_to_uri_root(table_root, path)
    local = local_path_of_uri(path)
    if local is None:
        return None
    root = os.path.normpath(root_local)
    try:
        common = os.path.commonpath([root, local])
    except ValueError:
        return None
    if common != root or local == root:
        return None
    return os.path.relpath(local, root).replace(os.sep, "/")


def _relative_to_uri_root(table_root: str, path: str) -> str | None:
    """``path`` relative to a non-local root URI (same scheme, same bucket/container), decoded."""
    root, target = urlparse(table_root), urlparse(path)
    if (root.scheme.lower(), root.netloc) != (target.scheme.lower(), target.netloc):
        return None
    root_path = posixpath.normpath("/" + unquote(root.path).strip("/"))
    target_path = posixpath.normpath("/" + unquote(target.path).lstrip("/"))
    prefix = root_path.rstrip("/") + "/"
    if not target_path.startswith(prefix) or target_path == root_path:
        return None
    return target_path[len(prefix):]


def parent_and_name(path: str) -> tuple[str, str]:
    """An absolute path from the log (URL-encoded URI or rooted path) → (its decoded parent
    location, its decoded file name): what a storage is opened on to read a file outside the
    table (``s3://b/other/dv.bin`` → ``("s3://b/other", "dv.bin")``)."""
    decoded = unquote(path)
    parent, _, name = decoded.rstrip("/").rpartition("/")
    if not name or not parent or parent.endswith(":"):
        raise ValueError(f"{path!r} names no file in a directory")
    return parent, name


__all__ = [
    "Z85_ALPHABET", "z85_encode", "z85_decode", "split_uuid_dv", "encode_uuid_dv", "dv_file_name",
    "dv_relative_path", "dv_absolute_path", "local_path_of_uri", "table_relative_path",
    "is_absolute_log_path", "parent_and_name",
]
