"""Pure planning of metadata cleanup (operations/cleanup.py) on synthetic listings and protocol
histories: the cutoff, the cutoff checkpoint, the candidate sets, the checkpoint-protection gate
(rules a and c) and the deletion order (rule d). No file is read or written here."""

from __future__ import annotations

from typing import Iterable, Sequence

import pytest

from delta_downgrade.app.render.cleanup import plan_document
from delta_downgrade.errors import BadInputError
from delta_downgrade.log.delta_log import ProtocolSpan
from delta_downgrade.log.format.file_names import (
    LOG_DIR, classic_checkpoint_path, classify, commit_path, compacted_path, crc_path,
    multipart_checkpoint_path, sidecar_path, staged_commit_path, v2_checkpoint_path,
)
from delta_downgrade.log.read.listing import CheckpointInstance, LogListing, listing_of
from delta_downgrade.operations.cleanup import (
    ALL_AT_ONCE, NO_CHECKPOINT, NOTHING_TO_DELETE, SKIPPED_PARTIAL, SKIPPED_UNSUPPORTED,
    SUPPORTED_RANGE, UNPROTECTED, CleanupInputs, CleanupPlan, build_plan, cutoff_timestamp_ms,
    first_unsupported_version, monotonic_commit_times, select_cutoff_checkpoint,
)
from delta_downgrade.protocol import Protocol
from delta_downgrade.storage import FileStatus
from delta_downgrade.protocol.table_config import DAY_MS, HOUR_MS, MINUTE_MS

T0 = 1_704_067_200_000        # 2024-01-01T00:00:00Z
OLD = T0 + HOUR_MS
RECENT = T0 + 32 * DAY_MS
NOW = T0 + 33 * DAY_MS + HOUR_MS
CUTOFF = T0 + 3 * DAY_MS

BASE = Protocol(1, 7, None, {"appendOnly", "invariants", "checkpointProtection"})
UNSUPPORTED = Protocol(3, 7, {"unknownReaderFeature"}, BASE.writer_features | {"unknownReaderFeature"})
WRITER_UNSUPPORTED = Protocol(1, 7, None, BASE.writer_features | {"unknownWriterFeature"})


def fs(path: str, mtime: int = OLD) -> FileStatus:
    return FileStatus(path, 100, mtime)


def classic(version: int, mtime: int = NOW) -> CheckpointInstance:
    return CheckpointInstance(version, "classic", (fs(classic_checkpoint_path(version), mtime),))


def listing(versions: int = 16, old: int = 8, checkpoints: Iterable[int] = (), crcs: bool = False,
            extra_checkpoints: Sequence[CheckpointInstance] = (),
            extra_files: Sequence[FileStatus] = (), first: int = 0) -> LogListing:
    """The listing of commits ``first .. versions - 1`` (those below ``old`` old), their .crc files
    with ``crcs``, the checkpoints, and ``extra_files`` (the last status of a name wins)."""
    files = [fs(commit_path(v), OLD if v < old else RECENT) for v in range(first, versions)]
    if crcs:
        files += [fs(crc_path(v), NOW) for v in range(versions)]   # .crc mtimes never matter
    for checkpoint in [classic(v) for v in checkpoints] + list(extra_checkpoints):
        files += checkpoint.files
    return listing_of([*files, *extra_files])


def inputs(lst: LogListing, *, boundary: int | None = None, **kw) -> CleanupInputs:
    return CleanupInputs(listing=lst, latest_version=max(lst.commits), checkpoint_protection=boundary is not None,
                         boundary=boundary or 0, **kw)


def spans(*changes: tuple[int, Protocol], latest: int = 15, start: int = 0) -> list[ProtocolSpan]:
    """Spans from (first version, protocol) pairs."""
    points = sorted(changes)
    out = []
    for i, (v, p) in enumerate(points):
        end = points[i + 1][0] - 1 if i + 1 < len(points) else latest
        out.append(ProtocolSpan(max(v, start), end, p, None))
    return out


def versions_of(paths: Iterable[str]) -> list[int]:
    return [classify(p).version for p in paths]  # type: ignore[misc]


