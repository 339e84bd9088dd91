"""The dry run is the run: for every golden table and every feature of its protocol the
registry says can be dropped, the plan made on one copy (``plan_drop``: what ``--dry-run``
reports) equals what the real drop writes on another copy with the same clock — every commit
(version, and ``commitInfo.operation`` read back from the commit file) and every checkpoint
(version, and kind: classic or V2, from the file names) — and a drop the run refuses (or ends
with a wait) is refused by the dry run with the same error class, nothing written by either.

Three paths: the fast path (Checkpoint Protection RFC), TRUNCATE HISTORY with a clock past the
truncate retention (for features that need history protection), and dropping checkpointProtection
on the table a fast drop left (both copies taken after the fast drop, the clock past the
retention)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import parse_log_file
from delta_downgrade.operations.drop_feature import drop_feature, plan_drop
from delta_downgrade.drop.plan import CHECKPOINT, COMMIT, DropPlan, DropStep
from delta_downgrade.protocol import CHECKPOINT_PROTECTION
from delta_downgrade.protocol.features import get_feature
from tests.golden_cases import golden_cases

pytestmark = pytest.mark.golden

DAY_MS = 86_400_000


def _cases(root: Path) -> list[tuple[str, str]]:
    """(table, feature) for every golden table whose protocol can be read and every removable
    feature it lists (the registry decides what is removable)."""
    out = []
    for name in sorted(os.listdir(root)):
        if not (root / name / "_delta_log").is_dir():
            continue
        try:
            protocol = DeltaLog(str(root / name)).snapshot(check_read=False).protocol
        except DeltaDowngradeError:
            continue  # no protocol to read: nothing the package could drop
        for feature in sorted(protocol.features):
            spec = get_feature(feature)
            if spec is not None and spec.removable:
                out.append((name, feature))
    return out


CASES = golden_cases(_cases)
HISTORY_PROTECTED = [(t, f) for t, f in CASES
                     if f != CHECKPOINT_PROTECTION and get_feature(f).requires_history_protection]


def _written(path: str, after: int) -> list[DropStep]:
    """Commits and checkpoints above version ``after``, read back from the log: a commit's
    operation from its commitInfo, a checkpoint's kind from its name (a multi-part one once)."""
    log_dir = Path(path) / "_delta_log"
    steps: dict[tuple[int, int, str], DropStep] = {}
    for name in os.listdir(log_dir):
        lf = parse_log_file(name)
        if lf is None or lf.version is None or lf.version <= after:
            continue
        if lf.kind == "commit":
            with open(log_dir / name) as fh:
                infos = [json.loads(line)["commitInfo"] for line in fh if '"commitInfo"' in line]
            steps[(lf.version, 0, "")] = DropStep(COMMIT, lf.version, infos[0]["operation"])
        elif lf.kind in ("checkpoint", "multipart", "v2"):
            kind = "v2" if lf.kind == "v2" else "classic"
            steps[(lf.version, 1, kind)] = DropStep(CHECKPOINT, lf.version, kind)
    return [steps[k] for k in sorted(steps)]


def _latest(path: str) -> int:
    return DeltaLog(path).latest_version()


def _plan_and_run(planned_copy: str, real_copy: str, feature: str, clock: ManualClock, *,
                  truncate_history: bool = False):
    """The plan on one copy and the real drop on the other: (plan or its error, outcome or its
    error, the steps the real run left on disk, what the planned copy has after planning)."""
    start_planned, start_real = _latest(planned_copy), _latest(real_copy)
    assert start_planned == start_real
    try:
        plan: DropPlan | DeltaDowngradeError = plan_drop(planned_copy, feature, clock=clock,
                                                         truncate_history=truncate_history)
    except DeltaDowngradeError as exc:
        plan = exc
    try:
        outcome = drop_feature(real_copy, feature, clock=clock, truncate_history=truncate_history)
    except DeltaDowngradeError as exc:
        outcome = exc
    assert _written(planned_copy, start_planned) == [], "the plan wrote something"
    return plan, outcome, _written(real_copy, start_real)


