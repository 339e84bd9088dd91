"""The catalogue's partial-knowledge fields: ``unlisted_features = "unknown"`` (a vendor page
names some supported features and is silent on the rest) and ``unsupported_features`` (features a
page dates to a later version). A silent source gives ``unknown``; a definite gap still gives
``no`` (PROTOCOL.md "Table Features": a reader must support every listed reader feature)."""

from __future__ import annotations

import pytest

from delta_downgrade.compat import Verdict, load_catalogue, read_verdict, write_verdict
from delta_downgrade.errors import BadClientCatalogueError
from delta_downgrade.protocol.protocol import Protocol

DV = Protocol(3, 7, {"deletionVectors"}, {"deletionVectors"})
NTZ = Protocol(3, 7, {"timestampNtz"}, {"timestampNtz"})

SRC = [{"url": "https://example.org/doc", "states": "names some features"}]


def one(read: dict, write: dict | None = None):
    entry = {"id": "c", "name": "c", "family": "f", "versions": "1", "read": {"sources": SRC, **read}}
    if write is not None:
        entry["write"] = {"sources": SRC, **write}
    return load_catalogue({"schema_version": 1, "client": [entry]}).client("c")


def test_unlisted_unknown_keeps_definite_blockers_and_defers_the_rest():
    c = one({"max_version": 3, "features": ["deletionVectors"], "unlisted_features": "unknown",
             "unsupported_features": ["v2Checkpoint"]},
            {"max_version": 7, "features": ["deletionVectors", "appendOnly"],
             "unlisted_features": "unknown"})
    assert read_verdict(c, DV).verdict is Verdict.YES
    assert read_verdict(c, NTZ).verdict is Verdict.UNKNOWN
    both = Protocol(3, 7, {"timestampNtz", "v2Checkpoint"}, {"timestampNtz", "v2Checkpoint"})
    v = read_verdict(c, both)
    assert v.verdict is Verdict.NO and v.blocking_features == ("v2Checkpoint",)
    w = write_verdict(c, Protocol(3, 7, {"deletionVectors"}, {"deletionVectors", "rowTracking"}))
    assert w.verdict is Verdict.UNKNOWN and "rowTracking" in w.notes[0]


def test_unlisted_unsupported_is_the_default():
    c = one({"max_version": 3, "features": ["deletionVectors"]})
    assert read_verdict(c, NTZ).verdict is Verdict.NO


@pytest.mark.parametrize("read, message", [
    ({"max_version": 3, "features": "unknown", "unlisted_features": "unknown"}, "needs a features list"),
    ({"max_version": 3, "features": ["deletionVectors"], "unsupported_features": ["v2Checkpoint"]},
     "only meaningful"),
    ({"max_version": 3, "features": ["deletionVectors"], "unlisted_features": "unknown",
      "unsupported_features": ["deletionVectors"]}, "both supported and unsupported"),
    ({"max_version": 3, "features": [], "unlisted_features": "unknown",
      "unsupported_features": ["v2Checkpont"]}, "not a known table feature"),
    ({"max_version": 3, "features": [], "unlisted_features": "maybe"}, "unlisted_features"),
])
def test_bad_partial_knowledge_fields_are_refused(read, message):
    with pytest.raises(BadClientCatalogueError, match=message):
        one(read)