# --- time ---------------------------------------------------------------------------------------------

def test_cutoff_truncation():
    now = T0 + 33 * DAY_MS + 5 * HOUR_MS + 7 * MINUTE_MS + 123
    assert cutoff_timestamp_ms(now, 30 * DAY_MS, "day") == T0 + 3 * DAY_MS
    assert cutoff_timestamp_ms(now, 30 * DAY_MS, "hour") == T0 + 3 * DAY_MS + 5 * HOUR_MS
    assert cutoff_timestamp_ms(now, 24 * HOUR_MS, "minute") == T0 + 32 * DAY_MS + 5 * HOUR_MS + 7 * MINUTE_MS
    assert cutoff_timestamp_ms(now, 0, "DAY") == T0 + 33 * DAY_MS


@pytest.mark.parametrize("call", [
    lambda: cutoff_timestamp_ms(NOW, DAY_MS, "week"),
    lambda: cutoff_timestamp_ms(NOW, -1, "day"),
])
def test_cutoff_bad_input(call):
    with pytest.raises(BadInputError):
        call()


def test_monotonic_commit_times():
    commits = {0: fs("a", 100), 1: fs("b", 50), 2: fs("c", 101), 3: fs("d", 500), 5: fs("e", 10)}
    assert monotonic_commit_times(commits) == {0: 100, 1: 101, 2: 102, 3: 500, 5: 501}


# --- the cutoff checkpoint ------------------------------------------------------------------------

def test_cutoff_checkpoint_is_newest_with_expired_predecessor():
    lst = listing(checkpoints=(6, 8, 10))
    assert select_cutoff_checkpoint(lst, CUTOFF) == 8          # commit 7 old, commit 9 recent
    assert select_cutoff_checkpoint(lst, OLD - 1) is None      # nothing expired yet
    assert select_cutoff_checkpoint(lst, RECENT + 100) == 10   # everything expired (monotonic +1 ms each)
    assert select_cutoff_checkpoint(lst, CUTOFF, exclude={8}) == 6


def test_cutoff_checkpoint_version_zero_and_incomplete():
    lst = listing(checkpoints=(0,), old=1)
    assert select_cutoff_checkpoint(lst, CUTOFF) == 0   # commit 0 itself stands in for "before"
    incomplete = CheckpointInstance(8, "multipart", (fs(multipart_checkpoint_path(8, 1, 2)),), num_parts=2)
    lst = listing(checkpoints=(6,), extra_checkpoints=[incomplete], old=10)
    assert select_cutoff_checkpoint(lst, CUTOFF) == 6   # an incomplete checkpoint never counts


def test_clock_skew_cannot_expire_a_newer_commit_first():
    """Commit 9 has an mtime older than commit 8 (skew); it counts as commit 8 + 1 ms, so it has
    not expired while 8 has not."""
    lst = listing(checkpoints=(8, 10), old=8, extra_files=[fs(commit_path(9), OLD)])
    assert select_cutoff_checkpoint(lst, CUTOFF) == 8


# --- plans without protection -------------------------------------------------------------------

def test_plain_plan_candidates():
    lst = listing(checkpoints=(3, 6, 8, 10), crcs=True,
                  extra_checkpoints=[CheckpointInstance(5, "multipart", (fs(multipart_checkpoint_path(5, 1, 2)),),
                                                        num_parts=2)],
                  extra_files=[fs(compacted_path(s, e)) for s, e in ((1, 4), (6, 9), (7, 8))])
    staged = tuple((v, fs(staged_commit_path(v, f"u{v}"))) for v in (2, 8, 9))
    plan = build_plan(inputs(lst, staged_commits=staged), cutoff_ms=CUTOFF, now_ms=NOW)
    assert plan.allowed and plan.decision == UNPROTECTED and plan.cutoff_checkpoint == 8
    assert versions_of(plan.delete_commits) == list(range(8))
    assert sorted(versions_of(plan.delete_checkpoints)) == [3, 5, 6]
    other = set(plan.delete_other)
    assert {crc_path(v) for v in range(8)} <= other and crc_path(8) not in other
    assert compacted_path(1, 4) in other and compacted_path(7, 8) not in other   # end 8 is kept
    assert compacted_path(6, 9) not in other
    assert staged_commit_path(2, "u2") in other and staged_commit_path(8, "u8") in other
    assert staged_commit_path(9, "u9") not in other
    assert plan.truncates_before == 8 and plan.kept_checkpoints == (8, 10)


