"""Row tracking through every rewrite (PROTOCOL.md "Row Tracking"): the deletion-vector purge,
column-mapping removal and type widening on tables with row tracking enabled.

What must hold after each drop, read from the files themselves (tests/row_tracking_support.py:
each live file with pyarrow, its DV applied, stable values per the Reader Requirements):

- every surviving row has the stable row ID and stable row commit version it had before, whether
  it came from a materialized column or from its old file's ``baseRowId`` + row index /
  ``defaultRowCommitVersion``;
- fresh row IDs are unique across the live files and at most the ``delta.rowTracking`` high-water
  mark; a rewritten file's ``baseRowId`` lies above the mark before it, its
  ``defaultRowCommitVersion`` is the version that added it;
- the rows are those outside readers (delta-rs, DuckDB) saw before.
"""

from __future__ import annotations

import json
import os

from msgspec.structs import replace
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.snapshot import read_commit_actions
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import AddFile, CommitInfo, RemoveFile
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import create_dv_table, delete_rows
from oracle import same_rows
from tests.process_support import run_cli
from tests.row_tracking_support import (
    ROW_COMMIT_VERSION_KEY, ROW_ID_KEY, assert_fresh_ids_valid, assert_stable_ids_unique,
    high_water_mark, stable_values, write_copied_file,
)

NAMES = ("_row-id-col-5f0c", "_row-commit-version-col-5f0c")
ENABLED = {"delta.enableRowTracking": "true", ROW_ID_KEY: NAMES[0], ROW_COMMIT_VERSION_KEY: NAMES[1]}
RT = {"rowTracking", "domainMetadata"}
SCHEMA = pa.schema([("id", pa.int64()), ("value", pa.string())])


def _rows(lo: int, hi: int) -> pa.Table:
    return pa.table({"id": pa.array(range(lo, hi), pa.int64()),
                     "value": pa.array([f"v{i}" for i in range(lo, hi)], pa.string())})


def _live(path: str) -> list[AddFile]:
    return sorted(DeltaLog(path).snapshot(check_read=False).state().files.values(), key=lambda a: a.path)


def _commits(path: str, operation: str) -> list[tuple[int, list]]:
    log = DeltaLog(path)
    out = []
    for version, status in sorted(log.whole_listing().commits.items()):
        actions = read_commit_actions(log.storage, status)
        info = next((a for a in actions if isinstance(a, CommitInfo)), None)
        if info is not None and info.operation == operation:
            out.append((version, actions))
    return out


def _copy_with_materialized(builder: TableBuilder, add: AddFile, row_ids, commit_versions, operation="UPDATE"):
    """What an UPDATE leaves: ``add``'s rows copied into a new file whose materialized columns
    preserve some rows' stable values (null elsewhere), committed as remove + add."""
    data = pq.read_table(os.path.join(builder.path, add.decoded_path))
    copied = write_copied_file(builder.path, data, row_ids, commit_versions, NAMES)
    now = builder.clock.now_ms()
    builder.commit([RemoveFile(path=add.path, deletionTimestamp=now, dataChange=True, size=add.size,
                               baseRowId=add.baseRowId, defaultRowCommitVersion=add.defaultRowCommitVersion),
                    copied], operation)
    return copied


def _assert_rewritten_files_are_new(path: str, operation: str, mark_before: int) -> None:
    """Every file a rewrite added has fresh IDs above the mark it found and the adding version,
    and the commit says every stable value was preserved."""
    commits = _commits(path, operation)
    assert commits, f"no {operation} commit"
    for version, actions in commits:
        removed = {a.path for a in actions if isinstance(a, RemoveFile)}
        info = next(a for a in actions if isinstance(a, CommitInfo))
        assert info.tags == {"delta.rowTracking.preserved": "true"}, info
        for add in (a for a in actions if isinstance(a, AddFile) and a.path not in removed):
            assert add.baseRowId > mark_before and add.defaultRowCommitVersion == version, (version, add)


def _assert_same_stable_values(before: dict, path: str) -> None:
    after = stable_values(path, "id")
    assert after == before
    assert_stable_ids_unique(after)
    assert_fresh_ids_valid(path)


# --- the deletion-vector purge, through the CLI -------------------------------------------------------

