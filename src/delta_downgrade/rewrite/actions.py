"""The actions a rewrite commits for the files it replaces without changing data
(PROTOCOL.md "Add File and Remove File", ``dataChange`` false), and the log's spelling of the
paths it writes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import quote

from delta_downgrade.protocol.actions import AddFile, RemoveFile

if TYPE_CHECKING:  # pragma: no cover
    from delta_downgrade.rewrite.file_rewriter import Rewritten


def log_path(path: str) -> str:
    """A decoded table-relative path as the log writes it: URL-encoded, ``/`` kept (PROTOCOL.md
    "Add File and Remove File": ``path`` is a URI, RFC 2396)."""
    return quote(path, safe="/")


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
    """The ``add`` of a rewritten file: same rows in the same order, so the same DV, row ids,
    tags and clustering provider; new path, size, time and stats."""
    return replace(old, path=log_path(new.path or ""), partitionValues=partition_values,
                   size=new.size, modificationTime=new.modification_time, dataChange=False,
                   stats=stats)
