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
from typing import Any, Mapping

from delta_downgrade.errors import UnsupportedStorageError
from delta_downgrade.storage.base import Storage, scheme_of

LOCAL = "delta_downgrade.storage.local:LocalStorage"
HADOOP = "delta_downgrade.storage.hadoop:HadoopStorage"

#: Scheme → implementation. Local paths and ``file:`` URIs are ``file``.
SCHEMES: dict[str, str] = {
    "file": LOCAL,
    "hdfs": HADOOP,
    "abfs": HADOOP,
    "abfss": HADOOP,
    "wasbs": HADOOP,
    "gs": HADOOP,
    "s3": HADOOP,
    "s3a": HADOOP,
    "dbfs": HADOOP,
}

#: A URI scheme with no entry goes to Hadoop FileSystem, which serves every scheme its JVM has a
#: FileSystem for (``fs.<scheme>.impl``, a connector jar, a Databricks runtime) and refuses the
#: others before starting a JVM (:class:`UnsupportedStorageError`, exit 2) — as delta-spark's
#: LogStore falls back to its HDFS one for schemes it has no entry for.
DEFAULT_URI_STORAGE = HADOOP


def load_implementation(dotted_path: str, location: str | None = None) -> Any:
    """The class named by ``module:Class``; :class:`UnsupportedStorageError` when there is none."""
    module_name, _, class_name = dotted_path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UnsupportedStorageError(
            f"no storage implementation {dotted_path!r} ({exc}); nothing was read or written",
            table=location, params={"implementation": dotted_path}) from None


def implementation_for(location: str, implementation: str | None = None) -> Any:
    """The storage class for ``location``: ``implementation`` when given, else its scheme's."""
    if implementation is None:
        scheme = scheme_of(location)
        implementation = SCHEMES.get(scheme, DEFAULT_URI_STORAGE)
    return load_implementation(implementation, location)


def open_storage(location: str, *, implementation: str | None = None,
                 options: Mapping[str, str] | None = None) -> Storage:
    """The storage for a table location (a local path, ``file:`` URI or any other URI).

    ``implementation`` (``module:Class``) overrides the scheme registry for this table.
    ``options``: the storage options of the table (credentials, endpoint, ...), with the keys
    deltalake accepts (``storage/options.py``); never logged.
    """
    return implementation_for(location, implementation).from_location(location, options or None)
