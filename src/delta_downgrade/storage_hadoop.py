"""Storage through Hadoop's FileSystem API in the Spark session's JVM: cloud and HDFS tables.

Commits need put-if-absent. ``FileSystem.create(path, overwrite=false)`` gives it only where the
store checks existence and creates in one step: HDFS and ABFS (rename/create are atomic), GCS
(generation preconditions). S3 through s3a does not (check-then-write), so on ``s3://``/``s3a://``
this storage reads fine and refuses to commit unless a commit coordinator owns the table — the
delta-sql engine on Databricks is the way to change such tables.
"""

from __future__ import annotations

from typing import Any

from delta_downgrade.errors import CommitFileExistsError, StorageNotAtomicError
from delta_downgrade.storage import FileStatus

# Schemes whose FileSystem.create(overwrite=false) is atomic (reference: Delta's LogStore
# implementations — HDFSLogStore, AzureLogStore via rename, GCSLogStore via preconditions).
ATOMIC_CREATE_SCHEMES = frozenset({"hdfs", "viewfs", "abfs", "abfss", "gs", "file"})
NON_ATOMIC_SCHEMES = frozenset({"s3", "s3a", "s3n", "wasb", "wasbs", "oss", "cos"})


def scheme_of(uri: str) -> str:
    return uri.split("://", 1)[0].lower() if "://" in uri else "file"


class HadoopStorage:
    """A table at ``root`` (a URI) read and written through the JVM's Hadoop FileSystem."""

    def __init__(self, root: str, spark: Any = None) -> None:
        if spark is None:
            from delta_downgrade.spark import get_spark

            spark = get_spark()
        self.root = root.rstrip("/")
        self._jvm = spark._jvm
        conf = spark._jsc.hadoopConfiguration()
        self._path_cls = self._jvm.org.apache.hadoop.fs.Path
        self._fs = self._path_cls(self.root).getFileSystem(conf)
        self.atomic_put_if_absent = scheme_of(self.root) in ATOMIC_CREATE_SCHEMES

    def __repr__(self) -> str:
        return f"HadoopStorage({self.root!r})"

    def _path(self, rel_path: str) -> Any:
        return self._path_cls(f"{self.root}/{rel_path}" if rel_path else self.root)

    def local_path(self, rel_path: str) -> str:
        return f"{self.root}/{rel_path}" if rel_path else self.root

    def _status(self, rel: str, st: Any) -> FileStatus:
        return FileStatus(rel, int(st.getLen()), int(st.getModificationTime()))

    def list_dir(self, rel_dir: str) -> list[FileStatus]:
        path = self._path(rel_dir)
        if not self._fs.exists(path):
            return []
        prefix = f"{rel_dir}/" if rel_dir else ""
        out = [self._status(prefix + st.getPath().getName(), st)
               for st in self._fs.listStatus(path) if st.isFile()]
        out.sort(key=lambda s: s.path)
        return out

    def walk_files(self, rel_dir: str = "") -> Any:
        """Every file below ``rel_dir``, recursively (VACUUM's listing)."""
        base = self._path(rel_dir)
        if not self._fs.exists(base):
            return
        root_uri = str(self._path("").toUri().getPath()).rstrip("/")
        files = self._fs.listFiles(base, True)
        while files.hasNext():
            st = files.next()
            full = str(st.getPath().toUri().getPath())
            yield self._status(full[len(root_uri):].lstrip("/"), st)

    def exists(self, rel_path: str) -> bool:
        return bool(self._fs.exists(self._path(rel_path)))

    def is_dir(self, rel_path: str) -> bool:
        path = self._path(rel_path)
        return bool(self._fs.exists(path) and self._fs.getFileStatus(path).isDirectory())

    def status(self, rel_path: str) -> FileStatus:
        return self._status(rel_path, self._fs.getFileStatus(self._path(rel_path)))

    def read_bytes(self, rel_path: str) -> bytes:
        stream = self._fs.open(self._path(rel_path))
        try:
            # py4j returns a Java byte[] as Python bytes: copy the stream into an in-JVM buffer.
            out = self._jvm.java.io.ByteArrayOutputStream()
            self._jvm.org.apache.hadoop.io.IOUtils.copyBytes(stream, out, 1 << 16, False)
            return bytes(out.toByteArray())
        finally:
            stream.close()

    def _write(self, rel_path: str, data: bytes, overwrite: bool) -> None:
        stream = self._fs.create(self._path(rel_path), overwrite)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()

    def put_if_absent(self, rel_path: str, data: bytes) -> None:
        if not self.atomic_put_if_absent:
            raise StorageNotAtomicError(
                f"{scheme_of(self.root)}:// cannot create a file only if it is absent, so concurrent "
                f"writers could overwrite each other's commits. Use the delta-sql engine on a runtime "
                f"with a commit coordinator for this table", table=self.root)
        try:
            self._write(rel_path, data, overwrite=False)
        except Exception as exc:  # noqa: BLE001 - py4j wraps java.nio.file.FileAlreadyExistsException
            if "AlreadyExists" in str(exc) or self._fs.exists(self._path(rel_path)):
                raise CommitFileExistsError(f"{rel_path} already exists: another writer committed this "
                                            f"version first", table=self.root) from None
            raise

    def write_atomic(self, rel_path: str, data: bytes) -> None:
        """Write to a temporary name, then rename over the target (checkpoints, _last_checkpoint)."""
        tmp = f"{rel_path}.{id(data):x}.tmp"
        self._write(tmp, data, overwrite=True)
        target = self._path(rel_path)
        if self._fs.exists(target):
            self._fs.delete(target, False)
        if not self._fs.rename(self._path(tmp), target):
            raise OSError(f"rename of {tmp} to {rel_path} failed")

    def delete(self, rel_path: str) -> bool:
        return bool(self._fs.delete(self._path(rel_path), False))

    def set_modification_time(self, rel_path: str, epoch_ms: int) -> None:
        self._fs.setTimes(self._path(rel_path), int(epoch_ms), -1)
