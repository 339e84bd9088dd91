"""The protocol / checkpoint timeline of the compat report, on real logs: golden tables, a fast
DROP FEATURE written by the package, and a long log whose older history is not drawn."""

from __future__ import annotations

import pyarrow as pa
import pytest

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.operations.protocol_timeline import protocol_timeline
from delta_downgrade.protocol import Protocol
from delta_downgrade_tools.builders import TableBuilder


def test_v2_checkpoint_with_sidecars_and_the_protocol_change(golden_table):
    tl = protocol_timeline(golden_table("v2_checkpoint_json_sidecars"))
    assert (tl.earliest_version, tl.latest_version, tl.drawn_from) == (0, 2, 0)
    assert not tl.older_history_not_drawn
    [cp] = tl.checkpoints
    assert (cp.version, cp.kind, cp.sidecars, cp.protected) == (2, "v2", 2, False)
    [change] = tl.protocol_changes
    assert change.version == 1 and change.added == ("v2Checkpoint",) and change.removed == ()
    assert tl.initial_protocol == Protocol(1, 2)
    assert tl.latest_protocol == DeltaLog(golden_table("v2_checkpoint_json_sidecars")).snapshot().protocol


def test_multipart_checkpoint(golden_table):
    tl = protocol_timeline(golden_table("multipart_checkpoint"))
    [cp] = tl.checkpoints
    assert cp.kind == "multipart" and cp.parts >= 2 and cp.complete and cp.sidecars is None


def test_history_truncated_starts_at_the_earliest_reconstructable_version(golden_table):
    tl = protocol_timeline(golden_table("history_truncated_no_replay"))
    assert tl.earliest_version == tl.drawn_from == 2
    assert [c.version for c in tl.checkpoints] == [2, 4]
    assert tl.checkpoints_not_drawn == 0 and not tl.older_history_not_drawn


def test_fast_drop_barriers_are_protected_and_the_boundary_is_marked(golden_table):
    path = golden_table("dv_enabled_no_dvs")
    drop_feature(path, "deletionVectors")
    tl = protocol_timeline(path)
    boundary = tl.boundary_version
    assert boundary == tl.latest_version and tl.checkpoint_protection
    # Checkpoint Protection rule (a): every checkpoint before the boundary is kept; the one at
    # the boundary (the downgrade commit's) is not covered by it.
    assert [(c.version, c.protected, c.at_boundary) for c in tl.checkpoints] == [
        (1, True, False), (2, True, False), (3, True, False), (boundary, False, True)]
    [drop] = tl.drop_feature_commits
    assert (drop.version, drop.feature, drop.truncate_history) == (boundary, "deletionVectors", False)
    [change] = tl.protocol_changes
    assert change.version == boundary
    assert change.added == ("checkpointProtection",) and change.removed == ("deletionVectors",)


def test_only_the_newest_commits_are_read_and_older_history_is_counted(tmp_path):
    b = TableBuilder(tmp_path / "t")
    b.create(pa.schema([("x", pa.int64())]), rows=[{"x": 0}])
    for i in range(1, 30):
        b.append([{"x": i}])
        if i % 10 == 0:
            b.checkpoint()
    b.set_protocol(Protocol(1, 4))  # v30: in the window
    # a commit before the window is never read: damaged, it changes nothing
    (tmp_path / "t" / "_delta_log" / "00000000000000000015.json").write_text('{"commitInfo": {damaged\n')
    tl = protocol_timeline(str(tmp_path / "t"), max_commits=8)
    assert (tl.earliest_version, tl.latest_version, tl.drawn_from) == (0, 30, 23)
    assert tl.older_history_not_drawn
    assert tl.checkpoints_not_drawn == 2 and [c.version for c in tl.checkpoints] == []
    assert tl.initial_protocol == Protocol(1, 2)
    assert [(c.version, c.protocol) for c in tl.protocol_changes] == [(30, Protocol(1, 4))]


def test_a_protocol_change_before_the_window_is_the_initial_protocol(tmp_path):
    b = TableBuilder(tmp_path / "t")
    b.create(pa.schema([("x", pa.int64())]), rows=[{"x": 0}])
    b.set_protocol(Protocol(1, 3))  # v1: before the window
    for i in range(5):
        b.append([{"x": i}])
    tl = protocol_timeline(str(tmp_path / "t"), max_commits=3)
    assert tl.drawn_from == 4 and tl.initial_protocol == Protocol(1, 3) and tl.protocol_changes == ()


def test_a_log_with_a_gap_is_refused_with_its_error(golden_table):
    from delta_downgrade.errors import VersionsNotContiguousError

    with pytest.raises(VersionsNotContiguousError):
        protocol_timeline(golden_table("bad_versions_not_contiguous"))
