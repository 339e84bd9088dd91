"""The exact bytes of every compat output - the text (summary, ``--details``, ``--client``),
the RESULT fields, the ``--json`` documents, ``--versions``, ``--list-clients`` and the report's
HTML page - for golden tables, a fleet with a table that cannot be loaded, and a catalog name.

They are contracts: a refactoring of the renderers must leave every byte as it is. The expected
outputs are files under ``compat_outputs/`` (the table directory written as ``TABLES``). A
deliberate change of an output regenerates them with ``DELTA_DOWNGRADE_REWRITE_PINNED=1`` and the
diff shows what changed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from delta_downgrade.app.compat_report import fleet_document_of, with_timelines
from delta_downgrade.app.engines.sql_compat import CATALOG_NOTES
from delta_downgrade.app.render.compat import (
    compat_result,
    fleet_summary,
    render_client_list,
    render_fleet_text,
    render_text,
    render_versions,
)
from delta_downgrade.app.render.compat_html import render_compat_html
from delta_downgrade.compat.catalogue import packaged_catalogue
from delta_downgrade.operations.compat import (
    catalogue_entry_json,
    client_json,
    compat_of_protocol,
    fleet_compat,
    resolve_clients,
    table_compat,
)
from delta_downgrade.operations.protocol_timeline import protocol_timeline
from delta_downgrade.operations.version_access import client_versions, versions_json
from delta_downgrade.protocol.protocol import Protocol

PINNED = Path(__file__).parent / "compat_outputs"
REWRITE = os.environ.get("DELTA_DOWNGRADE_REWRITE_PINNED") == "1"

#: Tables with a plan that rewrites data (deletion vectors, column mapping, type widening), one
#: with dependents, one every client reads, one whose reader features are unknown.
TABLES = ["dv_basic_no_checkpoint", "cm_name_renamed_column", "type_widening_preview",
          "v2_checkpoint_dbr_identity", "row_tracking_dv", "legacy_1_1_delta_0_1_0",
          "vacuum_protocol_check", "timestamp_ntz"]
#: ``--client``: a family, an alias, a product with a version.
SELECTED = ["duckdb", "deltalake==0.18.2", "trino 447"]


def _same(name: str, actual: str, tables_dir: str, *, digest: bool = False) -> None:
    """``actual`` is the pinned file ``name``; ``digest``: a large output pinned by its SHA-256
    and length (the selection's full outputs show a change; this proves nothing else moved)."""
    text = actual.replace(tables_dir, "TABLES")
    if digest:
        data = text.encode("utf-8")
        text = f"sha256 {hashlib.sha256(data).hexdigest()} bytes {len(data)}\n"
    path = PINNED / name
    if REWRITE:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its pinned bytes"


def _json(document: object) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("name", TABLES)
def test_one_table_outputs_are_pinned(golden_table, name):
    path = golden_table(name)
    tables_dir = str(Path(path).parent)
    catalogue = packaged_catalogue()
    report = table_compat(path, catalogue)
    _same(f"{name}.txt", render_text(report) + "\n--details\n" + render_text(report, details=True) + "\n",
          tables_dir)
    _same(f"{name}.json.sha256", _json({"result": compat_result(report), "document": report.to_json()}),
          tables_dir, digest=True)
    selected = table_compat(path, catalogue, resolve_clients(catalogue, SELECTED))
    _same(f"{name}.client.txt", render_text(selected, detail=True) + "\n", tables_dir)
    _same(f"{name}.client.json", _json({"result": compat_result(selected), "document": selected.to_json()}),
          tables_dir)


def test_versions_outputs_are_pinned(golden_table):
    path = golden_table("vacuum_protocol_check")
    tables_dir = str(Path(path).parent)
    catalogue = packaged_catalogue()
    timeline = protocol_timeline(path)
    versions = versions_json(timeline, client_versions(timeline, catalogue.clients))
    _same("versions.txt", render_versions(versions) + "\n", tables_dir)
    _same("versions.json", _json(versions), tables_dir)


def test_client_list_outputs_are_pinned():
    entries = [catalogue_entry_json(c) for c in packaged_catalogue().clients]
    _same("client_list.txt", render_client_list(entries) + "\n", "\0")
    _same("client_list.json.sha256", _json({"clients": entries}), "\0", digest=True)


def test_catalog_name_outputs_are_pinned():
    """A catalog name: the protocol through SQL, no schema, no files (footprints unknown)."""
    protocol = Protocol.from_action({"minReaderVersion": 3, "minWriterVersion": 7,
                                     "readerFeatures": ["deletionVectors", "columnMapping"],
                                     "writerFeatures": ["deletionVectors", "columnMapping", "appendOnly",
                                                        "typeWidening-preview"]})
    catalogue = packaged_catalogue()
    report = compat_of_protocol("main.s.t", 12, protocol, None, catalogue.clients,
                                lambda _feature: None, CATALOG_NOTES)
    selected = compat_of_protocol("main.s.t", 12, protocol, None, resolve_clients(catalogue, SELECTED),
                                  lambda _feature: None, CATALOG_NOTES)
    _same("catalog_name.txt", render_text(report, details=True) + "\n"
          + render_text(selected, detail=True) + "\n", "\0")
    _same("catalog_name.json.sha256", _json({"result": compat_result(report), "document": report.to_json()}),
          "\0", digest=True)
    _same("catalog_name.client.json", _json({"result": compat_result(selected), "document": selected.to_json()}),
          "\0")


def test_fleet_outputs_are_pinned(golden_table):
    paths = [golden_table(n) for n in ("dv_basic_no_checkpoint", "cm_name_renamed_column",
                                       "legacy_1_1_delta_0_1_0", "v2_checkpoint_dbr_identity")]
    tables_dir = str(Path(paths[0]).parent)
    paths.append(f"{tables_dir}/missing")
    catalogue = packaged_catalogue()
    fleet = fleet_compat(paths, catalogue)
    _same("fleet.txt", render_fleet_text(fleet) + "\n--details\n" + render_fleet_text(fleet, details=True) + "\n",
          tables_dir)
    selected = fleet_compat(paths, catalogue, resolve_clients(catalogue, SELECTED))
    _same("fleet.client.txt", render_fleet_text(selected, detail=True) + "\n", tables_dir)
    _same("fleet.json.sha256", _json({"summary": fleet_summary(fleet), "document": fleet.to_json()}), tables_dir,
          digest=True)
    _same("fleet.client.json", _json({"summary": fleet_summary(selected), "document": selected.to_json()}),
          tables_dir)
    report = with_timelines(fleet.to_json())
    _same("fleet.html", render_compat_html(report), tables_dir)


def test_one_table_report_html_is_pinned(golden_table):
    """``compat TABLE --report DIR``: the fleet document of one table, with a client selection."""
    path = golden_table("dv_cm_name_checkpoint")
    tables_dir = str(Path(path).parent)
    catalogue = packaged_catalogue()
    clients = resolve_clients(catalogue, SELECTED)
    report = table_compat(path, catalogue, clients)
    document = with_timelines(fleet_document_of(report.to_json(), [client_json(c) for c in clients]))
    _same("one_table.html", render_compat_html(document), tables_dir)
