"""The checkpoints a drop writes from its carried state hold what a fresh replay gives.

``checkpoint_table`` takes the state from the log's snapshot, carried forward over commits that
change no file (:meth:`Snapshot.arrow_state`), and copies the previous checkpoint's files when
the content is the same (:mod:`delta_downgrade.log.checkpoint.copy_forward`). Each checkpoint written
that way is compared, row by row, with the checkpoint a fresh ``DeltaLog`` writes for the same
version of a copy of the log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.checkpoint import from_state
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.checkpoint.spark_hash import spark_partition_of
from delta_downgrade.log.replay import arrow_replay
from delta_downgrade.log.commit import commit
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.format.file_names import LOG_DIR, commit_path
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol.actions import AddFile, DomainMetadata, Txn

DAY_MS = 86_400_000
T0 = 1_700_000_000_000
NOW = T0 + 30 * DAY_MS
SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36,
      "cardinality": 2}


def _file(kind: str, path: str, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"path": path, "dataChange": True, **fields}
    if kind == "add":
        body = {"partitionValues": {}, "size": 10, "modificationTime": T0, **body}
    return {kind: body}


def _table(root: Path) -> str:
    """Adds (one with a DV, one URL-escaped), removes expired and not, a re-add, txns, domains."""
    header = [
        {"commitInfo": {"timestamp": T0, "operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                      "writerFeatures": ["deletionVectors", "domainMetadata"]}},
        {"metaData": {"id": "00000000-0000-0000-0000-000000000001", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(SCHEMA), "partitionColumns": [],
                      "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": T0}},
        {"txn": {"appId": "app", "version": 1}},
        {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": False}},
    ]
    commits = [
        header + [_file("add", p, stats=json.dumps({"numRecords": 3})) for p in ("a", "b", "c%20d", "e")]
        + [_file("add", "f", deletionVector=DV)],
        [{"commitInfo": {"timestamp": T0 + 1}}, _file("remove", "a", deletionTimestamp=T0 + 5),
         _file("remove", "c d", deletionTimestamp=NOW - 3_600_000), {"txn": {"appId": "app", "version": 2}}],
        [{"commitInfo": {"timestamp": T0 + 2}}, _file("add", "a"), _file("remove", "e", deletionTimestamp=None),
         {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": True}},
         {"domainMetadata": {"domain": "d2", "configuration": "{\"x\":1}", "removed": False}}],
    ]
    log_dir = root / LOG_DIR
    log_dir.mkdir(parents=True)
    for version, lines in enumerate(commits):
        (log_dir / f"{version:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return str(root)


def _rows(table: str, paths: tuple[str, ...]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in paths:
        data = pq.read_table(str(Path(table, path)))
        for column in data.column_names:
            found.setdefault(column, []).extend(
                json.dumps(r, sort_keys=True, default=str) for r in data.column(column).to_pylist() if r is not None)
    return {k: sorted(v) for k, v in found.items() if v}


def _fresh_checkpoint_rows(table: str, version: int, scratch: Path,
                           part_size: int | None = None) -> dict[str, list[str]]:
    """The checkpoint of ``version`` written by a fresh log over a copy of commits 0..version."""
    copy = scratch / f"fresh-{version}"
    (copy / LOG_DIR).mkdir(parents=True)
    for v in range(version + 1):
        shutil.copy(Path(table, commit_path(v)), copy / commit_path(v))
    result = checkpoint_table(DeltaLog(str(copy)), version, clock=ManualClock(NOW), part_size=part_size)
    return _rows(str(copy), result.paths)


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The versions replayed from the log (a spy on the real replay, which still runs)."""
    seen: list[int] = []
    real = Snapshot._replayed_arrow

    def spy(self: Snapshot) -> Any:
        seen.append(self.version)
        return real(self)

    monkeypatch.setattr(Snapshot, "_replayed_arrow", spy)
    return seen