def _dv_row_tracking_table(path: str) -> TableBuilder:
    """A DV table with row tracking enabled: v0 three files (row IDs 0..29); v1 an UPDATE-like
    copy of the second file (stable IDs 10..19 kept in the materialized columns on even rows, the
    odd ones null); v2 an append; then DVs on every file, one deleting a whole file."""
    b = TableBuilder(path)
    protocol = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors", *RT}))
    create_dv_table(b, SCHEMA, _rows(0, 30), files=3, protocol=protocol, configuration=ENABLED)
    second = sorted(_live(path), key=lambda a: a.baseRowId)[1]
    assert second.baseRowId == 10
    _copy_with_materialized(b, second, [10 + i if i % 2 == 0 else None for i in range(10)],
                            [0 if i % 2 == 0 else None for i in range(10)])
    b.append(_rows(30, 40))
    b.append(_rows(40, 45))
    delete_rows(b, lambda r: r["id"] % 3 == 0)
    delete_rows(b, lambda r: 40 <= r["id"] < 45)  # the whole last file
    return b


def _drop_dv_through_cli(path: str) -> None:
    done = run_cli("drop-feature", path, "deletionVectors", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    [line] = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    assert json.loads(line[len("RESULT "):])["status"] == "dropped"


@pytest.mark.spark
@pytest.mark.oracle
def test_dv_purge_keeps_stable_row_ids_and_commit_versions(tmp_path, oracle, duckdb_reader):
    pytest.importorskip("pyspark")
    path = str(tmp_path / "t")
    _dv_row_tracking_table(path)
    before = stable_values(path, "id")
    # both kinds of stable values are present: materialized and default generated
    assert before[1] == (1, 0)                          # default: baseRowId 0 + index 1, version 0
    assert before[14] == (14, 0)                        # materialized in the copy
    assert before[13] == (30 + 3, 1)                    # the copy's own default (baseRowId 30, v1)
    assert len(before) == 45 - 15 - 5 + 1  # ids % 3 == 0 (15 of 0..44, one of them also in 40..44)
    scan = oracle.scan_rows(path).unwrap()
    mark = high_water_mark(path)

    _drop_dv_through_cli(path)

    assert not any(a.deletionVector for a in _live(path))
    _assert_same_stable_values(before, path)
    _assert_rewritten_files_are_new(path, "REORG", mark)
    assert same_rows(oracle.scan_rows(path).unwrap(), scan)
    assert same_rows(duckdb_reader.duckdb_rows(path).unwrap(), scan)
    # the rewritten files hold the stable values themselves (no reliance on the new baseRowId)
    for add in _live(path):
        columns = pq.read_schema(os.path.join(path, add.decoded_path)).names
        if "dv-purge" in add.path:
            assert set(NAMES) <= set(columns)
            table = pq.read_table(os.path.join(path, add.decoded_path))
            assert table.column(NAMES[0]).null_count == 0 and table.column(NAMES[1]).null_count == 0


@pytest.mark.spark
@pytest.mark.oracle
def test_dv_purge_on_golden_row_tracking(golden_table, oracle, duckdb_reader):
    pytest.importorskip("pyspark")
    path = golden_table("row_tracking")
    b = TableBuilder(path)
    protocol = DeltaLog(path).snapshot().protocol
    b.set_protocol(Protocol(3, 7, frozenset({"deletionVectors"}),
                            frozenset(protocol.writer_features or ()) | {"deletionVectors"}))
    b.set_properties({"delta.enableDeletionVectors": "true"})
    delete_rows(b, lambda r: r["id"] in (2, 5))
    before = stable_values(path, "id")
    # the MERGE left materialized IDs for copied rows, null for the inserted one (id 6) and a
    # null commit version for the updated one (id 3)
    assert before == {1: (0, 1), 3: (2, 2), 4: (3, 1), 6: (10, 2)}
    scan = oracle.scan_rows(path).unwrap()
    mark = high_water_mark(path)

    _drop_dv_through_cli(path)

    _assert_same_stable_values(before, path)
    _assert_rewritten_files_are_new(path, "REORG", mark)
    assert same_rows(oracle.scan_rows(path).unwrap(), scan)
    assert same_rows(duckdb_reader.duckdb_rows(path).unwrap(), scan)
    snapshot = DeltaLog(path).snapshot()
    assert "deletionVectors" not in snapshot.protocol.features and "rowTracking" in snapshot.protocol.features


@pytest.mark.spark
@pytest.mark.parametrize("case", ["broadcast", "shuffle", "wrong_sizes"])
def test_dv_purge_join_strategies_and_keys_keep_stable_values(tmp_path, spark, case):
    """Both anti-join strategies, and the retry keyed by file name when the log's sizes are
    wrong (the per-file defaults are looked up by the same key as the join)."""
    from tests.integration.test_dv_purge import PURGE_DIR_PREFIX, drop_dv

    path = str(tmp_path / "t")
    b = _dv_row_tracking_table(path)
    if case == "wrong_sizes":
        # recommitted under the same paths (row IDs kept) with sizes that do not match the files
        b.commit([replace(a, size=1000 + 2 * i, dataChange=False) for i, a in enumerate(_live(path))], "FIX SIZES")
    before = stable_values(path, "id")
    mark = high_water_mark(path)
    drop_dv(path, spark, strategy="shuffle" if case == "shuffle" else "broadcast")
    _assert_same_stable_values(before, path)
    _assert_rewritten_files_are_new(path, "REORG", mark)
    if case == "wrong_sizes":  # the size-keyed attempt failed its row count and was cleaned up
        assert len([d for d in os.listdir(path) if d.startswith(PURGE_DIR_PREFIX)]) == 1


# --- column-mapping removal ----------------------------------------------------------------------

def _cm_field(name: str, type_: str, physical: str, cid: int) -> dict:
    return {"name": name, "type": type_, "nullable": True,
            "metadata": {"delta.columnMapping.id": cid, "delta.columnMapping.physicalName": physical}}


@pytest.mark.spark
@pytest.mark.oracle
def test_column_mapping_removal_keeps_stable_row_ids(tmp_path, spark, oracle):
    path = str(tmp_path / "t")
    b = TableBuilder(path)
    physical = pa.schema([("col-1", pa.int64()), ("col-2", pa.string())])
    schema = {"type": "struct", "fields": [_cm_field("id", "long", "col-1", 1), _cm_field("value", "string", "col-2", 2)]}
    b.create(physical, protocol=Protocol(3, 7, frozenset({"columnMapping"}), frozenset({"columnMapping", *RT})),
             delta_schema=schema, files=2,
             configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2", **ENABLED},
             rows=_rows(0, 20).rename_columns(["col-1", "col-2"]))
    first = sorted(_live(path), key=lambda a: a.baseRowId)[0]
    _copy_with_materialized(b, first, [i if i < 5 else None for i in range(10)], [0] * 5 + [None] * 5)
    before = stable_values(path, "id")
    assert before[3] == (3, 0) and before[7] == (20 + 7, 1) and before[15] == (15, 0)
    scan = oracle.scan_rows(path).unwrap()
    mark = high_water_mark(path)

    outcome = drop_feature(path, "columnMapping")

    assert outcome.status == "dropped"
    _assert_same_stable_values(before, path)
    _assert_rewritten_files_are_new(path, "REMOVE COLUMN MAPPING", mark)
    assert same_rows(oracle.scan_rows(path).unwrap(), scan)
    for add in _live(path):
        names = pq.read_schema(os.path.join(path, add.decoded_path)).names
        assert names == ["id", "value", *NAMES], names


# --- type widening -----------------------------------------------------------------------------------

@pytest.mark.spark
@pytest.mark.oracle
def test_type_widening_rewrite_keeps_stable_row_ids(tmp_path, spark, oracle):
    path = str(tmp_path / "t")
    b = TableBuilder(path)
    narrow = pa.schema([("id", pa.int32()), ("value", pa.string())])
    features = frozenset({"typeWidening", *RT})
    b.create(narrow, protocol=Protocol(3, 7, frozenset({"typeWidening"}), features),
             configuration={"delta.enableTypeWidening": "true", **ENABLED}, files=2,
             rows=_rows(0, 20).cast(narrow))
    first = sorted(_live(path), key=lambda a: a.baseRowId)[0]
    _copy_with_materialized(b, first, [None, 1, None, 3, None, 5, None, 7, None, 9], [0, None] * 5)
    widened = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True,
         "metadata": {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}},
        {"name": "value", "type": "string", "nullable": True, "metadata": {}}]}
    b.set_metadata(replace(DeltaLog(path).snapshot(check_read=False).metadata, schemaString=json.dumps(widened)))
    b.append(_rows(20, 25))  # already long: not rewritten, keeps its row IDs
    kept = next(a for a in _live(path) if a.baseRowId == 30)
    before = stable_values(path, "id")
    assert before[0] == (20, 0) and before[1] == (1, 1) and before[2] == (22, 0) and before[12] == (12, 0)
    mark = high_water_mark(path)

    outcome = drop_feature(path, "typeWidening")

    assert outcome.status == "dropped"
    _assert_same_stable_values(before, path)
    _assert_rewritten_files_are_new(path, "REORG", mark)
    # the file already wide is untouched, row IDs and all
    [now] = [a for a in _live(path) if a.path == kept.path]
    assert (now.baseRowId, now.defaultRowCommitVersion) == (30, 3)
    rows = oracle.scan_rows(path).unwrap()
    assert same_rows(rows, [{"id": i, "value": f"v{i}"} for i in range(25)])
