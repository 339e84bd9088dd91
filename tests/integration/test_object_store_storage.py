"""ObjectStoreStorage against real endpoints: moto's S3 server, Azurite, fake-gcs-server (and
obstore's LocalStore through ``file://``). Every method of the Storage interface, the conditional
create (one winner of a race), the probe that refuses an endpoint ignoring ``If-None-Match``
(a real proxy in front of moto that drops the header), and typed errors within 10 s that never
show a secret.

The objects a test checks are written or read back with obstore directly (``Endpoint.store``,
``Endpoint.upload``), never with the code under test.

On GCS only reading and listing are tested; writes are tested on S3 and Azure (and the local
store). fake-gcs-server has no XML-API PUT (what obstore uploads with), and forwarding obstore's
PUT to its JSON media upload would not be honest either: that upload ignores
``ifGenerationMatch=0`` (a second create of one name succeeds there), so the emulator could not
decide the condition a commit relies on.
"""

from __future__ import annotations

import base64
import io
import socket
import threading
import time
from pathlib import Path

import obstore
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.errors import (
    BadStorageOptionError, CommitFileExistsError, StorageAccessDeniedError,
    StorageNotAtomicError, StorageUnreachableError, TableNotFoundError, UnsupportedStorageError,
)
from delta_downgrade.storage import is_package_temp, open_storage
from delta_downgrade.storage.object_store import ObjectStoreStorage
from tests.object_stores import HeaderStrippingProxy, free_port

LOG = "_delta_log"


def _parquet_bytes(rows: int = 1000) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": list(range(rows)), "s": [f"v{i}" for i in range(rows)]}), buf,
                   row_group_size=250)
    return buf.getvalue()


def _seed(tmp_path: Path) -> dict[str, bytes]:
    """A small table-shaped tree: commits, a checkpoint name, a partition directory."""
    files = {
        f"{LOG}/00000000000000000000.json": b'{"commitInfo":{}}\n',
        f"{LOG}/00000000000000000001.json": b'{"commitInfo":{"v":1}}\n',
        f"{LOG}/00000000000000000002.json": b'{"commitInfo":{"v":2}}\n',
        f"{LOG}/_last_checkpoint": b'{"version":1}',
        f"{LOG}/_sidecars/a.parquet": b"sidecar",
        "part-0.parquet": _parquet_bytes(),
        "p=1/part-1.parquet": b"one",
        "p=1/q=2/part-2.parquet": b"two",
    }
    for rel, data in files.items():
        target = tmp_path / "seed" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return files


@pytest.fixture
def seeded(object_store, tmp_path):
    """A table uploaded (outside our code) to each endpoint; (storage, endpoint, files)."""
    files = _seed(tmp_path)
    location = object_store.upload(tmp_path / "seed", "tbl")
    return open_storage(location, options=object_store.storage_options), object_store, files


@pytest.fixture(params=["s3", "azure"])
def writable(request):
    """An endpoint obstore can write to (fake-gcs-server cannot: no XML-API PUT)."""
    endpoint = request.getfixturevalue(f"{request.param}_endpoint")
    return open_storage(endpoint.location("tbl"), options=endpoint.storage_options), endpoint


# --- reading and listing: every endpoint -------------------------------------------------------

def test_registry_opens_object_store_storage(seeded):
    storage, endpoint, _files = seeded
    assert isinstance(storage, ObjectStoreStorage)
    assert storage.root == endpoint.location("tbl")
    assert storage.uri(f"{LOG}/x.json") == f"{endpoint.location('tbl')}/{LOG}/x.json"
    assert storage.uri("") == endpoint.location("tbl")
    assert storage.local_file(f"{LOG}/_last_checkpoint") is None
    assert (storage.has_directories, storage.lists_names_cheaply) == (False, False)


