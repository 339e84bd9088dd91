"""drop/plan.py and the plan a drop follows: the plan writes nothing, a dry run tells
each step once, the real run reports planned and written steps, and a concurrent writer that
moves the versions is said, not hidden (the drop stays correct)."""

from __future__ import annotations

import contextlib
import io
import os

from delta_downgrade.app.cli import main
from delta_downgrade.clock import ManualClock
from delta_downgrade.log.commit import commit
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature, plan_drop
from delta_downgrade.drop.plan import DropStep
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from tests.drop_support import build
from tests.logging_support import drop_steps

VPC = "vacuumProtocolCheck"
VPC_PROTOCOL = Protocol(3, 7, frozenset({VPC}), frozenset({VPC}))
PLAN = [DropStep("commit", 3, "Empty Commit"), DropStep("checkpoint", 3, "classic"),
        DropStep("commit", 4, "Empty Commit"), DropStep("checkpoint", 4, "classic"),
        DropStep("commit", 5, "Empty Commit"), DropStep("checkpoint", 5, "classic"),
        DropStep("commit", 6, "DROP FEATURE"), DropStep("checkpoint", 6, "classic")]


def _table(tmp_path, name: str = "t") -> str:
    path = str(tmp_path / name)
    build(path, VPC_PROTOCOL)
    return path


def _files(path: str) -> list[str]:
    return sorted(os.path.join(r, f) for r, _d, fs in os.walk(path) for f in fs)


def test_the_plan_writes_nothing_and_the_run_writes_the_plan(tmp_path):
    path = _table(tmp_path)
    before = _files(path)
    plan = plan_drop(path, VPC, clock=ManualClock())
    assert _files(path) == before
    assert plan.steps == PLAN and plan.ending is None
    assert plan.protocol_after.features == frozenset({CHECKPOINT_PROTECTION})
    outcome = drop_feature(path, VPC, clock=ManualClock())
    assert outcome.planned == plan.steps and outcome.written == plan.steps and outcome.deviation is None


def test_a_concurrent_writer_moves_the_steps_and_the_run_says_so(tmp_path):
    path = _table(tmp_path)
    other = DeltaLog(path)

    def another_writer(message: str) -> None:
        if message == "committed v3: Empty Commit":  # right after the run's first commit
            commit(other.refresh(), 3, [], operation="WRITE")

    with drop_steps(another_writer) as steps:
        outcome = drop_feature(path, VPC, clock=ManualClock())
    assert outcome.status == "dropped"
    assert outcome.planned == PLAN
    assert [s.version for s in outcome.written if s.kind == "commit"] == [3, 5, 6, 7]
    assert outcome.deviation is not None
    assert outcome.deviation.startswith("step 3 differs from the plan: planned v4 Empty Commit, wrote v5 Empty Commit")
    assert steps.count(outcome.deviation) == 1  # told once, when it happens
    snapshot = DeltaLog(path).snapshot()
    assert snapshot.boundary_version == snapshot.version == 7  # the boundary follows the real version


def test_the_cli_dry_run_tells_each_step_once(tmp_path):
    path = _table(tmp_path)
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["drop-feature", path, VPC, "--dry-run"])
    assert code == 0
    text = err.getvalue()
    for step in ("commit v3: Empty Commit (0 action(s))", "checkpoint at v3", "commit v6: DROP FEATURE"):
        assert text.count(step) == 1, text
    assert "  planned: 4 commit(s), 4 checkpoint(s)" in text.splitlines()
