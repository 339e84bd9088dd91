"""The projected read of many commits behind the protocol history
(delta_downgrade.log.read.protocol_history): the same actions and the same errors as reading each
commit with read_commit_actions, in order, whether the files are read by the calling thread or
by a pool; and the history built from it (DeltaLog.protocol_history) over a few hundred commits
with protocol and boundary changes that go back and forth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_downgrade.errors import CorruptLogError, DuplicateActionsError
from delta_downgrade.log.read import protocol_history
from delta_downgrade.log.delta_log import DeltaLog, ProtocolSpan
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.read.protocol_history import projected_commit_actions
from delta_downgrade.log.read.segment import read_commit_actions
from delta_downgrade.protocol import Protocol
from delta_downgrade.storage.local import LocalStorage

BOUNDARY = "delta.requireCheckpointProtectionBeforeVersion"
P12 = {"minReaderVersion": 1, "minWriterVersion": 2}
P37 = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
       "writerFeatures": ["deletionVectors"]}


def _metadata(configuration: dict[str, str]) -> dict:
    return {"metaData": {"id": "11111111-2222-3333-4444-555555555555",
                         "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps({"type": "struct", "fields": []}),
                         "partitionColumns": [], "configuration": configuration, "createdTime": 0}}


def _info(version: int, **extra: object) -> dict:
    return {"commitInfo": {"timestamp": 1_700_000_000_000 + version, "operation": "WRITE", **extra}}


def _add(version: int) -> dict:
    return {"add": {"path": f"part-{version:05d}.parquet", "partitionValues": {}, "size": 10,
                    "modificationTime": 0, "dataChange": True}}


def _write(root: Path, version: int, lines: list[dict] | bytes) -> None:
    data = lines if isinstance(lines, bytes) else ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    (root / LOG_DIR / f"{version:020d}.json").write_bytes(data)


def _table(root: Path, commits: int) -> Path:
    """``commits`` commits; the protocol goes 1/2 -> 3/7 -> 1/2 and the boundary property is set,
    changed and unset (a fast drop leaves such histories); a commitInfo that names "protocol"
    without being one is there too."""
    (root / LOG_DIR).mkdir(parents=True)
    for v in range(commits):
        lines: list[dict] = [_info(v)]
        if v == 0:
            lines += [{"protocol": P12}, _metadata({})]
        elif v == 100:
            lines.append({"protocol": P37})
        elif v == 150:
            lines.append(_metadata({BOUNDARY: "150"}))
        elif v == 200:
            lines += [{"protocol": P12}, _metadata({BOUNDARY: "200"})]
        elif v == 250:
            lines.append(_metadata({BOUNDARY: ""}))
        elif v == 7:
            lines = [_info(v, operationParameters={"note": '"protocol" and "metaData" in a string'})]
        lines.append(_add(v))
        _write(root, v, lines)
    return root


def _one_by_one(storage: LocalStorage, statuses) -> list:
    """What the projected read gives: each commit read with read_commit_actions, in order, those
    with an action kept."""
    read = [(s, read_commit_actions(storage, s, ("protocol", "metaData"))) for s in statuses]
    return [(s, actions) for s, actions in read if actions]


@pytest.mark.parametrize("threads", [None, 1, 3])
def test_the_projected_read_gives_what_read_commit_actions_gives(tmp_path, monkeypatch, threads):
    monkeypatch.setattr(protocol_history, "BATCH", 16)  # many batches, several in flight
    table = _table(tmp_path / "t", 300)
    log = DeltaLog(str(table))
    statuses = log.whole_listing().commits_between(0, 299)
    got = list(projected_commit_actions(log.storage, statuses, threads=threads))
    assert got == _one_by_one(log.storage, statuses)
    assert sum(1 for _, actions in got if actions) == 5


@pytest.mark.parametrize("cold", [False, True])
def test_a_local_history_is_read_by_the_pool_only_once_a_batch_waited_on_the_disk(tmp_path, monkeypatch, cold):
    """Read from the page cache, every batch is read by the calling thread (threads would only
    pass the GIL around); once a batch took longer than COLD_READ_SECONDS a file (here: always, or
    never), the batches after it are read by the pool. The result is the same either way."""
    import threading

    monkeypatch.setattr(protocol_history, "BATCH", 16)
    monkeypatch.setattr(protocol_history, "COLD_READ_SECONDS", 0.0 if cold else float("inf"))
    readers: list[int] = []
    read_batch = protocol_history._read_batch

    def recorded(read, batch):
        readers.append(threading.get_ident())
        return read_batch(read, batch)

    monkeypatch.setattr(protocol_history, "_read_batch", recorded)
    table = _table(tmp_path / "t", 300)
    log = DeltaLog(str(table))
    statuses = log.whole_listing().commits_between(0, 299)
    got = list(projected_commit_actions(log.storage, statuses))
    assert got == _one_by_one(log.storage, statuses)
    assert len(readers) == 19  # 300 commits in batches of 16
    me = threading.get_ident()
    if cold:
        assert readers[0] == me and me not in readers[1:]
    else:
        assert set(readers) == {me}


def test_the_history_spans_follow_protocol_and_boundary_back_and_forth(tmp_path, monkeypatch):
    monkeypatch.setattr(protocol_history, "BATCH", 16)
    table = _table(tmp_path / "t", 300)
    assert DeltaLog(str(table)).protocol_history() == [
        ProtocolSpan(0, 99, Protocol(1, 2), None),
        ProtocolSpan(100, 149, Protocol(3, 7, {"deletionVectors"}, {"deletionVectors"}), None),
        ProtocolSpan(150, 199, Protocol(3, 7, {"deletionVectors"}, {"deletionVectors"}), 150),
        ProtocolSpan(200, 249, Protocol(1, 2), 200),
        ProtocolSpan(250, 299, Protocol(1, 2), None),
    ]


@pytest.mark.parametrize("threads", [1, 3, "switched"])
def test_the_first_bad_commit_in_version_order_raises(tmp_path, monkeypatch, threads):
    """A line that does not parse (commit 40) comes before two protocol actions (commit 90), and a
    commit that is no UTF-8 at all (commit 120) after both: commit 40's error, as a read one by
    one gives it, though the pool reads the later ones too ("switched": the first batch read by
    the calling thread, the others by the pool)."""
    monkeypatch.setattr(protocol_history, "BATCH", 16)
    if threads == "switched":
        monkeypatch.setattr(protocol_history, "COLD_READ_SECONDS", 0.0)
        threads = None
    table = _table(tmp_path / "t", 300)
    _write(table, 40, b'{"commitInfo":{}}\n{"protocol": {"minReaderVersion": 1,\n')
    _write(table, 90, [_info(90), {"protocol": P12}, {"protocol": P37}])
    _write(table, 120, b'{"commitInfo":{"x":"\xff"}}\n')
    log = DeltaLog(str(table))
    statuses = log.whole_listing().commits_between(0, 299)
    with pytest.raises(CorruptLogError) as expected:
        _one_by_one(log.storage, statuses)
    with pytest.raises(CorruptLogError) as got:
        list(projected_commit_actions(log.storage, statuses, threads=threads))
    assert type(got.value) is type(expected.value) and str(got.value) == str(expected.value)
    assert f"{40:020d}.json" in str(got.value) and "line 2" in str(got.value)

    _write(table, 40, [_info(40), _add(40)])  # repaired: the duplicate protocol of 90 is next
    with pytest.raises(DuplicateActionsError, match="2 protocol actions") as got:
        list(projected_commit_actions(log.storage, statuses, threads=threads))
    assert f"{90:020d}.json" in str(got.value)
    with pytest.raises(DuplicateActionsError, match="2 protocol actions"):
        DeltaLog(str(table)).protocol_history()

    _write(table, 90, [_info(90), _add(90)])  # then the commit that is no UTF-8
    with pytest.raises(CorruptLogError, match="utf-8") as got:
        list(projected_commit_actions(log.storage, statuses, threads=threads))
    assert f"{120:020d}.json" in str(got.value)


@pytest.mark.parametrize("threads", [1, 3])
def test_a_commit_gone_since_the_listing_raises_its_read_error_in_its_turn(tmp_path, monkeypatch, threads):
    monkeypatch.setattr(protocol_history, "BATCH", 16)
    table = _table(tmp_path / "t", 100)
    log = DeltaLog(str(table))
    statuses = log.whole_listing().commits_between(0, 99)
    (table / LOG_DIR / f"{60:020d}.json").unlink()
    _write(table, 80, b"not json\n{\"protocol\": 1}\n")
    _write(table, 59, [_info(59), {"protocol": P37}])
    seen = []
    with pytest.raises(FileNotFoundError):
        for status, _ in projected_commit_actions(log.storage, statuses, threads=threads):
            seen.append(status)
    assert [s.path for s in seen] == [statuses[0].path, statuses[59].path]  # in order, then 60's error


def test_a_local_file_is_read_to_its_end_whatever_size_the_listing_saw(tmp_path):
    """The read asks for the listed size first; a file that is longer now (or shorter) is read
    as it is, as read_bytes would read it."""
    table = _table(tmp_path / "t", 10)
    log = DeltaLog(str(table))
    statuses = log.whole_listing().commits_between(0, 9)
    padding = {"commitInfo": {"timestamp": 0, "operation": "WRITE", "pad": "x" * 200_000}}
    _write(table, 5, [padding, {"protocol": P37}])
    _write(table, 6, [{"protocol": P12}])
    got = dict((s.path, actions) for s, actions in projected_commit_actions(log.storage, statuses, threads=1))
    assert got == {s.path: actions for s, actions in _one_by_one(log.storage, statuses)}
    assert [a.to_obj() for a in got[statuses[5].path]] == [P37]
    assert [a.to_obj() for a in got[statuses[6].path]] == [P12]


@pytest.mark.parametrize("threads", [1, 3])
def test_a_commit_of_non_ascii_utf8_without_the_keys_is_read_as_nothing(tmp_path, monkeypatch, threads):
    """A commit that names neither key is checked only for being UTF-8: ASCII is, multi-byte UTF-8
    is too (nothing comes out, no error), and a byte that is neither raises (commit 20)."""
    monkeypatch.setattr(protocol_history, "BATCH", 16)
    table = _table(tmp_path / "t", 40)
    utf8 = json.dumps(_info(10, operationParameters={"note": "caf\u00e9 \u65e5\u672c"}), ensure_ascii=False)
    _write(table, 10, (utf8 + "\n" + json.dumps(_add(10)) + "\n").encode())
    assert not (table / LOG_DIR / f"{10:020d}.json").read_bytes().isascii()
    log = DeltaLog(str(table))
    statuses = log.whole_listing().commits_between(0, 39)
    got = list(projected_commit_actions(log.storage, statuses, threads=threads))
    assert got == _one_by_one(log.storage, statuses) and [s.path for s, _ in got] == [statuses[0].path]
    _write(table, 20, b'{"commitInfo":{"note":"caf\xe9"}}\n')
    with pytest.raises(CorruptLogError, match="utf-8"):
        list(projected_commit_actions(log.storage, statuses, threads=threads))


@pytest.mark.parametrize("threads", [None, 1, 3])
def test_local_commits_are_opened_relative_to_a_log_descriptor_closed_after_the_read(tmp_path, monkeypatch, threads):
    """Every commit is opened relative to one descriptor of ``_delta_log``, held while the history
    is read (by the pool too) and closed once it is read, or once the caller stops early; where no
    descriptor can be had, by full path, with the same result."""
    import os

    monkeypatch.setattr(protocol_history, "BATCH", 16)
    table = _table(tmp_path / "t", 100)
    log = DeltaLog(str(table))
    statuses = log.whole_listing().commits_between(0, 99)
    expected = _one_by_one(log.storage, statuses)
    held: list[int] = []
    real_open_dir, real_open, real_close = protocol_history.open_dir, os.open, os.close
    opened_at: list[object] = []
    closed: list[int] = []

    def open_dir(path, call=os.stat):
        fd = real_open_dir(path, real_open if call is recorded_open else call)  # supports_dir_fd knows the real one
        held.append(fd)
        return fd

    def recorded_open(path, flags, mode=0o777, *, dir_fd=None):
        if str(path).endswith(".json"):
            opened_at.append(dir_fd if dir_fd is not None else os.path.dirname(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    def recorded_close(fd):
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(protocol_history, "open_dir", open_dir)
    monkeypatch.setattr(os, "open", recorded_open)
    monkeypatch.setattr(os, "close", recorded_close)
    assert list(projected_commit_actions(log.storage, statuses, threads=threads)) == expected
    assert len(held) == 1 and held[0] is not None
    assert len(opened_at) == 100 and set(opened_at) == {held[0]}
    assert closed[-1] == held[0]

    held.clear()
    closed.clear()
    reading = projected_commit_actions(log.storage, statuses, threads=threads)
    assert next(reading) == expected[0]
    reading.close()  # the caller stops after the first commit with a protocol
    assert held and held[0] in closed

    monkeypatch.setattr(protocol_history, "open_dir", lambda path, call=os.stat: None)
    opened_at.clear()
    assert list(projected_commit_actions(log.storage, statuses, threads=threads)) == expected
    assert set(opened_at) == {str(table / LOG_DIR)}


def test_a_commit_that_cannot_be_opened_is_named_by_its_full_path(tmp_path):
    table = _table(tmp_path / "t", 10)
    log = DeltaLog(str(table))
    statuses = log.whole_listing().commits_between(0, 9)
    (table / LOG_DIR / f"{4:020d}.json").unlink()
    with pytest.raises(FileNotFoundError) as got:
        list(projected_commit_actions(log.storage, statuses))
    assert got.value.filename == str(table / LOG_DIR / f"{4:020d}.json")
    assert str(table / LOG_DIR / f"{4:020d}.json") in str(got.value)
