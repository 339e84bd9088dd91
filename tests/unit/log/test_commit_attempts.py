"""log/commit.py in its two halves: :func:`build_attempt` decides the file an attempt writes (its
version, its commitInfo first, fresh row IDs) without touching the store, :func:`write_attempt`
creates it only if absent; :class:`AttemptBase` moves past a lost race's winners without reading
the log again."""

from __future__ import annotations

import json

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import CommitFileExistsError
from delta_downgrade.log.commit import AttemptBase, build_attempt, read_winning_commits, write_attempt
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import CommitInfo, DomainMetadata
from tests.drop_support import build


def _attempt(log: DeltaLog, base: AttemptBase, actions: list) -> object:
    return build_attempt(log, base, actions, operation="TEST", operation_parameters={"n": 1},
                         clock=ManualClock(), is_blind_append=False, txn_id="txn-1", row_tracking_preserved=True)


def _lines(path: str, version: int) -> list[dict]:
    with open(f"{path}/_delta_log/{version:020d}.json", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_an_attempt_is_built_without_writing_and_written_once(tmp_path):
    path = str(tmp_path / "t")
    build(path, Protocol(1, 2), appends=1)
    log = DeltaLog(path)
    base = AttemptBase.read(log, 1, [])
    attempt = _attempt(log, base, [DomainMetadata("test.domain", "{}")])
    assert attempt.version == 2
    assert isinstance(attempt.actions[0], CommitInfo) and attempt.actions[0].operation == "TEST"
    assert attempt.actions[0].extra["readVersion"] == 1 and attempt.actions[0].extra["txnId"] == "txn-1"
    assert log.refresh().latest_version() == 1  # building wrote nothing
    write_attempt(log, attempt)
    assert [list(line) for line in _lines(path, 2)] == [["commitInfo"], ["domainMetadata"]]
    with pytest.raises(CommitFileExistsError):
        write_attempt(log, _attempt(log, base, []))
    assert len(_lines(path, 2)) == 2  # the winner's file is untouched


def test_the_base_moves_past_the_winners(tmp_path):
    path = str(tmp_path / "t")
    builder = build(path, Protocol(1, 2), appends=0)
    log = DeltaLog(path)
    base = AttemptBase.read(log, 0, [])
    builder.set_properties({"delta.appendOnly": "true"})
    builder.set_protocol(Protocol(1, 3))
    base.advance(read_winning_commits(log, 0))
    assert base.read_version == 2
    assert base.protocol == Protocol(1, 3) and base.metadata.configuration["delta.appendOnly"] == "true"
    assert _attempt(log, base, []).version == 3
