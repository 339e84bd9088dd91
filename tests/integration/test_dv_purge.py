"""DROP FEATURE deletionVectors with the Spark DV purge (delta-spark's DeletionVectorsRemoval: purge, tombstones, fast drop).

Each test checks what an outside reader sees: delta-rs' pyarrow path (the "older reader" that
refuses DVs) must read exactly the rows delta-rs' DV-aware ``scan()`` read before the drop; the
protocol must be the minimum for the remaining features plus checkpointProtection; no DV may be
left; DV tombstones must name exactly the DV files of the removes within retention; and the new
files' statistics must describe the new files.
"""

from __future__ import annotations

import json
import os
import posixpath
from functools import partial
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from oracle import same_rows

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.protocol.actions import AddFile, CommitInfo, RemoveFile
from delta_downgrade.clock import ManualClock
from delta_downgrade.deletion_vectors import DeletionVectorNotFoundError
from delta_downgrade.protocol.dv_paths import dv_relative_path
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.snapshot import read_commit_actions
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.drop.run import DropRun
from delta_downgrade.app.render.inspect import inspect_document
from delta_downgrade.operations.inspect import inspect_table
from delta_downgrade.protocol import Protocol
from delta_downgrade.rewrite.dv_purge import purge_deletion_vectors
from delta_downgrade.rewrite.staging import PURGE_DIR_PREFIX
from delta_downgrade.protocol.table_config import TableConfig
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import DV_PROTOCOL, create_dv_table, delete_rows

pytestmark = [pytest.mark.spark, pytest.mark.oracle]


def dv_rewrites(spark, **purge_options):
    return {"deletionVectors": partial(purge_deletion_vectors, spark=spark, **purge_options)}


def drop_dv(path, spark, clock=None, **purge_options):
    kwargs = {"clock": clock} if clock is not None else {}
    return drop_feature(path, "deletionVectors", rewrites=dv_rewrites(spark, **purge_options), **kwargs)


def log_listing(path):
    return sorted(os.listdir(os.path.join(path, "_delta_log")))


def reorg_commits(path):
    """[(version, removes, adds)] of the purge commits."""
    out = []
    log = DeltaLog(path)
    commits = log.whole_listing().commits
    for version in sorted(commits):
        actions = read_commit_actions(log.storage, commits[version])
        info = next((a for a in actions if isinstance(a, CommitInfo)), None)
        if info is not None and info.operation == "REORG":
            out.append((version, [a for a in actions if isinstance(a, RemoveFile)],
                        [a for a in actions if isinstance(a, AddFile)]))
    return out


def assert_no_dv_left(path):
    doc = inspect_document(inspect_table(path, history=False))
    assert "deletionVectors" not in {f["name"] for f in doc["features"]}
    assert doc["files"]["files_with_deletion_vectors"] == 0
    assert "delta.enableDeletionVectors" not in doc["properties"]


def assert_dv_tombstones_match_removes(path, clock=None):
    """Scenario 58: the DV tombstones are the distinct relative DV paths of the removes within
    ``delta.deletedFileRetentionDuration`` (inline and absolute DVs excluded)."""
    snapshot = DeltaLog(path).snapshot(check_read=False)
    state = snapshot.state()
    now = (clock.now_ms() if clock is not None else None)
    retention = TableConfig(snapshot.metadata.configuration).deleted_file_retention_ms
    expected = set()
    for tomb in state.tombstones.values():
        dv = tomb.dv
        if dv is None or dv.storageType != "u":
            continue
        if now is not None and (tomb.deletionTimestamp or 0) <= now - retention:
            continue
        expected.add(dv_relative_path(dv))
    tombstoned = {t.decoded_path for t in state.tombstones.values()
                  if t.dv is None and posixpath.basename(t.decoded_path).startswith("deletion_vector_")}
    if now is None:
        assert expected <= tombstoned | expected and tombstoned <= expected
    else:
        assert tombstoned == expected
    return tombstoned


