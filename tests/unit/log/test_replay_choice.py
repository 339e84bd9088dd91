"""Which replay builds Snapshot.state() (delta_downgrade.log.replay.choice): the Python one for a
small segment without a checkpoint, the Arrow one otherwise - with the same state either way
(the differential here is on both sides of the threshold; tests/unit/log/test_reconcile.py
compares the two replays on many more logs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.replay import arrow_replay
from delta_downgrade.log.replay import choice as replay_choice
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.replay.choice import python_replay_fits
from delta_downgrade.log.read.segment import LogSegment
from delta_downgrade.storage import FileStatus

T0 = 1_700_000_000_000
DV_PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
               "writerFeatures": ["deletionVectors", "domainMetadata"]}
DV = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
      "sizeInBytes": 40, "cardinality": 6}
SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})


def _add(path: str, **kw: Any) -> dict:
    return {"add": {"path": path, "partitionValues": {}, "size": 100, "modificationTime": T0,
                    "dataChange": True, "stats": json.dumps({"numRecords": 9}), **kw}}


def _remove(path: str, **kw: Any) -> dict:
    return {"remove": {"path": path, "deletionTimestamp": T0 + 5, "dataChange": True, **kw}}


def _table(root: Path, commits: int, files_per_commit: int = 2) -> str:
    """Adds, re-adds with a deletion vector, removes, a txn and domains that come and go."""
    (root / LOG_DIR).mkdir(parents=True)
    for v in range(commits):
        lines: list[Any] = [{"commitInfo": {"timestamp": T0 + v, "operation": "WRITE"}}]
        if v == 0:
            lines += [{"protocol": DV_PROTOCOL},
                      {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                                    "schemaString": SCHEMA, "partitionColumns": [],
                                    "configuration": {}, "createdTime": T0}}]
        lines += [_add(f"f{v}-{i}.parquet") for i in range(files_per_commit)]
        if v % 3 == 1:
            lines += [_remove(f"f{v - 1}-0.parquet"), _remove(f"f{v - 1}-1.parquet"),
                      _add(f"f{v - 1}-1.parquet", deletionVector=DV),
                      {"txn": {"appId": "app", "version": v, "lastUpdated": T0}},
                      {"domainMetadata": {"domain": f"d{v % 2}", "configuration": "{}", "removed": v % 2 == 1}}]
        (root / LOG_DIR / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return str(root)


def _view(state: Any) -> Any:
    return (state.version, state.protocol_action, state.metadata, list(state.files.items()),
            list(state.tombstones.items()), list(state.txns.items()), list(state.domains.items()))


def _state(path: str, monkeypatch: pytest.MonkeyPatch, arrow: bool) -> tuple[Any, int]:
    """The fresh snapshot's state, with the choice left as it is (``arrow=False``) or forced to
    the Arrow replay; and how many times the Arrow replay ran."""
    calls = []
    real = arrow_replay.replay_state

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    with monkeypatch.context() as m:
        m.setattr(arrow_replay, "replay_state", counted)
        if arrow:
            m.setattr(replay_choice, "PYTHON_REPLAY_MAX_COMMITS", -1)
        state = DeltaLog(path).snapshot().state()
    return _view(state), len(calls)


def test_a_small_segment_gets_the_python_replay_with_the_arrow_replays_state(tmp_path, monkeypatch):
    path = _table(tmp_path / "t", 12)
    assert python_replay_fits(DeltaLog(path).segment())
    python_view, python_calls = _state(path, monkeypatch, arrow=False)
    arrow_view, arrow_calls = _state(path, monkeypatch, arrow=True)
    assert (python_calls, arrow_calls) == (0, 1)
    assert python_view == arrow_view
    assert len(python_view[3]) == 12 * 2 - 4 and len(python_view[4]) == 8  # files, tombstones


def test_the_threshold_in_bytes_and_commits(tmp_path, monkeypatch):
    path = _table(tmp_path / "t", 30)
    segment = DeltaLog(path).segment()
    total = sum(s.size for s in segment.commits)
    monkeypatch.setattr(replay_choice, "PYTHON_REPLAY_MAX_BYTES", total)
    assert python_replay_fits(segment)
    small_view, calls = _state(path, monkeypatch, arrow=False)
    assert calls == 0
    monkeypatch.setattr(replay_choice, "PYTHON_REPLAY_MAX_BYTES", total - 1)
    assert not python_replay_fits(segment)
    large_view, calls = _state(path, monkeypatch, arrow=False)
    assert calls == 1
    assert small_view == large_view
    monkeypatch.setattr(replay_choice, "PYTHON_REPLAY_MAX_BYTES", total)
    monkeypatch.setattr(replay_choice, "PYTHON_REPLAY_MAX_COMMITS", 29)
    assert not python_replay_fits(segment)


def test_a_checkpoint_or_an_unknown_size_takes_the_arrow_replay(tmp_path, monkeypatch):
    path = _table(tmp_path / "t", 6)
    checkpoint_table(DeltaLog(path), 4, clock=ManualClock(T0 + 10_000))
    segment = DeltaLog(path).segment()
    assert segment.checkpoint is not None and len(segment.commits) == 1
    assert not python_replay_fits(segment)
    with_checkpoint, calls = _state(path, monkeypatch, arrow=False)
    assert calls == 1
    from_commits = LogSegment(5, None, DeltaLog(path).whole_listing().commits_between(0, 5))
    assert python_replay_fits(from_commits)
    unknown = LogSegment(5, None, tuple(FileStatus(s.path, -1, s.modification_time_ms)
                                        for s in from_commits.commits))
    assert not python_replay_fits(unknown)
    assert with_checkpoint[3] and with_checkpoint[0] == 5
