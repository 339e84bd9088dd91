"""Which storage implementation serves a table location: a registry of URI schemes.

Each entry maps a scheme to the dotted path (``module:Class``) of its implementation, imported
only when a table with that scheme is opened, so that reading a local table never imports the
Hadoop storage (or PySpark) and no implementation is imported by this module. Adding an
implementation is one entry here; :func:`open_storage` also takes an explicit one, which wins over
the registry.

An implementation is a class with ``from_location(location, options) -> Storage``.
"""

from __future__ import annotations

import importlib
from typing import Mapping, Protocol

from delta_downgrade.errors import BadStorageOptionError, UnsupportedStorageError
from delta_downgrade.storage.base import Storage, scheme_of
from delta_downgrade.storage.options import (
    IMPLEMENTATION_KEY, implementation_choice, without_implementation_key,
)

LOCAL = "delta_downgrade.storage.local:LocalStorage"
HADOOP = "delta_downgrade.storage.hadoop:HadoopStorage"
OBJECT_STORE = "delta_downgrade.storage.object_store:ObjectStoreStorage"

#: ``DELTA_DOWNGRADE_STORAGE`` (storage option or environment variable) -> implementation.
CHOICES: dict[str, str] = {"local": LOCAL, "hadoop": HADOOP, "object_store": OBJECT_STORE}

#: Scheme → implementation. Local paths and ``file:`` URIs are ``file``. The object-store schemes
#: are those the Rust object_store crate parses (``obstore.parse_scheme``), so a table on them
#: needs no Spark; schemes only a Hadoop cluster serves (``hdfs``, ``dbfs``, the legacy Azure
#: ``wasb(s)`` that object_store does not parse) stay with the Hadoop FileSystem.
SCHEMES: dict[str, str] = {
    "file": LOCAL,
    "s3": OBJECT_STORE,
    "s3a": OBJECT_STORE,
    "az": OBJECT_STORE,
    "azure": OBJECT_STORE,
    "abfs": OBJECT_STORE,
    "abfss": OBJECT_STORE,
    "adl": OBJECT_STORE,
    "gs": OBJECT_STORE,
    "hdfs": HADOOP,
    "viewfs": HADOOP,
    "dbfs": HADOOP,
    "wasb": HADOOP,
    "wasbs": HADOOP,
}

#: A URI scheme with no entry goes to Hadoop FileSystem, which serves every scheme its JVM has a
#: FileSystem for (``fs.<scheme>.impl``, a connector jar, a Databricks runtime) and refuses the
#: others before starting a JVM (:class:`UnsupportedStorageError`, exit 2, listing the schemes
#: served here) — as delta-spark's LogStore falls back to its HDFS one for schemes it has no
#: entry for.
DEFAULT_URI_STORAGE = HADOOP


class StorageClass(Protocol):
    """A storage implementation as the registry loads it: a class that opens a location."""

    def from_location(self, location: str, options: Mapping[str, str] | None, /) -> Storage: ...


def load_implementation(dotted_path: str, location: str | None = None) -> StorageClass:
    """The class named by ``module:Class``; :class:`UnsupportedStorageError` when there is none."""
    module_name, _, class_name = dotted_path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UnsupportedStorageError(
            f"no storage implementation {dotted_path!r} ({exc}); nothing was read or written",
            table=location, params={"implementation": dotted_path}) from None


def implementation_for(location: str, implementation: str | None = None,
                       options: Mapping[str, str] | None = None) -> StorageClass:
    """The storage class for ``location``: ``implementation`` when given, else the one
    ``DELTA_DOWNGRADE_STORAGE`` names (in ``options``, else the environment), else its scheme's.

    ``object_store`` serves the object-store schemes and ``file:`` (obstore's LocalStore, to run
    the object-store code path on local files); ``hadoop`` serves any URI (a cluster with its own
    connectors); ``local`` serves only paths and ``file:``."""
    if implementation is None:
        scheme = scheme_of(location)
        choice = implementation_choice(options, table=location)
        if choice == "local" and scheme != "file":
            raise BadStorageOptionError(
                f"{IMPLEMENTATION_KEY}=local serves local paths and file: URIs, not {scheme}://; "
                f"use object_store or hadoop. Nothing was read or written", table=location,
                params={"key": IMPLEMENTATION_KEY})
        if choice == "object_store" and scheme != "file" and SCHEMES.get(scheme) != OBJECT_STORE:
            raise UnsupportedStorageError(
                f"{IMPLEMENTATION_KEY}=object_store does not serve {scheme}:// (it serves "
                f"{_served(OBJECT_STORE)} and file://). Nothing was read or written",
                table=location, params={"scheme": scheme})
        if choice is not None:
            implementation = CHOICES[choice]
        else:
            implementation = SCHEMES.get(scheme, DEFAULT_URI_STORAGE)
    return load_implementation(implementation, location)


def _served(implementation: str) -> str:
    return ", ".join(f"{s}://" for s, impl in sorted(SCHEMES.items()) if impl == implementation)


def open_storage(location: str, *, implementation: str | None = None,
                 options: Mapping[str, str] | None = None) -> Storage:
    """The storage for a table location (a local path, ``file:`` URI or any other URI).

    ``implementation`` (``module:Class``) overrides the scheme registry for this table.
    ``options``: the storage options of the table (credentials, endpoint, ...), with the keys
    deltalake accepts (``storage/options.py``), and ``DELTA_DOWNGRADE_STORAGE``; never logged.
    A scheme with no entry that nothing here serves is :class:`UnsupportedStorageError` at once
    (no JVM is started), naming the schemes that are served.
    """
    cls = implementation_for(location, implementation, options)
    rest = without_implementation_key(options) or None
    try:
        return cls.from_location(location, rest)
    except UnsupportedStorageError as exc:
        scheme = scheme_of(location)
        if implementation is None and scheme not in SCHEMES and type(exc) is UnsupportedStorageError:
            raise exc.amended(
                f"{exc.message}. Schemes served without Spark: {_served(OBJECT_STORE)} "
                f"(object stores) and local paths / file://; with a Spark session or on a "
                f"cluster: {_served(HADOOP)}") from None
        raise
