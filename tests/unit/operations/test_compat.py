"""operations/compat.py on real tables built here: the verdict document, the rewrite footprint of
each planned drop (counted from the log, with the data files gone), the order of the steps, and
undroppable features."""

from __future__ import annotations

import json
import os

import pytest

from delta_downgrade.compat import load_catalogue
from delta_downgrade.errors import UnknownClientError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.compat import fleet_compat, resolve_clients, table_compat
from delta_downgrade.protocol.protocol import Protocol
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import create_dv_table, delete_rows
from tests.drop_support import SCHEMA, rows

SRC = [{"url": "https://example.org/spec", "states": "test"}]


def _client(id: str, read: dict, write: dict | None = None, **kw) -> dict:
    out = {"id": id, "name": f"client {id}", "family": kw.pop("family", "fam"), "versions": "1.x",
           "read": {"sources": SRC, **read}, **kw}
    if write is not None:
        out["write"] = {"sources": [{"url": "https://example.org/write", "states": "writes"}], **write}
    return out


# A legacy-only reader (1, no features), a reader-version-3 client with no reader features that
# writes up to 7 with a few writer features, and one that reads everything (deletionVectors...).
CATALOGUE = load_catalogue({"schema_version": 1, "client": [
    _client("legacy", {"max_version": 1}, {"max_version": 2}, aliases=["old"]),
    _client("plain", {"max_version": 3, "features": []},
            {"max_version": 7, "features": ["appendOnly", "invariants"]}),
    _client("reader-only", {"max_version": 1}, {"max_version": 0}),
    _client("modern", {"max_version": 3, "features": ["deletionVectors", "columnMapping", "typeWidening",
                                                       "timestampNtz", "v2Checkpoint"]},
            family="other"),
]})


def _drop_data_files(path: str) -> None:
    """Delete every data file: what compat reports must come from the log alone."""
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        for name in files:
            if name.endswith(".parquet"):
                os.remove(os.path.join(root, name))


def _client_doc(doc: dict, client_id: str) -> dict:
    return next(c for c in doc["clients"] if c["client"] == client_id)


def _dv_table(path: str) -> dict[str, int]:
    """5 files, 3 of them with a DV; returns the sizes of those 3."""
    builder = TableBuilder(path)
    create_dv_table(builder, SCHEMA, rows(0, 50), files=5)
    live = sorted(DeltaLog(path).snapshot().state().files.values(), key=lambda a: a.path)
    assert len(live) == 5
    chosen = {a.path: [0, 1] for a in live[:3]}
    delete_rows(builder, chosen)
    return {a.path: a.size for a in live[:3]}