def test_no_cutoff_checkpoint_plan():
    plan = build_plan(inputs(listing(checkpoints=(10,))), cutoff_ms=CUTOFF, now_ms=NOW)
    assert plan.decision == NO_CHECKPOINT and plan.allowed and plan.num_deletions == 0
    assert plan.truncates_before is None and plan.ordered_deletions() == []


def test_nothing_left_to_delete():
    """Already cleaned up to 8: checkpoint 8 has no commit before it; it is the cutoff and nothing
    is older."""
    lst = listing(checkpoints=(8, 10), first=8)
    plan = build_plan(inputs(lst), cutoff_ms=CUTOFF, now_ms=NOW)
    assert plan.decision == NOTHING_TO_DELETE and plan.num_deletions == 0 and plan.truncates_before == 8


@pytest.mark.parametrize("boundary", [None, 10])
def test_leftovers_of_an_interrupted_run_go_at_once(boundary):
    """An interrupted run deleted commits 0..11 (all expired) but not yet the .crc of 11 nor
    checkpoints 6, 8, 10. Commit 12 is recent, yet checkpoint 12 has no commit before it any more,
    so the rerun finishes the job instead of waiting until commit 12 expires."""
    lst = listing(checkpoints=(6, 8, 10, 12), old=12, first=12, extra_files=[fs(crc_path(11), NOW)])
    assert select_cutoff_checkpoint(lst, CUTOFF) == 12
    plan = build_plan(inputs(lst, boundary=boundary), cutoff_ms=CUTOFF, now_ms=NOW)
    assert plan.allowed and plan.delete_commits == () and plan.delete_other == (crc_path(11),)
    assert sorted(versions_of(plan.delete_checkpoints)) == [6, 8, 10]


def test_leftovers_below_a_partial_cutoff():
    """C = 8 < V = 10 after an interrupted partial run: the leftover .crc of 7 goes (no commit is
    deleted, so rule (c) has no range to check) and rule (a) keeps checkpoint 6."""
    lst = listing(checkpoints=(6, 8, 10), old=8, first=8, extra_files=[fs(crc_path(7), NOW)])
    plan = build_plan(inputs(lst, boundary=10), cutoff_ms=CUTOFF, now_ms=NOW, spans=None)
    assert plan.allowed and plan.decision == SUPPORTED_RANGE
    assert plan.delete_other == (crc_path(7),) and plan.delete_checkpoints == ()


# --- the gate (rules a, c) ---------------------------------------------------------------------------

@pytest.mark.parametrize("boundary", [2, 6, 7, 8])
def test_all_at_once_when_cutoff_checkpoint_reaches_boundary(boundary):
    """Rules (a)+(c), all-at-once form (scenario 50, V in {2,6,7,8}): checkpoints < V may go
    because every version < V goes in this one operation — whatever their protocols."""
    lst = listing(checkpoints=(6, 8, 10))
    hist = spans((0, BASE), (3, UNSUPPORTED), (5, BASE))
    plan = build_plan(inputs(lst, boundary=boundary), cutoff_ms=CUTOFF, now_ms=NOW, spans=hist)
    assert plan.allowed and plan.decision == ALL_AT_ONCE
    assert versions_of(plan.delete_checkpoints) == [6]
    assert "rules (a) and (c)" in plan.reason


def test_boundary_zero_is_no_protection():
    plan = build_plan(inputs(listing(checkpoints=(6, 8)), boundary=0), cutoff_ms=CUTOFF, now_ms=NOW)
    assert plan.allowed and plan.decision == UNPROTECTED and plan.checkpoint_protection
    assert versions_of(plan.delete_checkpoints) == [6]


