"""features/catalog_owned.py: refused up front; traces are the registry entry's properties."""

from __future__ import annotations

import types

import pytest

from delta_downgrade.errors import UnsupportedClientFeatureError
from delta_downgrade.features import REMOVABLE, TraceContext, feature_traces

CATALOG_OWNED = ["catalogManaged", "redirectReaderWriter-preview", "redirectWriterOnly-preview"]


def _ctx(configuration: dict[str, str]) -> TraceContext:
    snapshot = types.SimpleNamespace(metadata=types.SimpleNamespace(configuration=configuration))
    return TraceContext(snapshot)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", CATALOG_OWNED)
def test_the_drop_is_refused_before_anything_is_read(name):
    run = types.SimpleNamespace(table="/t")
    with pytest.raises(UnsupportedClientFeatureError) as caught:
        REMOVABLE[name].preflight(run, None)  # type: ignore[arg-type]
    assert caught.value.message.startswith(
        f"cannot drop {name}: its commits are governed by a catalog or a commit coordinator")
    assert caught.value.table == "/t" and caught.value.feature == name


def test_traces_are_the_set_properties_in_registry_order():
    conf = {"delta.coordinatedCommits.tableConf-preview": "{}",
            "delta.coordinatedCommits.commitCoordinator-preview": "dynamodb",
            "delta.redirectWriterOnly-preview": "{\"type\": \"x\"}", "other": "1"}
    assert feature_traces("coordinatedCommits-preview", _ctx(conf)) == [
        "delta.coordinatedCommits.commitCoordinator-preview=dynamodb",
        "delta.coordinatedCommits.tableConf-preview={}"]
    assert feature_traces("redirectWriterOnly-preview", _ctx(conf)) == [
        "delta.redirectWriterOnly-preview={\"type\": \"x\"}"]
    assert feature_traces("redirectReaderWriter-preview", _ctx(conf)) == []
    assert feature_traces("catalogManaged", _ctx(conf)) == []


def test_coordinated_commits_with_a_coordinator_configured_is_refused():
    run = types.SimpleNamespace(table="/t")
    snapshot = types.SimpleNamespace(metadata=types.SimpleNamespace(
        configuration={"delta.coordinatedCommits.commitCoordinator-preview": "dynamodb"}))
    with pytest.raises(UnsupportedClientFeatureError) as caught:
        REMOVABLE["coordinatedCommits-preview"].preflight(run, snapshot)  # type: ignore[arg-type]
    assert "still go through a commit coordinator" in caught.value.message
    assert "delta.coordinatedCommits.commitCoordinator-preview" in caught.value.message


def test_coordinated_commits_without_a_coordinator_is_dropped_as_delta_drops_it():
    # No coordinator: every commit is a published file of _delta_log; delta-spark 4.4 drops the
    # feature with the protocol commit alone.
    run = types.SimpleNamespace(table="/t")
    snapshot = types.SimpleNamespace(metadata=types.SimpleNamespace(configuration={"other": "1"}))
    REMOVABLE["coordinatedCommits-preview"].preflight(run, snapshot)  # type: ignore[arg-type]
    assert REMOVABLE["coordinatedCommits-preview"].traces(_ctx({"other": "1"})) == []


def test_a_coordinated_commits_table_is_written_only_without_a_coordinator():
    from delta_downgrade.protocol.features import writable_under

    assert writable_under({}) == {"coordinatedCommits-preview"}
    assert writable_under({"delta.enableInCommitTimestamps": "true"}) == {"coordinatedCommits-preview"}
    for key in ("delta.coordinatedCommits.commitCoordinator-preview",
                "delta.coordinatedCommits.commitCoordinatorConf-preview",
                "delta.coordinatedCommits.tableConf-preview"):
        assert writable_under({key: "x"}) == frozenset()
