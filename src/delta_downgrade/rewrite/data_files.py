"""The data files of a rewrite, through the table's storage: where Spark reads a file of the log,
its parquet footer, and the listing and removal of a directory Spark wrote.

Spark reads and writes data at ``storage.uri(...)`` (an absolute local path for a local table,
the table's URI otherwise: ``s3a://…`` on a cluster, ``file://…`` here); everything the driver
itself reads or deletes goes through the :class:`~delta_downgrade.storage.base.Storage` —
footers with ``open_input`` (pyarrow reads the footer with ranged reads on an object store),
never a local path, so that a table in a bucket is rewritten by the same code as one on disk.
A file outside the table (an absolute ``path`` of a shallow clone's source, PROTOCOL.md "Add
File and Remove File") is read through a storage opened on its parent location with the
table's storage options.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence, TypeVar
from urllib.parse import unquote

from delta_downgrade.errors import DataFileNotFoundError
from delta_downgrade.protocol.dv_paths import parent_and_name, table_relative_path
from delta_downgrade.storage import FileStatus, Storage, open_storage

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow.parquet as pq

#: Footers read at once: each is one or two small ranged reads, latency-bound on an object store.
FOOTER_READERS = 16
#: At least this many files of one directory to check: list the directory once instead.
LIST_RATHER_THAN_STAT = 32


def storage_options_of(storage: object) -> Mapping[str, str] | None:
    """The storage options a table's storage was opened with (credentials, endpoint), to open a
    file outside the table on the same account; None for a store that keeps none (local)."""
    # ObjectStoreStorage keeps them as ``_options`` (the Storage interface names no attribute for
    # them yet); a public ``options`` wins when an implementation has one.
    for attribute in ("options", "_options"):
        options = getattr(storage, attribute, None)
        if isinstance(options, Mapping) and options:
            return options
    return None


class DataFiles:
    """The data files of one table, by their ``path`` in the log."""

    def __init__(self, storage: Storage, storage_options: Mapping[str, str] | None = None) -> None:
        self.storage = storage
        self.root: str = getattr(storage, "root", "") or ""
        self.storage_options = storage_options if storage_options is not None else storage_options_of(storage)
        self._outside: dict[str, Storage] = {}
        self._lock = threading.Lock()

    def relative(self, log_path: str) -> str | None:
        """The decoded table-relative path of a log ``path``; None outside the table."""
        return table_relative_path(self.root, log_path)

    def spark_location(self, log_path: str) -> str:
        """What Spark is given to read the file (decoded: Hadoop's ``Path(String)`` quotes it)."""
        rel = self.relative(log_path)
        return self.storage.uri(rel) if rel is not None else unquote(log_path)

    def _storage_and_path(self, log_path: str) -> tuple[Storage, str]:
        rel = self.relative(log_path)
        if rel is not None:
            return self.storage, rel
        parent, name = parent_and_name(log_path)
        with self._lock:
            outside = self._outside.get(parent)
            if outside is None:
                outside = self._outside[parent] = open_storage(parent, options=self.storage_options)
        return outside, name

    def footer(self, log_path: str) -> "pq.FileMetaData":
        """The parquet footer of a file of the log (no data read); a file the log names but the
        store lacks is :class:`DataFileNotFoundError`, the table's damage, not ours."""
        storage, rel = self._storage_and_path(log_path)
        try:
            return read_footer(storage, rel)
        except FileNotFoundError:
            raise missing_data_files_error([log_path]) from None

    def missing(self, log_paths: Sequence[str]) -> list[str]:
        """The ``log_paths`` whose file does not exist, in order. A directory holding many of
        them is listed once (an object store lists a thousand keys per request); the others get
        one status call each. Both run concurrently: on an object store they are latency-bound."""
        located = [(p, *self._storage_and_path(p)) for p in log_paths]
        by_directory: dict[tuple[int, str], list[int]] = {}
        for i, (_, storage, rel) in enumerate(located):
            by_directory.setdefault((id(storage), rel.rpartition("/")[0]), []).append(i)
        listed = [(d, idx) for d, idx in by_directory.items() if len(idx) >= LIST_RATHER_THAN_STAT]
        stat_one_by_one = [i for idx in by_directory.values() if len(idx) < LIST_RATHER_THAN_STAT for i in idx]
        gone = [False] * len(located)

        def names_in(entry: tuple[tuple[int, str], list[int]]) -> set[str]:
            (_, directory), idx = entry
            return set(located[idx[0]][1].list_names(directory))

        for (_, idx), names in zip(listed, concurrent_map(names_in, listed)):
            for i in idx:
                gone[i] = located[i][2].rpartition("/")[2] not in names

        def absent(i: int) -> bool:
            _, storage, rel = located[i]
            try:
                storage.status(rel)
            except FileNotFoundError:
                return True
            return False

        for i, is_gone in zip(stat_one_by_one, concurrent_map(absent, stat_one_by_one)):
            gone[i] = is_gone
        return [located[i][0] for i in range(len(located)) if gone[i]]

    def require_present(self, log_paths: Sequence[str]) -> None:
        """Refuse, before any write, when a file the operation must read is gone."""
        gone = self.missing(log_paths)
        if gone:
            raise missing_data_files_error(gone, nothing_written=True)

    def footers(self, log_paths: Sequence[str]) -> Iterator["pq.FileMetaData"]:
        """The footers of ``log_paths`` in order, read concurrently, yielded as consumed."""
        yield from concurrent_map(self.footer, log_paths)


def missing_data_files_error(log_paths: Sequence[str], nothing_written: bool = False) -> DataFileNotFoundError:
    """The refusal for live data files the log names and the store lacks. delta-spark fails the
    same read with this class; its remedy, FSCK REPAIR TABLE, removes the dangling entries."""
    shown = ", ".join(unquote(p) for p in log_paths[:5])
    more = f" and {len(log_paths) - 5} more" if len(log_paths) > 5 else ""
    return DataFileNotFoundError(
        f"{len(log_paths)} live data file(s) named by the transaction log do not exist: {shown}{more}. "
        f"They were deleted from storage by hand rather than by a DELETE or a VACUUM."
        f"{' Nothing was written.' if nothing_written else ''} Restore the files from a backup, or "
        f"remove them from the table (FSCK REPAIR TABLE on Databricks), then run the command again",
        params={"missing": [unquote(p) for p in log_paths]})


def read_footer(storage: Storage, rel: str) -> "pq.FileMetaData":
    """The parquet footer of ``rel`` through ``storage.open_input``."""
    import pyarrow.parquet as pq

    with contextlib.closing(storage.open_input(rel)) as fh:
        return pq.read_metadata(fh)


_T = TypeVar("_T")
_R = TypeVar("_R")


def concurrent_map(fn: Callable[[_T], _R], items: Sequence[_T]) -> Iterator[_R]:
    """``map(fn, items)``, up to :data:`FOOTER_READERS` at once, in order."""
    if len(items) <= 1:
        yield from (fn(i) for i in items)
        return
    with ThreadPoolExecutor(max_workers=FOOTER_READERS) as pool:
        yield from pool.map(fn, items)


def written_parquet_files(storage: Storage, rel_dir: str) -> list[FileStatus]:
    """The data files Spark committed in ``rel_dir``: parquet files, not hidden (``.crc``
    checksums, ``_SUCCESS``, the committer's ``_temporary/`` are)."""
    out = []
    for status in storage.list_dir(rel_dir):
        name = status.path.rsplit("/", 1)[-1]
        if name.endswith(".parquet") and not name.startswith((".", "_")):
            out.append(status)
    return out


def remove_tree(storage: Storage, rel_dir: str) -> None:
    """Delete every file below ``rel_dir``, then its directories where the store has any
    (deepest first, only when empty): what an uncommitted Spark write left. Best effort: what
    stays is an orphan that VACUUM removes."""
    try:
        for status in list(storage.walk_files(rel_dir)):
            storage.delete(status.path)
        if storage.has_directories:
            for d in list(storage.walk_dirs(rel_dir)):
                storage.remove_empty_dir(d.path)
            storage.remove_empty_dir(rel_dir)
    except Exception:  # noqa: BLE001 - best effort after a failure that is being reported
        pass
