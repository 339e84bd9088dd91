"""drop/committer.py: the seam a drop's steps go through. The same steps, taken by a
``PlanRecorder`` and by a ``LogCommitter``, give the same step list; the recorder writes nothing
and leaves the planned table, the log committer leaves the same table in the log."""

from __future__ import annotations

import os

from delta_downgrade.clock import ManualClock
from delta_downgrade.drop.committer import LogCommitter, PlanRecorder
from delta_downgrade.drop.plan import DropStep
from delta_downgrade.drop.run import DropRun
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import ProtocolAction
from tests.drop_support import build

V2 = "v2Checkpoint"
V2_PROTOCOL = Protocol(3, 7, frozenset({V2}), frozenset({V2}))


def _files(path: str) -> list[str]:
    return sorted(os.path.join(r, f) for r, _d, fs in os.walk(path) for f in fs)


def _steps(run: DropRun) -> None:
    """A few steps of a drop: a property change, a checkpoint, an empty commit, a protocol change."""
    latest = run.latest()
    run.commit([latest.metadata.with_configuration({"delta.checkpointPolicy": "v2"})], "SET TBLPROPERTIES",
               read_version=latest.version)
    run.checkpoint()
    run.commit([], "Empty Commit")
    latest = run.latest()
    run.commit([ProtocolAction.of(Protocol(1, 2))], "DROP FEATURE", read_version=latest.version)
    run.checkpoint()


def test_the_plan_and_the_log_take_the_same_steps_and_only_the_log_is_written(tmp_path):
    planned_path, written_path = str(tmp_path / "planned"), str(tmp_path / "written")
    for path in (planned_path, written_path):
        build(path, V2_PROTOCOL, appends=1)
    before = _files(planned_path)

    recorder = PlanRecorder()
    plan = DropRun(DeltaLog(planned_path), V2, clock=ManualClock(), committer=recorder)
    _steps(plan)
    real = DropRun(DeltaLog(written_path), V2, clock=ManualClock())
    assert isinstance(real.committer, LogCommitter) and real.writes and not plan.writes
    _steps(real)

    expected = [DropStep("commit", 2, "SET TBLPROPERTIES"), DropStep("checkpoint", 2, "v2"),
                DropStep("commit", 3, "Empty Commit"), DropStep("commit", 4, "DROP FEATURE"),
                DropStep("checkpoint", 4, "classic")]
    assert plan.steps == real.steps == expected
    # the plan wrote nothing and says so; the real run wrote its commits and checkpoints
    assert _files(planned_path) == before
    assert plan.commits == [] and plan.checkpoints == [] and plan.written_so_far() == "Nothing of this run was written."
    assert real.commits == [2, 3, 4] and any(".checkpoint." in p for p in real.checkpoints)
    # the planned table is the table the log holds after the real steps
    planned, written = recorder.planned, DeltaLog(written_path).snapshot()
    assert planned is not None and planned is plan.latest()
    assert (planned.version, planned.protocol, planned.metadata.configuration) == \
        (written.version, written.protocol, written.metadata.configuration)
    # (the two tables' data files have their own names: none of the steps touched a file)
    assert planned.state().files == DeltaLog(planned_path).snapshot().state().files
    assert len(planned.state().files) == len(written.state().files) == 2
    assert len(planned.derived_commits) == 3


def test_a_plan_starts_from_the_table_it_is_given(tmp_path):
    path = str(tmp_path / "t")
    build(path, V2_PROTOCOL, appends=1)
    start = DeltaLog(path).snapshot().with_commits([[]])  # the table an earlier plan leaves
    run = DropRun(DeltaLog(path), V2, committer=PlanRecorder(start))
    assert run.latest() is start
    assert run.commit([], "Empty Commit") == start.version + 1
    assert run.latest().derived_commits == [[], []]
