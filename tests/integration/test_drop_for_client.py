"""``drop-feature --for CLIENT`` on tables built here: the whole plan is decided before the first
write (a later feature that cannot be dropped refuses the run with nothing written), the dry run
writes nothing and plans each drop on the table the previous one leaves, and a run killed after
any step is finished by a rerun, which skips the features already dropped."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.compat import packaged_catalogue
from delta_downgrade.errors import ClientCannotBeUnblockedError, DeltaDowngradeError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_for_client import STATUS_ALREADY_COMPATIBLE, drop_for_client
from delta_downgrade.protocol import Protocol
from delta_downgrade_tools.builders import TableBuilder
from tests.golden_cases import golden_cases
from tests.logging_support import drop_steps
from tests.oracle import same_rows

CLIENT = "deltalake-0.18-pyarrow"
TWO = frozenset({"deletionVectors", "vacuumProtocolCheck"})
ROWS = [{"id": i, "name": f"n{i}"} for i in range(10)]


def _table(path: Path, features=TWO, configuration=None) -> str:
    b = TableBuilder(path)
    b.create(pa.schema([("id", pa.int64()), ("name", pa.string())]), protocol=Protocol(3, 7, features, features),
             configuration=configuration or {"delta.enableDeletionVectors": "true"}, rows=ROWS)
    b.append([{"id": 10, "name": "n10"}])
    return str(path)


def _files(path: str) -> dict[str, bytes]:
    root = Path(path)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


class Killed(BaseException):
    """Raised from a logged step's handler: nothing in the drop may catch it."""


def test_two_features_dropped_in_order_and_the_dry_run_is_the_run(tmp_path, oracle_018):
    path = _table(tmp_path / "t")
    client = packaged_catalogue().client(CLIENT)
    assert not oracle_018.pyarrow_rows(path).ok
    before = _files(path)
    with drop_steps() as planned_steps:
        plan = drop_for_client(path, client, committer=PlanRecorder())
    assert _files(path) == before
    assert plan.status == "planned" and plan.features_planned == ["deletionVectors", "vacuumProtocolCheck"]
    # The second drop is planned after the first one's steps, not on the table as it is.
    first, second = plan.plans
    assert second.steps[0].version == first.steps[-1].version + 1
    # The dry run tells every planned step once.
    assert len([s for s in planned_steps if not s.startswith("drop ")]) == sum(len(p.steps) for p in plan.plans)
    with drop_steps() as written_steps:
        outcome = drop_for_client(path, client)
    assert outcome.features_dropped == ["deletionVectors", "vacuumProtocolCheck"]
    assert [d.planned for d in outcome.drops] == [p.steps for p in plan.plans]
    assert [d.written for d in outcome.drops] == [p.steps for p in plan.plans]
    assert DeltaLog(path).snapshot().protocol == Protocol(1, 7, None, {"checkpointProtection"})
    assert outcome.truncate_history_before_write
    result = oracle_018.pyarrow_rows(path)
    assert result.ok and same_rows(result, ROWS + [{"id": 10, "name": "n10"}])
    again = drop_for_client(path, client)
    assert again.status == STATUS_ALREADY_COMPATIBLE and again.features_dropped == []
    assert len(written_steps) > 8


def test_a_feature_that_cannot_be_dropped_refuses_before_the_first_write(tmp_path):
    # variantType (a reader feature deltalake 0.18 lacks) cannot be dropped: the droppable
    # features next to it are not dropped either, nothing is written.
    path = tmp_path / "t"
    blocked = TWO | {"variantType"}
    TableBuilder(path).create(pa.schema([("id", pa.int64())]), protocol=Protocol(3, 7, blocked, blocked),
                              rows=[{"id": 1}])
    before = _files(str(path))
    with pytest.raises(ClientCannotBeUnblockedError) as info:
        drop_for_client(str(path), packaged_catalogue().client(CLIENT))
    assert info.value.exit_code == 2 and "variantType" in info.value.message
    assert info.value.error_class == "DELTA_DOWNGRADE_CLIENT_CANNOT_BE_UNBLOCKED"
    assert _files(str(path)) == before


def test_a_drop_that_would_fail_refuses_the_whole_run(tmp_path):
    # Each drop reads delta.logRetentionDuration, invalid here: the plan, made for every drop
    # before anything is written, refuses (a feature's own refusal on a later step of the chain is
    # the same call, plan_drop(after=), and is not separately exercised here).
    path = _table(tmp_path / "t", configuration={"delta.enableDeletionVectors": "true",
                                                  "delta.logRetentionDuration": "forever"})
    before = _files(path)
    with pytest.raises(DeltaDowngradeError) as info:
        drop_for_client(path, packaged_catalogue().client(CLIENT))
    assert info.value.exit_code == 2
    assert _files(path) == before