def _assert_same(plan, outcome, written: list[DropStep]) -> None:
    if isinstance(plan, DeltaDowngradeError):
        # Refused before the first write: the same refusal, and nothing written.
        assert isinstance(outcome, DeltaDowngradeError), f"planned {plan!r}, but the run gave {outcome!r}"
        assert type(outcome) is type(plan), f"planned {type(plan).__name__}, run {type(outcome).__name__}"
        assert written == [], f"a refused run wrote {written}"
        return
    on_disk = [s for s in plan.steps if s.kind in (COMMIT, CHECKPOINT)]
    assert on_disk == written, f"planned {on_disk}\nwritten {written}"
    if plan.ending is not None:
        assert type(outcome) is type(plan.ending), f"planned ending {plan.ending!r}, run {outcome!r}"
        return
    assert not isinstance(outcome, DeltaDowngradeError), f"planned {plan.steps}, run raised {outcome!r}"
    assert outcome.written == plan.steps and outcome.planned == plan.steps
    assert outcome.deviation is None


def _ids(cases: list[tuple[str, str]]) -> list[str]:
    return [f"{t}-{f}" for t, f in cases]


@pytest.mark.parametrize(("table", "feature"), CASES, ids=_ids(CASES))
def test_fast_drop_plan_equals_the_written_commits(table, feature, golden_table, spark, tmp_path):
    planned_copy, real_copy = golden_table(table), golden_table(table)
    clock = ManualClock()
    plan, outcome, written = _plan_and_run(planned_copy, real_copy, feature, clock)
    _assert_same(plan, outcome, written)

    if isinstance(outcome, DeltaDowngradeError) or not outcome.needs_truncate or outcome.status != "dropped":
        return
    # checkpointProtection on the table the fast drop left, once its truncate retention is past:
    # both copies are the dropped table.
    after_drop = str(tmp_path / "after-drop")
    shutil.copytree(real_copy, after_drop)
    clock.set(int(time.time() * 1000) + 2 * DAY_MS)
    plan, outcome, written = _plan_and_run(real_copy, after_drop, CHECKPOINT_PROTECTION, clock,
                                           truncate_history=True)
    _assert_same(plan, outcome, written)
    assert not isinstance(plan, DeltaDowngradeError) and plan.ending is None
    assert [s.detail for s in plan.commits][-1] == "DROP FEATURE"


@pytest.mark.parametrize(("table", "feature"), HISTORY_PROTECTED, ids=_ids(HISTORY_PROTECTED))
def test_truncate_history_plan_equals_the_written_commits(table, feature, golden_table, spark, tmp_path):
    planned_copy, real_copy = golden_table(table), golden_table(table)
    clock = ManualClock(int(time.time() * 1000) + 30 * DAY_MS)  # past every truncate retention
    plan, outcome, written = _plan_and_run(planned_copy, real_copy, feature, clock, truncate_history=True)
    _assert_same(plan, outcome, written)
    if isinstance(plan, DeltaDowngradeError) or plan.ending is None:
        return
    # The first run removed the traces and waits; the rerun (the clock past the retention of
    # everything the first run wrote) plans the cleanup's outcome and the DROP FEATURE commit.
    second = str(tmp_path / "second-run")
    shutil.copytree(real_copy, second)
    plan, outcome, written = _plan_and_run(real_copy, second, feature, clock, truncate_history=True)
    _assert_same(plan, outcome, written)
    assert not isinstance(plan, DeltaDowngradeError) and plan.ending is None
    assert plan.commits[-1].detail == "DROP FEATURE"


def test_the_dry_run_reports_the_plan(golden_table, spark):
    """``drop_feature(committer=PlanRecorder())`` (``--dry-run``) is the plan: the same steps, told once; on
    dv_basic_no_checkpoint the DV tombstones commit is in it and DROP FEATURE is at v8."""
    planned_copy = golden_table("dv_basic_no_checkpoint")
    clock = ManualClock()
    plan = plan_drop(planned_copy, "deletionVectors", clock=clock)
    outcome = drop_feature(planned_copy, "deletionVectors", clock=clock, committer=PlanRecorder())
    assert outcome.status == "planned" and outcome.planned == plan.steps
    assert [(s.version, s.detail) for s in plan.commits] == [
        (2, "UNSET TBLPROPERTIES"), (3, "REORG"), (4, "Deletion Vector Tombstones"), (5, "Empty Commit"),
        (6, "Empty Commit"), (7, "Empty Commit"), (8, "DROP FEATURE")]
    assert [s.version for s in plan.checkpoints] == [5, 6, 7, 8]