def test_list_dir_and_start_after(seeded):
    storage, _endpoint, files = seeded
    listed = storage.list_dir(LOG)
    expected = sorted(p for p in files if p.startswith(f"{LOG}/") and p.count("/") == 1)
    assert [s.path for s in listed] == expected
    assert all(s.size == len(files[s.path]) for s in listed)
    now_ms = time.time() * 1000
    assert all(abs(s.modification_time_ms - now_ms) < 600_000 for s in listed)
    tail = storage.list_dir(LOG, start_after="00000000000000000000.json")
    assert [s.path for s in tail] == [p for p in expected if p > f"{LOG}/00000000000000000000.json"]
    assert storage.list_dir(LOG, start_after="_last_checkpoint") == []
    assert [s.path for s in storage.list_dir("")] == ["part-0.parquet"]
    assert storage.list_dir("nope") == []


def test_list_names_walk_and_exists(seeded):
    storage, _endpoint, files = seeded
    assert storage.list_names("") == {LOG, "part-0.parquet", "p=1"}
    assert storage.list_names("p=1") == {"part-1.parquet", "q=2"}
    assert storage.list_names("nope") == set()
    with pytest.raises(NotADirectoryError):
        storage.list_names("part-0.parquet")
    walked = list(storage.walk_files())
    assert sorted(s.path for s in walked) == sorted(files)
    assert {s.path: s.size for s in walked} == {p: len(d) for p, d in files.items()}
    assert sorted(s.path for s in storage.walk_files("p=1")) == ["p=1/part-1.parquet",
                                                                  "p=1/q=2/part-2.parquet"]
    assert storage.is_dir("p=1") and storage.is_dir(LOG) and not storage.is_dir("p=2")
    assert not storage.is_dir("part-0.parquet")
    assert storage.exists("p=1/part-1.parquet") and storage.exists("p=1")
    assert not storage.exists("p=1/nope") and not storage.exists("p=")
    assert list(storage.walk_dirs()) == [] and storage.remove_empty_dir("p=1") is False


def test_read_bytes_range_status_and_parquet_footer(seeded):
    storage, _endpoint, files = seeded
    rel = f"{LOG}/00000000000000000001.json"
    assert storage.read_bytes(rel) == files[rel]
    assert storage.read_range(rel, 2, 5) == files[rel][2:7]
    assert storage.read_range(rel, 10, 1000) == files[rel][10:]       # fewer at the end
    assert storage.read_range(rel, len(files[rel]) + 5, 10) == b""    # past the end
    status = storage.status(rel)
    assert (status.path, status.size) == (rel, len(files[rel]))
    with pytest.raises(FileNotFoundError):
        storage.read_bytes("nope.json")
    with pytest.raises(FileNotFoundError):
        storage.status("nope.json")
    with storage.open_input("part-0.parquet") as fh:
        parquet = pq.ParquetFile(fh)
        assert parquet.metadata.num_rows == 1000 and parquet.metadata.num_row_groups == 4
        assert parquet.read_row_group(2).column("id").to_pylist() == list(range(500, 750))
    with pytest.raises(FileNotFoundError):
        storage.open_input("nope.parquet")
    with pytest.raises(NotImplementedError):
        storage.set_modification_time(rel, 0)


# --- writing: S3 and Azure ------------------------------------------------------------------------

def test_put_if_absent_twice_and_write_atomic(writable):
    storage, endpoint = writable
    rel = f"{LOG}/00000000000000000000.json"
    storage.put_if_absent(rel, b"first")
    with pytest.raises(CommitFileExistsError) as info:
        storage.put_if_absent(rel, b"second")
    assert info.value.exit_code == 4 and rel in info.value.message
    assert endpoint.read("tbl", rel) == b"first"
    storage.write_atomic(f"{LOG}/_last_checkpoint", b'{"version":0}')
    storage.write_atomic(f"{LOG}/_last_checkpoint", b'{"version":1}')
    assert endpoint.read("tbl", f"{LOG}/_last_checkpoint") == b'{"version":1}'
    assert endpoint.keys("tbl") == [rel, f"{LOG}/_last_checkpoint"]