def test_killed_after_each_step_a_rerun_finishes(tmp_path, oracle_018):
    client = packaged_catalogue().client(CLIENT)
    reference = _table(tmp_path / "reference")
    with drop_steps() as steps:
        drop_for_client(reference, client)
    final = DeltaLog(reference).snapshot().protocol
    expected = ROWS + [{"id": 10, "name": "n10"}]
    for k in range(1, len(steps) + 1):
        path = _table(tmp_path / f"t{k}")

        def kill(message: str, seen=[]) -> None:  # noqa: B006 - one list per table
            seen.append(message)
            if len(seen) == k:
                raise Killed(message)
        with pytest.raises(Killed), drop_steps(kill):
            drop_for_client(path, client)
        outcome = drop_for_client(path, client)
        assert outcome.status in ("dropped", STATUS_ALREADY_COMPATIBLE), (k, steps[k - 1])
        # Features dropped before the kill are not dropped again.
        assert len(outcome.features_dropped) <= 2
        assert DeltaLog(path).snapshot().protocol == final, (k, steps[k - 1])
        if k in (1, len(steps) // 2, len(steps)):  # the real reader on a few of them (subprocesses)
            result = oracle_018.pyarrow_rows(path)
            assert result.ok and same_rows(result, expected), (k, result.error)


def test_the_task_for_a_client_sets_the_features_dropped_as_task_values(tmp_path, monkeypatch):
    import json

    from delta_downgrade.app.tasks.entrypoints import drop_feature_task
    from tests.drop_support import run_task

    path = _table(tmp_path / "t")
    run_dir = tmp_path / "run"
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_KEY", "drop_feature")
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_VALUES_DIR", str(run_dir))
    # Both a feature and a client: exit 2, nothing written.
    before = _files(path)
    code, results, err = run_task(drop_feature_task, [f"--table={path}", "--feature=deletionVectors",
                                                      "--for_client=deltalake-0.18"])
    assert code == 2 and results[0]["error_class"] == "DELTA_DOWNGRADE_BAD_SETTINGS", (results, err)
    assert _files(path) == before
    # The job's form: feature= (empty) next to for_client.
    code, results, err = run_task(drop_feature_task, [f"--table={path}", "--feature=", "--for_client=deltalake-0.18"])
    assert code == 0, err
    [result] = results
    assert result["client"] == CLIENT and result["features_dropped"] == ["deletionVectors", "vacuumProtocolCheck"]
    assert result["feature"] == "deletionVectors,vacuumProtocolCheck" and result["status"] == "dropped"
    assert result["truncate_history_before_write"] is True and result["needs_truncate"] is True
    values = json.loads((run_dir / "task_values" / "drop_feature.json").read_text())
    assert values["features_dropped"] == result["features_dropped"] and values["client"] == CLIENT
    assert values["min_reader_version"] == 1 and values["boundary_version"] == result["boundary_version"]


def test_a_failure_after_the_first_feature_says_what_was_dropped_and_a_rerun_continues(tmp_path):
    from delta_downgrade.errors import ClientDropIncompleteError, DeltaDowngradeError as Err

    path = _table(tmp_path / "t")
    client = packaged_catalogue().client(CLIENT)
    seen: list[str] = []

    def fail_in_the_second_drop(message: str) -> None:
        if message.startswith("committed") and any("DROP FEATURE" in m for m in seen):
            raise Err("injected failure", table=path)
        seen.append(message)
    # The first drop (deletionVectors) ends with its downgrade commit and checkpoint; the failure
    # hits the first step after it, in vacuumProtocolCheck's drop.
    with pytest.raises(ClientDropIncompleteError) as info, drop_steps(fail_in_the_second_drop):
        drop_for_client(path, client)
    assert info.value.exit_code == 1
    assert info.value.params["features_dropped"] == ["deletionVectors"] and info.value.feature == "vacuumProtocolCheck"
    assert "deletionVectors" not in DeltaLog(path).snapshot().protocol.features
    outcome = drop_for_client(path, client)
    assert outcome.features_dropped == ["vacuumProtocolCheck"]


def _chained_rewrite_tables(root: Path) -> list[str]:
    """Golden tables whose plan for CLIENT drops two or more features, one with a data rewrite:
    later drops are planned on the table an earlier rewrite leaves."""
    from delta_downgrade.compat import client_verdict

    client, found = packaged_catalogue().client(CLIENT), []
    for table in sorted(p for p in root.iterdir() if (p / "_delta_log").is_dir()):
        try:
            snapshot = DeltaLog(str(table)).snapshot(check_read=False)
        except DeltaDowngradeError:
            continue
        plan = client_verdict(client, snapshot.protocol, snapshot.schema).plan
        if plan is not None and plan.possible and len(plan.steps) >= 2 and any(s.may_rewrite_data for s in plan.steps):
            found.append(table.name)
    return found


@pytest.mark.parametrize("table", golden_cases(_chained_rewrite_tables))
def test_a_chain_after_a_data_rewrite_plans_what_the_run_writes(table, golden_table, spark, oracle, oracle_018):
    # A rewrite's plan keeps every file (rewritten in place, DVs as the rewrite leaves them), so a
    # later drop's plan - a DV purge's batches, its DV check - is the one the run performs.
    path = golden_table(table)
    reference = oracle.scan_rows(path)
    client = packaged_catalogue().client(CLIENT)
    try:
        plan = drop_for_client(path, client, committer=PlanRecorder())
    except DeltaDowngradeError as refused:
        # A damaged table (a DV file that does not resolve): the plan refuses, and so does the
        # run, with the same error and before its first write.
        assert refused.exit_code == 2 and not reference.ok, refused
        before = _files(path)
        with pytest.raises(type(refused)) as info:
            drop_for_client(path, client)
        assert info.value.exit_code == 2 and _files(path) == before
        return
    outcome = drop_for_client(path, client)
    assert [d.written for d in outcome.drops] == [p.steps for p in plan.plans], table
    assert outcome.features_dropped == plan.features_planned
    result = oracle_018.pyarrow_rows(path)
    assert result.ok and same_rows(result, reference), (table, result.error)
