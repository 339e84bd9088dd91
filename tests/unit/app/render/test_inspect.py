"""``inspect`` rendering of a synthetic report: the JSON document (keys, order, null lists, only
removable features carry traces) and the text, line by line."""

from __future__ import annotations

import json

from delta_downgrade.app.render.inspect import inspect_document, iso_utc, render_json, render_text
from delta_downgrade.log.delta_log import ProtocolSpan
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.operations.inspect import CheckpointReport, FeatureReport, FileSummary, TableReport
from delta_downgrade.protocol import Protocol
from delta_downgrade.storage import FileStatus

PROTOCOL = Protocol(3, 7, frozenset({"deletionVectors", "catalogManaged"}),
                    frozenset({"deletionVectors", "catalogManaged", "checkpointProtection"}))


def _report(*, history: bool = True) -> TableReport:
    features = [
        FeatureReport("catalogManaged", True, "reader-writer", False, True, True, traces=[]),
        FeatureReport("checkpointProtection", True, "writer", False, True, False, traces=["boundary 5"]),
        FeatureReport("deletionVectors", True, "reader-writer", False, True, True,
                      traces=["2 file(s) with deletion vectors", "property delta.enableDeletionVectors"]),
        FeatureReport("futureThing", False, None, False, False, False),
    ]
    multipart = CheckpointInstance(4, "multipart", (FileStatus("_delta_log/a", 10, 0),), num_parts=2)
    v2 = CheckpointInstance(6, "v2", (FileStatus("_delta_log/b.json", 7, 0),))
    spans = [ProtocolSpan(0, 3, Protocol(1, 2), None), ProtocolSpan(4, 6, PROTOCOL, 5)]
    return TableReport(
        table="/data/t", version=6, latest_version=7, earliest_version=2, timestamp_ms=1_700_000_000_123,
        protocol=PROTOCOL, features=features, unsupported_for_read=frozenset({"catalogManaged"}),
        unsupported_for_write=frozenset({"catalogManaged"}), table_id="id-1", partition_columns=["p"],
        properties={"a.b": "1", "delta.x": "y"},
        checkpoints=[CheckpointReport(multipart), CheckpointReport(v2, ["_sidecars/s1", "_sidecars/s2"])],
        last_checkpoint={"version": 6, "size": 3}, boundary_version=5, protected_checkpoint_versions=[6],
        files=FileSummary(3, 300, 2, 5, 1, ["delta.rowTracking"]), unknown_log_files=["_delta_log/x.txt"],
        protocol_history=spans if history else None)


def test_iso_utc_to_the_millisecond():
    assert iso_utc(1_700_000_000_123) == "2023-11-14T22:13:20.123Z"
    assert iso_utc(None) is None


def test_document_keys_and_values():
    doc = inspect_document(_report())
    assert list(doc) == ["format_version", "table", "version", "latest_version", "earliest_version", "timestamp",
                         "protocol", "implicit_features", "features", "unsupported_features", "table_id",
                         "partition_columns", "properties", "checkpoints", "last_checkpoint",
                         "checkpoint_protection", "droppable_features", "files", "unknown_log_files",
                         "listed_from", "protocol_history"]
    assert doc["format_version"] == 1 and doc["timestamp"] == "2023-11-14T22:13:20.123Z"
    assert doc["protocol"] == {"minReaderVersion": 3, "minWriterVersion": 7,
                               "readerFeatures": ["catalogManaged", "deletionVectors"],
                               "writerFeatures": ["catalogManaged", "checkpointProtection", "deletionVectors"]}
    assert doc["features"][0] == {"name": "catalogManaged", "known": True, "kind": "reader-writer",
                                  "implicit": False, "removable": True, "requires_history_protection": True,
                                  "in_use": False, "traces": []}
    assert doc["features"][3] == {"name": "futureThing", "known": False, "kind": None, "implicit": False,
                                  "removable": False, "requires_history_protection": False}
    assert doc["unsupported_features"] == {"read": ["catalogManaged"], "write": ["catalogManaged"]}
    assert doc["checkpoints"] == [
        {"version": 4, "kind": "multipart", "parts": 2, "complete": False, "files": ["_delta_log/a"], "size_bytes": 10},
        {"version": 6, "kind": "v2", "parts": 1, "complete": True, "files": ["_delta_log/b.json"], "size_bytes": 7,
         "sidecars": ["_sidecars/s1", "_sidecars/s2"]}]
    assert doc["checkpoint_protection"] == {"feature_present": True, "boundary_version": 5,
                                            "protected_checkpoint_versions": [6]}
    assert doc["droppable_features"] == ["catalogManaged", "checkpointProtection", "deletionVectors"]
    assert doc["files"] == {"live_files": 3, "live_bytes": 300, "files_with_deletion_vectors": 2,
                            "deleted_rows_in_deletion_vectors": 5, "tombstones": 1, "domains": ["delta.rowTracking"]}
    assert doc["protocol_history"] == [
        {"start_version": 0, "end_version": 3, "boundary_version": None,
         "protocol": {"minReaderVersion": 1, "minWriterVersion": 2, "readerFeatures": None, "writerFeatures": None}},
        {"start_version": 4, "end_version": 6, "boundary_version": 5, "protocol": doc["protocol"]}]
    assert "protocol_history" not in inspect_document(_report(history=False))


