"""The storage behind a table, as an interface: what the log and the operations may ask of it.

Paths are relative to the table root and use ``/`` (``_delta_log/00000000000000000000.json``).
The one operation that makes a log safe is :meth:`Storage.put_if_absent`: a commit must never
overwrite another writer's commit (PROTOCOL.md "Delta Log Entries": a version is written once, by
mutual exclusion). Implementations that cannot do it atomically must say so
(``atomic_put_if_absent = False``) so that writers refuse instead of risking a lost commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ContextManager, Protocol as TypingProtocol


def scheme_of(location: str) -> str:
    """The URI scheme of a table location, lower case; ``file`` for a plain path or ``file:``."""
    return location.split("://", 1)[0].lower() if "://" in location else "file"


@dataclass(frozen=True)
class FileStatus:
    path: str          # relative to the table root
    size: int
    modification_time_ms: int


class Storage(TypingProtocol):
    root: str
    atomic_put_if_absent: bool
    #: Whether :meth:`list_names` is much cheaper than :meth:`list_dir` (a local directory: one
    #: readdir against a stat per file). Where a listing returns statuses anyway (Hadoop, object
    #: stores), an incremental listing compares statuses instead of stat'ing files one by one.
    lists_names_cheaply: bool

    def list_dir(self, rel_dir: str) -> list[FileStatus]: ...
    def list_names(self, rel_dir: str) -> set[str]:
        """Names of the entries directly in ``rel_dir``, without statuses (a folder's name may be
        among them: :meth:`is_dir` tells); empty when it does not exist; ``NotADirectoryError``
        when it is a file."""
        ...
    def is_dir(self, rel_path: str) -> bool: ...
    def exists(self, rel_path: str) -> bool: ...
    def read_bytes(self, rel_path: str) -> bytes: ...
    def status(self, rel_path: str) -> FileStatus: ...
    def put_if_absent(self, rel_path: str, data: bytes) -> None: ...
    def write_atomic(self, rel_path: str, data: bytes) -> None: ...
    def atomic_file(self, rel_path: str) -> ContextManager[str]:
        """A local file to write ``rel_path``'s content into, published under ``rel_path``
        atomically (replace-or-create, as :meth:`write_atomic`) when the ``with`` block ends
        normally and removed when it raises: large files (checkpoints) are streamed to disk
        instead of being held in memory as one ``bytes``."""
        ...
    def delete(self, rel_path: str) -> bool: ...
    def local_path(self, rel_path: str) -> str: ...
    def set_modification_time(self, rel_path: str, epoch_ms: int) -> None: ...