def test_deletion_vectors_footprint_is_the_files_with_a_dv(tmp_path):
    path = str(tmp_path / "dv")
    sizes = _dv_table(path)
    _drop_data_files(path)
    doc = table_compat(path, CATALOGUE).to_json()
    json.dumps(doc)  # plain JSON

    assert doc["table"] == path and doc["version"] == 1
    assert doc["protocol"] == {"minReaderVersion": 3, "minWriterVersion": 7,
                               "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}
    plain = _client_doc(doc, "plain")
    assert plain["read"]["verdict"] == "no"
    assert plain["read"]["blockers"] == [{"kind": "feature", "feature": "deletionVectors",
                                          "reason": "reader feature deletionVectors is not supported"}]
    unblock = plain["unblock"]
    assert unblock["possible"] and unblock["undroppable"] == []
    assert unblock["steps"] == [{"feature": "deletionVectors", "required_by": None, "checkpoint_protection": True,
                                 "rewrite": {"needed": True, "files": 3, "bytes": sum(sizes.values()),
                                             "exact": True}}]
    # After the drop the table is 1,7 with checkpointProtection, which "plain" cannot write:
    # truncate-history first (Checkpoint Protection RFC).
    assert unblock["protocol_after"] == {"minReaderVersion": 1, "minWriterVersion": 7,
                                         "readerFeatures": None, "writerFeatures": ["checkpointProtection"]}
    assert unblock["read_after"]["verdict"] == "yes"
    assert unblock["write_after"]["verdict"] == "no"
    assert unblock["truncate_history_before_write"] is True
    assert plain["sources"] == [{"url": "https://example.org/spec", "states": "test"},
                                {"url": "https://example.org/write", "states": "writes"}]

    modern = _client_doc(doc, "modern")
    assert modern["read"]["verdict"] == "yes" and modern["unblock"] is None
    assert modern["write"]["verdict"] == "n/a"
    # reader-only writes no Delta table at all: its writes are n/a, not this table's doing
    reader_only = _client_doc(doc, "reader-only")["write"]
    assert reader_only["verdict"] == "n/a" and reader_only["notes"] == ["this client does not write Delta tables"]
    assert doc["blocked"] == {"read": ["legacy", "plain", "reader-only"], "write": ["legacy", "plain"]}


def test_a_dv_table_without_dvs_needs_no_rewrite(tmp_path):
    path = str(tmp_path / "dv0")
    create_dv_table(TableBuilder(path), SCHEMA, rows(0, 10), files=2)
    step = _client_doc(table_compat(path, CATALOGUE).to_json(), "plain")["unblock"]["steps"][0]
    assert step["rewrite"] == {"needed": False, "files": 0, "bytes": 0, "exact": True}


def _cm_schema(renamed: bool) -> dict:
    def field(name: str, physical: str, id: int, type: str) -> dict:
        return {"name": name, "type": type, "nullable": True,
                "metadata": {"delta.columnMapping.id": id, "delta.columnMapping.physicalName": physical}}
    return {"type": "struct", "fields": [field("id", "id", 1, "long"),
                                         field("renamed" if renamed else "value", "value", 2, "string")]}


@pytest.mark.parametrize("mode", ["name", "none"])
def test_column_mapping_footprint(tmp_path, mode):
    path = str(tmp_path / "cm")
    builder = TableBuilder(path)
    builder.create(SCHEMA, protocol=Protocol(2, 5), delta_schema=_cm_schema(renamed=True),
                   configuration={"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "2"},
                   rows=rows(0, 30), files=3)
    builder.append(rows(30, 10))
    live = DeltaLog(path).snapshot().state().files.values()
    _drop_data_files(path)
    doc = table_compat(path, CATALOGUE).to_json()
    plain = _client_doc(doc, "plain")
    # reader version 2 implies columnMapping, which "plain" accepts without applying it
    assert plain["read"]["verdict"] == "misreads"
    steps = plain["unblock"]["steps"]
    assert [s["feature"] for s in steps] == ["columnMapping"]
    if mode == "name":
        # Every live file may hold physical names or field ids: the rewrite reads each footer,
        # so the log gives an upper bound.
        assert steps[0]["rewrite"] == {"needed": True, "files": 4, "bytes": sum(a.size for a in live),
                                       "exact": False}
    else:
        assert steps[0]["rewrite"] == {"needed": False, "files": 0, "bytes": 0, "exact": True}
    assert steps[0]["checkpoint_protection"] is True  # a reader-writer feature: history protection


def test_type_widening_footprint(tmp_path):
    path = str(tmp_path / "tw")
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True,
         "metadata": {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}},
        {"name": "value", "type": "string", "nullable": True, "metadata": {}}]}
    builder = TableBuilder(path)
    builder.create(SCHEMA, protocol=Protocol(3, 7, {"typeWidening"}, {"typeWidening"}), delta_schema=schema,
                   configuration={"delta.enableTypeWidening": "true"}, rows=rows(0, 20), files=2)
    live = DeltaLog(path).snapshot().state().files.values()
    _drop_data_files(path)
    doc = table_compat(path, CATALOGUE).to_json()
    step = _client_doc(doc, "plain")["unblock"]["steps"][0]
    assert step["feature"] == "typeWidening"
    assert step["rewrite"] == {"needed": True, "files": 2, "bytes": sum(a.size for a in live), "exact": False}
    # modern reads typeWidening: nothing to unblock
    assert _client_doc(doc, "modern")["unblock"] is None


def test_type_widening_without_type_changes_needs_no_rewrite(tmp_path):
    path = str(tmp_path / "tw0")
    TableBuilder(path).create(SCHEMA, protocol=Protocol(3, 7, {"typeWidening"}, {"typeWidening"}),
                              configuration={"delta.enableTypeWidening": "true"}, rows=rows(0, 5))
    step = _client_doc(table_compat(path, CATALOGUE).to_json(), "plain")["unblock"]["steps"][0]
    assert step["rewrite"] == {"needed": False, "files": 0, "bytes": 0, "exact": True}


