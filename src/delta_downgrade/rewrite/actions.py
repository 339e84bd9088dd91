"""The actions a rewrite commits for the files it replaces without changing data
(PROTOCOL.md "Add File and Remove File", ``dataChange`` false), and the log's spelling of the
paths it writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from msgspec.structs import replace
from delta_downgrade.protocol.actions import AddFile, RemoveFile

if TYPE_CHECKING:  # pragma: no cover
    from delta_downgrade.rewrite.file_rewriter import Rewritten


def log_path(path: str) -> str:
    """A decoded table-relative path as the log writes it: URL-encoded, ``/`` and ``=`` kept
    (PROTOCOL.md "Add File and Remove File": ``path`` is a URI, RFC 2396, where ``=`` needs no
    escape in a path). ``=`` is kept as delta-spark writes Hive-style ``<column>=<value>``
    directories: delta-rs (Polars' deletion vectors) matches a file's deletion vector by the path
    as written and missed those of ``p%3D1/...``."""
    return quote(path, safe="/=")


def remove_action(add: AddFile, now_ms: int, *, with_stats: bool = False) -> RemoveFile:
    """The ``remove`` of a live file replaced without changing data (dataChange=false); it carries
    the DV so that it matches the (path, DV) key of the ``add`` it removes. ``with_stats``: carry
    the file's ``stats`` too (the DV purge always has; the other rewrites never have)."""
    return RemoveFile(path=add.path, deletionTimestamp=now_ms, dataChange=False, extendedFileMetadata=True,
                      partitionValues=add.partitionValues, size=add.size,
                      stats=add.stats if with_stats else None, tags=add.tags,
                      deletionVector=add.deletionVector, baseRowId=add.baseRowId,
                      defaultRowCommitVersion=add.defaultRowCommitVersion)


def replacement_add(old: AddFile, new: Rewritten, *, partition_values: dict[str, str | None],
                    stats: str) -> AddFile:
    """The ``add`` of a rewritten file: same rows in the same order, so the same DV, tags and
    clustering provider; new path, size, time and stats. No ``baseRowId`` or
    ``defaultRowCommitVersion``: a new path is a new file, whose fresh row IDs must lie above the
    high-water mark and whose row commit version is the version that adds it (PROTOCOL.md
    "Writer Requirements for Row Tracking"); the commit assigns both (log/row_ids.py), and the
    rows' stable values live on in the materialized columns (rewrite/row_tracking.py)."""
    return replace(old, path=log_path(new.path or ""), partitionValues=partition_values,
                   size=new.size, modificationTime=new.modification_time, dataChange=False,
                   stats=stats, baseRowId=None, defaultRowCommitVersion=None)