def test_put_if_absent_race_has_one_winner(writable):
    storage, endpoint = writable
    rel = f"{LOG}/00000000000000000007.json"
    barrier = threading.Barrier(8)
    outcomes: dict[int, str] = {}

    def commit(i: int) -> None:
        barrier.wait()
        try:
            storage.put_if_absent(rel, f"writer {i}".encode())
            outcomes[i] = "won"
        except CommitFileExistsError:
            outcomes[i] = "lost"

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    winners = [i for i, o in outcomes.items() if o == "won"]
    assert len(outcomes) == 8 and len(winners) == 1
    assert endpoint.read("tbl", rel) == f"writer {winners[0]}".encode()


def test_atomic_file_publishes_on_success_only(writable):
    storage, endpoint = writable
    data = _parquet_bytes(5000)
    with storage.atomic_file(f"{LOG}/00000000000000000010.checkpoint.parquet") as path:
        Path(path).write_bytes(data)
    assert endpoint.read("tbl", f"{LOG}/00000000000000000010.checkpoint.parquet") == data
    with pytest.raises(RuntimeError):
        with storage.atomic_file(f"{LOG}/00000000000000000011.checkpoint.parquet") as path:
            Path(path).write_bytes(b"partial")
            raise RuntimeError("writer failed")
    assert not Path(path).exists()
    assert endpoint.keys("tbl") == [f"{LOG}/00000000000000000010.checkpoint.parquet"]


def test_delete_reports_whether_it_deleted(writable):
    storage, endpoint = writable
    obstore.put(endpoint.store("tbl"), "p=1/a.parquet", b"a")
    assert storage.delete("p=1/a.parquet") is True
    assert storage.delete("p=1/a.parquet") is False
    assert endpoint.keys("tbl") == []


# --- is put-if-absent atomic? the probe -----------------------------------------------------------

def test_probe_accepts_a_compliant_endpoint_and_leaves_nothing(writable):
    storage, endpoint = writable
    assert storage.atomic_put_if_absent is True and storage.not_atomic_reason is None
    assert endpoint.keys("tbl") == []


def test_probe_refuses_an_endpoint_that_ignores_if_none_match(s3_endpoint):
    proxy = HeaderStrippingProxy(s3_endpoint.storage_options["AWS_ENDPOINT_URL"])
    try:
        options = dict(s3_endpoint.storage_options, AWS_ENDPOINT_URL=proxy.url)
        storage = open_storage(s3_endpoint.location("tbl"), options=options)
        assert storage.atomic_put_if_absent is False
        reason = storage.not_atomic_reason or ""
        assert "ignored If-None-Match" in reason and proxy.url in reason
        assert "testing" not in reason
        # The probe object is gone (or, were its delete lost, named like our temporary files).
        assert all(is_package_temp(k) for k in s3_endpoint.keys("tbl"))
        assert s3_endpoint.keys("tbl") == []
        # A commit is refused before anything is written, with the reason.
        with pytest.raises(StorageNotAtomicError) as info:
            storage.put_if_absent(f"{LOG}/00000000000000000000.json", b"commit")
        assert info.value.exit_code == 2 and "If-None-Match" in info.value.message
        assert s3_endpoint.keys("tbl") == []
    finally:
        proxy.stop()


