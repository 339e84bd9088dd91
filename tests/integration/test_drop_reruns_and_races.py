"""A drop's outcome depends on the table, not on how often or how close together it runs:

- the loser of two drops of one feature, when the winner lands after the loser's checks and
  before its plan, reports ``already_absent`` (exit 0), never an invalid downgrade (exit 1), on
  local disk and on S3;
- ``drop-feature --for CLIENT`` rerun after a run that finished is exit 0 and writes nothing, on
  a table whose write blockers surface only once the client reads it;
- a dry run's RESULT carries the boundary and the protected checkpoints its plan names.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from delta_downgrade.drop.committer import LogCommitter, PlanRecorder
from delta_downgrade.app.cli import main
from delta_downgrade.app.render.result import parse_result_lines
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations import drop_feature as drop_module
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol import Protocol
from delta_downgrade_tools.builders import TableBuilder
from tests.object_stores import s3_endpoint, s3_server  # noqa: F401

VPC = "vacuumProtocolCheck"


def _files(path: str) -> dict[str, bytes]:
    root = Path(path)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _cli(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    [result] = parse_result_lines(out)
    return code, result, err


# --- the loser of two drops, the winner landing between its checks and its plan -----------------

def _winner_between_checks_and_plan(monkeypatch, location: str, options: dict | None) -> list:
    """The real validate_plan, then (once) the other drop of the same feature, run to its end."""
    checked = drop_module.validate_plan
    winners: list = []

    def validate_then_lose_the_race(*args, **kwargs):
        after = checked(*args, **kwargs)
        if not winners:
            winners.append(None)  # the winner's own validation passes through here too
            winners[0] = drop_feature(location, VPC, storage_options=options)
        return after

    monkeypatch.setattr(drop_module, "validate_plan", validate_then_lose_the_race)
    return winners


@pytest.mark.parametrize("committer", [LogCommitter, PlanRecorder])
def test_the_loser_of_a_drop_race_decided_before_its_plan_is_already_absent(golden_table, monkeypatch, committer):
    path = golden_table("vacuum_protocol_check")
    winners = _winner_between_checks_and_plan(monkeypatch, path, None)
    outcome = drop_feature(path, VPC, committer=committer())
    assert winners[0].status == "dropped"
    # The dry run plans on the version it checked (the drop it plans is still valid there); the
    # real run finds the feature gone and writes nothing of its own.
    assert outcome.status == ("planned" if committer is PlanRecorder else "already_absent"), outcome
    if committer is LogCommitter:
        assert outcome.commits == []
    protocol = DeltaLog(path).snapshot().protocol
    assert VPC not in protocol.features


def test_the_loser_of_a_drop_race_on_s3_is_already_absent(golden_table, monkeypatch, s3_endpoint):  # noqa: F811
    location = s3_endpoint.upload(golden_table("vacuum_protocol_check"), "t")
    options = s3_endpoint.storage_options
    winners = _winner_between_checks_and_plan(monkeypatch, location, options)
    outcome = drop_feature(location, VPC, storage_options=options)
    assert winners[0].status == "dropped"
    assert outcome.status == "already_absent" and outcome.commits == [], outcome
    drops = [k for k in s3_endpoint.keys("t") if k.endswith(".json") and "_delta_log/0" in k]
    texts = [s3_endpoint.read("t", k) for k in drops]
    assert sum(b'"DROP FEATURE"' in t for t in texts) == 1  # dropped exactly once


# --- drop-feature --for CLIENT, run again -------------------------------------------------------

CLIENT = "deltalake-0.18"
READ_BLOCKERS = frozenset({VPC, "v2Checkpoint"})


def _client_table(path: Path) -> str:
    """deltalake 0.18 cannot read it (vacuumProtocolCheck, v2Checkpoint); once it reads, a check
    constraint keeps it from writing, and checkConstraints cannot be dropped while it exists."""
    TableBuilder(path).create(pa.schema([("id", pa.int64())]),
                              protocol=Protocol(3, 7, READ_BLOCKERS, READ_BLOCKERS | {"checkConstraints"}),
                              configuration={"delta.constraints.positive": "id >= 0"},
                              rows=[{"id": i} for i in range(5)])
    return str(path)


def test_a_rerun_of_a_finished_drop_for_a_client_is_exit_0_and_writes_nothing(tmp_path, capsys):
    path = _client_table(tmp_path / "t")
    code, first, _ = _cli(capsys, "drop-feature", path, "--for", CLIENT)
    assert code == 0 and first["status"] == "dropped", first
    assert sorted(first["features_dropped"]) == sorted(READ_BLOCKERS)
    assert first["read_after"] == "yes" and first["write_after"] == "no"
    assert any("checkConstraints" in note for note in first["notes"]), first["notes"]
    written = _files(path)
    for _ in range(2):
        code, again, err = _cli(capsys, "drop-feature", path, "--for", CLIENT)
        assert code == 0, (again, err)
        assert again["status"] == "already_compatible" and again["features_dropped"] == [], again
        assert any("DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE" in note for note in again["notes"]), again
        # The table's checkpoint protection, as the run that finished reported it.
        for key in ("boundary_version", "protected_checkpoints", "truncate_after", "needs_truncate"):
            assert again[key] == first[key], key
        assert _files(path) == written


def test_a_drop_for_a_client_plans_the_write_blockers_that_show_once_it_reads(tmp_path, capsys):
    # Without the constraint, checkConstraints is droppable: the first run drops it too (the
    # writer blocker appears only on the table the read drops leave), so the rerun has nothing to do.
    path = tmp_path / "t"
    TableBuilder(path).create(pa.schema([("id", pa.int64())]),
                              protocol=Protocol(3, 7, READ_BLOCKERS, READ_BLOCKERS | {"checkConstraints"}),
                              rows=[{"id": i} for i in range(5)])
    code, dry, _ = _cli(capsys, "drop-feature", str(path), "--for", CLIENT, "--dry-run")
    assert code == 0 and "checkConstraints" in dry["features_planned"], dry
    code, first, _ = _cli(capsys, "drop-feature", str(path), "--for", CLIENT)
    assert code == 0 and first["features_dropped"] == dry["features_planned"], first
    assert first["read_after"] == "yes"
    written = _files(str(path))
    code, again, _ = _cli(capsys, "drop-feature", str(path), "--for", CLIENT)
    assert code == 0 and again["status"] == "already_compatible", again
    assert _files(str(path)) == written


# --- the dry run's RESULT is the run's ------------------------------------------------------------

@pytest.mark.parametrize("command", [["drop-feature", "{t}", VPC], ["drop-feature", "{t}", "--for", CLIENT]])
def test_the_dry_runs_result_carries_the_planned_boundary_and_protected_checkpoints(golden_table, capsys, command):
    path = golden_table("vacuum_protocol_check")
    argv = [word.format(t=path) for word in command]
    code, planned, _ = _cli(capsys, *argv, "--dry-run")
    assert code == 0 and planned["status"] == "planned", planned
    code, done, _ = _cli(capsys, *argv)
    assert code == 0 and done["status"] == "dropped", done
    assert planned["boundary_version"] == done["boundary_version"] is not None
    assert planned["protected_checkpoints"] == done["protected_checkpoints"] != []
    assert planned["truncate_after"] is not None and done["truncate_after"] is not None
