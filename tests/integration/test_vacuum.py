"""VACUUM (operations/vacuum.py): the write-protocol check, retention, and what is kept.

Time is a ManualClock; data files are written "now" (real time), so advancing the clock ages them.
Tombstones carry the clock's time as deletionTimestamp.

The cases taking ``vacuum_backend`` run on local disk and on S3 (VACUUM on an object
store obeys the same rules): on S3 the table built locally is mirrored into a moto bucket, objects
back-dated to their local modification times, and the bucket's VACUUM must give the local run's
answer (tests/vacuum_backends.py says what differs: no directories on an object store).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

from msgspec.structs import replace
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.protocol.actions import AddFile, RemoveFile
from delta_downgrade.app.cli import main
from delta_downgrade.clock import ManualClock
from delta_downgrade.protocol.dv_paths import dv_relative_path, encode_uuid_dv
from delta_downgrade.errors import UnsupportedFeaturesError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.vacuum import (
    VacuumNegativeRetentionError, VacuumRetentionTooShortError, checksum_companion, is_candidate,
    vacuum,
)
from delta_downgrade.protocol import Protocol
from delta_downgrade_tools.builders import TableBuilder

from tests.oracle import same_rows
from tests.vacuum_backends import BACKENDS, make_backend

DAY_MS = 24 * 3600 * 1000
SCHEMA = pa.schema([("id", pa.int64())])
DV_PROTOCOL = Protocol(3, 7, {"deletionVectors"}, {"deletionVectors"})
UNKNOWN_WRITER = Protocol(1, 7, None, {"appendOnly", "invariants", "someUnknownWriterFeature"})


def _files(path: str) -> set[str]:
    """Every file of the table outside _delta_log, relative."""
    out = set()
    for dirpath, _dirs, names in os.walk(path):
        rel = os.path.relpath(dirpath, path)
        if rel.split(os.sep)[0] == "_delta_log":
            continue
        out.update(os.path.normpath(os.path.join(rel, n)).replace(os.sep, "/") for n in names)
    return out


def _log_files(path: str) -> list[str]:
    return sorted(os.listdir(os.path.join(path, "_delta_log")))


def _touch(path: str, rel: str, mtime_ms: int, data: bytes = b"x") -> str:
    full = os.path.join(path, *rel.split("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as fh:
        fh.write(data)
    os.utime(full, (mtime_ms / 1000, mtime_ms / 1000))
    return rel


def _commit_unwritable_protocol(builder: TableBuilder, protocol: Protocol) -> int:
    """Commit a protocol this package cannot write. TableBuilder (rightly) refuses that, so the
    commit file is written by hand, as another client would."""
    version = builder.version + 1
    lines = [{"commitInfo": {"timestamp": builder.clock.now_ms(), "operation": "UPGRADE PROTOCOL",
                             "operationParameters": {}}},
             {"protocol": protocol.to_action()}]
    builder.storage.put_if_absent(f"_delta_log/{version:020d}.json",
                                  "".join(json.dumps(line) + "\n" for line in lines).encode())
    builder.log.refresh()
    return version


def _live_paths(builder: TableBuilder) -> list[str]:
    return sorted(f.decoded_path for f in builder.log.refresh().snapshot().state().files.values())


def _paths_by_id(builder: TableBuilder) -> list[str]:
    """The live single-row files, ordered by the id they hold."""
    by_id = {pq.read_table(os.path.join(builder.path, p))["id"][0].as_py(): p for p in _live_paths(builder)}
    return [by_id[k] for k in sorted(by_id)]


@pytest.fixture(params=BACKENDS)
def vacuum_backend(request):
    """Local disk, or S3 compared with local disk (tests/vacuum_backends.py)."""
    return make_backend(request)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def table(tmp_path, clock):
    """Three single-file commits a, b, c (ids 1, 2, 3)."""
    builder = TableBuilder(tmp_path / "t", clock)
    builder.create(SCHEMA, rows=[{"id": 1}])
    builder.append([{"id": 2}])
    builder.append([{"id": 3}])
    return builder


# --- what is kept, what is deleted ---------------------------------------------------------------

def test_old_removes_deleted_recent_removes_and_live_files_kept(table, clock, vacuum_backend):
    first, second, third = _paths_by_id(table)

    table.remove_files([first])                  # tombstone at day 0
    clock.advance(days=8)
    table.remove_files([second])                 # tombstone at day 8
    clock.advance(days=1)                        # now: day 9, default retention 7 days
    log_before = _log_files(table.path)

    result = vacuum_backend.vacuum(table.path, clock=clock)

    assert result.files_to_delete == [first] == result.deleted
    assert not vacuum_backend.exists(table.path, first)
    assert vacuum_backend.exists(table.path, second)   # tombstone within retention
    assert vacuum_backend.exists(table.path, third)    # live
    assert result.retention_ms == 7 * DAY_MS == result.configured_retention_ms
    assert result.delete_before_ms == clock.now_ms() - 7 * DAY_MS
    assert result.referenced_count == 2 and result.kept_count == 2
    assert _log_files(table.path) == log_before, "VACUUM writes no commit"
    assert vacuum_backend.log_files(table.path) == {f"_delta_log/{n}" for n in log_before}

    clock.advance(days=8)                        # now the day-8 tombstone has expired too
    assert vacuum_backend.vacuum(table.path, clock=clock).deleted == [second]
    assert vacuum_backend.files(table.path) == {third}


def test_unreferenced_files_younger_than_retention_are_kept(table, clock, vacuum_backend):
    clock.advance(days=30)
    old = _touch(table.path, "orphan-old.parquet", clock.now_ms() - 8 * DAY_MS)
    young = _touch(table.path, "orphan-young.parquet", clock.now_ms() - 6 * DAY_MS)
    uncommitted = _touch(table.path, "p=1/part-uncommitted.parquet", clock.now_ms())

    result = vacuum_backend.vacuum(table.path, clock=clock)

    assert result.deleted == [old]
    assert result.recent_unreferenced_count == 2
    assert vacuum_backend.exists(table.path, young)
    assert vacuum_backend.exists(table.path, uncommitted)


def test_hidden_paths_and_the_log_are_never_deleted_but_change_data_is(table, clock, vacuum_backend):
    clock.advance(days=30)
    old = clock.now_ms() - 20 * DAY_MS
    hidden = [_touch(table.path, rel, old) for rel in (
        "_delta_log/00000000000000000099.json.tmp", "_delta_log/_staged_commits/x.json",
        "_tmp/part-0.parquet", ".hidden.parquet", "sub/.other.parquet.crc", "sub/_SUCCESS",
        "_delta_index/idx.bin")]
    companion = _touch(table.path, "sub/.part-0.parquet.crc", old)
    cdc_old = _touch(table.path, "_change_data/cdc-00000.c000.snappy.parquet", old)
    cdc_new = _touch(table.path, "_change_data/cdc-00001.c000.snappy.parquet", clock.now_ms())
    data = _touch(table.path, "sub/part-0.parquet", old)
    log_before = _log_files(table.path)

    result = vacuum_backend.vacuum(table.path, clock=clock)

    assert sorted(result.deleted) == sorted([cdc_old, data])
    for rel in hidden + [cdc_new]:
        assert vacuum_backend.exists(table.path, rel), rel
    # the checksum companion of a deleted file goes with it
    assert not vacuum_backend.exists(table.path, companion)
    assert result.checksum_companions == [companion]
    assert _log_files(table.path) == log_before


def test_candidate_rules():
    assert is_candidate("part-0.parquet", [], iceberg_metadata_hidden=False)
    assert is_candidate("_change_data/x.parquet", [], iceberg_metadata_hidden=False)
    assert is_candidate("_p=1/x.parquet", ["_p"], iceberg_metadata_hidden=False)
    assert not is_candidate("_p=1/x.parquet", [], iceberg_metadata_hidden=False)
    assert not is_candidate("_delta_log/00000000000000000000.json", [], iceberg_metadata_hidden=False)
    assert not is_candidate("a/.x.crc", [], iceberg_metadata_hidden=False)
    assert is_candidate("metadata/v1.json", [], iceberg_metadata_hidden=False)
    assert not is_candidate("metadata/v1.json", [], iceberg_metadata_hidden=True)
    assert checksum_companion("a/b.parquet") == "a/.b.parquet.crc"
    assert checksum_companion("b.parquet") == ".b.parquet.crc"


def test_partitioned_table_and_encoded_paths(tmp_path, clock, vacuum_backend):
    builder = TableBuilder(tmp_path / "t", clock)
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    builder.create(schema, partition_columns=["p"], rows=[{"id": 1, "p": "a b"}, {"id": 2, "p": "c"}])
    gone = [path for path in _live_paths(builder) if path.startswith("p=a b/")]
    assert gone, "the partition value with a space is URL-encoded in the log, decoded on disk"
    builder.remove_files([f.path for f in builder.log.snapshot().state().files.values()
                          if f.decoded_path in gone])
    clock.advance(days=8)

    result = vacuum_backend.vacuum(builder.path, clock=clock)

    assert result.deleted == gone
    assert vacuum_backend.files(builder.path) == set(_live_paths(builder))


def test_paths_outside_the_table_are_ignored(tmp_path, clock):
    outside = tmp_path / "source"
    outside.mkdir()
    foreign = _touch(str(outside), "part-foreign.parquet", clock.now_ms() - 30 * DAY_MS)
    builder = TableBuilder(tmp_path / "t", clock)
    builder.create(SCHEMA, rows=[{"id": 1}])
    absolute = AddFile(path=f"file://{outside}/{foreign}", size=1, modificationTime=0)
    builder.commit([absolute])
    builder.remove_files([absolute.path])
    clock.advance(days=30)

    result = vacuum(builder.path, clock=clock)

    assert result.files_to_delete == []
    assert (outside / foreign).exists()


def test_a_commit_during_planning_is_taken_into_account(table, clock, monkeypatch):
    import delta_downgrade.operations.vacuum as vacuum_module

    first = _paths_by_id(table)[0]
    readd = next(f for f in table.log.snapshot().state().files.values() if f.decoded_path == first)
    table.remove_files([first])
    clock.advance(days=9)
    real_plan = vacuum_module.plan_vacuum
    calls = []

    def plan_then_concurrent_commit(log, snapshot, **kw):
        result = real_plan(log, snapshot, **kw)
        if not calls:  # a concurrent writer re-adds the file (e.g. RESTORE) after our listing
            table.commit([readd], "RESTORE")
        calls.append(result.version)
        return result

    monkeypatch.setattr(vacuum_module, "plan_vacuum", plan_then_concurrent_commit)
    result = vacuum(table.path, clock=clock)

    assert calls == [3, 4]
    assert result.version == 4 and result.deleted == []
    assert os.path.exists(os.path.join(table.path, first))


# --- deletion vectors -------------------------------------------------------------------------------

def _add_with_dv(builder: TableBuilder, rows, *, prefix: str = "") -> tuple[AddFile, str]:
    """Commit one data file carrying a 'u' DV whose .bin holds arbitrary bytes."""
    dv_uuid = uuid.uuid4()
    dv_rel = f"{prefix}/deletion_vector_{dv_uuid}.bin" if prefix else f"deletion_vector_{dv_uuid}.bin"
    _touch(builder.path, dv_rel, builder.clock.now_ms() - 1000, b"\x01not-a-real-bitmap")
    (add,) = builder.write_files(rows)
    add = replace(add, deletionVector={"storageType": "u", "pathOrInlineDv": encode_uuid_dv(dv_uuid, prefix),
                                       "offset": 1, "sizeInBytes": 10, "cardinality": 1})
    builder.commit([add], "DELETE")
    return add, dv_rel


def test_dv_of_a_tombstone_is_kept_within_retention_and_deleted_after(tmp_path, clock, vacuum_backend):
    builder = TableBuilder(tmp_path / "t", clock)
    builder.create(SCHEMA, protocol=DV_PROTOCOL, configuration={"delta.enableDeletionVectors": "true"},
                   rows=[{"id": 0}])
    add, dv_rel = _add_with_dv(builder, [{"id": 1}, {"id": 2}])
    live_add, live_dv = _add_with_dv(builder, [{"id": 3}, {"id": 4}], prefix="ab")
    orphan_dv = _touch(builder.path, f"deletion_vector_{uuid.uuid4()}.bin", clock.now_ms() - 1000)
    clock.advance(days=8)
    builder.remove_files([add.path])             # the DV is now referenced by this tombstone only
    clock.advance(days=1)

    result = vacuum_backend.vacuum(builder.path, clock=clock)

    assert result.deleted == [orphan_dv]
    for rel in (add.decoded_path, dv_rel, live_add.decoded_path, live_dv):
        assert vacuum_backend.exists(builder.path, rel), rel

    clock.advance(days=7)                        # the tombstone expires
    result = vacuum_backend.vacuum(builder.path, clock=clock)

    assert sorted(result.deleted) == sorted([add.decoded_path, dv_rel])
    assert vacuum_backend.exists(builder.path, live_dv), "a live add's DV (prefix dir) stays"


def test_an_unresolvable_dv_refuses_vacuum(tmp_path, clock):
    from delta_downgrade.errors import CorruptLogError

    builder = TableBuilder(tmp_path / "t", clock)
    builder.create(SCHEMA, protocol=DV_PROTOCOL, rows=[{"id": 0}])
    (add,) = builder.write_files([{"id": 1}])
    builder.commit([replace(add, deletionVector={"storageType": "u", "pathOrInlineDv": "short",
                                                 "offset": 1, "sizeInBytes": 1, "cardinality": 1})])
    orphan = _touch(builder.path, "orphan.parquet", 1_000)
    clock.advance(days=30)
    with pytest.raises(CorruptLogError, match="cannot be resolved"):
        vacuum(builder.path, clock=clock)
    assert os.path.exists(os.path.join(builder.path, orphan))


def test_dv_tombstone_keeps_the_dv_file(tmp_path, clock):
    """A DROP FEATURE 'DV tombstone' (delta-spark's DeletionVectorsRemoval): a remove whose path IS the DV file."""
    builder = TableBuilder(tmp_path / "t", clock)
    builder.create(SCHEMA, protocol=DV_PROTOCOL, rows=[{"id": 0}])
    dv_rel = _touch(builder.path, f"deletion_vector_{uuid.uuid4()}.bin", clock.now_ms())

    clock.advance(days=8)
    builder.commit([RemoveFile(path=dv_rel, deletionTimestamp=clock.now_ms(), dataChange=False)],
                   "Deletion Vector Tombstones")
    clock.advance(days=1)
    assert vacuum(builder.path, clock=clock).deleted == []
    clock.advance(days=7)
    assert vacuum(builder.path, clock=clock).deleted == [dv_rel]


# --- a killed rewrite's leftovers --------------------------------------------------------------------

def _committer_leftovers(output_dir: str, mtime_ms: int, table_path: str) -> list[str]:
    """What Hadoop's FileOutputCommitter (algorithm 1, Spark's default) leaves in ``output_dir``
    when the job is killed: a task attempt still writing (``_temporary/0/_temporary/attempt_…``)
    and a committed task (``_temporary/0/task_…``), each file with its local ``.crc``."""
    job = "202401010000_0001"
    out = []
    for i, folder in enumerate((f"_temporary/0/_temporary/attempt_{job}_m_000000_0",
                                f"_temporary/0/task_{job}_m_000001")):
        name = f"part-0000{i}-{uuid.uuid4()}-c000.snappy.parquet"
        out.append(_touch(table_path, f"{output_dir}/{folder}/{name}", mtime_ms))
        out.append(_touch(table_path, f"{output_dir}/{folder}/.{name}.crc", mtime_ms))
    return out


def test_a_killed_rewrites_committer_work_area_goes_after_the_retention(tmp_path, clock, vacuum_backend):
    """Column-mapping removal and type widening write each output into a fresh
    ``<dir>/rewrite-<16 hex>/`` (rewrite/file_rewriter.py), the purge into ``dv-purge-<16 hex>/``.
    A killed Spark write leaves the committer's ``_temporary/`` there: hidden, so no VACUUM rule
    would ever list it, but this package's own, so it is treated as any unreferenced file (kept
    within the retention, a rewrite may be running; deleted after it). Other hidden names, in
    those directories or elsewhere, stay hidden; the finished rewrite's file is an ordinary data
    file. On local disk the emptied work areas (and an output directory left empty) are removed;
    an object store has no directories."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    builder = TableBuilder(tmp_path / "t", clock)
    builder.create(schema, partition_columns=["p"], rows=[{"id": 1, "p": "a"}, {"id": 2, "p": "b"}])
    state = builder.log.snapshot().state()
    old = next(f for f in state.files.values() if f.decoded_path.startswith("p=a/"))
    # A finished rewrite of p=a's file: its output is the data file now, the input is removed.
    done = f"p=a/rewrite-{uuid.uuid4().hex[:16]}"
    new_name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    new_file = f"{done}/{new_name}"
    _touch(builder.path, new_file, clock.now_ms(), Path(builder.path, old.decoded_path).read_bytes())
    new_crc = _touch(builder.path, f"{done}/.{new_name}.crc", clock.now_ms())
    builder.commit([replace(old, path=new_file, dataChange=False),
                    RemoveFile(path=old.path, deletionTimestamp=clock.now_ms(), dataChange=False,
                               partitionValues=old.partitionValues, size=old.size)], "ALTER TABLE")
    killed = f"p=b/rewrite-{uuid.uuid4().hex[:16]}"
    purge = f"dv-purge-{uuid.uuid4().hex[:16]}"
    leftovers = (_committer_leftovers(killed, clock.now_ms(), builder.path)
                 + _committer_leftovers(purge, clock.now_ms(), builder.path))
    foreign = [_touch(builder.path, rel, clock.now_ms()) for rel in (
        f"{done}/_SUCCESS",                                          # hidden, not a work area
        "p=b/rewrite-not-our-name/_temporary/0/part-0.parquet",      # not an output directory
        "p=b/_temporary/0/part-0.parquet",                           # another writer's work area
        f"_other/rewrite-{uuid.uuid4().hex[:16]}/_temporary/0/part-0.parquet",  # below a hidden dir
        f"{killed}/sub/_temporary/0/part-0.parquet")]                # not right below the output
    clock.advance(days=1)

    within = vacuum_backend.vacuum(builder.path, clock=clock)

    assert within.files_to_delete == [] and within.recent_unreferenced_count == len(leftovers)
    assert within.staging_dirs == []
    assert {*leftovers, *foreign} <= vacuum_backend.files(builder.path)

    clock.advance(days=8)
    after = vacuum_backend.vacuum(builder.path, clock=clock)

    assert sorted(after.deleted) == sorted([*leftovers, old.decoded_path])
    assert after.staging_dirs == sorted([f"{killed}/_temporary", f"{purge}/_temporary"])
    assert vacuum_backend.files(builder.path) == {
        new_file, new_crc, *foreign, *(f.decoded_path for f in builder.log.snapshot().state().files.values())}
    if vacuum_backend.has_directories:
        assert not os.path.exists(os.path.join(builder.path, purge)), "emptied: removed"
        assert not os.path.exists(os.path.join(builder.path, killed, "_temporary"))
        assert os.path.isdir(os.path.join(builder.path, killed, "sub")), "not empty: kept"
        assert f"{purge}/_temporary/0/_temporary" in after.removed_dirs


# --- dry run -------------------------------------------------------------------------------------------

def test_dry_run_lists_the_same_files_and_deletes_nothing(table, clock, vacuum_backend):
    table.remove_files(_live_paths(table)[:2])
    orphan = _touch(table.path, "orphan.parquet", clock.now_ms())
    _touch(table.path, ".orphan.parquet.crc", clock.now_ms())
    clock.advance(days=8)
    before = _files(table.path)

    dry = vacuum_backend.vacuum(table.path, clock=clock, dry_run=True)

    assert dry.dry_run and dry.deleted == []
    assert _files(table.path) == before == vacuum_backend.files(table.path)
    assert len(dry.files_to_delete) == 3 and orphan in dry.files_to_delete
    assert dry.checksum_companions == [".orphan.parquet.crc"]

    real = vacuum_backend.vacuum(table.path, clock=clock)

    assert real.files_to_delete == dry.files_to_delete == real.deleted
    assert real.checksum_companions == dry.checksum_companions
    assert vacuum_backend.files(table.path) == \
        before - set(dry.files_to_delete) - {".orphan.parquet.crc"}


# --- retention ------------------------------------------------------------------------------------------

def test_short_retention_is_refused_unless_overridden(table, clock, vacuum_backend):
    table.remove_files(_live_paths(table)[:1])
    clock.advance(days=2)
    before = _files(table.path)

    for dry_run in (False, True):
        with pytest.raises(VacuumRetentionTooShortError) as info:
            vacuum_backend.vacuum(table.path, retention_hours=24, clock=clock, dry_run=dry_run)
        assert info.value.error_class == "DELTA_DOWNGRADE_VACUUM_RETENTION_TOO_SHORT"
        assert info.value.exit_code == 2
        assert "168 hours" in info.value.message
    assert _files(table.path) == before == vacuum_backend.files(table.path)

    result = vacuum_backend.vacuum(table.path, retention_hours=24, clock=clock,
                                   enforce_retention_check=False)
    assert len(result.deleted) == 1 and result.retention_ms == DAY_MS


def test_retention_equal_or_longer_than_the_table_is_accepted(table, clock):
    assert vacuum(table.path, retention_hours=168, clock=clock).retention_ms == 7 * DAY_MS
    assert vacuum(table.path, retention_hours=200.5, clock=clock).retention_ms == int(200.5 * 3600 * 1000)


def test_negative_retention_is_refused_even_with_the_override(table, clock):
    for hours in (-1, float("nan"), float("inf")):
        with pytest.raises(VacuumNegativeRetentionError):
            vacuum(table.path, retention_hours=hours, clock=clock, enforce_retention_check=False)


def test_table_property_sets_the_default_and_the_floor(table, clock):
    table.set_properties({"delta.deletedFileRetentionDuration": "interval 2 hours"})
    table.remove_files(_live_paths(table)[:1])
    clock.advance(hours=3)

    result = vacuum(table.path, clock=clock)

    assert result.retention_ms == result.configured_retention_ms == 2 * 3600 * 1000
    assert len(result.deleted) == 1
    with pytest.raises(VacuumRetentionTooShortError, match='"2 hours"'):
        vacuum(table.path, retention_hours=1, clock=clock)


# --- the write-protocol check (VACUUM Protocol Check; scenario 76) ------------------------------------

def test_scenario_76_unknown_writer_feature_refuses_vacuum_and_dry_run(table, clock, vacuum_backend):
    removed = _live_paths(table)[0]
    table.remove_files([removed])
    clock.advance(days=30)
    _commit_unwritable_protocol(table, UNKNOWN_WRITER)
    before = _files(table.path)

    for dry_run in (False, True):
        with pytest.raises(UnsupportedFeaturesError) as info:
            vacuum_backend.vacuum(table.path, clock=clock, dry_run=dry_run)
        assert info.value.error_class == "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE"
        assert info.value.features == ["someUnknownWriterFeature"]
        assert info.value.params["unsupportedFeatures"] == "someUnknownWriterFeature"
    # checked before the retention check, whatever the retention
    with pytest.raises(UnsupportedFeaturesError):
        vacuum_backend.vacuum(table.path, clock=clock, retention_hours=0)
    assert _files(table.path) == before == vacuum_backend.files(table.path)
    assert vacuum_backend.exists(table.path, removed)


def test_known_writer_features_do_not_block_vacuum(table, clock):
    table.set_protocol(Protocol(3, 7, {"deletionVectors", "vacuumProtocolCheck"},
                                {"appendOnly", "invariants", "deletionVectors", "vacuumProtocolCheck"}))
    table.remove_files(_live_paths(table)[:1])
    clock.advance(days=8)
    assert len(vacuum(table.path, clock=clock).deleted) == 1


def test_a_checkpoint_protected_table_keeps_its_log_and_the_retained_tombstones(
        tmp_path, clock, vacuum_backend):
    """A table as DROP FEATURE leaves it: vacuumProtocolCheck and checkpointProtection in the
    protocol, ``delta.requireCheckpointProtectionBeforeVersion`` set, checkpoints at and after the
    boundary, the tombstones read from the latest checkpoint. VACUUM passes the gate (it writes
    both features' requirements: it checks the write protocol, and touches no checkpoint), deletes
    the data file of the expired tombstone only, and leaves ``_delta_log`` as it was: rule (a) of
    the Checkpoint Protection RFC holds because VACUUM never looks inside the log."""
    builder = TableBuilder(tmp_path / "t", clock)
    builder.create(SCHEMA, rows=[{"id": 1}])
    builder.append([{"id": 2}])
    builder.append([{"id": 3}])
    first, second, third = _paths_by_id(builder)
    builder.remove_files([first])                # tombstone at day 0
    clock.advance(days=8)
    builder.remove_files([second])               # tombstone at day 8
    builder.set_protocol(Protocol(3, 7, {"vacuumProtocolCheck"},
                                  {"appendOnly", "invariants", "vacuumProtocolCheck", "checkpointProtection"}))
    boundary = builder.version + 2
    builder.set_properties({"delta.requireCheckpointProtectionBeforeVersion": str(boundary)})
    builder.checkpoint(boundary - 1)
    builder.empty_commit()
    builder.checkpoint(boundary)
    clock.advance(days=1)
    log_before = vacuum_backend.log_files(builder.path)
    checkpoints = {f"_delta_log/{v:020d}.checkpoint.parquet" for v in (boundary - 1, boundary)}
    assert checkpoints <= log_before

    result = vacuum_backend.vacuum(builder.path, clock=clock)

    assert result.version == boundary and result.deleted == [first]
    assert vacuum_backend.files(builder.path) == {second, third}
    assert vacuum_backend.log_files(builder.path) == log_before

    clock.advance(days=8)                        # the day-8 tombstone expires too
    assert vacuum_backend.vacuum(builder.path, clock=clock).deleted == [second]
    assert vacuum_backend.log_files(builder.path) == log_before


@pytest.mark.parametrize("name, feature", [("catalog_managed_ict", "catalogManaged")])
def test_golden_tables_with_unwritable_features_are_refused(golden_table, name, feature):
    path = golden_table(name)
    before = _files(path) | {f"_delta_log/{n}" for n in _log_files(path)}
    far_future = ManualClock(4_000_000_000_000)
    for dry_run in (False, True):
        with pytest.raises(UnsupportedFeaturesError) as info:
            vacuum(path, clock=far_future, dry_run=dry_run, retention_hours=0,
                   enforce_retention_check=False)
        assert info.value.error_class == "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE"
        assert feature in info.value.features
    assert _files(path) | {f"_delta_log/{n}" for n in _log_files(path)} == before


@pytest.mark.parametrize("name", ["collations_dbr", "liquid_row_tracking_dbr"])
def test_golden_tables_with_clustering_or_collations_are_vacuumed(golden_table, name):
    """collations and liquid are writer features this package writes: VACUUM runs."""
    path = golden_table(name)
    _touch(path, "orphan.parquet", 1_000)
    result = vacuum(path, clock=ManualClock(4_000_000_000_000))
    assert result.deleted == ["orphan.parquet"]


def test_golden_vacuum_protocol_check_table_is_vacuumed(golden_table):
    path = golden_table("vacuum_protocol_check")
    _touch(path, "orphan.parquet", 1_000)
    result = vacuum(path, clock=ManualClock(4_000_000_000_000))
    assert result.deleted == ["orphan.parquet"]


# --- CLI ------------------------------------------------------------------------------------------------

def test_cli_vacuum(table, capsys):
    """Through ``main``, which parses ``--storage-option`` into ``args.storage_options`` before
    the command runs (the command alone, fed a bare argparse namespace, has none)."""
    orphan = _touch(table.path, "orphan.parquet", 1_000)

    assert main(["vacuum", table.path, "--dry-run", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dry_run"] is True and doc["files_to_delete"] == [orphan] and doc["deleted"] == []

    assert main(["vacuum", table.path, "--retention-hours", "1"]) == 2
    err = capsys.readouterr().err
    assert "DELTA_DOWNGRADE_VACUUM_RETENTION_TOO_SHORT" in err and "168 hours" in err
    assert os.path.exists(os.path.join(table.path, orphan))

    assert main(["vacuum", table.path, "--retention-hours=1", "--override-retention-check"]) == 0
    out = capsys.readouterr().out
    assert "deleted 1 file(s)" in out and orphan in out
    assert not os.path.exists(os.path.join(table.path, orphan))


def test_cli_entry_point_when_wired(table, capsys):
    """Through ``delta-downgrade`` itself, once cli_commands registers ``vacuum``."""
    try:
        code = main(["vacuum", table.path, "--dry-run", "--json"])
    except SystemExit:
        pytest.skip("the vacuum subcommand is not wired into cli_commands yet")
    assert code == 0
    assert json.loads(capsys.readouterr().out)["dry_run"] is True


def test_cli_refusal_exit_code_when_wired(table, capsys):
    _commit_unwritable_protocol(table, UNKNOWN_WRITER)
    try:
        code = main(["vacuum", table.path, "--dry-run"])
    except SystemExit:
        pytest.skip("the vacuum subcommand is not wired into cli_commands yet")
    assert code == 2
    assert "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE" in capsys.readouterr().err


# --- delta-rs still reads the table ------------------------------------------------------------------

def test_delta_rs_reads_the_same_rows_after_vacuum(oracle, table, clock):
    first = _live_paths(table)[0]
    table.remove_files([first])
    clock.advance(days=8)
    table.append([{"id": 4}])
    clock.advance(days=1)
    latest = table.version
    before = oracle.scan_rows(table.path).unwrap()
    before_pyarrow = oracle.pyarrow_rows(table.path).unwrap()

    result = vacuum(table.path, clock=clock)

    assert result.deleted == [first]
    assert oracle.version(table.path).unwrap() == latest
    assert same_rows(oracle.scan_rows(table.path), before)
    assert same_rows(oracle.pyarrow_rows(table.path), before_pyarrow)
    assert len(before) == 3


def _age_data_files(path: str, mtime_ms: int) -> None:
    for rel in _files(path):
        os.utime(os.path.join(path, rel), (mtime_ms / 1000, mtime_ms / 1000))


def test_golden_dv_history_stays_readable_while_tombstones_are_retained(oracle, golden_table):
    """dv_cdf_shared_dv_file_dbr: 8 DV files are referenced only by tombstones of the latest
    state. Keeping them keeps every version readable (by delta-rs, which reads DVs)."""
    path = golden_table("dv_cdf_shared_dv_file_dbr")
    state = DeltaLog(path).snapshot().state()
    stamps = [r.deletionTimestamp for r in state.tombstones.values()]
    assert stamps and all(stamps)
    oldest, newest = min(stamps), max(stamps)
    _age_data_files(path, oldest - DAY_MS)
    latest = DeltaLog(path).latest_version()
    rows_before = {v: oracle.scan_rows(path, version=v).unwrap() for v in range(latest + 1)}
    bins_before = {f for f in _files(path) if f.endswith(".bin")}

    # every tombstone inside the window; every file older than it
    clock = ManualClock(newest + 60_000)
    hours = (clock.now_ms() - (oldest - 3_600_000)) / 3_600_000
    result = vacuum(path, clock=clock, retention_hours=hours, enforce_retention_check=False)

    kept_bins = {f for f in _files(path) if f.endswith(".bin")}
    assert len(bins_before) == 10 and len(kept_bins) == 9, "only the unreferenced DV file goes"
    assert any(f.startswith("_change_data/") for f in result.deleted)
    for version, rows in rows_before.items():
        assert same_rows(oracle.scan_rows(path, version=version), rows), version

    # control: a DV-unaware VACUUM (the reason for the VACUUM Protocol Check RFC) would have deleted the tombstones' DV files,
    # and time travel to the versions that used them would fail
    control = shutil.copytree(path, os.path.join(os.path.dirname(path), "dv-unaware-control"))
    live_dvs = {dv_relative_path(a.dv) for a in state.files.values() if a.dv is not None}
    for rel in kept_bins - live_dvs:
        os.remove(os.path.join(control, rel))
    broken = [v for v in range(latest + 1) if not oracle.scan_rows(control, version=v).ok]
    assert broken, "the kept DV files must be needed by some retained version"
    assert ".bin" in oracle.scan_rows(control, version=broken[0]).error

    # once every tombstone has expired, only the latest state's files (and one DV) remain
    far = ManualClock(newest + 400 * DAY_MS)
    result = vacuum(path, clock=far)
    assert {f for f in _files(path) if f.endswith(".bin")} == {
        f for f in kept_bins if f not in result.deleted}
    assert len([f for f in result.deleted if f.endswith(".bin")]) == 8
    assert same_rows(oracle.scan_rows(path), rows_before[latest])


def test_golden_dv_partitioned_checkpoint_reads_the_same_after_vacuum(oracle, golden_table):
    path = golden_table("dv_partitioned_checkpoint")
    before = oracle.scan_rows(path).unwrap()
    state = DeltaLog(path).snapshot().state()
    live_dvs = {dv_relative_path(a.dv) for a in state.files.values() if a.dv is not None}
    assert live_dvs and len({f for f in _files(path) if f.endswith(".bin")}) == 15
    _age_data_files(path, 1_000)

    result = vacuum(path, clock=ManualClock(4_000_000_000_000))

    # every tombstone (2023) has expired: exactly the DVs of live files remain
    assert {f for f in _files(path) if f.endswith(".bin")} == live_dvs
    assert set(_files(path)) >= {a.decoded_path for a in state.files.values()}
    assert any(f.startswith("part=") for f in result.deleted)
    assert same_rows(oracle.scan_rows(path), before)


def test_original_golden_is_untouched(golden_root, golden_table):
    original = golden_root / "dv_cdf_shared_dv_file_dbr"
    names = sorted(p.name for p in original.iterdir())
    path = golden_table("dv_cdf_shared_dv_file_dbr")
    _age_data_files(path, 1_000)
    vacuum(path, clock=ManualClock(4_000_000_000_000))
    assert sorted(p.name for p in original.iterdir()) == names
    shutil.rmtree(path)
    assert Path(original, "_delta_log").is_dir()
