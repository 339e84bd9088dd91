"""A run parses the commits of its segment once: the check before the first write
(``Snapshot.validate_commits``) reads them with the Arrow replay's parser under the Python
parser's checks, and the replay that follows takes those parsed commits.

The check must refuse exactly what the Python parser (``read_commit_actions``) refuses, with its
error: each malformed line below is compared with the Python parser's answer on the same log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.read import segment as segment_module
from delta_downgrade.log.read.segment import read_commit_actions
from delta_downgrade.log.replay import arrow_replay, choice
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.storage.local import LocalStorage

T0 = 1_700_000_000_000
SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "p", "type": "string", "nullable": True, "metadata": {}}]})


@pytest.fixture(autouse=True)
def _arrow_for_every_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small segments take the Arrow parse too (they are read in Python otherwise)."""
    monkeypatch.setattr(choice, "PYTHON_REPLAY_MAX_COMMITS", -1)


def _line(obj: object) -> str:
    return json.dumps(obj) + "\n"


def _add(path: str, **fields: object) -> dict[str, Any]:
    return {"add": {"path": path, "partitionValues": {"p": "x"}, "size": 10, "modificationTime": T0,
                    "dataChange": True, "stats": '{"numRecords":1}', **fields}}


def _remove(path: str, **fields: object) -> dict[str, Any]:
    return {"remove": {"path": path, "deletionTimestamp": T0, "dataChange": True, **fields}}


def _good(v: int) -> str:
    return _line({"commitInfo": {"timestamp": T0 + v, "operation": "WRITE"}}) + "".join(
        _line(_add(f"p=x/f-{v}-{i}.parquet")) for i in range(5))


