"""The actions a rewrite commits for the files it replaces without changing data
(PROTOCOL.md "Add File and Remove File", ``dataChange`` false).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import quote

from delta_downgrade.protocol.actions import AddFile, RemoveFile

if TYPE_CHECKING:  # pragma: no cover
    from delta_downgrade.rewrite.file_rewriter import Rewritten


def remove_action(add: AddFile, now_ms: int) -> RemoveFile:
    """The ``remove`` of a live file replaced without changing data (dataChange=false); it carries
    the DV so that it matches the (path, DV) key of the ``add`` it removes."""
    return RemoveFile(path=add.path, deletionTimestamp=now_ms, dataChange=False, extendedFileMetadata=True,
                      partitionValues=add.partitionValues, size=add.size, stats=None, tags=add.tags,
                      deletionVector=add.deletionVector, baseRowId=add.baseRowId,
                      defaultRowCommitVersion=add.defaultRowCommitVersion)


def replacement_add(old: AddFile, new: Rewritten, *, partition_values: dict[str, str | None],
                    stats: str) -> AddFile:
    """The ``add`` of a rewritten file: same rows in the same order, so the same DV, row ids,
    tags and clustering provider; new path, size, time and stats."""
    return replace(old, path=quote(new.path or "", safe="/"), partitionValues=partition_values,
                   size=new.size, modificationTime=new.modification_time, dataChange=False,
                   stats=stats)
