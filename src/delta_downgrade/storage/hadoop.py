"""Storage through Hadoop's FileSystem API in the Spark session's JVM: cloud and HDFS tables.

Commits need put-if-absent. ``FileSystem.create(path, overwrite=false)`` gives it only where the
store checks existence and creates in one step: HDFS and ABFS (rename/create are atomic), GCS
(generation preconditions). S3 through s3a does not (check-then-write), so on ``s3://``/``s3a://``
this storage reads fine and refuses to commit unless a commit coordinator owns the table — the
delta-sql engine on Databricks is the way to change such tables.
"""

from __future__ import annotations

import glob
import io
import os
import tempfile
from pathlib import Path
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Iterator, Mapping

from delta_downgrade.errors import (
    CommitFileExistsError, DeltaDowngradeError, StorageNotAtomicError, StorageUnreachableError,
    UnsupportedStorageError,
)
from delta_downgrade.spark import active_session, connect_url, is_connect_session
from delta_downgrade.storage.base import DirEntries, FileStatus, copy_through_memory, scheme_of
from delta_downgrade.storage.temp_files import temp_name
from delta_downgrade.storage.write_errors import typed_write_error

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

# Schemes whose FileSystem.create(overwrite=false) is atomic (reference: Delta's LogStore
# implementations — HDFSLogStore, AzureLogStore via rename, GCSLogStore via preconditions).
ATOMIC_CREATE_SCHEMES = frozenset({"hdfs", "viewfs", "abfs", "abfss", "gs", "file"})
NON_ATOMIC_SCHEMES = frozenset({"s3", "s3a", "s3n", "wasb", "wasbs", "oss", "cos"})


# --- can this process serve the scheme at all? (checked before a JVM is started) -----------------

#: Schemes whose FileSystem is part of the Hadoop client that PySpark ships.
BUILTIN_SCHEMES = frozenset({"file", "hdfs", "viewfs", "webhdfs", "swebhdfs", "har"})
#: The connector (jar name) that brings a scheme's FileSystem. ``s3``/``s3n`` have none in Hadoop 3
#: (only EMR/Databricks serve them, or an explicit ``fs.<scheme>.impl``).
CONNECTOR_JARS: dict[str, str] = {
    "s3a": "hadoop-aws", "abfs": "hadoop-azure", "abfss": "hadoop-azure", "wasb": "hadoop-azure",
    "wasbs": "hadoop-azure", "gs": "gcs-connector", "oss": "hadoop-aliyun", "cos": "hadoop-cos",
}
CONNECTOR_HINTS: dict[str, str] = {
    "hadoop-aws": "org.apache.hadoop:hadoop-aws (matching the Hadoop version of Spark) and the AWS SDK",
    "hadoop-azure": "org.apache.hadoop:hadoop-azure (matching the Hadoop version of Spark)",
    "gcs-connector": "com.google.cloud.bigdataoss:gcs-connector (hadoop3 shaded)",
}
#: Schemes the object-store storage serves without Spark (named in the Connect refusal).
_OBJECT_STORE_HINT = ("s3", "abfss", "gs")
# Messages of the JVM meaning "this scheme has no FileSystem here" / "cannot reach it".
_JAVA_UNSUPPORTED = ("UnsupportedFileSystemException", "No FileSystem for scheme")
_JAVA_UNREACHABLE = ("java.net.ConnectException", "Connection refused", "UnknownHostException",
                     "NoRouteToHostException", "SocketTimeoutException", "ConnectTimeoutException")
#: Hadoop IPC defaults retry a refused connection 10 times, 1 s apart, and 45 times on timeouts:
#: bound them for the FileSystem instance of this storage (not the session's cached one).
BOUNDED_CONNECT_CONF = {
    "ipc.client.connect.max.retries": "1",
    "ipc.client.connect.max.retries.on.timeouts": "1",
    "ipc.client.connect.timeout": "5000",
    "ipc.client.connect.retry.interval": "200",
}