def test_partial_cleanup_keeps_checkpoints_when_range_supported():
    """C = 8 < V = 9 and every protocol of 0..8 is supported: rule (c) lets the commits (and .crc)
    go; rule (a) keeps checkpoint 6."""
    lst = listing(checkpoints=(6, 8, 10), crcs=True)
    plan = build_plan(inputs(lst, boundary=9), cutoff_ms=CUTOFF, now_ms=NOW, spans=spans((0, BASE)))
    assert plan.allowed and plan.decision == SUPPORTED_RANGE
    assert versions_of(plan.delete_commits) == list(range(8))
    assert plan.delete_checkpoints == ()
    assert sorted(versions_of(plan.delete_other)) == list(range(8))
    assert plan.kept_checkpoints == (6, 8, 10)
    assert "rule (a)" in plan.reason and "rule (c)" in plan.reason


@pytest.mark.parametrize("hist, bad_version", [
    (spans((0, UNSUPPORTED), (1, BASE)), 0),
    (spans((0, BASE), (4, UNSUPPORTED), (8, BASE)), 4),
    (spans((0, BASE), (8, UNSUPPORTED), (10, BASE)), 8),          # the kept checkpoint itself
    (spans((0, BASE), (8, WRITER_UNSUPPORTED), (10, BASE)), 8),   # readable is not enough
    (spans((0, BASE), start=3), 0),                               # 0..2 not reconstructable
    (None, 0),                                                    # history unreadable
])
def test_partial_cleanup_skipped_when_a_version_is_unsupported(hist, bad_version):
    lst = listing(checkpoints=(0, 8, 10))
    plan = build_plan(inputs(lst, boundary=10), cutoff_ms=CUTOFF, now_ms=NOW, spans=hist)
    assert not plan.allowed and plan.decision == SKIPPED_UNSUPPORTED
    assert plan.num_deletions == 0 and plan.ordered_deletions() == []
    assert f"version {bad_version} " in plan.reason and "rule (c)" in plan.reason
    assert plan.truncates_before is None


def test_unsupported_versions_after_the_cutoff_checkpoint_do_not_matter():
    """Scenario 55: the unsupported feature at v10/v11 lies outside the range 0..8."""
    lst = listing(checkpoints=(8, 10))
    plan = build_plan(inputs(lst, boundary=10), cutoff_ms=CUTOFF, now_ms=NOW,
                      spans=spans((0, BASE), (10, UNSUPPORTED), (12, BASE)))
    assert plan.allowed and plan.decision == SUPPORTED_RANGE


def test_partial_cleanup_can_be_disabled():
    lst = listing(checkpoints=(6, 8, 10))
    plan = build_plan(inputs(lst, boundary=9), cutoff_ms=CUTOFF, now_ms=NOW, spans=spans((0, BASE)),
                      partial_when_supported=False)
    assert not plan.allowed and plan.decision == SKIPPED_PARTIAL and plan.num_deletions == 0


def test_no_existence_shortcut():
    """Scenario 54: Spark allows this because a checkpoint exists at end + 1 = 8. Not here."""
    lst = listing(checkpoints=(0, 8, 10))
    plan = build_plan(inputs(lst, boundary=10), cutoff_ms=CUTOFF, now_ms=NOW,
                      spans=spans((0, BASE), (8, UNSUPPORTED), (10, BASE)))
    assert not plan.allowed and plan.delete_checkpoints == ()


def test_first_unsupported_version():
    hist = spans((0, BASE), (4, UNSUPPORTED), (7, BASE))
    assert first_unsupported_version(hist, 0, 3) is None
    assert first_unsupported_version(hist, 0, 8)[0] == 4
    assert first_unsupported_version(hist, 5, 8)[0] == 5
    assert first_unsupported_version(hist, 7, 15) is None
    assert first_unsupported_version(hist, 7, 16)[0] == 16   # beyond the history
    assert first_unsupported_version([], 0, 0)[0] == 0


# --- sidecars -------------------------------------------------------------------------------------------

def _v2(version: int, name: str) -> CheckpointInstance:
    return CheckpointInstance(version, "v2", (fs(v2_checkpoint_path(version, name)),))