def test_credentials_from_the_environment_and_options_win(s3_endpoint, monkeypatch):
    # Only the endpoint is given as an option; the keys come from the standard variables.
    options = s3_endpoint.storage_options
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", options["AWS_ACCESS_KEY_ID"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", options["AWS_SECRET_ACCESS_KEY"])
    monkeypatch.setenv("AWS_REGION", options["AWS_REGION"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # wrong: refused
    obstore.put(s3_endpoint.store("tbl"), f"{LOG}/00000000000000000000.json", b"c0")
    explicit = {"AWS_ENDPOINT_URL": options["AWS_ENDPOINT_URL"], "AWS_ALLOW_HTTP": "true"}
    storage = open_storage(s3_endpoint.location("tbl"), options=explicit)
    assert [s.path for s in storage.list_dir(LOG)] == [f"{LOG}/00000000000000000000.json"]
    # Without the option, the environment's (wrong) endpoint is used: unreachable, quickly.
    error, elapsed = _timed(lambda: open_storage(s3_endpoint.location("tbl"),
                                                 options={"AWS_ALLOW_HTTP": "true"}).list_dir(LOG))
    assert isinstance(error, StorageUnreachableError) and elapsed < 10


# --- errors: typed, fast, without secrets ----------------------------------------------------------

def _timed(fn):
    start = time.monotonic()
    with pytest.raises(Exception) as info:
        fn()
    return info.value, time.monotonic() - start


def test_unknown_scheme_is_unsupported_storage():
    error, elapsed = _timed(lambda: ObjectStoreStorage.from_location("nosuch://b/t"))
    assert isinstance(error, UnsupportedStorageError) and error.exit_code == 2
    assert "s3://" in error.message and elapsed < 10


def test_bad_account_key_on_azure_is_access_denied(azure_endpoint):
    secret = base64.b64encode(b"not the account key, 64 bytes long.............................").decode()
    options = dict(azure_endpoint.storage_options, AZURE_STORAGE_ACCOUNT_KEY=secret)
    storage = open_storage(azure_endpoint.location("tbl"), options=options)
    error, elapsed = _timed(lambda: storage.list_dir(LOG))
    assert isinstance(error, StorageAccessDeniedError), error
    assert error.exit_code == 2 and elapsed < 10
    assert secret not in str(error) and azure_endpoint.location("tbl") in str(error)


def test_bad_access_key_on_s3_is_access_denied(s3_endpoint):
    # moto checks credentials only with its IAM authorisation on (a process-wide setting of the
    # in-process server): on for this test only, with a key no IAM user has.
    from moto import settings

    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYBADKEYSECRET"
    options = dict(s3_endpoint.storage_options, AWS_ACCESS_KEY_ID="AKIAUNKNOWNKEY000000",
                   AWS_SECRET_ACCESS_KEY=secret)
    storage = open_storage(s3_endpoint.location("tbl"), options=options)
    previous = settings.INITIAL_NO_AUTH_ACTION_COUNT
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    try:
        error, elapsed = _timed(lambda: storage.list_dir(LOG))
    finally:
        settings.INITIAL_NO_AUTH_ACTION_COUNT = previous
    assert isinstance(error, StorageAccessDeniedError), error
    assert error.exit_code == 2 and elapsed < 10 and secret not in str(error)


@pytest.mark.parametrize("kind", ["s3", "azure"])
def test_missing_bucket_is_table_not_found(kind, request):
    endpoint = request.getfixturevalue(f"{kind}_endpoint")
    location = f"{endpoint.scheme}://no-such-bucket-{free_port()}/tbl"
    storage = open_storage(location, options=endpoint.storage_options)
    error, elapsed = _timed(lambda: storage.list_dir(LOG))
    assert isinstance(error, TableNotFoundError), error
    assert error.exit_code == 2 and elapsed < 10 and "does not exist" in error.message


@pytest.mark.parametrize("kind", ["s3", "azure"])
def test_refused_port_is_unreachable_within_10s(kind):
    port = free_port()  # nothing listens there
    secret = "s3cr3t-value-that-must-not-show"
    if kind == "s3":
        location = "s3://bucket/tbl"
        options = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "k",
                   "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1",
                   "AWS_ALLOW_HTTP": "true"}
    else:
        location = "az://container/tbl"
        options = {"AZURE_STORAGE_ACCOUNT_NAME": "devstoreaccount1",
                   "AZURE_STORAGE_ACCOUNT_KEY": "c2VjcmV0", "AZURE_STORAGE_SAS_KEY": secret,
                   "AZURE_STORAGE_ENDPOINT": f"http://127.0.0.1:{port}/devstoreaccount1",
                   "AZURE_ALLOW_HTTP": "true"}
        options.pop("AZURE_STORAGE_SAS_KEY")
    storage = open_storage(location, options=options)
    error, elapsed = _timed(lambda: storage.list_dir(LOG))
    assert isinstance(error, StorageUnreachableError), error
    assert error.exit_code == 2 and elapsed < 10 and secret not in str(error)
    assert str(port) in error.message


def test_silent_endpoint_is_unreachable_within_10s():
    # A server that accepts connections and never answers (a hung proxy or load balancer).
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        port = listener.getsockname()[1]
        options = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "k",
                   "AWS_SECRET_ACCESS_KEY": "s3cr3t", "AWS_REGION": "us-east-1",
                   "AWS_ALLOW_HTTP": "true"}
        storage = open_storage("s3://bucket/tbl", options=options)
        error, elapsed = _timed(lambda: storage.list_dir(LOG))
    finally:
        listener.close()
        for conn in accepted:
            conn.close()
    assert isinstance(error, StorageUnreachableError), error
    assert elapsed < 10 and "s3cr3t" not in str(error)