def assert_rewritten_files_are_described(path):
    """Every file the purge added: exact numRecords, min/max/nullCount of what it holds, a home in
    the directory of a file it replaced, and the partition values of that file."""
    snapshot = DeltaLog(path).snapshot(check_read=False)
    cm = (snapshot.metadata.configuration.get("delta.columnMapping.mode") or "none") != "none"
    for _version, removes, adds in reorg_commits(path):
        removed_dirs = {posixpath.dirname(r.path): r.partitionValues for r in removes}
        for add in adds:
            assert add.dataChange is False and add.deletionVector is None
            parent = posixpath.dirname(add.path)
            if posixpath.basename(parent).startswith(PURGE_DIR_PREFIX):
                home = posixpath.dirname(parent)
                assert home in removed_dirs and removed_dirs[home] == add.partitionValues
            table = pq.read_table(os.path.join(path, unquote(add.path)))
            stats = json.loads(add.stats)
            assert stats["numRecords"] == table.num_rows > 0
            assert os.path.getsize(os.path.join(path, unquote(add.path))) == add.size
            for name in table.column_names:
                column = table.column(name)
                if name in stats.get("nullCount", {}):
                    assert stats["nullCount"][name] == column.null_count
                t = column.type
                if (pa.types.is_integer(t) or pa.types.is_string(t)) and column.null_count < len(column):
                    mm = pc.min_max(column).as_py()
                    if name in stats.get("minValues", {}):
                        assert stats["minValues"][name] == mm["min"], name
                    if name in stats.get("maxValues", {}):
                        assert stats["maxValues"][name] == mm["max"], name
            if not cm and snapshot.metadata.partitionColumns == []:
                assert stats.get("minValues"), "rewritten files get min/max statistics"


# --- golden tables -------------------------------------------------------------------------------------

GOLDEN_EXPECTED = {
    "dv_basic_no_checkpoint": {"minReaderVersion": 1, "minWriterVersion": 7, "readerFeatures": None,
                               "writerFeatures": ["checkpointProtection"]},
    "dv_partitioned_checkpoint": {"minReaderVersion": 1, "minWriterVersion": 7, "readerFeatures": None,
                                  "writerFeatures": ["checkpointProtection"]},
    "dv_cdf_shared_dv_file_dbr": {"minReaderVersion": 1, "minWriterVersion": 7, "readerFeatures": None,
                                  "writerFeatures": ["changeDataFeed", "checkpointProtection"]},
    "dv_cm_name_checkpoint": {"minReaderVersion": 2, "minWriterVersion": 7, "readerFeatures": None,
                              "writerFeatures": ["checkpointProtection", "columnMapping"]},
    "dv_enabled_no_dvs": {"minReaderVersion": 1, "minWriterVersion": 7, "readerFeatures": None,
                          "writerFeatures": ["checkpointProtection"]},
}


@pytest.mark.parametrize("name", sorted(GOLDEN_EXPECTED))
def test_drop_deletion_vectors_on_golden_table(name, golden_table, spark, oracle):
    path = golden_table(name)
    before = oracle.scan_rows(path).unwrap()
    start = DeltaLog(path).snapshot(check_read=False)
    had_dvs = any(f.dv is not None for f in start.state().files.values())
    # The older reader refuses the table while deletionVectors is a reader feature.
    assert not oracle.pyarrow_rows(path).ok

    outcome = drop_dv(path, spark)

    assert outcome.status == "dropped"
    assert oracle.protocol(path).unwrap() == GOLDEN_EXPECTED[name]
    remaining = start.protocol.features - {"deletionVectors"}
    assert outcome.protocol_after == Protocol.minimum_for(remaining | {"checkpointProtection"})
    assert_no_dv_left(path)
    # Row-level equality with delta-rs' DV-aware scan of the latest version before the drop.
    assert same_rows(oracle.scan_rows(path).unwrap(), before)
    if name != "dv_cm_name_checkpoint":
        # delta-rs' pyarrow path does not apply column mapping (it reads NULLs under reader v2),
        # so it is the oracle only where column mapping is absent.
        assert same_rows(oracle.pyarrow_rows(path).unwrap(), before)
    assert len(reorg_commits(path)) == (1 if had_dvs else 0)
    assert_rewritten_files_are_described(path)
    assert_dv_tombstones_match_removes(path)


