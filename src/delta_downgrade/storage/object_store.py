"""A table in an object store (S3, Azure Blob / ADLS Gen2, GCS) through obstore, the Python
binding of the Rust ``object_store`` crate that delta-rs builds on; also a ``file://`` table when
``DELTA_DOWNGRADE_STORAGE=object_store`` asks for it (obstore's LocalStore), so that this code
path runs on local files too.

Commits are conditional creates (``put(mode="create")``): S3 ``If-None-Match: *``, Azure
``If-None-Match: *``, GCS ``ifGenerationMatch=0``. The service decides, in one step, whether the
name is free, which is the mutual exclusion PROTOCOL.md "Delta Log Entries" asks of a commit. An
endpoint that ignores the condition would let two writers both "win" a version, so before the
first commit the endpoint is probed once (:attr:`ObjectStoreStorage.atomic_put_if_absent`) and
writers refuse to commit where it fails.

There are no directories, only keys: ``has_directories`` is False, "a directory" is a key prefix
ending in ``/``, and nothing stays behind to remove when its files are deleted.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Iterator, Mapping

from delta_downgrade.errors import (
    CommitFileExistsError, DeltaDowngradeError, StorageAccessDeniedError, StorageError,
    StorageNotAtomicError,
    StorageNotWritableError, StorageUnreachableError, TableNotFoundError, UnsupportedStorageError,
)
from delta_downgrade.storage.base import DirEntries, FileStatus, copy_through_memory, scheme_of
from delta_downgrade.storage.options import DEFAULT_METADATA_TIMEOUT, StoreOptions, parse_options, redact_text
from delta_downgrade.storage.temp_files import temp_name

if TYPE_CHECKING:  # pragma: no cover
    from obstore import ObjectMeta
    from obstore.store import LocalStore, ObjectStore

#: URI scheme -> obstore store kind.
STORE_KINDS: dict[str, str] = {
    "s3": "s3", "s3a": "s3",
    "az": "azure", "azure": "azure", "abfs": "azure", "abfss": "azure", "adl": "azure",
    "gs": "gcs",
    "file": "local",
}

#: Entries per listing page: S3 and Azure return at most 1,000 (5,000) keys per request anyway;
#: larger Python chunks only cut per-chunk overhead.
LIST_CHUNK = 1000

# Service error codes, as the message of an obstore error quotes the response body.
#: The credentials themselves are wrong, expired or missing (whatever the request).
_UNAUTHENTICATED = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AuthenticationFailed",
                    "InvalidAuthenticationInfo", "ExpiredToken", "InvalidToken",
                    "TokenRefreshRequired", "Unauthenticated", "401 Unauthorized")
#: Valid credentials without the permission for this request (a read-only key on a write).
_FORBIDDEN = ("403 Forbidden", "AccessDenied", "AuthorizationFailure",
              "AuthorizationPermissionMismatch", "PermissionDenied",
              "InsufficientAccountPermissions", "Forbidden")
_MISSING_BUCKET_CODES = ("NoSuchBucket", "ContainerNotFound", "The specified bucket does not exist",
                         "The specified container does not exist", "bucket does not exist",
                         "Bucket not found", "ResourceNotFound")
_UNREACHABLE = ("error sending request", "Connection refused", "connection refused",
                "dns error", "failed to lookup address", "tcp connect error",
                "operation timed out", "timed out", "Connection reset", "connection closed",
                "client error (Connect)", "No route to host")
_LAST_CHECKPOINT = "_delta_log/_last_checkpoint"
#: The endpoint accepted the request and then stopped answering, or answered too slowly (the
#: whole-request timeout cut the body): as unreachable as one that refuses the connection.
_STALLED = ("request or response body error", "error decoding response body", "body error")
_NOT_SUPPORTED = ("NotImplemented", "501 Not Implemented", "not implemented", "NotSupported",
                  "not supported", "Not Implemented")
#: A credential chain that found nothing: the instance metadata service (IMDS, Azure managed
#: identity, GCE metadata) refused or was unreachable, or a credential file is missing.
_NO_CREDENTIALS = ("169.254.169.254", "Error performing token request", "metadata.google.internal",
                   "Missing SecretAccessKey", "Missing AccessKeyId", "MissingCredentials",
                   "No credentials", "no credentials")
_CREDENTIAL_HINTS = {
    "s3": "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or AWS_ROLE_ARN "
          "with AWS_WEB_IDENTITY_TOKEN_FILE",
    "azure": "AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_KEY, "
             "or AZURE_CLIENT_ID / AZURE_CLIENT_SECRET / AZURE_TENANT_ID",
    "gcs": "GOOGLE_SERVICE_ACCOUNT_PATH or GOOGLE_SERVICE_ACCOUNT_KEY, or "
           "GOOGLE_APPLICATION_CREDENTIALS",
}
#: S3 answers 409 ConditionalRequestConflict while another conditional write of the same key is
#: in flight; AWS asks to retry it (the retry then succeeds or finds the key taken).
_CONDITIONAL_CONFLICT = ("ConditionalRequestConflict", "409 Conflict")
_CONFLICT_RETRIES = 5


#: A commit file of the log: written once and never changed (PROTOCOL.md "Delta Log Entries"),
#: so its bytes can be kept for this process's later reads: an operation reads the newest commits
#: once for the protocol and metadata and again in the replay, and reads back the commits it wrote
#: itself - each a round trip on an object store. Bounded: :data:`COMMIT_CACHE_BYTES`.
_COMMIT_FILE = re.compile(r"(?:^|/)_delta_log/\d{20}\.json$")
COMMIT_CACHE_BYTES = 64 << 20

_ENDPOINT_OPTION = {"s3": "AWS_ENDPOINT_URL", "azure": "AZURE_STORAGE_ENDPOINT",
                    "gcs": "GOOGLE_SERVICE_ACCOUNT_KEY gcs_base_url"}
_STATUS_RE = re.compile(r"(?:status code: |HTTP status )(\d{3})")


def _status_of(text: str) -> int | None:
    """The HTTP status an obstore error message reports, if any."""
    match = _STATUS_RE.search(text)
    return int(match.group(1)) if match else None


def _exceptions() -> Any:
    import obstore.exceptions

    return obstore.exceptions


def _ms(value: datetime | int) -> int:
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    return int(value)


class ObjectStoreStorage:
    """A table at ``root`` (``s3://bucket/path``, ``az://container/path``, ``gs://...``,
    ``abfss://container@account.dfs.core.windows.net/path``, ``file:///path``) read and written
    through obstore."""

    lists_names_cheaply = False
    has_directories = False

    def __init__(self, root: str, store: ObjectStore, *, options: Mapping[str, str] | None = None,
                 kind: str = "s3", metadata_store: ObjectStore | None = None) -> None:
        self.root = root.rstrip("/") if root.rstrip("/") else root
        self.kind = kind
        self._store = store
        #: The same store with a short whole-request timeout, for listings and HEADs (whose
        #: answers are small): DEFAULT_METADATA_TIMEOUT in storage/options.py.
        self._meta_store = metadata_store if metadata_store is not None else store
        self._options = dict(options or {})
        self._atomic: bool | None = None
        self._commit_cache: OrderedDict[str, bytes] = OrderedDict()
        self._commit_cache_bytes = 0
        self._commit_cache_lock = threading.Lock()
        #: Why :attr:`atomic_put_if_absent` is False (for the writer's error), else None.
        self.not_atomic_reason: str | None = None

    @classmethod
    def from_location(cls, location: str, options: Mapping[str, str] | None = None
                      ) -> ObjectStoreStorage:
        """The store for ``location`` with ``options`` (deltalake keys, ``storage/options.py``);
        credentials not given there come from the environment or the instance."""
        import obstore.store

        scheme = scheme_of(location)
        kind = STORE_KINDS.get(scheme)
        if kind is None:
            raise UnsupportedStorageError(
                f"{scheme}:// is not an object store that obstore serves (it serves "
                f"{', '.join(sorted(s + '://' for s in STORE_KINDS))}); nothing was read or written",
                table=location, params={"scheme": scheme})
        parsed = parse_options(kind, options, table=location)
        store: ObjectStore
        metadata_store: ObjectStore | None = None
        try:
            if kind == "local":
                store = cls._local_store(location, parsed)
            else:
                def make(client_options: Mapping[str, Any]) -> ObjectStore:
                    # obstore types each scheme's config as its own TypedDict; these dicts were
                    # built by its own parser for this location's scheme (options.py)
                    config: Any = parsed.config or None
                    client: Any = dict(client_options) or None
                    retry: Any = parsed.retry_config or None
                    return obstore.store.from_url(location.rstrip("/"), config=config,
                                                  client_options=client, retry_config=retry)

                store = make(parsed.client_options)
                if "timeout" not in parsed.client_options:
                    metadata_store = make({**parsed.client_options, "timeout": DEFAULT_METADATA_TIMEOUT})
        except DeltaDowngradeError:
            raise
        except Exception as exc:  # obstore: a URL or option it cannot use
            raise cls._config_error(exc, location, options) from None
        return cls(location, store, options=options, kind=kind, metadata_store=metadata_store)

    @staticmethod
    def _local_store(location: str, parsed: StoreOptions) -> LocalStore:
        import obstore.store

        path = location
        for prefix in ("file://", "file:"):
            if path[:len(prefix)].lower() == prefix:
                path = path[len(prefix):]
                break
        return obstore.store.LocalStore(os.path.abspath(path), mkdir=True)

    @staticmethod
    def _config_error(exc: BaseException, location: str, options: Mapping[str, str] | None
                      ) -> DeltaDowngradeError:
        from delta_downgrade.errors import BadStorageOptionError

        text = redact_text(str(exc).split("\n", 1)[0], options)
        return BadStorageOptionError(
            f"cannot open the store of {location}: {text}. Check the storage options (the keys "
            f"deltalake accepts) and the URI; nothing was read or written", table=location)

    def __repr__(self) -> str:
        return f"ObjectStoreStorage({self.root!r})"

    # --- errors ------------------------------------------------------------------------------
    def _typed(self, exc: BaseException, what: str, *, write: bool = False
               ) -> DeltaDowngradeError | None:
        """The typed error for an obstore failure, or None (a plain not-found, or unknown)."""
        if isinstance(exc, DeltaDowngradeError):
            return None
        ex = _exceptions()
        text = str(exc)
        first = redact_text(text.split("\n", 1)[0], self._options)[:300]
        endpoint = self.endpoint_description()
        if any(code in text for code in _MISSING_BUCKET_CODES):
            what_is = "container" if self.kind == "azure" else "bucket"
            return TableNotFoundError(
                f"the {what_is} of {self.root} does not exist ({what}); check the URI (and the "
                f"endpoint {endpoint}), or create the {what_is}. Nothing was written",
                table=self.root, params={"step": what})
        if any(m in text for m in _NO_CREDENTIALS):
            return StorageAccessDeniedError(
                f"no credentials for {self.root} ({what}): none were given in the storage options "
                f"or the environment, and the instance credentials could not be fetched "
                f"({first}). Give them with --storage-option / storage_options (the keys "
                f"deltalake accepts: {_CREDENTIAL_HINTS.get(self.kind, 'see the docs')}) or the "
                f"standard environment variables of those names; nothing was written",
                table=self.root, params={"step": what})
        unauthenticated = isinstance(exc, ex.UnauthenticatedError) or any(
            code in text for code in _UNAUTHENTICATED)
        denied = isinstance(exc, ex.PermissionDeniedError) or any(
            code in text for code in _FORBIDDEN)
        if unauthenticated or (denied and not write):
            return StorageAccessDeniedError(
                f"{endpoint} refused the credentials for {self.root} ({what}: {first}). Check the "
                f"access key / account key / SAS / service account given in the storage options "
                f"or the environment, and their permissions; nothing was written",
                table=self.root, params={"step": what})
        if denied:
            return StorageNotWritableError(
                f"{what} failed: {endpoint} denied the write ({first}). The credentials may read "
                f"{self.root} but not write it; every step before this one is complete and "
                f"recorded in the log. Use credentials that may write and rerun",
                table=self.root, params={"step": what})
        if isinstance(exc, FileNotFoundError):
            return None
        if any(m in text for m in _UNREACHABLE):
            return StorageUnreachableError(
                f"cannot reach {endpoint} for {self.root} ({what}: {first}). Check the endpoint, "
                f"port and network (or the {_ENDPOINT_OPTION.get(self.kind, 'endpoint')} "
                f"option); nothing was written", table=self.root, params={"step": what})
        if any(m in text for m in _STALLED):
            return StorageUnreachableError(
                f"{endpoint} stopped answering {what} for {self.root} in time ({first}): the "
                f"endpoint is too slow or stalled. Check the endpoint and network (or raise the "
                f"timeout storage option); a rerun resumes from what is in the log",
                table=self.root, params={"step": what})
        status = _status_of(text)
        if status == 404 and "list request" in text:
            # A listing answers an empty list for a missing prefix: a 404 means no bucket (or an
            # endpoint that is not this kind of store at all).
            what_is = "container" if self.kind == "azure" else "bucket"
            return TableNotFoundError(
                f"the {what_is} of {self.root} does not exist at {endpoint} ({what}: {first}); "
                f"check the URI and the endpoint. Nothing was written", table=self.root,
                params={"step": what})
        if status is not None and status >= 500:
            return StorageUnreachableError(
                f"{endpoint} failed for {self.root} ({what}: {first}), also after retries; the "
                f"service is unavailable or overloaded. Nothing more was written: rerun later "
                f"(a rerun resumes)", table=self.root, params={"step": what})
        if isinstance(exc, _exceptions().BaseError):
            # An answer of the store this package has no name for: one line, no traceback.
            return StorageError(f"{what} failed on {self.root}: {first}", table=self.root,
                                params={"step": what})
        return None

    @contextmanager
    def _mapped(self, what: str, *, write: bool = False) -> Iterator[None]:
        try:
            yield
        except DeltaDowngradeError:
            raise
        except Exception as exc:
            typed = self._typed(exc, what, write=write)
            if typed is None:
                raise
            raise typed from None

    def endpoint_description(self) -> str:
        """The service this table is on, for messages (never a credential)."""
        for key, value in self._options.items():
            if key.lower() in ("aws_endpoint_url", "aws_endpoint", "endpoint", "endpoint_url",
                               "azure_storage_endpoint", "azure_endpoint"):
                return f"the endpoint {redact_text(value)}"
        return {"s3": "S3", "azure": "Azure Blob Storage", "gcs": "Google Cloud Storage",
                "local": "the local file system"}.get(self.kind, "the object store")

    # --- where a file is ---------------------------------------------------------------------
    def uri(self, rel_path: str) -> str:
        return f"{self.root}/{rel_path}" if rel_path else self.root

    def local_file(self, rel_path: str) -> str | None:
        """Always None: readers go through :meth:`read_bytes` / :meth:`open_input`."""
        return None

    # --- listing -----------------------------------------------------------------------------
    @staticmethod
    def _prefix(rel_dir: str) -> str:
        rel_dir = rel_dir.strip("/")
        return f"{rel_dir}/" if rel_dir else ""

    def list_dir(self, rel_dir: str, *, start_after: str | None = None) -> list[FileStatus]:
        """The files directly in ``rel_dir``, sorted. With ``start_after``, the service is asked
        for keys after ``rel_dir/start_after`` only (S3 ``start-after``, the Azure / GCS list
        offset), so catching up on a long log lists only its tail."""
        return self.list_entries(rel_dir, start_after=start_after).files

    def list_entries(self, rel_dir: str, *, start_after: str | None = None) -> DirEntries:
        """:meth:`list_dir`, and the "subdirectories" (common key prefixes) of ``rel_dir`` after
        ``start_after``, from the same listing."""
        import obstore

        prefix = self._prefix(rel_dir)
        out: list[FileStatus] = []
        others: set[str] = set()
        with self._mapped(f"listing {rel_dir or 'the table root'}"):
            if start_after is None:
                result = obstore.list_with_delimiter(self._meta_store, prefix or None)
                for meta in result["objects"]:
                    # A "folder" marker object (``dir/``, made by consoles and some tools) is the
                    # directory itself, not a file in it.
                    if len(meta["path"]) > len(prefix):
                        out.append(FileStatus(meta["path"], meta["size"],
                                              _ms(meta["last_modified"])))
                others.update(p[len(prefix):].rstrip("/") for p in result["common_prefixes"])
                others.discard("")
            else:
                # A recursive listing from the offset: keep only direct children. The offset is
                # also checked here: GCS's startOffset is inclusive (and an emulator may ignore
                # it), while start_after means strictly after.
                offset = prefix + start_after
                stream = obstore.list(self._meta_store, prefix or None, offset=offset,
                                      chunk_size=LIST_CHUNK)
                for batch in stream:
                    for meta in batch:
                        path = meta["path"]
                        if path <= offset:
                            continue
                        name, nested, _ = path[len(prefix):].partition("/")
                        if nested:  # a key below a "subdirectory" of rel_dir
                            if name > start_after:
                                others.add(name)
                            continue
                        out.append(FileStatus(path, meta["size"], _ms(meta["last_modified"])))
        out.sort(key=lambda s: s.path)
        return DirEntries(out, frozenset(others))

    def list_names(self, rel_dir: str) -> set[str]:
        """Names directly in ``rel_dir``: its objects and its "subdirectories" (common key
        prefixes); ``NotADirectoryError`` when ``rel_dir`` is an object itself."""
        import obstore

        prefix = self._prefix(rel_dir)
        with self._mapped(f"listing {rel_dir or 'the table root'}"):
            result = obstore.list_with_delimiter(self._meta_store, prefix or None)
        names = {meta["path"][len(prefix):] for meta in result["objects"]}
        names.update(p[len(prefix):].rstrip("/") for p in result["common_prefixes"])
        names.discard("")
        if not names and rel_dir and self._head(rel_dir) is not None:
            raise NotADirectoryError(f"{self.uri(rel_dir)} is a file")
        return names

    def walk_files(self, rel_dir: str = "") -> Iterator[FileStatus]:
        """Every object below ``rel_dir``, in key order."""
        import obstore

        prefix = self._prefix(rel_dir)
        with self._mapped(f"listing {rel_dir or 'the table'}"):
            for batch in obstore.list(self._meta_store, prefix or None, chunk_size=LIST_CHUNK):
                for meta in batch:
                    yield FileStatus(meta["path"], meta["size"], _ms(meta["last_modified"]))

    def _head(self, rel_path: str) -> "ObjectMeta | None":
        import obstore

        with self._mapped(f"reading {rel_path}"):
            try:
                return obstore.head(self._meta_store, rel_path)
            except FileNotFoundError:
                return None

    def is_dir(self, rel_path: str) -> bool:
        """Whether some key starts with ``rel_path/`` (a "directory" of an object store)."""
        import obstore

        prefix = self._prefix(rel_path)
        if not prefix:
            return True
        with self._mapped(f"listing {rel_path}"):
            for batch in obstore.list(self._meta_store, prefix, chunk_size=1):
                if batch:
                    return True
        return False

    def exists(self, rel_path: str) -> bool:
        return self._head(rel_path) is not None or self.is_dir(rel_path)

    def status(self, rel_path: str) -> FileStatus:
        meta = self._head(rel_path)
        if meta is None:
            raise FileNotFoundError(f"{self.uri(rel_path)} does not exist")
        return FileStatus(rel_path, meta["size"], _ms(meta["last_modified"]))

    # --- reading -----------------------------------------------------------------------------
    def read_bytes(self, rel_path: str) -> bytes:
        import obstore

        commit = _COMMIT_FILE.search(rel_path) is not None
        if commit:
            with self._commit_cache_lock:
                cached = self._commit_cache.get(rel_path)
                if cached is not None:
                    self._commit_cache.move_to_end(rel_path)
                    return cached
        # _last_checkpoint (a hint of a few hundred bytes, the first file a command reads) under
        # the short whole-request timeout of listings: a stalled endpoint is found in seconds.
        store = self._meta_store if rel_path.endswith(_LAST_CHECKPOINT) else self._store
        with self._mapped(f"reading {rel_path}"):
            try:
                data = bytes(obstore.get(store, rel_path).bytes())
            except FileNotFoundError:
                raise FileNotFoundError(f"{self.uri(rel_path)} does not exist") from None
        if commit:
            self._keep_commit(rel_path, data)
        return data

    def _keep_commit(self, rel_path: str, data: bytes) -> None:
        """Keep a commit file's bytes (least recently used ones leave first)."""
        if len(data) > COMMIT_CACHE_BYTES // 8:
            return
        with self._commit_cache_lock:
            previous = self._commit_cache.pop(rel_path, None)
            if previous is not None:
                self._commit_cache_bytes -= len(previous)
            self._commit_cache[rel_path] = data
            self._commit_cache_bytes += len(data)
            while self._commit_cache_bytes > COMMIT_CACHE_BYTES:
                _, dropped = self._commit_cache.popitem(last=False)
                self._commit_cache_bytes -= len(dropped)

    def _forget_commit(self, rel_path: str) -> None:
        with self._commit_cache_lock:
            dropped = self._commit_cache.pop(rel_path, None)
            if dropped is not None:
                self._commit_cache_bytes -= len(dropped)

    def read_range(self, rel_path: str, start: int, length: int) -> bytes:
        import obstore

        if length <= 0:
            return b""
        with self._mapped(f"reading {rel_path}"):
            try:
                return bytes(obstore.get_range(self._store, rel_path, start=start, length=length))
            except FileNotFoundError:
                raise FileNotFoundError(f"{self.uri(rel_path)} does not exist") from None
            except Exception as exc:
                # Past the end (416, or object_store's own range check): fewer bytes, as a
                # local read at the end of a file returns.
                if "range" not in str(exc).lower() and "416" not in str(exc):
                    raise
        size = self.status(rel_path).size
        if start >= size:
            return b""
        return self.read_range(rel_path, start, size - start)

    def open_input(self, rel_path: str) -> BinaryIO:
        """A seekable reader doing ranged GETs (obstore's buffered reader: pyarrow reads a
        parquet footer and the needed column chunks without fetching the whole object)."""
        import obstore

        with self._mapped(f"reading {rel_path}"):
            try:
                # read/seek/tell/close: what pyarrow and json take of a binary file
                return _ReadableFile(obstore.open_reader(self._store, rel_path))  # type: ignore[return-value]
            except FileNotFoundError:
                raise FileNotFoundError(f"{self.uri(rel_path)} does not exist") from None

    # --- writing -----------------------------------------------------------------------------
    def put_if_absent(self, rel_path: str, data: bytes) -> None:
        """A conditional create: the service writes ``rel_path`` only if no object has that key
        (S3 / Azure ``If-None-Match: *``, GCS ``ifGenerationMatch=0``), else
        :class:`CommitFileExistsError`."""
        import obstore

        if not self.atomic_put_if_absent:
            raise StorageNotAtomicError(
                f"{self.not_atomic_reason}. Nothing was written: committing here could lose "
                f"another writer's commit. Use an endpoint that honours conditional writes "
                f"(If-None-Match: *), as S3, Azure Blob Storage, GCS, MinIO and R2 do",
                table=self.root, params={"step": f"writing {rel_path}"})
        ex = _exceptions()
        with self._mapped(f"writing {rel_path}", write=True):
            for attempt in range(_CONFLICT_RETRIES + 1):
                try:
                    obstore.put(self._store, rel_path, data, mode="create")
                    if _COMMIT_FILE.search(rel_path):
                        self._keep_commit(rel_path, bytes(data))
                    return
                except (ex.AlreadyExistsError, ex.PreconditionError, FileExistsError):
                    raise CommitFileExistsError(f"{rel_path} already exists: another writer "
                                                f"committed this version first",
                                                table=self.root) from None
                except Exception as exc:
                    if attempt < _CONFLICT_RETRIES and any(c in str(exc)
                                                           for c in _CONDITIONAL_CONFLICT):
                        time.sleep(0.05 * (2 ** attempt))
                        continue
                    raise

    def write_atomic(self, rel_path: str, data: bytes) -> None:
        """One PUT: an object store replaces an object atomically (readers see the old or the
        new content), so no temporary object and rename are needed."""
        import obstore

        self._forget_commit(rel_path)
        with self._mapped(f"writing {rel_path}", write=True):
            obstore.put(self._store, rel_path, data, mode="overwrite")

    def copy_file(self, source: str, rel_path: str, size: int) -> bool:
        """Read, then one PUT (:meth:`write_atomic`)."""
        return copy_through_memory(self, source, rel_path, size)

    @contextmanager
    def atomic_file(self, rel_path: str) -> Iterator[str]:
        """A local temporary file, uploaded under ``rel_path`` when the block ends normally
        (a multipart upload for a large file, which becomes visible only when completed, in one
        step) and never uploaded when it raises."""
        import obstore

        fd, tmp = tempfile.mkstemp(prefix=temp_name(rel_path.rsplit("/", 1)[-1]))
        os.close(fd)
        try:
            yield tmp
            with self._mapped(f"writing {rel_path}", write=True):
                obstore.put(self._store, rel_path, Path(tmp), mode="overwrite")
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass

    def delete(self, rel_path: str) -> bool:
        """Delete one object; False when it was already gone. S3 answers a delete of a missing
        key with success, so there a HEAD tells first."""
        import obstore

        self._forget_commit(rel_path)
        with self._mapped(f"deleting {rel_path}", write=True):
            if self.kind == "s3" and self._head(rel_path) is None:
                return False
            try:
                obstore.delete(self._store, rel_path)
                return True
            except FileNotFoundError:
                return False

    def remove_empty_dir(self, rel_dir: str) -> bool:
        """Always False: an object store has no directories to remove."""
        return False

    def walk_dirs(self, rel_dir: str = "") -> Iterator[FileStatus]:
        """Nothing: an object store has no directories."""
        return iter(())

    def set_modification_time(self, rel_path: str, epoch_ms: int) -> None:
        """Not possible: an object's Last-Modified is set by the service when it is written."""
        raise NotImplementedError(f"{self.root}: an object store sets modification times itself")

    # --- is put-if-absent atomic here? ----------------------------------------------------------
    @property
    def atomic_put_if_absent(self) -> bool:
        """Whether this endpoint honours conditional creates, probed once per instance.

        A probe object under ``_delta_log/`` (named like this package's temporary files, so that
        ``cleanup`` recognises a leftover) is created with ``mode="create"``, created again (which
        must fail: the name is taken) and deleted. If the second create succeeds, the endpoint
        ignored ``If-None-Match`` (an old S3-compatible server): two writers could both write one
        version, losing a commit, so writers refuse (StorageNotAtomicError with
        :attr:`not_atomic_reason`). An endpoint that rejects conditional puts is refused too."""
        if self._atomic is None:
            self._atomic, self.not_atomic_reason = self._probe_conditional_create()
        return self._atomic

    @atomic_put_if_absent.setter
    def atomic_put_if_absent(self, value: bool) -> None:
        self._atomic = bool(value)

    def _rejects_conditional_writes(self, exc: BaseException, endpoint: str) -> str | None:
        """Why ``exc`` (a conditional create that failed) means the endpoint does not do
        conditional writes at all (501, NotImplemented), or None: another failure, raised."""
        ex = _exceptions()
        if self._typed(exc, "probing conditional writes", write=True) is None and (
                isinstance(exc, ex.NotSupportedError) or any(m in str(exc) for m in _NOT_SUPPORTED)):
            return (f"{endpoint} rejects conditional writes (If-None-Match: *): "
                    f"{redact_text(_first_line(exc), self._options)}")
        return None

    def _probe_conditional_create(self) -> tuple[bool, str | None]:
        import obstore

        ex = _exceptions()
        if self.kind == "local":
            return True, None  # LocalStore creates with O_EXCL / link
        probe = f"_delta_log/{temp_name('_conditional_put_probe')}"
        endpoint = self.endpoint_description()
        with self._mapped("probing conditional writes", write=True):
            try:
                obstore.put(self._store, probe, b"probe", mode="create")
            except Exception as exc:
                rejected = self._rejects_conditional_writes(exc, endpoint)
                if rejected is None:
                    raise
                return False, rejected
            try:
                try:
                    obstore.put(self._store, probe, b"probe again", mode="create")
                except (ex.AlreadyExistsError, ex.PreconditionError):
                    return True, None
                except Exception as exc:
                    rejected = self._rejects_conditional_writes(exc, endpoint)
                    if rejected is None:
                        raise
                    return False, rejected
                return False, (f"{endpoint} ignored If-None-Match: a second conditional create "
                               f"of one key succeeded, so concurrent writers could overwrite each "
                               f"other's commits")
            finally:
                try:
                    obstore.delete(self._store, probe)
                except Exception:  # noqa: BLE001 - a leftover probe is a temp file cleanup removes
                    pass


def _first_line(exc: BaseException) -> str:
    return str(exc).split("\n", 1)[0]


class _ReadableFile:
    """obstore's ReadableFile as a Python binary file: ``read`` returns ``bytes`` (obstore's
    ``Bytes`` is a buffer pyarrow and json take, but not everyone does), ``closed``, context
    manager."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self.closed = False

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return bytes(self._reader.read())
        return bytes(self._reader.read(size))

    def readall(self) -> bytes:
        return self.read()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._reader.seek(offset, whence)

    def tell(self) -> int:
        return self._reader.tell()

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def size(self) -> int:
        return self._reader.size

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._reader.close()

    def __enter__(self) -> _ReadableFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