def test_unknown_option_is_refused_before_any_request():
    error, _ = _timed(lambda: open_storage("s3://bucket/t", options={"AWS_NO_SUCH_KEY": "v4lue"}))
    assert isinstance(error, BadStorageOptionError) and "AWS_NO_SUCH_KEY" in error.message
    assert "v4lue" not in str(error)


# --- file:// through obstore's LocalStore -----------------------------------------------------------

def test_file_uri_through_object_store_when_asked(tmp_path):
    root = tmp_path / "t"
    storage = open_storage(f"file://{root}", options={"DELTA_DOWNGRADE_STORAGE": "object_store"})
    assert isinstance(storage, ObjectStoreStorage) and storage.local_file("x") is None
    assert storage.atomic_put_if_absent is True
    storage.put_if_absent(f"{LOG}/00000000000000000000.json", b"a")
    with pytest.raises(CommitFileExistsError):
        storage.put_if_absent(f"{LOG}/00000000000000000000.json", b"b")
    storage.write_atomic(f"{LOG}/_last_checkpoint", b"{}")
    assert (root / LOG / "00000000000000000000.json").read_bytes() == b"a"
    assert [s.path for s in storage.list_dir(LOG, start_after="00000000000000000000.json")] == [
        f"{LOG}/_last_checkpoint"]
    assert storage.delete(f"{LOG}/_last_checkpoint") is True
    assert storage.delete(f"{LOG}/_last_checkpoint") is False


# --- commit files kept for later reads -------------------------------------------------------------

def test_commit_files_are_kept_after_a_read_or_a_write_and_forgotten_on_delete(writable):
    """A commit is written once and never changed (PROTOCOL.md "Delta Log Entries"): its bytes
    are served again without a request. To see that, the object is replaced behind the storage's
    back (what no Delta writer does): the storage still returns what it read or wrote; a file
    that may change (``_last_checkpoint``) is read again; a delete forgets the commit."""
    import obstore

    storage, endpoint = writable
    commit = "_delta_log/00000000000000000000.json"
    storage.put_if_absent(commit, b'{"commitInfo":{}}\n')
    storage.write_atomic("_delta_log/_last_checkpoint", b'{"version":0,"size":1}')
    raw = endpoint.store("tbl")
    obstore.put(raw, commit, b"replaced behind our back\n")
    obstore.put(raw, "_delta_log/_last_checkpoint", b'{"version":1,"size":1}')
    assert storage.read_bytes(commit) == b'{"commitInfo":{}}\n'
    assert storage.read_bytes("_delta_log/_last_checkpoint") == b'{"version":1,"size":1}'
    assert storage.delete(commit)
    with pytest.raises(FileNotFoundError):
        storage.read_bytes(commit)
    obstore.put(raw, "_delta_log/00000000000000000001.json", b"first\n")
    assert storage.read_bytes("_delta_log/00000000000000000001.json") == b"first\n"
    obstore.put(raw, "_delta_log/00000000000000000001.json", b"second\n")
    assert storage.read_bytes("_delta_log/00000000000000000001.json") == b"first\n"