def test_sidecars_referenced_by_kept_checkpoints_stay():
    v6, v8 = _v2(6, "u6"), _v2(8, "u8")
    lst = listing(checkpoints=(10,), extra_checkpoints=[v6, v8])
    side = {n: fs(sidecar_path(n), NOW - 2 * DAY_MS) for n in ("a.parquet", "b.parquet", "c.parquet")}
    young = fs(sidecar_path("d.parquet"), NOW - HOUR_MS)
    refs = {v6.paths: frozenset({side["a.parquet"].path}), v8.paths: frozenset({side["b.parquet"].path})}
    plan = build_plan(inputs(lst, sidecars=(*side.values(), young), sidecar_refs=refs),
                      cutoff_ms=CUTOFF, now_ms=NOW)
    assert plan.cutoff_checkpoint == 8
    assert set(plan.delete_other) == {side["a.parquet"].path, side["c.parquet"].path}
    order = plan.ordered_deletions()
    assert order.index(side["a.parquet"].path) > order.index(v6.paths[0])

    # The references of a kept v2 checkpoint are unknown: no sidecar is deleted.
    plan = build_plan(inputs(lst, sidecars=tuple(side.values()), sidecar_refs={**refs, v8.paths: None}),
                      cutoff_ms=CUTOFF, now_ms=NOW)
    assert not any("_sidecars" in p for p in plan.delete_other)

    # Rule (a) keeps the v6 checkpoint when C < V, so its sidecar stays too.
    plan = build_plan(inputs(lst, boundary=9, sidecars=tuple(side.values()), sidecar_refs=refs),
                      cutoff_ms=CUTOFF, now_ms=NOW, spans=spans((0, BASE)))
    assert plan.decision == SUPPORTED_RANGE
    assert [p for p in plan.delete_other if "_sidecars" in p] == [side["c.parquet"].path]


# --- rule (d): the order ------------------------------------------------------------------------------

def test_ordered_deletions_commits_first():
    plan = CleanupPlan(
        cutoff_ms=CUTOFF, cutoff_checkpoint=8,
        delete_commits=tuple(commit_path(v) for v in (3, 0, 1, 2)),
        delete_checkpoints=(classic_checkpoint_path(6), multipart_checkpoint_path(4, 2, 2),
                            multipart_checkpoint_path(4, 1, 2)),
        delete_other=(sidecar_path("x.parquet"), compacted_path(0, 2), crc_path(2), crc_path(0),
                      staged_commit_path(1, "u"), f"{LOG_DIR}/_staged_commits/zzz.txt"),
        allowed=True, reason="", truncates_before=8)
    order = plan.ordered_deletions()
    assert order[:7] == [commit_path(0), crc_path(0), commit_path(1), staged_commit_path(1, "u"),
                         commit_path(2), crc_path(2), commit_path(3)]
    assert order[7:10] == [multipart_checkpoint_path(4, 1, 2), multipart_checkpoint_path(4, 2, 2),
                           classic_checkpoint_path(6)]
    assert order[10] == compacted_path(0, 2)
    assert set(order[11:]) == {sidecar_path("x.parquet"), f"{LOG_DIR}/_staged_commits/zzz.txt"}
    assert sorted(order) == sorted([*plan.delete_commits, *plan.delete_checkpoints, *plan.delete_other])


def test_plan_document():
    plan = build_plan(inputs(listing(checkpoints=(6, 8, 10)), boundary=2), cutoff_ms=CUTOFF, now_ms=NOW,
                      retention_ms=30 * DAY_MS)
    doc = plan_document(plan)
    assert doc["cutoff"] == "2024-01-04T00:00:00Z" and doc["cutoff_checkpoint"] == 8
    assert doc["allowed"] is True and doc["decision"] == ALL_AT_ONCE
    assert doc["boundary_version"] == 2 and doc["checkpoint_protection"] is True
    assert doc["ordered_deletions"][:8] == [commit_path(v) for v in range(8)]
    assert doc["ordered_deletions"][8:] == [classic_checkpoint_path(6)]
    assert doc["kept_checkpoints"] == [8, 10] and doc["truncates_before"] == 8