def test_golden_shared_dv_file_and_tombstones(golden_table, spark, oracle):
    path = golden_table("dv_cdf_shared_dv_file_dbr")
    clock = ManualClock()
    drop_dv(path, spark, clock=clock)
    tombstoned = assert_dv_tombstones_match_removes(path, clock)
    assert tombstoned, "the purged file's DV file is tombstoned"
    assert all(os.path.exists(os.path.join(path, p)) for p in tombstoned)


def test_cm_rewrite_keeps_physical_names_and_field_ids(golden_table, spark, oracle):
    path = golden_table("dv_cm_name_checkpoint")
    drop_dv(path, spark)
    snapshot = DeltaLog(path).snapshot(check_read=False)
    fields = {f["metadata"]["delta.columnMapping.physicalName"]: f["metadata"]["delta.columnMapping.id"]
              for f in snapshot.schema["fields"]}
    (_version, _removes, adds), = reorg_commits(path)
    for add in adds:
        schema = pq.read_metadata(os.path.join(path, unquote(add.path))).schema
        for i in range(len(schema)):
            column = schema.column(i)
            assert column.name in fields
        arrow = pq.read_schema(os.path.join(path, unquote(add.path)))
        for f in arrow:
            assert int(f.metadata[b"PARQUET:field_id"]) == fields[f.name]


def test_unresolvable_dv_fails_in_the_purge_before_any_commit(golden_table, spark):
    path = golden_table("bad_dv_file_unresolvable")
    files_before = sorted(os.listdir(path))
    listing = log_listing(path)
    run = DropRun(DeltaLog(path), "deletionVectors")
    with pytest.raises(DeletionVectorNotFoundError) as info:
        purge_deletion_vectors(run, spark=spark)
    err = info.value
    assert err.error_class == "DELTA_DOWNGRADE_DV_FILE_NOT_FOUND"
    assert "r4/part-00000-5521fc5e" in str(err) and "deletion_vector_b6a98cdd" in str(err)
    assert "nothing was committed" in str(err).lower()
    assert log_listing(path) == listing
    assert sorted(os.listdir(path)) == files_before  # no data file was written either


def test_unresolvable_dv_drop_commits_nothing(golden_table, spark):
    path = golden_table("bad_dv_file_unresolvable")
    listing = log_listing(path)
    with pytest.raises(DeletionVectorNotFoundError) as info:
        drop_dv(path, spark)
    assert info.value.error_class == "DELTA_DOWNGRADE_DV_FILE_NOT_FOUND"
    assert log_listing(path) == listing


# --- tables built here ---------------------------------------------------------------------------------

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string())])


def _rows(n, parts=("a",)):
    return pa.table({"id": pa.array(range(n), pa.int64()),
                     "name": pa.array([f"n{i:05d}" if i % 11 else None for i in range(n)], pa.string()),
                     "part": pa.array([parts[i % len(parts)] for i in range(n)], pa.string())})


def _ids(rows):
    return sorted(r["id"] for r in rows)


def test_inline_dvs_get_no_tombstones(tmp_path, spark, oracle):
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(100))
    delete_rows(b, pc.field("id").isin([3, 50, 99]), inline=True)
    before = oracle.scan_rows(b.path).unwrap()
    assert len(before) == 97
    drop_dv(b.path, spark)
    after = oracle.pyarrow_rows(b.path).unwrap()
    assert len(after) == 97 and same_rows(after, before)
    assert_no_dv_left(b.path)
    assert assert_dv_tombstones_match_removes(b.path) == set()  # scenario 62: inline DVs
    assert_rewritten_files_are_described(b.path)


