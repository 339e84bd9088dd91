"""Storage behind a table: a small interface, local files now, Hadoop FileSystem later.

Paths are relative to the table root and use ``/`` (``_delta_log/00000000000000000000.json``).
The one operation that makes a log safe is :meth:`Storage.put_if_absent`: a commit must never
overwrite another writer's commit. Implementations that cannot do it atomically must say so
(``atomic_put_if_absent = False``) so that writers refuse instead of risking a lost commit.
"""

from __future__ import annotations

import errno
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Protocol as TypingProtocol

from delta_downgrade.errors import (
    CommitFileExistsError, DeltaDowngradeError, StorageFullError, StorageNotWritableError,
)

#: Temporary files of this package: ``.<final name>.<pid>.<12 hex digits>.tmp`` next to the final
#: name. Every writer (local and Hadoop) uses :func:`temp_name`, so that ``cleanup`` can recognise
#: stale ones of its own and nothing else (delta-spark's are ``.<name>.<uuid>.tmp``, with dashes).
TEMP_NAME_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.(?P<rand>[0-9a-f]{12})\.tmp$")


def temp_name(final_name: str) -> str:
    """The name of a temporary file for ``final_name`` (hidden: starts with ``.``)."""
    return f".{final_name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"


def is_package_temp(rel_path: str) -> bool:
    """Whether the last component of ``rel_path`` has this package's temporary-file name."""
    return TEMP_NAME_RE.match(rel_path.rsplit("/", 1)[-1]) is not None


# --- typed write failures ------------------------------------------------------------------------

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_NOT_WRITABLE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
# The same conditions as a JVM (Hadoop FileSystem, a Spark write) reports them.
_JAVA_FULL = ("No space left on device", "Disk quota exceeded", "DSQuotaExceededException",
              "NSQuotaExceededException")
_JAVA_NOT_WRITABLE = ("Read-only file system", "Permission denied", "AccessControlException",
                      "AccessDeniedException")


def typed_write_error(exc: BaseException, what: str, table: str | None) -> DeltaDowngradeError | None:
    """The typed error for a write that failed with ``exc`` (an ``OSError`` by errno, or a JVM
    error by its message), or None when it is not a storage condition we name.

    ``what`` says what was being written, e.g. ``writing _delta_log/00000000000000000003.json``.
    """
    if isinstance(exc, DeltaDowngradeError):
        return None
    code = exc.errno if isinstance(exc, OSError) else None
    text = str(exc)
    if code in _FULL_ERRNOS or (code is None and any(m in text for m in _JAVA_FULL)):
        reason = os.strerror(code) if code else "no space left on the storage"
        return StorageFullError(
            f"{what} failed: {reason}. That file was not written (its temporary file was removed); "
            f"every step before it is complete and recorded in the log. Free some space and rerun: "
            f"the rerun resumes from there", table=table,
            params={"errno": errno.errorcode.get(code, "") if code else "", "step": what})
    if code in _NOT_WRITABLE_ERRNOS or (code is None and any(m in text for m in _JAVA_NOT_WRITABLE)):
        reason = os.strerror(code) if code else "the storage refused the write"
        return StorageNotWritableError(
            f"{what} failed: {reason}. The table's storage is read-only or not writable by this "
            f"user; this step wrote nothing. Run where the table is writable (or fix its "
            f"permissions) and rerun", table=table,
            params={"errno": errno.errorcode.get(code, "") if code else "", "step": what})
    return None


@contextmanager
def typed_write_errors(what: str, table: str | None) -> Iterator[None]:
    """Turn a storage failure inside the block into :class:`StorageFullError` /
    :class:`StorageNotWritableError` (one line for the user, no traceback); other errors pass
    unchanged."""
    try:
        yield
    except Exception as exc:
        typed = typed_write_error(exc, what, table)
        if typed is None:
            raise
        raise typed from exc


@dataclass(frozen=True)
class FileStatus:
    path: str          # relative to the table root
    size: int
    modification_time_ms: int


