"""Fresh row IDs at commit time (log/row_ids.py, used by log/commit.commit; PROTOCOL.md "Writer
Requirements for Row Tracking"): ranges above the high-water mark, the mark in the
``delta.rowTracking`` domain, recommitted adds keeping theirs, a retry above a winner's mark,
nothing assigned when row tracking is suspended or not supported."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from delta_downgrade.errors import RowIdAssignmentWithoutStatsError, RowTrackingPropertiesError
from delta_downgrade.log.commit import commit, rebase_over_blind_appends
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import commit_path
from delta_downgrade.log.row_ids import (
    MISSING_HIGH_WATER_MARK, PRESERVED_TAG, ROW_TRACKING_DOMAIN, RowTracking, assign_fresh_row_ids,
    high_water_mark, high_water_mark_action,
)
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import AddFile, CommitInfo, DomainMetadata, parse_commit
from delta_downgrade.protocol.table_config import TableConfig
from delta_downgrade_tools.builders import TableBuilder

SCHEMA = pa.schema([("id", pa.int64())])
RT_PROTOCOL = Protocol(1, 7, None, frozenset({"rowTracking", "domainMetadata"}))
ENABLED = {"delta.enableRowTracking": "true",
           "delta.rowTracking.materializedRowIdColumnName": "_row-id-col-x",
           "delta.rowTracking.materializedRowCommitVersionColumnName": "_row-commit-version-col-x"}


def _add(path: str, rows: int | None, **kw) -> AddFile:
    stats = json.dumps({"numRecords": rows}) if rows is not None else None
    return AddFile(path=path, size=1, modificationTime=1, stats=stats, **kw)


def _domain(mark: int, **other) -> DomainMetadata:
    return DomainMetadata(ROW_TRACKING_DOMAIN, json.dumps({"rowIdHighWaterMark": mark, **other}))


def _commit_actions(path: str, version: int):
    with open(os.path.join(path, commit_path(version)), "rb") as f:
        return parse_commit(f.read())


def _live_adds(path: str) -> list[AddFile]:
    return list(DeltaLog(path).snapshot(check_read=False).state().files.values())


def _assert_fresh_ids_valid(path: str) -> None:
    """PROTOCOL.md: fresh row IDs unique in the version and at most the high-water mark."""
    snap = DeltaLog(path).snapshot(check_read=False)
    mark = high_water_mark(snap.domain(ROW_TRACKING_DOMAIN))
    ids: list[int] = []
    for add in snap.state().files.values():
        assert add.baseRowId is not None and add.defaultRowCommitVersion is not None, add.path
        ids += range(add.baseRowId, add.baseRowId + add.num_records)
    assert len(ids) == len(set(ids))
    assert not ids or max(ids) <= mark


# --- the assignment itself -----------------------------------------------------------------------

def test_consecutive_ranges_above_the_mark_and_the_new_mark():
    out = assign_fresh_row_ids([_add("a", 5), _add("b", 3), _add("empty", 0)], version=7,
                               domain=_domain(9, domainName=ROW_TRACKING_DOMAIN))
    a, b, empty, domain = out
    assert (a.baseRowId, b.baseRowId, empty.baseRowId) == (10, 15, 18)
    assert {x.defaultRowCommitVersion for x in (a, b, empty)} == {7}
    # the mark is the highest fresh ID taken; the other keys delta-spark writes are kept
    assert json.loads(domain.configuration) == {"rowIdHighWaterMark": 17, "domainName": ROW_TRACKING_DOMAIN}
    assert domain.domain == ROW_TRACKING_DOMAIN and not domain.removed


def test_the_first_ids_start_at_zero_without_a_domain():
    a, domain = assign_fresh_row_ids([_add("a", 4)], version=0, domain=None)
    assert (a.baseRowId, a.defaultRowCommitVersion) == (0, 0)
    assert json.loads(domain.configuration) == {"rowIdHighWaterMark": 3}
    assert high_water_mark(None) == MISSING_HIGH_WATER_MARK


def test_recommitted_adds_keep_their_ids_and_take_no_new_ones():
    same = _add("a", 5, baseRowId=3, defaultRowCommitVersion=2)
    out = assign_fresh_row_ids([same], version=9, domain=_domain(20))
    assert out == [same]  # no new mark: no fresh ID was taken


def test_an_add_with_only_one_of_the_two_gets_the_other():
    out = assign_fresh_row_ids([_add("a", 5, baseRowId=3), _add("b", 2, defaultRowCommitVersion=1)],
                               version=9, domain=_domain(20))
    assert (out[0].baseRowId, out[0].defaultRowCommitVersion) == (3, 9)
    assert (out[1].baseRowId, out[1].defaultRowCommitVersion) == (21, 1)
    assert high_water_mark(out[2]) == 22


def test_an_add_without_num_records_is_refused():
    with pytest.raises(RowIdAssignmentWithoutStatsError) as err:
        assign_fresh_row_ids([_add("a", None)], version=1, domain=None)
    assert err.value.exit_code == 2 and "numRecords" in err.value.message


def test_a_domain_among_the_actions_is_folded_in():
    out = assign_fresh_row_ids([_domain(50), _add("a", 2)], version=3, domain=_domain(10))
    assert [type(a).__name__ for a in out] == ["AddFile", "DomainMetadata"]
    assert out[0].baseRowId == 51 and high_water_mark(out[1]) == 52


def test_a_malformed_domain_is_refused():
    from delta_downgrade.errors import CorruptLogError

    with pytest.raises(CorruptLogError):
        assign_fresh_row_ids([_add("a", 2)], version=3,
                             domain=DomainMetadata(ROW_TRACKING_DOMAIN, '{"rowIdHighWaterMark":"x"}'))


def test_mark_action_keeps_other_keys_first_is_the_mark():
    action = high_water_mark_action(12, _domain(3, domainName="delta.rowTracking", other=1))
    assert action.configuration == '{"rowIdHighWaterMark":12,"domainName":"delta.rowTracking","other":1}'


def test_row_tracking_view():
    assert RowTracking.of(Protocol(1, 2), ENABLED) == RowTracking(False, False, False)
    supported = RowTracking.of(RT_PROTOCOL, {})
    assert supported.assigns and not supported.enabled and not supported.preserves
    enabled = RowTracking.of(RT_PROTOCOL, ENABLED)
    assert enabled.preserves and enabled.row_id_column == "_row-id-col-x"
    suspended = RowTracking.of(RT_PROTOCOL, {"delta.rowTrackingSuspended": "true"})
    assert suspended.supported and not suspended.assigns
    with pytest.raises(RowTrackingPropertiesError):
        RowTracking.of(RT_PROTOCOL, {**ENABLED, "delta.rowTrackingSuspended": "true"})
    both = {"delta.enableRowTracking": "TRUE", "delta.rowTrackingSuspended": "true"}
    with pytest.raises(RowTrackingPropertiesError):
        TableConfig(both).validate_row_tracking()
    # Without the feature the two properties mean nothing: delta-spark checks them only then.
    TableConfig(both).validate()
    assert RowTracking.of(Protocol(1, 2), both) == RowTracking(False, False, False)


# --- through log/commit.commit ---------------------------------------------------------------------

def test_commits_assign_fresh_ids_and_tag_preserved(tmp_path):
    b = TableBuilder(tmp_path / "t")
    b.create(SCHEMA, protocol=RT_PROTOCOL, configuration=ENABLED, rows=[{"id": i} for i in range(10)], files=2)
    b.append([{"id": i} for i in range(7)])
    adds = sorted(_live_adds(b.path), key=lambda a: a.baseRowId)
    assert [(a.baseRowId, a.defaultRowCommitVersion) for a in adds] == [(0, 0), (5, 0), (10, 1)]
    info = next(a for a in _commit_actions(b.path, 1) if isinstance(a, CommitInfo))
    assert info.tags == {PRESERVED_TAG: "true"}
    assert high_water_mark(DeltaLog(b.path).snapshot().domain(ROW_TRACKING_DOMAIN)) == 16
    _assert_fresh_ids_valid(b.path)


def test_preserved_false_is_written_when_asked(tmp_path):
    b = TableBuilder(tmp_path / "t")
    b.create(SCHEMA, protocol=RT_PROTOCOL, configuration=ENABLED)
    commit(b.log, 0, b.write_files([{"id": 1}]), operation="WRITE", row_tracking_preserved=False)
    info = next(a for a in _commit_actions(b.path, 1) if isinstance(a, CommitInfo))
    assert info.tags == {PRESERVED_TAG: "false"}


def test_supported_but_not_enabled_assigns_without_the_tag(tmp_path):
    b = TableBuilder(tmp_path / "t")
    b.create(SCHEMA, protocol=RT_PROTOCOL, rows=[{"id": 1}, {"id": 2}])
    (add,) = _live_adds(b.path)
    assert (add.baseRowId, add.defaultRowCommitVersion) == (0, 0)
    info = next(a for a in _commit_actions(b.path, 0) if isinstance(a, CommitInfo))
    assert info.tags is None


def test_not_supported_and_suspended_assign_nothing(tmp_path):
    plain = TableBuilder(tmp_path / "plain")
    plain.create(SCHEMA, rows=[{"id": 1}])
    suspended = TableBuilder(tmp_path / "suspended")
    suspended.create(SCHEMA, protocol=RT_PROTOCOL, configuration={"delta.rowTrackingSuspended": "true"},
                     rows=[{"id": 1}])
    for b in (plain, suspended):
        (add,) = _live_adds(b.path)
        assert (add.baseRowId, add.defaultRowCommitVersion) == (None, None)
        assert not any(isinstance(a, DomainMetadata) for a in _commit_actions(b.path, 0))


def test_a_commit_that_adds_row_tracking_assigns_under_it(tmp_path):
    # "the table (after the pending actions)": a protocol upgrade in the same commit counts.
    b = TableBuilder(tmp_path / "t")
    b.create(SCHEMA, rows=[{"id": 1}])
    from delta_downgrade.protocol.actions import ProtocolAction

    commit(b.log, 0, [ProtocolAction.of(RT_PROTOCOL), *b.write_files([{"id": 2}, {"id": 3}])], operation="WRITE")
    added = [a for a in _commit_actions(b.path, 1) if isinstance(a, AddFile)]
    assert [(a.baseRowId, a.defaultRowCommitVersion) for a in added] == [(0, 1)]


def test_missing_stats_write_nothing(tmp_path):
    b = TableBuilder(tmp_path / "t")
    b.create(SCHEMA, protocol=RT_PROTOCOL)
    (add,) = b.write_files([{"id": 1}])
    with pytest.raises(RowIdAssignmentWithoutStatsError):
        commit(b.log, 0, [AddFile(path=add.path, size=add.size, modificationTime=1)], operation="WRITE")
    assert not os.path.exists(os.path.join(b.path, commit_path(1)))


def test_a_retry_goes_above_the_mark_a_winner_raised(tmp_path):
    b = TableBuilder(tmp_path / "t")
    b.create(SCHEMA, protocol=RT_PROTOCOL, configuration=ENABLED, rows=[{"id": i} for i in range(4)])
    ours = b.write_files([{"id": i} for i in range(3)])
    # Our commit read version 0 and warmed the domain there; two winners land before it writes.
    b.append([{"id": i} for i in range(5)])   # v1: IDs 4..8
    b.append([{"id": i} for i in range(2)])   # v2: IDs 9..10
    version = commit(b.log, 0, ours, operation="WRITE",
                     resolve_conflict=rebase_over_blind_appends(ours, operation="WRITE"))
    assert version == 3
    (add,) = [a for a in _commit_actions(b.path, 3) if isinstance(a, AddFile)]
    assert (add.baseRowId, add.defaultRowCommitVersion) == (11, 3)
    (domain,) = [a for a in _commit_actions(b.path, 3) if isinstance(a, DomainMetadata)]
    assert high_water_mark(domain) == 13
    _assert_fresh_ids_valid(b.path)


def test_a_winner_that_adds_row_tracking_makes_the_retry_assign(tmp_path):
    # The first attempt needs no IDs (no rowTracking yet) and reads no mark; winners add the
    # feature and rows; the retry reads the mark at the version it goes on top of.
    b = TableBuilder(tmp_path / "t")
    b.create(SCHEMA, rows=[{"id": 0}])
    ours_log = DeltaLog(b.path)
    ours_log.snapshot()  # our read of version 0 (listing cached there)
    ours = b.write_files([{"id": 1}, {"id": 2}])
    b.set_protocol(RT_PROTOCOL)                 # v1
    b.append([{"id": i} for i in range(4)])     # v2: IDs 0..3
    version = commit(ours_log, 0, ours, operation="WRITE", resolve_conflict=lambda winners, log: ours)
    assert version == 3
    (add,) = [a for a in _commit_actions(b.path, 3) if isinstance(a, AddFile)]
    assert (add.baseRowId, add.defaultRowCommitVersion) == (4, 3)


def test_the_mark_is_read_from_a_checkpoint(tmp_path):
    b = TableBuilder(tmp_path / "t")
    b.create(SCHEMA, protocol=RT_PROTOCOL, rows=[{"id": i} for i in range(6)])
    b.checkpoint()
    b.empty_commit()  # a commit after the checkpoint that does not name the domain
    log = DeltaLog(b.path)
    assert high_water_mark(log.snapshot().domain(ROW_TRACKING_DOMAIN)) == 5
    b.append([{"id": 1}])
    assert max(a.baseRowId for a in _live_adds(b.path)) == 6
    _assert_fresh_ids_valid(b.path)


def test_a_removed_domain_reads_as_none(tmp_path):
    b = TableBuilder(tmp_path / "t")
    b.create(SCHEMA, protocol=RT_PROTOCOL, rows=[{"id": 1}])
    b.commit([DomainMetadata(ROW_TRACKING_DOMAIN, '{"rowIdHighWaterMark":0}', removed=True),
              ], "TEST")
    assert DeltaLog(b.path).snapshot().domain(ROW_TRACKING_DOMAIN) is None
