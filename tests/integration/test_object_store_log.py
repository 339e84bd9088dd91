"""The log on real object-store endpoints (moto S3, Azurite): golden tables uploaded to a bucket
read as they read from local disk; an incremental listing asks for the tail of the log only; a
checkpoint written to the bucket reads back the same; a drop on an endpoint that ignores
conditional creates is refused before anything is written.

The storage is the real ``ObjectStoreStorage``; where a test counts what was asked of it, a
subclass records the calls and passes them on (the endpoint answers)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.errors import StorageNotAtomicError
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.commit import commit
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.format.file_names import LOG_DIR, classic_checkpoint_path, commit_path
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol.actions import AddFile
from delta_downgrade.storage import FileStatus
from delta_downgrade.storage.object_store import ObjectStoreStorage

from tests.object_stores import HeaderStrippingProxy

# As the golden_root fixture finds them: $DELTA_DOWNGRADE_GOLDEN, else ../shared/golden beside the repository.
GOLDEN = Path(os.environ.get("DELTA_DOWNGRADE_GOLDEN")
              or Path(__file__).resolve().parents[3] / "shared" / "golden")
TABLES = ["classic_checkpoint", "multipart_checkpoint", "v2_checkpoint_parquet_sidecars",
          "dv_partitioned_checkpoint"]


class RecordingObjectStore(ObjectStoreStorage):
    """The real object store, recording the ``start_after`` of each listing of ``_delta_log``
    and each whole-file read."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.log_listings: list[str | None] = []
        self.reads: list[str] = []

    def list_dir(self, rel_dir: str, *, start_after: str | None = None) -> list[FileStatus]:
        if rel_dir == LOG_DIR:
            self.log_listings.append(start_after)
        return super().list_dir(rel_dir, start_after=start_after)

    def read_bytes(self, rel_path: str) -> bytes:
        self.reads.append(rel_path)
        return super().read_bytes(rel_path)


def _golden(name: str) -> Path:
    path = GOLDEN / name
    if not path.is_dir():
        pytest.skip(f"golden table {name} is not available")
    return path


def _summary(log: DeltaLog) -> tuple:
    snap = log.snapshot()
    state = snap.state()
    files = sorted((repr(key), add.to_obj()) for key, add in state.files.items())
    tombstones = sorted((repr(key), remove.to_obj()) for key, remove in state.tombstones.items())
    return snap.version, snap.protocol, snap.metadata, files, tombstones


@pytest.fixture(params=["s3", "azure"])
def endpoint(request: pytest.FixtureRequest):
    """S3 and Azure (GCS: fake-gcs-server takes no XML-API PUT, so obstore cannot write there;
    reading is covered by the storage's own tests)."""
    return request.getfixturevalue(f"{request.param}_endpoint")


@pytest.mark.parametrize("name", TABLES)
def test_golden_table_reads_as_on_local_disk(endpoint, name: str) -> None:
    local = _golden(name)
    location = endpoint.upload(local, name)
    remote = DeltaLog(location, storage_options=endpoint.storage_options)
    assert isinstance(remote.storage, ObjectStoreStorage)
    assert _summary(remote) == _summary(DeltaLog(str(local)))
    assert remote.checkpoint_inventory() == [] or [c.version for c in remote.checkpoint_inventory()] == \
        [c.version for c in DeltaLog(str(local)).checkpoint_inventory()]
    assert [(s.start, s.end, s.protocol) for s in remote.protocol_history()] == \
        [(s.start, s.end, s.protocol) for s in DeltaLog(str(local)).protocol_history()]


