"""A checkpoint begun before its version is committed (``log/checkpoint/prepared.py``): published
only when the log reaches the very state it was encoded from, discarded otherwise, never visible
before that. Each checkpoint is compared row by row with the one a fresh ``DeltaLog`` writes for
the same version of a copy of the log."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.drop import committer as committer_module
from delta_downgrade.errors import DropConflictError
from delta_downgrade.log.checkpoint import from_state
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table, discard_prepared_checkpoint, prepare_checkpoint
from delta_downgrade.log.checkpoint.prepared import PreparedCheckpoint
from delta_downgrade.log.commit import commit
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR, classic_checkpoint_path
from delta_downgrade.log.replay import arrow_replay
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol.actions import AddFile

from tests.hand_made_logs import DV_PROTOCOL, write_log
from tests.unit.log.test_carried_checkpoints import NOW, _fresh_checkpoint_rows, _rows, _table


def _prepared_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("prepared-checkpoint-")]


def _leftovers(table: str) -> list[str]:
    """Temporary files left in the log (a prepared checkpoint's, unpublished)."""
    return sorted(p.name for p in Path(table, LOG_DIR).iterdir() if p.name.startswith("."))


@pytest.fixture(autouse=True)
def _every_prepared_checkpoint_decided(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A test that fails before a prepared checkpoint is taken discards it, so that its thread
    (waiting for the verdict) does not outlive the test."""
    made: list[PreparedCheckpoint] = []
    real = PreparedCheckpoint.__init__

    def recorded(self: PreparedCheckpoint, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(PreparedCheckpoint, "__init__", recorded)
    yield
    for prepared in made:
        prepared.discard()  # after a publish: nothing left to do


@pytest.fixture
def encodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The thread of every checkpoint file encoded by the streaming writer (a spy; it still writes)."""
    seen: list[str] = []
    real = from_state.checkpoint_parquet_writer

    def counted(sink: Any, schema: Any = from_state.CHECKPOINT_SCHEMA) -> Any:
        seen.append(threading.current_thread().name)
        return real(sink, schema)

    monkeypatch.setattr(from_state, "checkpoint_parquet_writer", counted)
    return seen


def _unset_dv(log: DeltaLog) -> list[Any]:
    return [log.snapshot().metadata.with_configuration({"delta.enableDeletionVectors": None})]


def test_a_prepared_checkpoint_is_published_when_its_version_holds_its_state(tmp_path, encodes):
    table = _table(tmp_path / "t")
    log = DeltaLog(table)
    clock = ManualClock(NOW)
    actions = _unset_dv(log)
    prepared = prepare_checkpoint(log, log.snapshot().with_commits([actions]), clock=clock)
    assert isinstance(prepared, PreparedCheckpoint) and prepared.version == 3
    assert not Path(table, classic_checkpoint_path(3)).exists()  # nothing published before the commit

    version = commit(log, 2, actions, operation="UNSET", clock=clock)
    result = checkpoint_table(log, version, clock=clock)
    assert encodes == ["prepared-checkpoint-v3"], "the prepared files are published, not encoded again"
    assert log.prepared_checkpoint is None and not _prepared_threads()
    assert result.paths == (classic_checkpoint_path(3),)
    assert _rows(table, result.paths) == _fresh_checkpoint_rows(table, 3, tmp_path)
    assert Path(table, result.paths[0]).stat().st_size == result.size_in_bytes
    assert _leftovers(table) == []
    assert DeltaLog(table).snapshot().segment.checkpoint is not None  # _last_checkpoint names it


@pytest.mark.parametrize("winner", ["a file", "an empty commit"])
def test_a_prepared_checkpoint_is_discarded_when_another_writer_takes_its_version(tmp_path, encodes, winner):
    """The version it was prepared for holds another writer's commit: a file added (other file
    actions), or nothing at all (the metadata prepared is not the version's). The checkpoint of
    that version is written from the log's state; the prepared rows are never published."""
    table = _table(tmp_path / "t")
    log = DeltaLog(table)
    clock = ManualClock(NOW)
    prepare_checkpoint(log, log.snapshot().with_commits([_unset_dv(log)]), clock=clock)
    other = [AddFile(path="z", partitionValues={}, size=1, modificationTime=NOW, dataChange=True)] \
        if winner == "a file" else []
    assert commit(DeltaLog(table), 2, other, operation="WRITE", clock=clock) == 3
    result = checkpoint_table(log, 3, clock=clock)
    assert encodes == ["prepared-checkpoint-v3", "MainThread"]
    assert _rows(table, result.paths) == _fresh_checkpoint_rows(table, 3, tmp_path)
    assert log.prepared_checkpoint is None and not _prepared_threads() and _leftovers(table) == []


def test_a_prepared_checkpoint_that_failed_to_encode_is_written_afresh(tmp_path, monkeypatch):
    """An encode that fails in the thread (a full disk, say) publishes nothing: the checkpoint of
    that version is written by the caller, which meets the failure itself if it lasts."""
    table = _table(tmp_path / "t")
    log = DeltaLog(table)
    clock = ManualClock(NOW)
    real = from_state.checkpoint_parquet_writer

    def failing_in_the_thread(sink: Any, schema: Any = from_state.CHECKPOINT_SCHEMA) -> Any:
        if threading.current_thread().name.startswith("prepared-checkpoint-"):
            raise OSError(28, "No space left on device")
        return real(sink, schema)

    monkeypatch.setattr(from_state, "checkpoint_parquet_writer", failing_in_the_thread)
    actions = _unset_dv(log)
    prepare_checkpoint(log, log.snapshot().with_commits([actions]), clock=clock)
    result = checkpoint_table(log, commit(log, 2, actions, operation="UNSET", clock=clock), clock=clock)
    assert _rows(table, result.paths) == _fresh_checkpoint_rows(table, 3, tmp_path)
    assert log.prepared_checkpoint is None and not _prepared_threads() and _leftovers(table) == []


def test_a_prepared_checkpoint_never_taken_is_discarded_unpublished(tmp_path):
    table = _table(tmp_path / "t")
    log = DeltaLog(table)
    clock = ManualClock(NOW)
    prepare_checkpoint(log, log.snapshot().with_commits([[], _unset_dv(log)]), clock=clock)
    commit(log, 2, [], operation="Empty Commit", clock=clock)
    checkpoint_table(log, 3, clock=clock)  # another version: the prepared one is kept
    assert log.prepared_checkpoint is not None and log.prepared_checkpoint.version == 4
    discard_prepared_checkpoint(log)
    assert log.prepared_checkpoint is None and not _prepared_threads() and _leftovers(table) == []
    assert sorted(p.name for p in Path(table, LOG_DIR).glob("*.checkpoint.parquet")) == [
        Path(classic_checkpoint_path(3)).name]


def test_nothing_is_prepared_where_it_would_not_save_an_encode(tmp_path):
    table = _table(tmp_path / "t")
    log = DeltaLog(table)
    clock = ManualClock(NOW)
    add = AddFile(path="y", partitionValues={}, size=1, modificationTime=NOW, dataChange=True)
    assert prepare_checkpoint(log, log.snapshot().with_commits([[add]]), clock=clock) is None  # a file action
    checkpoint_table(log, commit(log, 2, [], operation="Empty Commit", clock=clock), clock=clock)
    # the same rows as the checkpoint just written: it is copied forward, not encoded
    assert prepare_checkpoint(log, log.snapshot().with_commits([[]]), clock=clock) is None
    assert log.prepared_checkpoint is None and not _prepared_threads()


# --- in a drop -------------------------------------------------------------------------------------

def _drop(table: str, clock: ManualClock) -> Any:
    return drop_feature(table, "deletionVectors", clock=clock)


def _dv_free_table(root: Path) -> str:
    """A table with deletionVectors in its protocol and no deletion vector: a fast drop."""
    return write_log(root, 4, protocol=DV_PROTOCOL, configuration={"delta.enableDeletionVectors": "true"},
                     adds_per_commit=3)


def test_a_fast_drop_publishes_its_last_checkpoint_prepared_beside_the_first(tmp_path, encodes):
    table = _dv_free_table(tmp_path / "t")
    outcome = _drop(table, ManualClock(NOW))
    assert outcome.status == "dropped"
    boundary = outcome.commits[-1]
    # encoded twice in all: the first barrier's checkpoint and the downgrade version's, prepared
    assert sorted(encodes) == ["MainThread", f"prepared-checkpoint-v{boundary}"]
    for version in (boundary - 3, boundary):
        assert _rows(table, (classic_checkpoint_path(version),)) == _fresh_checkpoint_rows(table, version, tmp_path)
    assert not _prepared_threads() and _leftovers(table) == []


def test_a_multipart_fast_drop_prepares_its_last_checkpoint_after_the_first(tmp_path, encodes, monkeypatch):
    """A multi-part checkpoint is begun once the first barrier's is written: it copies that
    one's parts of file actions and encodes only the part with the protocol and metadata."""
    monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 2)
    table = _dv_free_table(tmp_path / "t")
    log = DeltaLog(table)
    clock = ManualClock(NOW)
    config = {"delta.checkpoint.partSize": "2"}
    commit(log, 3, [log.snapshot().metadata.with_configuration(config)], operation="SET", clock=clock)
    outcome = _drop(table, clock)
    boundary = outcome.commits[-1]
    first = [p for p in outcome.checkpoints_written if f"{boundary - 3:020d}.checkpoint." in p]
    assert len(first) > 1, "a multi-part checkpoint"
    assert encodes.count("MainThread") == len(first)
    assert encodes.count(f"prepared-checkpoint-v{boundary}") == 1  # the home part
    last = tuple(p for p in outcome.checkpoints_written if f"{boundary:020d}.checkpoint." in p)
    assert _rows(table, last) == _fresh_checkpoint_rows(table, boundary, tmp_path, part_size=2)
    assert not _prepared_threads() and _leftovers(table) == []


def _foreign_commit_before(operation: str, actions: list[Any], monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Another writer commits ``actions`` just before the drop's first ``operation`` commit."""
    real = committer_module.commit
    taken: list[int] = []

    def racing(log: DeltaLog, read_version: int, ours: Any, **kwargs: Any) -> int:
        if kwargs.get("operation") == operation and not taken:
            other = DeltaLog(log.table)
            taken.append(real(other, other.latest_version(), actions, operation="WRITE", clock=kwargs["clock"]))
        return real(log, read_version, ours, **kwargs)

    monkeypatch.setattr(committer_module, "commit", racing)
    return taken


def test_a_blind_append_before_the_downgrade_commit_discards_the_prepared_checkpoint(tmp_path, monkeypatch,
                                                                                     encodes):
    table = _dv_free_table(tmp_path / "t")
    append = AddFile(path="appended", partitionValues={}, size=1, modificationTime=NOW, dataChange=True)
    taken = _foreign_commit_before("DROP FEATURE", [append], monkeypatch)
    outcome = _drop(table, ManualClock(NOW))
    assert outcome.status == "dropped"
    boundary = outcome.commits[-1]
    assert taken == [boundary - 1], "the append took the version the checkpoint was prepared for"
    assert not Path(table, classic_checkpoint_path(boundary - 1)).exists()  # never published
    assert encodes.count("MainThread") == 2  # the first barrier's and the downgrade version's
    rows = _rows(table, (classic_checkpoint_path(boundary),))
    assert rows == _fresh_checkpoint_rows(table, boundary, tmp_path)
    assert any('"appended"' in r for r in rows["add"])
    assert not _prepared_threads() and _leftovers(table) == []


def test_a_drop_that_fails_after_preparing_leaves_no_thread_and_no_file(tmp_path, monkeypatch):
    table = _dv_free_table(tmp_path / "t")
    log = DeltaLog(table)
    changed = log.snapshot().metadata.with_configuration({"other.property": "x"})
    _foreign_commit_before("DROP FEATURE", [changed], monkeypatch)
    with pytest.raises(DropConflictError):
        _drop(table, ManualClock(NOW))
    assert not _prepared_threads() and _leftovers(table) == []