def test_json_is_the_document_indented_by_two():
    text = render_json(_report())
    assert json.loads(text) == inspect_document(_report())
    assert text.startswith('{\n  "format_version": 1,\n  "table": "/data/t",')


def test_text():
    assert render_text(_report()).splitlines() == [
        "table            /data/t",
        "version          6 (latest 7, earliest retained 2) at 2023-11-14T22:13:20.123Z",
        "protocol         reader 3, writer 7",
        "  reader features  catalogManaged, deletionVectors",
        "  writer features  catalogManaged, checkpointProtection, deletionVectors",
        "  not supported here  read: ['catalogManaged']  write: ['catalogManaged']",
        "checkpoint protection  on, boundary version 5, protected checkpoints [6]",
        "",
        "feature                        kind          how       removable  in use",
        "catalogManaged                 reader-writer listed    yes        no",
        "checkpointProtection           writer        listed    yes        yes: boundary 5",
        "deletionVectors                reader-writer listed    yes        yes: 2 file(s) with deletion vectors; "
        "property delta.enableDeletionVectors",
        "futureThing                    unknown       listed    no         -",
        "",
        "checkpoints",
        "  v4        multipart  parts 2 INCOMPLETE  10 bytes",
        "  v6        v2         parts 1, 2 sidecar(s)  7 bytes",
        "",
        "files            3 live (300 bytes), 2 with deletion vectors, 1 tombstones",
        "",
        "properties",
        "  a.b = 1",
        "  delta.x = y",
        "",
        "protocol history",
        "  v0..v3  (1,2) ",
        "  v4..v6  (3,7) catalogManaged, checkpointProtection, deletionVectors  boundary 5",
    ]


def test_text_of_a_legacy_table_without_checkpoints_or_history():
    legacy = Protocol(1, 2)
    report = TableReport(
        table="/t", version=0, latest_version=0, earliest_version=0, timestamp_ms=None, protocol=legacy,
        features=[FeatureReport("appendOnly", True, "writer", True, False, False),
                  FeatureReport("invariants", True, "writer", True, False, False)],
        unsupported_for_read=frozenset(), unsupported_for_write=frozenset(), table_id="i", partition_columns=[],
        properties={}, checkpoints=[], last_checkpoint=None, boundary_version=None,
        protected_checkpoint_versions=[], files=FileSummary(0, 0, 0, 0, 0, []), unknown_log_files=[],
        protocol_history=[ProtocolSpan(0, 0, legacy, None)])
    assert render_text(report).splitlines() == [
        "table            /t",
        "version          0 (latest 0, earliest retained 0) at None",
        "protocol         reader 1, writer 2",
        "  implied by legacy versions  appendOnly, invariants",
        "checkpoint protection  off",
        "",
        "feature                        kind          how       removable  in use",
        "appendOnly                     writer        implicit  no         -",
        "invariants                     writer        implicit  no         -",
        "",
        "checkpoints",
        "  (none)",
        "",
        "files            0 live (0 bytes), 0 with deletion vectors, 0 tombstones",
    ]