def _table(tmp_path: Path, *commits: str) -> str:
    log = tmp_path / "t" / LOG_DIR
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_text(
        _line({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
        + _line({"metaData": {"id": "m", "format": {"provider": "parquet", "options": {}},
                              "schemaString": SCHEMA, "partitionColumns": ["p"], "configuration": {},
                              "createdTime": T0}}) + _good(0))
    for v, text in enumerate(commits, 1):
        (log / f"{v:020d}.json").write_text(text)
    return str(tmp_path / "t")


BAD_LINES = {
    "path-a-bad-escape": _line(_add("p=x/a%zz.parquet")),
    "path-escape-cut-short": _line(_add("p=x/a%2")),
    "path-empty": _line(_add("")),
    "path-not-a-string": _line(_add("x")).replace('"path": "x"', '"path": 5'),
    "size-negative": _line(_add("p=x/n.parquet", size=-5)),
    "size-not-a-number": _line(_add("p=x/n.parquet", size="big")),
    "size-a-fraction": _line(_add("p=x/n.parquet", size=1.5)),
    "modification-time-infinite": _line(_add("x")).replace(f'"modificationTime": {T0}', '"modificationTime": 1e999'),
    "data-change-a-word": _line(_add("p=x/n.parquet", dataChange="yes")),
    "stats-an-object": _line(_add("p=x/n.parquet", stats={"numRecords": 1})),
    "partition-value-a-number": _line(_add("p=x/n.parquet", partitionValues={"p": 5})),
    "tags-a-list": _line(_add("p=x/n.parquet", tags=["a"])),
    "base-row-id-a-word": _line(_add("p=x/n.parquet", baseRowId="one")),
    "deletion-vector-of-no-kind": _line(_add("p=x/n.parquet", deletionVector={
        "storageType": "q", "pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 1})),
    "remove-path-a-bad-escape": _line(_remove("p=x/r%g1.parquet")),
    "remove-size-negative": _line(_remove("p=x/f-0-1.parquet", size=-1)),
    "remove-extended-a-word": _line(_remove("p=x/f-0-1.parquet", extendedFileMetadata="no")),
    "txn-version-a-word": _line({"txn": {"appId": "a", "version": "v"}}),
    "domain-removed-a-word": _line({"domainMetadata": {"domain": "d", "configuration": "{}", "removed": "no"}}),
    "in-commit-timestamp-a-word": _line({"commitInfo": {"timestamp": T0, "inCommitTimestamp": "yesterday"}}),
    "cdc-path-a-number": _line({"cdc": {"path": 5, "partitionValues": {}, "size": 1, "dataChange": False}}),
    "two-protocols": _line({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}) * 2,
    "truncated": _good(9)[:40],
    "array": "[1,2,3]\n",
    "bom": "\ufeff" + _good(9),
    "nested-too-deeply": '{"commitInfo":{"x":' + "[" * 3000 + "]" * 3000 + "}}\n",
}
GOOD_LINES = {
    "escaped-path": _line(_add("p=x/a%20b.parquet")),
    "remove-of-a-live-file": _line(_remove("p=x/f-0-1.parquet", size=10)),
    "unknown-action": _line({"someFutureAction": {"x": 1}}),
    "two-actions-on-a-line": json.dumps({**_add("p=x/two.parquet"), "commitInfo": {"timestamp": T0}}) + "\n",
    "null-partition-value": _line(_add("p=x/z.parquet", partitionValues={"p": None})),
    "txn": _line({"txn": {"appId": "a", "version": 3, "lastUpdated": T0}}),
}


def _python_answer(path: str) -> Any:
    """What the Python parser says of every commit, oldest first: the first error, or None."""
    storage = LocalStorage(path)
    try:
        for status in DeltaLog(path).snapshot(check_read=False).segment.commits:
            read_commit_actions(storage, status)
    except (DeltaDowngradeError, OSError) as exc:
        return type(exc), str(exc)
    return None


def _validation_answer(path: str) -> tuple[Any, Snapshot | None]:
    snapshot = None
    try:
        snapshot = DeltaLog(path).snapshot(check_read=False)  # reads the protocol lines
        snapshot.validate_commits()
    except (DeltaDowngradeError, OSError) as exc:
        return (type(exc), str(exc)), snapshot
    return None, snapshot


@pytest.fixture(params=["kept", "streamed"])
def parse_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``kept``: the segment is parsed whole and kept for its replay; ``streamed``: a segment
    estimated larger than one part, checked chunk by chunk and not kept."""
    if request.param == "streamed":
        monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 1)
    return str(request.param)


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_a_malformed_line_is_refused_with_the_python_parsers_error(tmp_path, kind, parse_mode):
    path = _table(tmp_path, _good(1), _good(2) + BAD_LINES[kind] + _good(3), _good(4))
    expected = _python_answer(path)
    assert expected is not None and "00000000000000000002.json" in expected[1]
    assert _validation_answer(path)[0] == expected


@pytest.mark.parametrize("kind", sorted(GOOD_LINES))
def test_a_sound_line_is_accepted_without_the_python_parser(tmp_path, monkeypatch, kind, parse_mode):
    path = _table(tmp_path, _good(1), _good(2) + GOOD_LINES[kind], _good(3))
    assert _python_answer(path) is None
    python_parses: list[str] = []
    parse_in_python = segment_module.parse_commit
    monkeypatch.setattr(segment_module, "parse_commit",
                        lambda text: python_parses.append("commit") or parse_in_python(text))
    answer, snapshot = _validation_answer(path)
    assert answer is None and snapshot is not None and python_parses == []
    # kept for the replay when the segment fits one part
    assert (snapshot._parsed_commits is not None) == (parse_mode == "kept")


def test_the_first_malformed_commit_is_the_one_named(tmp_path, parse_mode):
    """Commit 2 holds a value the Arrow parser reads without complaint, commit 3 is not JSON:
    the Python parser names commit 2, and so does the check."""
    path = _table(tmp_path, _good(1), _good(2) + BAD_LINES["path-a-bad-escape"], "{not json\n", _good(4))
    expected = _python_answer(path)
    assert expected is not None and "00000000000000000002.json" in expected[1]
    assert _validation_answer(path)[0] == expected


def test_a_validated_arrow_replay_parses_each_commit_once(tmp_path, monkeypatch):
    path = _table(tmp_path, *(_good(v) + _line(_remove(f"p=x/f-{v - 1}-0.parquet", size=10)) for v in range(1, 6)))
    arrow_parses: list[int] = []
    python_parses: list[str] = []
    parse_in_arrow = arrow_replay.commit_pieces
    parse_in_python = segment_module.parse_commit
    monkeypatch.setattr(arrow_replay, "commit_pieces",
                        lambda storage, segment, *a, **kw: arrow_parses.append(len(segment.commits))
                        or parse_in_arrow(storage, segment, *a, **kw))
    monkeypatch.setattr(segment_module, "parse_commit",
                        lambda text: python_parses.append("commit") or parse_in_python(text))
    snapshot = DeltaLog(path).validated_snapshot(replay="arrow")
    assert arrow_parses == [6] and python_parses == []
    assert snapshot._parsed_commits is None  # handed to the replay, then let go
    # the replay from the kept parse is the replay of a fresh parse
    fresh = arrow_replay.replay_segment(snapshot.storage, snapshot.table, snapshot.segment)
    state = snapshot.arrow_state()
    for kind in ("adds", "removes"):
        assert getattr(state, kind).to_pylist() == getattr(fresh, kind).to_pylist()
    assert state.num_adds == 6 * 5 - 5 and state.num_removes == 5


def test_a_validated_python_view_takes_the_kept_parse(tmp_path, monkeypatch):
    path = _table(tmp_path, *(_good(v) for v in range(1, 4)))
    arrow_parses: list[int] = []
    parse_in_arrow = arrow_replay.commit_pieces
    monkeypatch.setattr(arrow_replay, "commit_pieces",
                        lambda storage, segment, *a, **kw: arrow_parses.append(len(segment.commits))
                        or parse_in_arrow(storage, segment, *a, **kw))
    snapshot = DeltaLog(path).validated_snapshot(replay="python")
    assert arrow_parses == [4]
    assert len(snapshot.state().files) == 4 * 5


def test_a_replay_in_parts_takes_the_kept_parse(tmp_path, monkeypatch):
    """A small tail after a large checkpoint is replayed in parts (the checkpoint decides): the
    tail's kept parse is cut into the parts as it is, with the result of a fresh parse."""
    path = _table(tmp_path, *(_good(v) + _line(_remove(f"p=x/f-{v - 1}-0.parquet", size=10)) for v in range(1, 6)))
    snapshot = DeltaLog(path).snapshot(check_read=False)
    snapshot.validate_commits()
    kept = snapshot._parsed_commits
    assert kept is not None
    arrow_parses: list[int] = []
    parse_in_arrow = arrow_replay.iter_commit_pieces
    monkeypatch.setattr(arrow_replay, "iter_commit_pieces",
                        lambda *a, **kw: arrow_parses.append(1) or parse_in_arrow(*a, **kw))

    def rows(parsed: Any) -> tuple[list[Any], list[Any]]:
        state = arrow_replay.replay_segment(snapshot.storage, snapshot.table, snapshot.segment, part_actions=4,
                                            parsed_commits=parsed)
        assert state.num_parts > 1
        return (sorted(state.adds.to_pylist(), key=lambda r: r["path"]),
                sorted(state.removes.to_pylist(), key=lambda r: r["path"]))

    from_kept = rows(kept)
    assert arrow_parses == []
    assert from_kept == rows(None) and arrow_parses == [1]