def test_steps_drop_dependents_first(tmp_path):
    # rowTracking requires domainMetadata: a writer that supports neither drops rowTracking
    # first (delta-spark refuses to drop a feature another one of the table requires).
    path = str(tmp_path / "rt")
    features = {"rowTracking", "domainMetadata"}
    TableBuilder(path).create(SCHEMA, protocol=Protocol(1, 7, None, features), rows=rows(0, 5))
    doc = table_compat(path, CATALOGUE, resolve_clients(CATALOGUE, ["plain"])).to_json()
    assert [c["client"] for c in doc["clients"]] == ["plain"]
    plain = doc["clients"][0]
    assert plain["read"]["verdict"] == "yes" and plain["write"]["verdict"] == "no"
    steps = plain["unblock"]["steps"]
    assert [(s["feature"], s["required_by"]) for s in steps] == [("rowTracking", "domainMetadata"),
                                                                 ("domainMetadata", None)]
    assert all(s["rewrite"]["needed"] is False for s in steps)
    assert doc["blocked"] == {"read": [], "write": ["plain"]}

    # a client that writes no Delta table is never blocked from writing one
    alone = table_compat(path, CATALOGUE, resolve_clients(CATALOGUE, ["reader-only"])).to_json()
    assert alone["clients"][0]["write"]["verdict"] == "n/a" and alone["blocked"]["write"] == []


def test_undroppable_features_say_why(tmp_path):
    path = str(tmp_path / "ntz")
    TableBuilder(path).create(SCHEMA, protocol=Protocol(3, 7, {"timestampNtz"}, {"timestampNtz"}),
                              rows=rows(0, 5))
    unblock = _client_doc(table_compat(path, CATALOGUE).to_json(), "plain")["unblock"]
    assert unblock["possible"] is False and unblock["steps"] == []
    assert [u["feature"] for u in unblock["undroppable"]] == ["timestampNtz"]
    assert "not removable" in unblock["undroppable"][0]["reason"]
    assert unblock["protocol_after"] is None and unblock["read_after"] is None


def test_clients_by_alias_and_family_and_unknown_with_suggestions():
    assert [c.id for c in resolve_clients(CATALOGUE, ["OLD"])] == ["legacy"]
    assert [c.id for c in resolve_clients(CATALOGUE, ["fam"])] == ["legacy", "plain", "reader-only"]
    assert [c.id for c in resolve_clients(CATALOGUE, ["modern", "legacy"])] == ["legacy", "modern"]
    with pytest.raises(UnknownClientError) as caught:
        resolve_clients(CATALOGUE, ["moderm"])
    assert "did you mean modern" in caught.value.message
    assert caught.value.exit_code == 2


def test_fleet_reports_each_table_and_the_errors(tmp_path):
    good = str(tmp_path / "good")
    _dv_table(good)
    missing = str(tmp_path / "missing")
    fleet = fleet_compat([good, missing], CATALOGUE).to_json()
    assert [t["table"] for t in fleet["tables"]] == [good]
    assert [e["table"] for e in fleet["errors"]] == [missing]
    assert fleet["errors"][0]["error_class"] and fleet["errors"][0]["message"]
    assert [c["client"] for c in fleet["clients"]] == ["legacy", "plain", "reader-only", "modern"]
    assert set(fleet["clients"][0]) == {"client", "name", "family", "versions"}


def test_the_dv_footprint_is_the_purge_selection(tmp_path):
    """The files compat counts for deletionVectors are the files the purge plans to rewrite."""
    from delta_downgrade.features import removable
    from delta_downgrade.features.base import TraceContext
    from delta_downgrade.rewrite.dv_purge_plan import files_to_purge

    path = str(tmp_path / "dv")
    _dv_table(path)
    snapshot = DeltaLog(path).snapshot()
    planned = files_to_purge(snapshot)
    footprint = removable("deletionVectors").rewrite_footprint(TraceContext(snapshot))
    assert (footprint.files, footprint.bytes) == (len(planned), sum(p.add.size for p in planned)) == (3, footprint.bytes)