def test_dv_file_shared_by_several_data_files(tmp_path, spark, oracle):
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(4000), files=4)
    delete_rows(b, pc.field("id") % 3 == 0 if hasattr(pc.Expression, "__mod__") else
                (lambda r: r["id"] % 3 == 0), shared_file=True)
    bins = [n for n in os.listdir(b.path) if n.endswith(".bin")]
    assert len(bins) == 1
    dvs = {f.dv.unique_id for f in b.log.refresh().snapshot(check_read=False).state().files.values()}
    assert len(dvs) == 4
    before = oracle.scan_rows(b.path).unwrap()
    clock = ManualClock()
    drop_dv(b.path, spark, clock=clock)
    assert same_rows(oracle.pyarrow_rows(b.path).unwrap(), before)
    assert assert_dv_tombstones_match_removes(b.path, clock) == set(bins)
    (_v, removes, adds), = reorg_commits(b.path)
    assert len(removes) == 4 and 1 <= len(adds) <= 4
    assert_rewritten_files_are_described(b.path)


def test_purge_spanning_a_checkpoint(tmp_path, spark, oracle):
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(3000, parts=("a", "b", "c")), partition_columns=["part"], files=2)
    delete_rows(b, lambda r: r["id"] < 100)
    b.checkpoint()
    delete_rows(b, lambda r: r["id"] % 5 == 0)  # merges with the checkpointed DVs
    b.append(_rows(10))
    delete_rows(b, lambda r: r["id"] > 2900)
    assert DeltaLog(b.path).snapshot(check_read=False).segment.checkpoint is not None
    before = oracle.scan_rows(b.path).unwrap()
    drop_dv(b.path, spark)
    assert same_rows(oracle.pyarrow_rows(b.path).unwrap(), before)
    assert_no_dv_left(b.path)
    assert_rewritten_files_are_described(b.path)
    assert_dv_tombstones_match_removes(b.path)


class Crash(Exception):
    pass


def _crash(version, done):
    raise Crash(f"simulated crash after committing v{version} ({done} file(s) done)")


def test_crash_mid_purge_then_rerun(tmp_path, spark, oracle):
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(3000), files=3)
    delete_rows(b, lambda r: r["id"] % 4 == 1)
    before = oracle.scan_rows(b.path).unwrap()

    # An internal failure after the run wrote is reported with the versions it committed.
    with pytest.raises(DeltaDowngradeError, match=r"already committed v2 \(UNSET TBLPROPERTIES\), v3 \(REORG\)") as failed:
        drop_dv(b.path, spark, batch_files=1, on_batch_committed=_crash)
    assert isinstance(failed.value.__cause__, Crash)
    # One batch is committed, the others still carry their DVs; readers see the same rows.
    assert len(reorg_commits(b.path)) == 1
    doc = inspect_document(inspect_table(b.path, history=False))
    assert doc["files"]["files_with_deletion_vectors"] == 2
    assert same_rows(oracle.scan_rows(b.path).unwrap(), before)

    outcome = drop_dv(b.path, spark, batch_files=1)
    assert outcome.status == "dropped"
    assert len(reorg_commits(b.path)) == 3
    assert same_rows(oracle.pyarrow_rows(b.path).unwrap(), before)
    assert_no_dv_left(b.path)
    assert_rewritten_files_are_described(b.path)
    assert_dv_tombstones_match_removes(b.path)


@pytest.mark.parametrize("strategy,stats", [("shuffle", "spark"), ("broadcast", "spark"), ("broadcast", "footer")])
def test_strategies_and_stats_modes(tmp_path, spark, oracle, strategy, stats):
    b = TableBuilder(tmp_path / "t")
    parts = ("a b", "x%y", "[q]*", "plain")
    create_dv_table(b, SCHEMA, _rows(2000, parts=parts), partition_columns=["part"], files=2)
    delete_rows(b, lambda r: r["id"] % 7 == 0 or 500 <= r["id"] < 900)
    before = oracle.scan_rows(b.path).unwrap()
    drop_dv(b.path, spark, strategy=strategy, stats=stats)
    after = oracle.pyarrow_rows(b.path).unwrap()
    assert same_rows(after, before)
    assert {r["part"] for r in after} == set(parts)
    assert_rewritten_files_are_described(b.path)


