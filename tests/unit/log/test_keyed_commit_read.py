"""``read_commit_actions`` asked for some keys only: a commit that names none of them is passed
over on its bytes - nothing parsed, and no decoding unless the bytes are not ASCII - yet a commit
that is not UTF-8 is refused whether it names them or not, as the whole parse would refuse it."""

from __future__ import annotations

import json

import pytest

from delta_downgrade.errors import CorruptLogError
from delta_downgrade.log.read.segment import LoadedFile, read_commit_actions
from delta_downgrade.storage import FileStatus

KEYS = ("protocol", "metaData")
PROTOCOL = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
INFO = {"commitInfo": {"timestamp": 1, "operation": "WRITE"}}


def _read(data: bytes, keys: tuple[str, ...] | None = KEYS) -> list:
    status = FileStatus("_delta_log/00000000000000000007.json", len(data), 0)
    return read_commit_actions(LoadedFile("/t", data), status, keys)


def _lines(*actions: dict, ensure_ascii: bool = True) -> bytes:
    return "".join(json.dumps(a, ensure_ascii=ensure_ascii) + "\n" for a in actions).encode()


def test_a_commit_naming_a_key_gives_that_action_only():
    got = _read(_lines(INFO, PROTOCOL))
    assert [a.to_obj() for a in got] == [PROTOCOL["protocol"]]
    assert len(_read(_lines(INFO, PROTOCOL), None)) == 2  # no keys: every action


@pytest.mark.parametrize("note", ["plain", "caf\u00e9 \u65e5\u672c"])
def test_a_utf8_commit_naming_no_key_gives_nothing(note):
    data = _lines({"commitInfo": {"timestamp": 1, "note": note}}, ensure_ascii=False)
    assert data.isascii() == (note == "plain")
    assert _read(data) == []


@pytest.mark.parametrize("lines", [b'{"commitInfo":{"note":"caf\xe9"}}\n',
                                   b'{"commitInfo":{"note":"caf\xe9"}}\n{"protocol":{"minReaderVersion":1,'
                                   b'"minWriterVersion":2}}\n'])
def test_a_commit_that_is_not_utf8_is_refused_with_or_without_a_key(lines):
    with pytest.raises(CorruptLogError, match="utf-8") as got:
        _read(lines)
    assert "00000000000000000007.json" in str(got.value)