def test_checkpoints_from_the_carried_state_equal_a_fresh_replay(tmp_path, replays):
    table = _table(tmp_path / "t")
    log = DeltaLog(table)
    clock = ManualClock(NOW)
    latest = log.snapshot()
    latest.arrow_state()  # the drop's first look at the files
    written: dict[int, Any] = {}

    def step(actions: list[Any], operation: str) -> None:
        version = commit(log, log.latest_version(), actions, operation=operation, clock=clock)
        written[version] = checkpoint_table(log, version, clock=clock)

    step([], "Empty Commit")                                     # barrier: carried, written
    step([], "Empty Commit")                                     # barrier: carried, copied
    step([log.snapshot().metadata.with_configuration({"delta.enableDeletionVectors": None})], "UNSET")
    step([Txn(appId="app", version=3), DomainMetadata("d3", "{}", False)], "txn and domain")
    assert replays == [2], "one replay, carried over commits without file actions"
    step([AddFile(path="g", partitionValues={}, size=1, modificationTime=NOW, dataChange=True)], "WRITE")
    assert replays == [2, 7], "a commit with a file action is replayed"

    for version, result in written.items():
        mine = _rows(table, result.paths)
        assert mine == _fresh_checkpoint_rows(table, version, tmp_path), f"checkpoint {version} differs"
    # the second barrier's checkpoint is the first one's bytes under its own name
    first, second = (Path(table, written[v].paths[0]).read_bytes() for v in (3, 4))
    assert first == second
    assert Path(table, written[5].paths[0]).read_bytes() != first  # metadata changed: written again
    # the copies and the commits are in the log's listing without listing again, as a fresh one sees
    assert log.whole_listing().checkpoint_versions == DeltaLog(table).whole_listing().checkpoint_versions == [3, 4, 5, 6, 7]


def test_a_copied_checkpoint_is_written_afresh_when_its_source_changed(tmp_path):
    table = _table(tmp_path / "t")
    log = DeltaLog(table)
    clock = ManualClock(NOW)
    first = checkpoint_table(log, commit(log, 2, [], operation="Empty Commit", clock=clock), clock=clock)
    Path(table, first.paths[0]).write_bytes(b"replaced by someone else")
    second = checkpoint_table(log, commit(log, 3, [], operation="Empty Commit", clock=clock), clock=clock)
    assert _rows(table, second.paths) == _fresh_checkpoint_rows(table, 4, tmp_path)


def _home(parts: int) -> int:
    return spark_partition_of(None, parts)


def test_a_multipart_checkpoint_of_the_same_files_copies_its_parts_of_file_actions(tmp_path, replays, monkeypatch):
    # A spilled state (several hash parts) and multi-part checkpoints: after a commit that changes
    # the metadata, or txns and domains, only the part holding them is written again; the
    # others are the previous checkpoint's bytes. Every checkpoint holds a fresh replay's rows.
    monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 2)
    table = _table(tmp_path / "t")
    log = DeltaLog(table)
    clock = ManualClock(NOW)
    log.snapshot().arrow_state()
    written: dict[int, Any] = {}
    encoded: list[int] = []
    real_writer = from_state.checkpoint_parquet_writer

    def counted_writer(sink: Any, schema: Any = from_state.CHECKPOINT_SCHEMA) -> Any:
        encoded.append(1)
        return real_writer(sink, schema)

    monkeypatch.setattr(from_state, "checkpoint_parquet_writer", counted_writer)

    def step(actions: list[Any], operation: str) -> list[int]:
        version = commit(log, log.latest_version(), actions, operation=operation, clock=clock)
        encoded.clear()
        written[version] = checkpoint_table(log, version, clock=clock, part_size=2)
        return list(encoded)

    assert len(step([], "Empty Commit")) == 3                   # 3: written, every part
    assert step([], "Empty Commit") == []                        # 4: copied whole
    assert step([log.snapshot().metadata.with_configuration({"delta.enableDeletionVectors": None})],
                "UNSET") == [1]                                  # 5: the home part only
    assert step([Txn(appId="app", version=3), DomainMetadata("d3", "{}", False)], "txn and domain") == [1]  # 6
    assert replays == [2] and log.snapshot().arrow_state().num_parts > 1
    assert len(step([AddFile(path="g", partitionValues={}, size=1, modificationTime=NOW, dataChange=True)],
                    "WRITE")) == 3                               # 7: new files, every part

    for version, result in written.items():
        assert result.parts == 3 and len(result.part_sizes) == 3
        assert _rows(table, result.paths) == _fresh_checkpoint_rows(table, version, tmp_path, part_size=2), \
            f"checkpoint {version} differs"
        assert [Path(table, p).stat().st_size for p in result.paths] == list(result.part_sizes)
    for older, newer in ((4, 5), (5, 6)):
        before, after = ([Path(table, p).read_bytes() for p in written[v].paths] for v in (older, newer))
        home = _home(3)
        assert [b == a for b, a in zip(before, after)] == [i != home for i in range(3)], (older, newer)
    assert written[6].num_actions == written[5].num_actions + 1  # domain d3 (the txn replaces app's), at home


def _first_multipart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, DeltaLog, ManualClock, Any]:
    """A table whose state is spilled in parts, carried (as a drop's), and its first multi-part
    checkpoint (3 parts), after an empty commit."""
    monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 2)
    table = _table(tmp_path / "t")
    log = DeltaLog(table)
    clock = ManualClock(NOW)
    log.snapshot().arrow_state()
    first = checkpoint_table(log, commit(log, 2, [], operation="Empty Commit", clock=clock), clock=clock,
                             part_size=2)
    assert first.parts == 3
    return table, log, clock, first


