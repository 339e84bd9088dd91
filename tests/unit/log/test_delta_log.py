"""DeltaLog's protocol checks and history (delta_downgrade.log.delta_log): the READ gate a
snapshot passes through, and the protocol spans of the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_downgrade.app.render.inspect import span_document
from delta_downgrade.errors import InvalidProtocolError, UnsupportedFeaturesError
from delta_downgrade.log.delta_log import DeltaLog, ProtocolSpan
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.protocol import Protocol

METADATA = {"metaData": {"id": "11111111-2222-3333-4444-555555555555",
                         "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps({"type": "struct", "fields": []}),
                         "partitionColumns": [], "configuration": {}, "createdTime": 0}}


def _table(root: Path, *protocols: dict) -> str:
    log = root / LOG_DIR
    log.mkdir(parents=True)
    for version, protocol in enumerate(protocols):
        lines = [{"protocol": protocol}] + ([METADATA] if version == 0 else [])
        (log / f"{version:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return str(root)


def test_unknown_reader_feature_is_refused_for_read(tmp_path):
    path = _table(tmp_path / "t", {"minReaderVersion": 3, "minWriterVersion": 7,
                                   "readerFeatures": ["futureFeature"], "writerFeatures": ["futureFeature"]})
    with pytest.raises(UnsupportedFeaturesError) as exc:
        DeltaLog(path).snapshot()
    err = exc.value
    assert err.error_class == "DELTA_UNSUPPORTED_FEATURES_FOR_READ"
    assert err.features == ["futureFeature"] and err.table == path
    assert err.message == ("version 0 has reader feature(s) ['futureFeature'] that delta-downgrade does not "
                           "know; it cannot tell what the log means and will not touch the table")
    assert DeltaLog(path).snapshot(check_read=False).version == 0  # the caller's own gate decides


def test_known_features_the_package_cannot_read_are_described(tmp_path):
    """catalogManaged is known (inspect describes and flags it); its refusal is the operations'."""
    path = _table(tmp_path / "t", {"minReaderVersion": 3, "minWriterVersion": 7,
                                   "readerFeatures": ["catalogManaged", "vacuumProtocolCheck"],
                                   "writerFeatures": ["catalogManaged", "inCommitTimestamp",
                                                      "vacuumProtocolCheck"]})
    snapshot = DeltaLog(path).snapshot()
    assert snapshot.protocol.unsupported_for_read() == {"catalogManaged"}


def test_unknown_writer_feature_reads(tmp_path):
    path = _table(tmp_path / "t", {"minReaderVersion": 1, "minWriterVersion": 7,
                                   "writerFeatures": ["appendOnly", "futureWriterFeature"]})
    assert DeltaLog(path).snapshot().protocol.writer_features == {"appendOnly", "futureWriterFeature"}


def test_invalid_protocol_is_refused_whatever_check_read(tmp_path):
    path = _table(tmp_path / "t", {"minReaderVersion": 99, "minWriterVersion": 7})
    for check_read in (True, False):
        with pytest.raises(InvalidProtocolError):
            DeltaLog(path).snapshot(check_read=check_read)


def test_protocol_history_spans_and_their_document(tmp_path):
    path = _table(tmp_path / "t", {"minReaderVersion": 1, "minWriterVersion": 2},
                  {"minReaderVersion": 1, "minWriterVersion": 2},
                  {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                   "writerFeatures": ["deletionVectors"]})
    spans = DeltaLog(path).protocol_history()
    assert spans == [ProtocolSpan(0, 1, Protocol(1, 2), None),
                     ProtocolSpan(2, 2, Protocol(3, 7, {"deletionVectors"}, {"deletionVectors"}), None)]
    assert [span_document(s) for s in spans] == [
        {"start_version": 0, "end_version": 1, "boundary_version": None,
         "protocol": {"minReaderVersion": 1, "minWriterVersion": 2, "readerFeatures": None,
                      "writerFeatures": None}},
        {"start_version": 2, "end_version": 2, "boundary_version": None,
         "protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                      "writerFeatures": ["deletionVectors"]}},
    ]
