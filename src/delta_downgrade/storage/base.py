"""The storage behind a table, as an interface: what the log and the operations may ask of it.

Paths are relative to the table root and use ``/`` (``_delta_log/00000000000000000000.json``).
The one operation that makes a log safe is :meth:`Storage.put_if_absent`: a commit must never
overwrite another writer's commit (PROTOCOL.md "Delta Log Entries": a version is written once, by
mutual exclusion). Implementations that cannot do it atomically must say so
(``atomic_put_if_absent = False``) so that writers refuse instead of risking a lost commit.
"""

from __future__ import annotations

import re
from typing import BinaryIO, ContextManager, Iterator, NamedTuple, Protocol as TypingProtocol

from msgspec import Struct


#: ``scheme:/path`` without an authority (``dbfs:/user/t``, the form Databricks prints; Hadoop's
#: Path takes it): a scheme of two letters or more, so that a Windows drive (``C:/t``) stays a path.
_AUTHORITYLESS_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/")


def scheme_of(location: str) -> str:
    """The URI scheme of a table location, lower case; ``file`` for a plain path or ``file:``."""
    if "://" in location:
        return location.split("://", 1)[0].lower()
    bare = _AUTHORITYLESS_URI.match(location)
    return bare.group(1).lower() if bare else "file"


class FileStatus(Struct, frozen=True):
    path: str          # relative to the table root
    size: int
    modification_time_ms: int


class DirEntries(NamedTuple):
    """One read of a directory: its files, and the names of its other entries."""

    #: The files (as :meth:`Storage.list_dir` returns them), sorted by path.
    files: list[FileStatus]
    #: The names of the entries that are not files: folders (an object store's common key
    #: prefixes), and on a local file system links to nothing and link loops too.
    others: frozenset[str]