def test_fully_deleted_file_is_removed_without_a_rewrite(tmp_path, spark, oracle):
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(300), files=3)
    first, second = sorted(DeltaLog(b.path).snapshot(check_read=False).state().files.values(),
                           key=lambda a: a.path)[:2]
    rows = pq.read_metadata(os.path.join(b.path, first.decoded_path)).num_rows
    delete_rows(b, {first.path: range(rows)})
    delete_rows(b, {second.path: [0]})
    before = oracle.scan_rows(b.path).unwrap()
    drop_dv(b.path, spark)
    (_v, removes, adds), = reorg_commits(b.path)
    assert len(removes) == 2 and len(adds) == 1
    assert same_rows(oracle.pyarrow_rows(b.path).unwrap(), before)


def test_dry_run_writes_nothing(tmp_path, spark):
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(100))
    delete_rows(b, lambda r: r["id"] < 5)
    files = sorted(os.listdir(b.path))
    listing = log_listing(b.path)
    outcome = drop_feature(b.path, "deletionVectors", committer=PlanRecorder(), rewrites=dv_rewrites(spark))
    assert outcome.status == "planned"
    assert any("REORG" in step for step in outcome.plan)
    assert log_listing(b.path) == listing and sorted(os.listdir(b.path)) == files


def test_row_tracking_tables_are_purged_with_fresh_row_ids(tmp_path, spark, oracle):
    """Row tracking supported but not enabled (the purge used to refuse every rowTracking
    table): nothing stable to preserve, so no materialized column is written; the new files get
    fresh row IDs above the high-water mark and the version that adds them (PROTOCOL.md "Writer
    Requirements for Row Tracking"). tests/integration/test_row_tracking_rewrites.py covers
    tables with row tracking enabled."""
    b = TableBuilder(tmp_path / "t")
    protocol = Protocol(3, 7, frozenset({"deletionVectors"}),
                        frozenset({"deletionVectors", "rowTracking", "domainMetadata"}))
    create_dv_table(b, SCHEMA, _rows(50), protocol=protocol, files=2)
    delete_rows(b, lambda r: r["id"] < 5)
    before = oracle.scan_rows(b.path).unwrap()
    domain = DeltaLog(b.path).snapshot().domain("delta.rowTracking")
    mark = json.loads(domain.configuration)["rowIdHighWaterMark"]
    assert purge_deletion_vectors(DropRun(DeltaLog(b.path), "deletionVectors"), spark=spark)
    (version, removes, adds), = reorg_commits(b.path)
    assert len(removes) == 1 and len(adds) == 1
    assert adds[0].baseRowId == mark + 1 and adds[0].defaultRowCommitVersion == version
    assert set(pq.read_schema(os.path.join(b.path, adds[0].decoded_path)).names) == {"id", "name", "part"}
    snapshot = DeltaLog(b.path).snapshot()
    assert json.loads(snapshot.domain("delta.rowTracking").configuration)["rowIdHighWaterMark"] \
        == mark + json.loads(adds[0].stats)["numRecords"]
    ranges = sorted((a.baseRowId, a.baseRowId + json.loads(a.stats)["numRecords"])
                    for a in snapshot.state().files.values())
    assert all(end <= start for (_, end), (start, _) in zip(ranges, ranges[1:]))
    assert same_rows(oracle.scan_rows(b.path).unwrap(), before)


def test_purge_is_a_no_op_without_dvs(tmp_path, spark):
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(10))
    assert purge_deletion_vectors(DropRun(DeltaLog(b.path), "deletionVectors"), spark=spark) is False
    assert DV_PROTOCOL.reader_features == frozenset({"deletionVectors"})


