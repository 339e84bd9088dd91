"""``inspect NAME`` (a catalog table, through DESCRIBE DETAIL and HISTORY): its exact text and
RESULT line, and that both say what its ``--json`` document says."""

from __future__ import annotations

import pytest

from delta_downgrade.app.engines.catalog_answers import HistoryEntry, TableDetail
from delta_downgrade.app.engines.sql_inspect import CatalogTableReport
from delta_downgrade.app.render.catalog_inspect import UNAVAILABLE, catalog_inspect_document, render_catalog_text
from delta_downgrade.app.render.result import catalog_inspect_result, format_result
from delta_downgrade.app.schemas.results import CatalogInspectResult

NOT_SHOWN = "not shown through SQL: " + ", ".join(UNAVAILABLE)


def _detail(features: tuple[str, ...], properties: dict[str, str], reader: int = 3, writer: int = 7) -> TableDetail:
    return TableDetail(name="main.s.t", location="s3://b/t", table_id="id-1", format="delta",
                       min_reader_version=reader, min_writer_version=writer, table_features=features,
                       properties=properties, partition_columns=("p",), clustering_columns=(),
                       num_files=12, size_in_bytes=3456, created_at_ms=1_700_000_000_000,
                       last_modified_ms=1_700_000_100_000)


PROTECTED = CatalogTableReport(
    "main.s.t",
    _detail(("appendOnly", "checkpointProtection", "deletionVectors", "invariants"),
            {"delta.requireCheckpointProtectionBeforeVersion": "5"}, 1, 7),
    [HistoryEntry(6, 1_700_000_300_000, "WRITE", {"mode": "Append"}),
     HistoryEntry(5, 1_700_000_200_123, "DROP FEATURE", {"featureName": "deletionVectors", "truncateHistory": "false"}),
     HistoryEntry(2, None, "CREATE TABLE", {})])
DELETION_VECTORS = CatalogTableReport(
    "main.s.dv", _detail(("deletionVectors", "appendOnly", "invariants"), {}),
    [HistoryEntry(0, 1_700_000_000_000, "CREATE TABLE", {})])
LEGACY_NO_HISTORY = CatalogTableReport("main.s.old", _detail((), {}, 1, 2), [])
# checkpointProtection listed, its boundary property absent: on, with no boundary to name
PROTECTION_WITHOUT_BOUNDARY = CatalogTableReport(
    "main.s.nob", _detail(("appendOnly", "checkpointProtection"), {}, 1, 7),
    [HistoryEntry(3, 1_700_000_000_000, "DROP FEATURE", {"featureName": "v2Checkpoint"})])

REPORTS = [PROTECTED, DELETION_VECTORS, LEGACY_NO_HISTORY, PROTECTION_WITHOUT_BOUNDARY]


def test_catalog_inspect_text_is_exact():
    assert render_catalog_text(PROTECTED) == "\n".join([
        "table            main.s.t (through DESCRIBE DETAIL, DESCRIBE HISTORY)",
        "version          6 (history back to 2) at 2023-11-14T22:18:20.000Z",
        "protocol         reader 1, writer 7",
        "  writer features  appendOnly, checkpointProtection, deletionVectors, invariants",
        "checkpoint protection  on, boundary version 5",
        "droppable        checkpointProtection, deletionVectors",
        "files            12 live (3456 bytes)",
        "  v5 DROP FEATURE {'featureName': 'deletionVectors', 'truncateHistory': 'false'} at 2023-11-14T22:16:40Z",
        NOT_SHOWN])
    assert render_catalog_text(DELETION_VECTORS) == "\n".join([
        "table            main.s.dv (through DESCRIBE DETAIL, DESCRIBE HISTORY)",
        "version          0 (history back to 0) at 2023-11-14T22:13:20.000Z",
        "protocol         reader 3, writer 7",
        "  reader features  deletionVectors",
        "  writer features  appendOnly, deletionVectors, invariants",
        "checkpoint protection  off",
        "droppable        deletionVectors",
        "files            12 live (3456 bytes)",
        NOT_SHOWN])
    assert render_catalog_text(LEGACY_NO_HISTORY) == "\n".join([
        "table            main.s.old (through DESCRIBE DETAIL, DESCRIBE HISTORY)",
        "version          None (history back to None) at None",
        "protocol         reader 1, writer 2",
        "checkpoint protection  off",
        "droppable        (none)",
        "files            12 live (3456 bytes)",
        NOT_SHOWN])
    assert render_catalog_text(PROTECTION_WITHOUT_BOUNDARY).splitlines()[4] == "checkpoint protection  on"


def test_catalog_inspect_result_line_is_exact():
    assert format_result(catalog_inspect_result(PROTECTED)) == (
        'RESULT {"boundary_version":5,"droppable_features":["checkpointProtection","deletionVectors"],'
        '"latest_version":6,"min_reader_version":1,"min_writer_version":7,"reader_features":null,'
        '"status":"inspected","table":"main.s.t","version":6,'
        '"writer_features":["appendOnly","checkpointProtection","deletionVectors","invariants"]}')
    assert format_result(catalog_inspect_result(LEGACY_NO_HISTORY)) == (
        'RESULT {"boundary_version":null,"droppable_features":[],"latest_version":null,'
        '"min_reader_version":1,"min_writer_version":2,"reader_features":null,"status":"inspected",'
        '"table":"main.s.old","version":null,"writer_features":null}')


@pytest.mark.parametrize("report", REPORTS, ids=lambda r: r.table)
def test_catalog_inspect_text_and_result_say_what_the_document_says(report):
    doc = catalog_inspect_document(report)
    result = catalog_inspect_result(report)
    cp = doc["checkpoint_protection"]
    assert (result["version"], result["latest_version"]) == (doc["version"], doc["latest_version"])
    assert result["boundary_version"] == cp["boundary_version"]
    assert result["droppable_features"] == doc["droppable_features"]
    CatalogInspectResult.model_validate({**result, "exit_code": 0})

    text = render_catalog_text(report)
    assert f"version          {doc['version']} (history back to {doc['earliest_version']}) at {doc['timestamp']}" in text
    assert (f"checkpoint protection  {'on' if cp['feature_present'] else 'off'}"
            + (f", boundary version {cp['boundary_version']}" if cp["boundary_version"] is not None else "")) in text
    assert f"files            {doc['files']['live_files']} live ({doc['files']['live_bytes']} bytes)" in text
    drops = [line for line in text.splitlines() if " DROP FEATURE " in line]
    assert drops == [f"  v{c['version']} DROP FEATURE {c['operation_parameters']} at {c['timestamp']}"
                     for c in doc["drop_feature_commits"]]