def test_a_refresh_for_new_commits_lists_only_the_tail_and_a_checkpoint_reads_back(endpoint, tmp_path) -> None:
    local = tmp_path / "t"
    shutil.copytree(_golden("classic_checkpoint"), local)
    location = endpoint.upload(local, "t")
    storage = RecordingObjectStore.from_location(location, endpoint.storage_options)
    log = DeltaLog(location, storage)
    before = log.snapshot()
    # the first listing starts at the checkpoint _last_checkpoint names (PROTOCOL.md "Last
    # Checkpoint File"), not at the start of the log
    hinted = json.loads((local / "_delta_log" / "_last_checkpoint").read_text())["version"]
    assert storage.log_listings == [f"{hinted - 1:020d}"]

    # Another writer commits the next version.
    other = DeltaLog(location, storage_options=endpoint.storage_options)
    add = AddFile(path="new-file.parquet", partitionValues={}, size=7, modificationTime=1_700_000_000_000,
                  dataChange=True)
    written = commit(other, before.version, [add], operation="WRITE")
    assert written == before.version + 1

    storage.log_listings.clear()
    after = log.refresh(Refresh.NEW_COMMITS).snapshot()
    assert after.version == written
    assert ("new-file.parquet", None) in after.state().files
    # one listing, of the tail from the last known version on: not the whole log
    assert storage.log_listings == [f"{before.version:020d}"]

    # A checkpoint written to the bucket reads back as the same checkpoint written on local disk
    # (the same commit applied to the local copy): files with dataChange false, expired
    # tombstones left out (PROTOCOL.md "Checkpoints").
    local_log = DeltaLog(str(local))
    assert commit(local_log, before.version, [add], operation="WRITE") == written
    checkpoint_table(local_log)
    expected = _summary(DeltaLog(str(local)))
    result = checkpoint_table(log)
    assert result.version == written and result.paths == (classic_checkpoint_path(written),)
    assert classic_checkpoint_path(written) in endpoint.keys("t")
    fresh = DeltaLog(location, storage_options=endpoint.storage_options)
    assert fresh.segment().checkpoint is not None and fresh.segment().checkpoint.version == written
    assert fresh.segment().commits == ()
    assert _summary(fresh) == expected


def test_commits_of_a_long_log_are_fetched_concurrently(s3_endpoint, tmp_path) -> None:
    # 120 commits without a checkpoint: every one is read, concurrently (the replay's reads go
    # through a pool), and the state equals the local one.
    from delta_downgrade_tools.builders import TableBuilder
    import pyarrow as pa

    local = str(tmp_path / "long")
    schema = pa.schema([("id", pa.int64())])
    builder = TableBuilder(local)
    builder.create(schema, rows=[{"id": 0}])
    for i in range(1, 120):
        builder.append(pa.Table.from_pylist([{"id": i}], schema=schema))
    location = s3_endpoint.upload(local, "long")
    storage = RecordingObjectStore.from_location(location, s3_endpoint.storage_options)
    log = DeltaLog(location, storage)
    assert _summary(log) == _summary(DeltaLog(local))
    commit_reads = [p for p in storage.reads if p.endswith(".json") and p.startswith(f"{LOG_DIR}/0")]
    assert sorted(set(commit_reads)) == [commit_path(v) for v in range(120)]


def test_drop_on_an_endpoint_that_ignores_conditional_creates_writes_nothing(s3_server, s3_endpoint) -> None:
    # A proxy that strips If-None-Match stands in for an S3-compatible server without
    # conditional writes: the drop is refused (exit 2) before its first write.
    location = s3_endpoint.upload(_golden("vacuum_protocol_check"), "t")
    before = s3_endpoint.keys("t")
    proxy = HeaderStrippingProxy(s3_server.url)
    try:
        options = dict(s3_endpoint.storage_options, AWS_ENDPOINT_URL=proxy.url)
        with pytest.raises(StorageNotAtomicError) as raised:
            drop_feature(location, "vacuumProtocolCheck", storage_options=options)
        assert raised.value.exit_code == 2
        assert "If-None-Match" in str(raised.value)
        # a dry run does not probe (it writes nothing, not even the probe object)
        outcome = drop_feature(location, "vacuumProtocolCheck", committer=PlanRecorder(), storage_options=options)
        assert outcome.protocol_before is not None
    finally:
        proxy.stop()
    assert s3_endpoint.keys("t") == before