def test_files_of_equal_size_are_told_apart(tmp_path, spark, oracle):
    # Identical files have identical sizes: the join keys them by a hash of their names.
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(500))
    b.append(_rows(500))
    b.append(_rows(500))
    adds = sorted(DeltaLog(b.path).snapshot(check_read=False).state().files.values(), key=lambda a: a.path)
    assert len({a.size for a in adds}) == 1
    delete_rows(b, {adds[0].path: [0, 1, 2], adds[1].path: [3], adds[2].path: range(100, 400)})
    before = oracle.scan_rows(b.path).unwrap()
    assert len(before) == 1500 - 304
    drop_dv(b.path, spark)
    assert same_rows(oracle.pyarrow_rows(b.path).unwrap(), before)


def test_wrong_sizes_in_the_log_fall_back_to_names(tmp_path, spark, oracle):
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(600), files=3)
    delete_rows(b, lambda r: r["id"] % 3 == 0)
    # Re-commit the files with sizes that do not match the files on disk.
    from msgspec.structs import replace

    state = DeltaLog(b.path).snapshot(check_read=False).state()
    actions = [replace(add, size=1000 + 2 * i, dataChange=False)  # an add replaces the same file
               for i, add in enumerate(sorted(state.files.values(), key=lambda a: a.path))]
    b.commit(actions, "FIX SIZES")
    # (delta-rs trusts the sizes to find the footers, so it cannot read this version.)
    drop_dv(b.path, spark)
    assert _ids(oracle.pyarrow_rows(b.path).unwrap()) == [i for i in range(600) if i % 3]
    # The size-keyed attempt deleted nothing, failed its row-count check and was cleaned up.
    assert len([d for d in os.listdir(b.path) if d.startswith(PURGE_DIR_PREFIX)]) == 1


def test_missing_data_file_fails_without_a_commit(tmp_path, spark):
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(300), files=3)
    delete_rows(b, lambda r: r["id"] % 2 == 0)
    victim = sorted(DeltaLog(b.path).snapshot(check_read=False).state().files.values(), key=lambda a: a.path)[1]
    os.remove(os.path.join(b.path, victim.decoded_path))
    listing = log_listing(b.path)
    from delta_downgrade.errors import DvPurgeError

    with pytest.raises(DvPurgeError) as info:
        purge_deletion_vectors(DropRun(DeltaLog(b.path), "deletionVectors"), spark=spark)
    assert "nothing was committed" in str(info.value).lower()
    assert log_listing(b.path) == listing
    assert not [d for d in os.listdir(b.path) if d.startswith(PURGE_DIR_PREFIX)]


@pytest.mark.parametrize("kind", ["file", "shared", "inline"])
def test_builder_dvs_are_read_by_delta_rs(tmp_path, oracle, kind):
    """The proof that the DV bytes are right: delta-rs' scan() applies them. Array, bitmap and
    run containers, several containers per file (row indexes past 65535), merged DVs."""
    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(150_000), files=2)
    options = {"shared_file": kind == "shared", "inline": kind == "inline"}
    delete_rows(b, lambda r: r["id"] % 9 == 0, **options)                  # bitmap containers
    delete_rows(b, lambda r: 80_000 <= r["id"] < 120_000, **options)       # runs, merged with the above
    delete_rows(b, lambda r: r["id"] in (7, 70_001, 149_999), **options)   # a few more
    rows = oracle.scan_rows(b.path).unwrap()
    expected = [i for i in range(150_000)
                if i % 9 and not 80_000 <= i < 120_000 and i not in (7, 70_001, 149_999)]
    assert _ids(rows) == expected
    dvs = [f.dv for f in DeltaLog(b.path).snapshot(check_read=False).state().files.values()]
    assert all(dv is not None and dv.storageType == ("i" if kind == "inline" else "u") for dv in dvs)


# --- the drop's scenarios ---------------------------------------------------------------------