def _offered(monkeypatch: pytest.MonkeyPatch, then: Any = None) -> list[dict[int, Any]]:
    """What ``_copyable_parts`` found each time it was offered a previous checkpoint."""
    found: list[dict[int, Any]] = []
    real = from_state._copyable_parts

    def spy(storage: Any, previous: Any, num_parts: int) -> Any:
        result = real(storage, previous, num_parts)
        if previous is not None:
            found.append(result)
            if then is not None:
                then(result)
        return result

    monkeypatch.setattr(from_state, "_copyable_parts", spy)
    return found


def _unset(log: DeltaLog, clock: ManualClock) -> Any:
    unset = log.snapshot().metadata.with_configuration({"delta.enableDeletionVectors": None})
    return checkpoint_table(log, commit(log, 3, [unset], operation="UNSET", clock=clock), clock=clock, part_size=2)


def test_a_part_to_copy_that_changed_is_written_again(tmp_path, monkeypatch):
    table, log, clock, first = _first_multipart(tmp_path, monkeypatch)
    other = next(i for i in range(3) if i != _home(3) and first.part_rows[i])
    Path(table, first.paths[other]).write_bytes(b"replaced by someone else")
    offered = _offered(monkeypatch)
    second = _unset(log, clock)
    assert offered == [{}]  # offered, and refused: a part is not of its size
    assert _rows(table, second.paths) == _fresh_checkpoint_rows(table, 4, tmp_path, part_size=2)


def test_a_part_that_changes_after_its_size_was_checked_is_written_again(tmp_path, monkeypatch):
    # Another writer replaces a part between the size check and the copy: nothing of the copy
    # is published, and every part is written from the state.
    table, log, clock, first = _first_multipart(tmp_path, monkeypatch)
    other = next(i for i in range(3) if i != _home(3) and first.part_rows[i])

    def replace_it(found: dict[int, Any]) -> None:
        assert other in found
        Path(table, first.paths[other]).write_bytes(b"replaced by someone else")

    offered = _offered(monkeypatch, replace_it)
    second = _unset(log, clock)
    assert len(offered) == 1
    assert _rows(table, second.paths) == _fresh_checkpoint_rows(table, 4, tmp_path, part_size=2)
    assert not [p for p in Path(table, LOG_DIR).iterdir() if p.name.startswith(".") or "tmp" in p.name]


def test_a_refresh_for_new_commits_finds_another_writers_commit_and_a_lost_race_lists_again(tmp_path):
    table = _table(tmp_path / "t")
    mine, theirs = DeltaLog(table), DeltaLog(table)
    clock = ManualClock(NOW)
    assert mine.latest_version() == 2
    commit(theirs, 2, [], operation="Empty Commit", clock=clock)
    assert mine.refresh(Refresh.NEW_COMMITS).latest_version() == 3
    commit(theirs, 3, [], operation="Empty Commit", clock=clock)
    # this writer read version 3: its commit loses the race for 4 and lands at 5
    assert commit(mine, 3, [], operation="Empty Commit", clock=clock,
                  resolve_conflict=lambda winners, log: []) == 5
    assert mine.refresh(Refresh.NEW_COMMITS).whole_listing().commit_versions() == (0, 1, 2, 3, 4, 5)


def test_a_multipart_copy_whose_later_part_changed_publishes_no_part_and_is_written_afresh(tmp_path, monkeypatch):
    """A barrier's multi-part checkpoint is copied part by part (``Storage.copy_file``); when a part
    after the first is no longer of its size, the parts already copied are removed and the
    checkpoint is written from the state: never a mix of copied and other parts."""
    table, log, clock, first = _first_multipart(tmp_path, monkeypatch)
    Path(table, first.paths[2]).write_bytes(b"replaced by someone else")
    copied: list[str] = []
    real = type(log.storage).copy_file

    def recorded(self: Any, source: str, rel_path: str, size: int) -> bool:
        done = real(self, source, rel_path, size)
        copied.append(f"{rel_path}:{done}")
        return done

    monkeypatch.setattr(type(log.storage), "copy_file", recorded)
    second = checkpoint_table(log, commit(log, 3, [], operation="Empty Commit", clock=clock), clock=clock,
                              part_size=2)
    assert [c.rsplit(":", 1)[1] for c in copied] == ["True", "True", "False"]  # the third part refused
    assert _rows(table, second.paths) == _fresh_checkpoint_rows(table, 4, tmp_path, part_size=2)
    assert second.part_sizes == tuple(Path(table, p).stat().st_size for p in second.paths)
    assert not [p for p in Path(table, LOG_DIR).iterdir() if p.name.startswith(".") or "tmp" in p.name]
