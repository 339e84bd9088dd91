"""The checkpoint result of the Arrow replay reconciles the few repeated logical files of a log
without Arrow's group-by (and without importing Arrow's query engine); it is the very result of
the group-by, row for row, on random logs (re-added paths, escapes, deletion vectors, removes of
files never added) and on every version of each."""

from __future__ import annotations

import random

import pytest

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.replay import arrow_replay
from delta_downgrade.storage.local import LocalStorage
from tests.unit.log.test_arrow_replay import _random_log, _write_log


def _rows(path: str, version: int) -> tuple[list[dict], list[dict]]:
    segment = DeltaLog(path).segment(version)
    state = arrow_replay.replay_segment(LocalStorage(path), path, segment)
    return state.adds.to_pylist(), state.removes.to_pylist()


@pytest.mark.parametrize("seed", range(20))
def test_the_few_repeats_give_the_group_bys_result(tmp_path, monkeypatch, seed):
    path = _write_log(tmp_path / "t", _random_log(random.Random(1000 + seed)))
    for version in range(DeltaLog(path).latest_version() + 1):
        few = _rows(path, version)
        with monkeypatch.context() as m:
            m.setattr(arrow_replay, "FEW_REPEATS", -1)  # every repeat through the group-by
            assert _rows(path, version) == few, version


def test_a_log_of_many_repeats_takes_the_group_by(tmp_path, monkeypatch):
    path = _write_log(tmp_path / "t", _random_log(random.Random(7)))
    calls: list[int] = []
    position = arrow_replay._position  # the positions of the group-by's results
    monkeypatch.setattr(arrow_replay, "_position", lambda *a: calls.append(1) or position(*a))
    monkeypatch.setattr(arrow_replay, "FEW_REPEATS", -1)
    many = _rows(path, DeltaLog(path).latest_version())
    assert calls
    calls.clear()
    monkeypatch.setattr(arrow_replay, "FEW_REPEATS", 50_000)
    assert _rows(path, DeltaLog(path).latest_version()) == many and not calls