def test_scenario_59_purged_before_the_drop_still_gets_tombstones(tmp_path, spark):
    b = TableBuilder(tmp_path / "t")
    clock = ManualClock()
    b.clock = clock
    create_dv_table(b, SCHEMA, _rows(400), files=2)
    delete_rows(b, lambda r: r["id"] % 10 == 0)
    b.set_properties({"delta.enableDeletionVectors": None})
    assert purge_deletion_vectors(DropRun(DeltaLog(b.path), "deletionVectors", clock=clock), spark=spark)
    dv_files = {n for n in os.listdir(b.path) if n.endswith(".bin")}
    drop_dv(b.path, spark, clock=clock)
    assert assert_dv_tombstones_match_removes(b.path, clock) == dv_files


def test_scenario_60_second_drop_adds_only_missing_tombstones(tmp_path, spark, oracle):
    b = TableBuilder(tmp_path / "t")
    clock = ManualClock()
    b.clock = clock
    create_dv_table(b, SCHEMA, _rows(600), files=2)
    delete_rows(b, lambda r: r["id"] < 50)
    drop_dv(b.path, spark, clock=clock)
    first = assert_dv_tombstones_match_removes(b.path, clock)
    # Re-enable DVs, delete more, drop again.
    protocol = DeltaLog(b.path).snapshot(check_read=False).protocol.with_feature("deletionVectors")
    b.set_protocol(protocol)
    b.set_properties({"delta.enableDeletionVectors": "true"})
    delete_rows(b, lambda r: r["id"] > 550)
    before = oracle.scan_rows(b.path).unwrap()
    clock.advance(minutes=1)
    drop_dv(b.path, spark, clock=clock)
    second = assert_dv_tombstones_match_removes(b.path, clock)
    assert first < second
    new_tombstone_commits = []
    log = DeltaLog(b.path)
    for version in sorted(log.whole_listing().commits):
        actions = read_commit_actions(log.storage, log.whole_listing().commits[version])
        info = next(a for a in actions if isinstance(a, CommitInfo))
        if info.operation == "Deletion Vector Tombstones":
            new_tombstone_commits.append({unquote(a.path) for a in actions if isinstance(a, RemoveFile)})
    assert len(new_tombstone_commits) == 2
    assert new_tombstone_commits[0] == first and new_tombstone_commits[1] == second - first
    assert same_rows(oracle.pyarrow_rows(b.path).unwrap(), before)


def test_scenario_62_removes_past_retention_get_no_tombstones(tmp_path, spark):
    b = TableBuilder(tmp_path / "t")
    clock = ManualClock()
    b.clock = clock
    create_dv_table(b, SCHEMA, _rows(200))
    delete_rows(b, lambda r: r["id"] < 20)
    b.set_properties({"delta.enableDeletionVectors": None})
    purge_deletion_vectors(DropRun(DeltaLog(b.path), "deletionVectors", clock=clock), spark=spark)
    clock.advance(days=8)  # past delta.deletedFileRetentionDuration (1 week)
    drop_dv(b.path, spark, clock=clock)
    assert assert_dv_tombstones_match_removes(b.path, clock) == set()


def test_scenario_65_truncate_history_path_purges_then_waits(tmp_path, spark):
    from delta_downgrade.errors import RetentionWaitError

    b = TableBuilder(tmp_path / "t")
    create_dv_table(b, SCHEMA, _rows(300), files=2)
    delete_rows(b, lambda r: r["id"] % 3 == 0)
    with pytest.raises(RetentionWaitError) as info:
        drop_feature(b.path, "deletionVectors", truncate_history=True, rewrites=dv_rewrites(spark))
    assert info.value.error_class == "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"
    doc = inspect_document(inspect_table(b.path, history=False))
    assert doc["files"]["files_with_deletion_vectors"] == 0
    assert "delta.enableDeletionVectors" not in doc["properties"]
    assert len(reorg_commits(b.path)) == 1
