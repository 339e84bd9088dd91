"""Storage behind a table: a small interface, local files now, Hadoop FileSystem later.

Paths are relative to the table root and use ``/`` (``_delta_log/00000000000000000000.json``).
The one operation that makes a log safe is :meth:`Storage.put_if_absent`: a commit must never
overwrite another writer's commit. Implementations that cannot do it atomically must say so
(``atomic_put_if_absent = False``) so that writers refuse instead of risking a lost commit.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Protocol as TypingProtocol

from delta_downgrade.errors import CommitFileExistsError


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
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return tmp

    def put_if_absent(self, rel_path: str, data: bytes) -> None:
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
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())

    def write_atomic(self, rel_path: str, data: bytes) -> None:
        """Replace-or-create atomically (temp file + rename); for files that may be overwritten,
        such as ``_last_checkpoint`` and checkpoint files, never for commits."""
        target = self._abs(rel_path)
        tmp = self._write_temp(target, data)
        os.replace(tmp, target)
        _fsync_dir(target.parent)

    def delete(self, rel_path: str) -> bool:
        try:
            self._abs(rel_path).unlink()
            return True
        except FileNotFoundError:
            return False

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
        try:
            from delta_downgrade.storage_hadoop import HadoopStorage

            return HadoopStorage(location)
        except RuntimeError as exc:  # no PySpark
            from delta_downgrade.errors import BadInputError

            raise BadInputError(f"{location}: reading {location.split('://', 1)[0]}:// tables needs "
                                f"Spark's Hadoop FileSystem ({exc})", table=location,
                                error_class="DELTA_DOWNGRADE_UNSUPPORTED_STORAGE") from None
    return LocalStorage(location)