def _classpath_texts() -> Iterator[str]:
    """What a JVM started here would have on its class path or in its Spark/Hadoop conf: jar
    names of PySpark's (or ``$SPARK_HOME``'s) jars, ``PYSPARK_SUBMIT_ARGS``, ``spark.jars`` of
    the package, spark-defaults.conf and core-site.xml."""
    dirs = []
    try:
        import pyspark

        dirs.append(os.path.join(os.path.dirname(pyspark.__file__), "jars"))
    except ImportError:
        pass
    if os.environ.get("SPARK_HOME"):
        dirs.append(os.path.join(os.environ["SPARK_HOME"], "jars"))
    for d in dirs:
        yield from (os.path.basename(j) for j in glob.glob(os.path.join(d, "*.jar")))
    for var in ("PYSPARK_SUBMIT_ARGS", "SPARK_DIST_CLASSPATH", "DELTA_DOWNGRADE_DELTA_JARS"):
        if os.environ.get(var):
            yield os.environ[var]
    conf_files = []
    for var, name in (("SPARK_CONF_DIR", "spark-defaults.conf"), ("HADOOP_CONF_DIR", "core-site.xml")):
        if os.environ.get(var):
            conf_files.append(os.path.join(os.environ[var], name))
    if os.environ.get("SPARK_HOME"):
        conf_files.append(os.path.join(os.environ["SPARK_HOME"], "conf", "spark-defaults.conf"))
    for path in conf_files:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                yield fh.read()
        except OSError:
            continue


def check_scheme_servable(uri: str) -> None:
    """Refuse, before any JVM is started, a URI whose scheme nothing here can serve.

    Allowed: an active Spark session (it knows its own file systems; errors are mapped later), a
    Databricks runtime, Hadoop's built-in schemes, and schemes whose connector jar or
    ``fs.<scheme>.impl`` a JVM started here would see. Otherwise
    :class:`UnsupportedStorageError` at once, instead of a Java ``UnsupportedFileSystemException``
    after starting Spark.
    """
    scheme = scheme_of(uri)
    if scheme in BUILTIN_SCHEMES or os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise UnsupportedStorageError(
            f"{scheme}:// tables are read through Spark's Hadoop FileSystem, and PySpark is not "
            f"installed. Run on a Databricks cluster, or install delta-downgrade[local] and the "
            f"{scheme}:// connector", table=uri, params={"scheme": scheme}) from None
    if SparkSession.getActiveSession() is not None:
        return
    jar = CONNECTOR_JARS.get(scheme)
    impl = f"fs.{scheme}.impl"
    for text in _classpath_texts():
        if impl in text or (jar is not None and jar in text):
            return
    needs = (f"the {CONNECTOR_HINTS.get(jar, jar)} jar (spark.jars / spark.jars.packages, or in "
             f"$SPARK_HOME/jars)" if jar else f"a FileSystem for {scheme}:// (set "
             f"spark.hadoop.{impl}; plain Hadoop has none)")
    raise UnsupportedStorageError(
        f"no file system for {scheme}:// here: no Spark session is active and no connector for it "
        f"is installed, so nothing was read or written. Install {needs}, or run on a cluster that "
        f"serves {scheme}:// (e.g. Databricks)", table=uri, params={"scheme": scheme})


def _session_to_use() -> str | None:
    """``"connect"`` / ``"classic"``: the kind of session this storage would run on (the active
    one, else the one ``get_spark`` would start); None when that is the runtime's to decide (on
    Databricks without an active session). Starts nothing."""
    active = active_session()
    if active is not None:
        return "connect" if is_connect_session(active) else "classic"
    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return None
    return "connect" if connect_url() is not None else "classic"


def refuse_connect_session(uri: str, session: str | None) -> None:
    """Hadoop's FileSystem lives in the JVM of a classic session; a Spark Connect session
    (Databricks serverless, ``SPARK_REMOTE``) has no JVM in this process. Refused before anything
    is read (exit 2), naming what serves the table instead.

    ``dbfs:/`` is not mapped to the ``/dbfs`` FUSE mount: serverless limits DBFS access (Databricks
    "Serverless compute limitations"), and nothing documents the mount's create-if-absent as
    atomic, which every commit needs (PROTOCOL.md "Delta Log Entries": mutual exclusion)."""
    if session != "connect":
        return
    scheme = scheme_of(uri)
    instead = ("a Unity Catalog volume path (/Volumes/...), the table's cloud URI or its catalog "
               "name" if scheme == "dbfs" else
               "the table's catalog name (--engine=delta-sql) or a URI served without Spark "
               f"({', '.join(f'{s}://' for s in _OBJECT_STORE_HINT)})")
    raise UnsupportedStorageError(
        f"{scheme}:// tables are read through Hadoop's FileSystem in the JVM of a classic Spark "
        f"session, and this session is Spark Connect (serverless, or SPARK_REMOTE), which has no "
        f"JVM here; nothing was read or written. Run on a classic cluster, or give {instead}",
        table=uri, params={"scheme": scheme, "session": "connect"})