class Storage(TypingProtocol):
    """What the log and the operations may ask of a table's storage. Every implementation has
    every method; where a store has no such thing (directories on an object store, file times
    that can be set), the method says so in its own docstring."""

    #: The table location as the user gave it (a path or a URI), for messages.
    root: str
    #: Whether :meth:`put_if_absent` is atomic here. Writers refuse to commit when it is not
    #: (:class:`~delta_downgrade.errors.StorageNotAtomicError`). An object store answers it by
    #: probing the endpoint once (a conditional create that must fail the second time), so an
    #: endpoint that ignores the condition is refused instead of raced.
    atomic_put_if_absent: bool
    #: Whether :meth:`list_names` is much cheaper than :meth:`list_dir` (a local directory: one
    #: readdir against a stat per file). Where a listing returns statuses anyway (Hadoop, object
    #: stores), an incremental listing compares statuses instead of stat'ing files one by one.
    lists_names_cheaply: bool
    #: Whether the store has directories of its own (local, HDFS) that stay behind when their
    #: files are deleted; an object store has only keys (VACUUM removes empty directories only
    #: where this is true).
    has_directories: bool

    # --- where a file is, for other readers ----------------------------------------------------
    def uri(self, rel_path: str) -> str:
        """The location of ``rel_path`` as Spark and outside readers (delta-rs, DuckDB) take it:
        an absolute local path for a local table, the table's URI joined with ``rel_path``
        otherwise (``s3://bucket/t/_delta_log/...``)."""
        ...
    def local_file(self, rel_path: str) -> str | None:
        """A path on this machine's file system holding ``rel_path``, or None when the table is
        not local: fast readers (``open``, ``os.read``, a memory map) use it when given one and
        fall back to :meth:`read_bytes` / :meth:`open_input` otherwise."""
        ...

    # --- listing -------------------------------------------------------------------------------
    def list_dir(self, rel_dir: str, *, start_after: str | None = None) -> list[FileStatus]:
        """The files directly in ``rel_dir`` (not folders), sorted by path; empty when it does
        not exist. ``start_after`` (a name in ``rel_dir``, not a path): only names that sort
        after it. An object store asks the service for exactly those (S3 ``start-after``, the
        list offset of Azure and GCS), so catching up on a long log lists only its tail."""
        ...
    def list_entries(self, rel_dir: str, *, start_after: str | None = None) -> DirEntries:
        """:meth:`list_dir` and the names of the other entries of ``rel_dir`` (after
        ``start_after`` too), from one read of the directory: what a reader that must refuse an
        entry it cannot read as a file (a log file's name on a folder) asks, without reading a
        long directory twice."""
        ...
    def list_names(self, rel_dir: str) -> set[str]:
        """Names of the entries directly in ``rel_dir``, without statuses (a folder's name may be
        among them: :meth:`is_dir` tells); empty when it does not exist; ``NotADirectoryError``
        when it is a file."""
        ...
    def walk_files(self, rel_dir: str = "") -> Iterator[FileStatus]:
        """Every file below ``rel_dir``, recursively, paths relative to the table root."""
        ...
    def is_dir(self, rel_path: str) -> bool: ...
    def exists(self, rel_path: str) -> bool: ...
    def status(self, rel_path: str) -> FileStatus:
        """Size and modification time; ``FileNotFoundError`` when absent."""
        ...

    # --- reading -------------------------------------------------------------------------------
    def read_bytes(self, rel_path: str) -> bytes:
        """The whole file; ``FileNotFoundError`` when absent."""
        ...
    def read_range(self, rel_path: str, start: int, length: int) -> bytes:
        """``length`` bytes from offset ``start`` (fewer at the end of the file): a deletion
        vector inside its file, a parquet footer, without reading the whole object."""
        ...
    def open_input(self, rel_path: str) -> BinaryIO:
        """A seekable binary file object over ``rel_path`` (pyarrow reads parquet from it with
        ranged reads on an object store); the caller closes it."""
        ...

    # --- writing -------------------------------------------------------------------------------
    def put_if_absent(self, rel_path: str, data: bytes) -> None:
        """Create ``rel_path`` with ``data`` only if nothing is there, in one atomic step;
        :class:`~delta_downgrade.errors.CommitFileExistsError` when it exists."""
        ...
    def write_atomic(self, rel_path: str, data: bytes) -> None:
        """Replace-or-create ``rel_path`` so that readers see the old or the new content, never
        a part (``_last_checkpoint``, checkpoint files, staged data files)."""
        ...
    def copy_file(self, source: str, rel_path: str, size: int) -> bool:
        """Replace-or-create ``rel_path`` with the bytes of ``source``, a file that never changes
        once written (a checkpoint part), as :meth:`write_atomic` would with them; False, with
        nothing written, when ``source`` is gone or not ``size`` bytes (another writer replaced
        it, a cleanup removed it)."""
        ...
    def atomic_file(self, rel_path: str) -> ContextManager[str]:
        """A local file to write ``rel_path``'s content into, published under ``rel_path``
        atomically (replace-or-create, as :meth:`write_atomic`) when the ``with`` block ends
        normally and removed when it raises: large files (checkpoints) are streamed to disk
        instead of being held in memory as one ``bytes``."""
        ...
    def delete(self, rel_path: str) -> bool:
        """Delete one file; False when it was already gone."""
        ...
    def remove_empty_dir(self, rel_dir: str) -> bool:
        """Remove ``rel_dir`` when it is an empty directory; False otherwise (always False
        where :attr:`has_directories` is False)."""
        ...
    def walk_dirs(self, rel_dir: str = "") -> Iterator[FileStatus]:
        """Every directory below ``rel_dir``, deepest first (nothing where
        :attr:`has_directories` is False)."""
        ...
    def set_modification_time(self, rel_path: str, epoch_ms: int) -> None:
        """Tests and benchmarks age files to exercise retention; an object store cannot set
        one (``NotImplementedError``)."""
        ...


def copy_through_memory(storage: Storage, source: str, rel_path: str, size: int) -> bool:
    """:meth:`Storage.copy_file` for a storage that copies nothing itself: read ``source``, check
    its size, then :meth:`Storage.write_atomic`. False when the read fails (the file is gone, or
    unreadable now: the caller writes it afresh) or the size differs."""
    try:
        data = storage.read_bytes(source)
    except OSError:
        return False
    if len(data) != size:
        return False
    storage.write_atomic(rel_path, data)
    return True