class Storage(TypingProtocol):
    root: str
    atomic_put_if_absent: bool

    def list_dir(self, rel_dir: str) -> list[FileStatus]: ...
    def exists(self, rel_path: str) -> bool: ...
    def read_bytes(self, rel_path: str) -> bytes: ...
    def status(self, rel_path: str) -> FileStatus: ...
    def put_if_absent(self, rel_path: str, data: bytes) -> None: ...
    def write_atomic(self, rel_path: str, data: bytes) -> None: ...
    def delete(self, rel_path: str) -> bool: ...
    def local_path(self, rel_path: str) -> str: ...
    def set_modification_time(self, rel_path: str, epoch_ms: int) -> None: ...


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class LocalStorage:
    """A table on a local (or locally mounted) file system.

    ``put_if_absent`` writes a temporary file, fsyncs it, then ``link()``s it to the final name:
    link fails with EEXIST when the name is taken, so the check and the creation are one atomic
    step, and readers never see a partly written commit.
    """

    atomic_put_if_absent = True

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.abspath(os.fspath(root))

    def __repr__(self) -> str:
        return f"LocalStorage({self.root!r})"

    def _abs(self, rel_path: str) -> Path:
        return Path(self.root, *rel_path.split("/")) if rel_path else Path(self.root)

    def local_path(self, rel_path: str) -> str:
        return str(self._abs(rel_path))

    def list_dir(self, rel_dir: str) -> list[FileStatus]:
        base = self._abs(rel_dir)
        out: list[FileStatus] = []
        try:
            entries = list(os.scandir(base))
        except FileNotFoundError:
            return out
        prefix = f"{rel_dir}/" if rel_dir else ""
        for entry in entries:
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
            except FileNotFoundError:  # deleted between listing and stat
                continue
            out.append(FileStatus(prefix + entry.name, st.st_size, int(st.st_mtime * 1000)))
        out.sort(key=lambda s: s.path)
        return out

    def walk_files(self, rel_dir: str = "") -> Iterator[FileStatus]:
        """Every file below ``rel_dir``, recursively."""
        base = self._abs(rel_dir)
        for dirpath, _dirs, files in os.walk(base):
            rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            rel = "" if rel == "." else rel
            for name in files:
                full = os.path.join(dirpath, name)
                try:
                    st = os.stat(full)
                except FileNotFoundError:
                    continue
                yield FileStatus(f"{rel}/{name}" if rel else name, st.st_size, int(st.st_mtime * 1000))

    def is_dir(self, rel_path: str) -> bool:
        return self._abs(rel_path).is_dir()

    def exists(self, rel_path: str) -> bool:
        return self._abs(rel_path).exists()

    def read_bytes(self, rel_path: str) -> bytes:
        return self._abs(rel_path).read_bytes()

    def status(self, rel_path: str) -> FileStatus:
        st = self._abs(rel_path).stat()
        return FileStatus(rel_path, st.st_size, int(st.st_mtime * 1000))

    def _write_temp(self, target: Path, data: bytes) -> Path:
        """Write ``data`` to a fresh temporary file next to ``target``. A failure (disk full,
        read-only) removes the temporary file before it propagates: no leftovers in the log."""
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / temp_name(target.name)
        try:
            with open(tmp, "xb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return tmp

    def put_if_absent(self, rel_path: str, data: bytes) -> None:
        with typed_write_errors(f"writing {rel_path}", self.root):
            self._put_if_absent(rel_path, data)

    def _put_if_absent(self, rel_path: str, data: bytes) -> None:
        target = self._abs(rel_path)
        tmp = self._write_temp(target, data)
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise CommitFileExistsError(f"{rel_path} already exists: another writer committed "
                                        f"this version first", table=self.root) from None
        except OSError as exc:  # file systems without hard links: exclusive create instead
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            self._exclusive_create(target, data, rel_path)
        finally:
            tmp.unlink(missing_ok=True)
        _fsync_dir(target.parent)

    def _exclusive_create(self, target: Path, data: bytes, rel_path: str) -> None:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise CommitFileExistsError(f"{rel_path} already exists: another writer committed "
                                        f"this version first", table=self.root) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            # O_EXCL made the file ours; a partly written commit must not stay (PROTOCOL.md
            # "Delta Log Entries": a commit is atomic, complete or absent).
            target.unlink(missing_ok=True)
            raise

    def write_atomic(self, rel_path: str, data: bytes) -> None:
        """Replace-or-create atomically (temp file + rename); for files that may be overwritten,
        such as ``_last_checkpoint`` and checkpoint files, never for commits."""
        with typed_write_errors(f"writing {rel_path}", self.root):
            target = self._abs(rel_path)
            tmp = self._write_temp(target, data)
            try:
                os.replace(tmp, target)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            _fsync_dir(target.parent)

    def delete(self, rel_path: str) -> bool:
        with typed_write_errors(f"deleting {rel_path}", self.root):
            try:
                self._abs(rel_path).unlink()
                return True
            except FileNotFoundError:
                return False

    def remove_empty_dir(self, rel_dir: str) -> bool:
        """Remove ``rel_dir`` if it is an empty directory; False when it is not (or is gone)."""
        try:
            os.rmdir(self._abs(rel_dir))
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                return False
            typed = typed_write_error(exc, f"removing {rel_dir}", self.root)
            if typed is None:
                raise
            raise typed from exc

    def walk_dirs(self, rel_dir: str = "") -> Iterator[FileStatus]:
        """Every directory below ``rel_dir`` (not itself), deepest first; ``size`` is 0."""
        base = self._abs(rel_dir)
        for dirpath, dirs, _files in os.walk(base, topdown=False):
            rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            rel = "" if rel == "." else rel
            for name in dirs:
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except FileNotFoundError:
                    continue
                yield FileStatus(f"{rel}/{name}" if rel else name, 0, int(st.st_mtime * 1000))

    def set_modification_time(self, rel_path: str, epoch_ms: int) -> None:
        """Tests and benches age files to exercise retention; never used on real tables."""
        secs = epoch_ms / 1000
        os.utime(self._abs(rel_path), (secs, secs))


def open_storage(location: str) -> Storage:
    """The storage for a table location: local paths and ``file:`` URIs directly; other schemes
    (``abfss://``, ``gs://``, ``hdfs://``, ``s3://`` …) through Hadoop FileSystem in the Spark
    session's JVM, which commits only where the scheme has an atomic create."""
    if location.startswith("file://"):
        return LocalStorage(location[len("file://"):])
    if location.startswith("file:"):
        return LocalStorage(location[len("file:"):])
    if "://" in location:
        from delta_downgrade.errors import UnsupportedStorageError
        from delta_downgrade.storage_hadoop import HadoopStorage, check_scheme_servable

        # Before any JVM is started: a scheme nothing here can serve is refused at once (exit 2),
        # not after ten seconds of Spark start-up and a Java UnsupportedFileSystemException.
        check_scheme_servable(location)
        try:
            return HadoopStorage(location)
        except RuntimeError as exc:  # no PySpark
            raise UnsupportedStorageError(
                f"{location}: reading {location.split('://', 1)[0]}:// tables needs Spark's Hadoop "
                f"FileSystem ({exc})", table=location) from None
    return LocalStorage(location)
