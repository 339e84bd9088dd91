"""A malformed action is named by the field the protocol requires, in the words of PROTOCOL.md
("Actions"): never a Python error text such as a constructor's signature."""

from __future__ import annotations

import json

import pytest

from delta_downgrade.protocol.actions import MalformedActionError, parse_commit


@pytest.mark.parametrize("action,missing", [
    ({"domainMetadata": {"configuration": "{}", "removed": False}}, "domain"),
    ({"txn": {"version": 3}}, "appId"),
    ({"txn": {"appId": "a"}}, "version"),
    ({"metaData": {"schemaString": json.dumps({"type": "struct", "fields": []})}}, "id"),
    ({"protocol": {"minReaderVersion": 1}}, "minWriterVersion"),
])
def test_a_missing_required_field_is_named_by_the_field(action, missing):
    with pytest.raises(MalformedActionError) as info:
        parse_commit((json.dumps(action) + "\n").encode())
    message = str(info.value)
    assert f"field {missing!r} is missing" in message
    assert "__init__" not in message and "positional argument" not in message