def _java_message(text: str) -> str:
    """The first line of a Java exception as py4j prints it, without py4j's preamble."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(": "):
            return line[2:]
    return text.strip().splitlines()[0] if text.strip() else text


def java_storage_error(exc: BaseException, root: str, what: str, *,
                       write: bool) -> DeltaDowngradeError | None:
    """The typed error for a JVM failure of the Hadoop FileSystem, or None."""
    if isinstance(exc, DeltaDowngradeError):
        return None
    text = str(exc)
    scheme = scheme_of(root)
    if any(m in text for m in _JAVA_UNSUPPORTED) or (
            "ClassNotFoundException" in text and "FileSystem" in text):
        return UnsupportedStorageError(
            f"the Spark session has no file system for {scheme}:// ({what}); nothing was written. "
            f"Add the {scheme}:// connector to the session, or run on a cluster that serves it",
            table=root, params={"scheme": scheme})
    if any(m in text for m in _JAVA_UNREACHABLE):
        detail = next(m for m in _JAVA_UNREACHABLE if m in text)
        return StorageUnreachableError(
            f"cannot reach the {scheme}:// file system of the table ({what}: {detail}); nothing "
            f"was written. Check the host, port and network, or run where it is reachable",
            table=root, params={"scheme": scheme})
    if write:
        return typed_write_error(exc, what, root)
    return None


class HadoopStorage:
    """A table at ``root`` (a URI) read and written through the JVM's Hadoop FileSystem."""

    # A Hadoop listing returns statuses anyway: an incremental listing compares them instead of
    # listing names first (Storage.lists_names_cheaply).
    lists_names_cheaply = False
    has_directories = True

    @classmethod
    def from_location(cls, location: str, options: Mapping[str, str] | None = None) -> HadoopStorage:
        """The storage for a URI, refusing before any JVM is started a scheme nothing here can
        serve (exit 2), not after ten seconds of Spark start-up and a Java
        UnsupportedFileSystemException."""
        refuse_connect_session(location, _session_to_use())
        check_scheme_servable(location)
        try:
            return cls(location)
        except RuntimeError as exc:  # no PySpark
            raise UnsupportedStorageError(
                f"{location}: reading {location.split('://', 1)[0]}:// tables needs Spark's Hadoop "
                f"FileSystem ({exc})", table=location) from None

    def __init__(self, root: str, spark: "SparkSession | None" = None) -> None:
        if spark is None:
            from delta_downgrade.spark import get_spark

            spark = get_spark()
        refuse_connect_session(root, "connect" if is_connect_session(spark) else "classic")
        self.root = root.rstrip("/")
        jvm = spark._jvm  # py4j's view of the driver JVM
        if jvm is None:  # only a Connect session has none, refused above
            raise RuntimeError("the Spark session has no JVM in this process")
        self._jvm = jvm
        with self._java("opening the table's file system"):
            # A copy of the session's conf with bounded connection retries, and an instance of our
            # own (newInstance, not the cache), so that the session's jobs keep their settings.
            conf = self._jvm.org.apache.hadoop.conf.Configuration(spark._jsc.hadoopConfiguration())
            for key, value in BOUNDED_CONNECT_CONF.items():
                conf.set(key, value)
            self._path_cls = self._jvm.org.apache.hadoop.fs.Path
            uri = self._path_cls(self.root).toUri()
            self._fs = self._jvm.org.apache.hadoop.fs.FileSystem.newInstance(uri, conf)
        self.atomic_put_if_absent = scheme_of(self.root) in ATOMIC_CREATE_SCHEMES

    @contextmanager
    def _java(self, what: str, *, write: bool = False) -> Iterator[None]:
        """Map JVM failures to typed errors: no file system for the scheme, unreachable, and
        (for writes) disk full / read-only, as :mod:`delta_downgrade.storage.write_errors` maps
        them for local files."""
        try:
            yield
        except Exception as exc:
            text = str(exc)
            if not write and "java.io.FileNotFoundException" in text:
                # The Storage interface's "absent" (read_bytes, status: FileNotFoundError), which
                # callers take as a file gone since the listing; Java also reports a file it may
                # not open so, which stays a refusal.
                kind = PermissionError if "Permission denied" in text else FileNotFoundError
                raise kind(f"{what} of {self.root}: {_java_message(text)}") from None
            typed = java_storage_error(exc, self.root, what, write=write)
            if typed is None:
                raise
            raise typed from None

    def __repr__(self) -> str:
        return f"HadoopStorage({self.root!r})"

    def _path(self, rel_path: str) -> Any:
        return self._path_cls(f"{self.root}/{rel_path}" if rel_path else self.root)

    def uri(self, rel_path: str) -> str:
        return f"{self.root}/{rel_path}" if rel_path else self.root

    def local_file(self, rel_path: str) -> str | None:
        return None

    def _status(self, rel: str, st: Any) -> FileStatus:
        return FileStatus(rel, int(st.getLen()), int(st.getModificationTime()))

    def list_dir(self, rel_dir: str, *, start_after: str | None = None) -> list[FileStatus]:
        return self.list_entries(rel_dir, start_after=start_after).files

    def list_entries(self, rel_dir: str, *, start_after: str | None = None) -> DirEntries:
        out: list[FileStatus] = []
        others: set[str] = set()
        with self._java(f"listing {rel_dir or '/'}"):
            path = self._path(rel_dir)
            if not self._fs.exists(path):
                return DirEntries(out, frozenset())
            prefix = f"{rel_dir}/" if rel_dir else ""
            for st in self._fs.listStatus(path):
                name = st.getPath().getName()
                if start_after is not None and name <= start_after:
                    continue
                if st.isFile():
                    out.append(self._status(prefix + name, st))
                else:
                    others.add(name)
        out.sort(key=lambda s: s.path)
        return DirEntries(out, frozenset(others))

    def list_names(self, rel_dir: str) -> set[str]:
        return {status.path.rsplit("/", 1)[-1] for status in self.list_dir(rel_dir)}

    def walk_files(self, rel_dir: str = "") -> Iterator[FileStatus]:
        """Every file below ``rel_dir``, recursively (VACUUM's listing)."""
        with self._java(f"listing {rel_dir or '/'}"):
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
        with self._java(f"looking up {rel_path or 'the table root'}"):
            return bool(self._fs.exists(self._path(rel_path)))

    def is_dir(self, rel_path: str) -> bool:
        with self._java(f"looking up {rel_path or 'the table root'}"):
            path = self._path(rel_path)
            return bool(self._fs.exists(path) and self._fs.getFileStatus(path).isDirectory())

    def status(self, rel_path: str) -> FileStatus:
        with self._java(f"looking up {rel_path or 'the table root'}"):
            return self._status(rel_path, self._fs.getFileStatus(self._path(rel_path)))

    def read_bytes(self, rel_path: str) -> bytes:
        with self._java(f"reading {rel_path}"):
            stream = self._fs.open(self._path(rel_path))
            try:
                # py4j returns a Java byte[] as Python bytes: copy the stream into an in-JVM buffer.
                out = self._jvm.java.io.ByteArrayOutputStream()
                self._jvm.org.apache.hadoop.io.IOUtils.copyBytes(stream, out, 1 << 16, False)
                return bytes(out.toByteArray())
            finally:
                stream.close()

    def read_range(self, rel_path: str, start: int, length: int) -> bytes:
        with self._java(f"reading {rel_path}"):
            stream = self._fs.open(self._path(rel_path))
            try:
                stream.seek(int(start))
                out = self._jvm.java.io.ByteArrayOutputStream()
                self._jvm.org.apache.hadoop.io.IOUtils.copyBytes(stream, out, int(length), False)
                return bytes(out.toByteArray())[:length]
            finally:
                stream.close()

    def open_input(self, rel_path: str) -> BinaryIO:
        return io.BytesIO(self.read_bytes(rel_path))

    def remove_empty_dir(self, rel_dir: str) -> bool:
        with self._java(f"removing {rel_dir}", write=True):
            path = self._path(rel_dir)
            if not self._fs.exists(path) or not self._fs.getFileStatus(path).isDirectory():
                return False
            if len(self._fs.listStatus(path)):
                return False
            return bool(self._fs.delete(path, False))

    def walk_dirs(self, rel_dir: str = "") -> Iterator[FileStatus]:
        """Every directory below ``rel_dir``, deepest first."""
        found: list[FileStatus] = []
        with self._java(f"listing {rel_dir or '/'}"):
            pending = [rel_dir]
            while pending:
                current = pending.pop()
                path = self._path(current)
                if not self._fs.exists(path):
                    continue
                for st in self._fs.listStatus(path):
                    if st.isDirectory():
                        rel = f"{current}/{st.getPath().getName()}" if current else st.getPath().getName()
                        found.append(FileStatus(rel, 0, int(st.getModificationTime())))
                        pending.append(rel)
        found.sort(key=lambda s: s.path.count("/"), reverse=True)
        return iter(found)

    def _write(self, rel_path: str, data: bytes, overwrite: bool) -> None:
        """Create ``rel_path`` and write ``data``. When the write (or the close, which flushes)
        fails after the create, the file is ours and partial: delete it, so that no partial
        commit or temporary file stays behind (a failed create leaves nothing to delete)."""
        path = self._path(rel_path)
        stream = self._fs.create(path, overwrite)
        try:
            stream.write(bytearray(data))
            stream.close()
        except BaseException:
            try:
                stream.close()
            except Exception:  # noqa: BLE001 - already failing; the delete below matters
                pass
            try:
                self._fs.delete(path, False)
            except Exception:  # noqa: BLE001
                pass
            raise

    def put_if_absent(self, rel_path: str, data: bytes) -> None:
        if not self.atomic_put_if_absent:
            raise StorageNotAtomicError(
                f"{scheme_of(self.root)}:// cannot create a file only if it is absent, so concurrent "
                f"writers could overwrite each other's commits. Use the delta-sql engine on a runtime "
                f"with a commit coordinator for this table", table=self.root)
        with self._java(f"writing {rel_path}", write=True):
            try:
                self._write(rel_path, data, overwrite=False)
            except Exception as exc:  # noqa: BLE001 - py4j wraps java.nio.file.FileAlreadyExistsException
                if "AlreadyExists" in str(exc) or self._fs.exists(self._path(rel_path)):
                    raise CommitFileExistsError(f"{rel_path} already exists: another writer committed "
                                                f"this version first", table=self.root) from None
                raise

    def write_atomic(self, rel_path: str, data: bytes) -> None:
        """Write to a temporary name, then rename over the target (checkpoints, _last_checkpoint).
        The temporary name is the package's (:func:`delta_downgrade.storage.temp_files.temp_name`),
        so a crash's leftover is recognised by ``cleanup``; a failure removes it at once."""
        with self._java(f"writing {rel_path}", write=True):
            self._replace_through_temp(rel_path, lambda tmp: self._write(tmp, data, overwrite=False))

    def copy_file(self, source: str, rel_path: str, size: int) -> bool:
        """Read, then :meth:`write_atomic`."""
        return copy_through_memory(self, source, rel_path, size)

    def _replace_through_temp(self, rel_path: str, put: Callable[[str], object]) -> None:
        """``put`` the file at the package's temporary name next to ``rel_path``, then rename it
        over ``rel_path``; a failure removes the temporary file at once."""
        directory, _, name = rel_path.rpartition("/")
        tmp = f"{directory}/{temp_name(name)}" if directory else temp_name(name)
        try:
            put(tmp)
            target = self._path(rel_path)
            if self._fs.exists(target):
                self._fs.delete(target, False)
            if not self._fs.rename(self._path(tmp), target):
                raise OSError(f"rename of {tmp} to {rel_path} failed")
        except BaseException:
            try:
                self._fs.delete(self._path(tmp), False)
            except Exception:  # noqa: BLE001 - already failing
                pass
            raise

    @contextmanager
    def atomic_file(self, rel_path: str) -> Iterator[str]:
        """A local temporary file (on the driver, where the JVM runs); when the block ends it
        is copied by the Hadoop FileSystem to the package's temporary name next to ``rel_path``
        and renamed over it (as :meth:`write_atomic`), without passing through Python memory."""
        fd, local = tempfile.mkstemp(prefix=".delta_downgrade.", suffix=".tmp")
        os.close(fd)
        try:
            yield local
            with self._java(f"writing {rel_path}", write=True):
                self._replace_through_temp(rel_path, lambda tmp: self._fs.copyFromLocalFile(
                    False, False, self._path_cls(Path(local).as_uri()), self._path(tmp)))
        finally:
            try:
                os.unlink(local)
            except OSError:
                pass

    def delete(self, rel_path: str) -> bool:
        with self._java(f"deleting {rel_path}", write=True):
            return bool(self._fs.delete(self._path(rel_path), False))

    def set_modification_time(self, rel_path: str, epoch_ms: int) -> None:
        with self._java(f"setting the time of {rel_path}", write=True):
            self._fs.setTimes(self._path(rel_path), int(epoch_ms), -1)
