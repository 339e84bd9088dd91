"""The compat report of a fleet: ``DIR/compat.json`` and ``DIR/compat.html``.

``compat --tables-file F --report DIR`` and ``verify_task --compat_report=DIR`` (fleet mode) both
write it. ``compat.json`` is the fleet document of ``compat --json`` (README "compat") with each
table's protocol / checkpoint timeline under ``"timeline"``
(:func:`~delta_downgrade.operations.protocol_timeline.protocol_timeline`, from the log only);
``compat.html`` is that document drawn (:func:`~delta_downgrade.app.render.compat_html.render_compat_html`).

A table whose timeline cannot be drawn (a gap in its history, a catalog name reached only through
SQL) keeps its verdicts: ``"timeline"`` is then ``{"error_class", "message"}`` or null. Both files
are written whole to a temporary name and renamed, so a reader never sees half a report.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, cast

from msgspec import Struct
from delta_downgrade.errors import DeltaDowngradeError, ReportDirectoryError

if TYPE_CHECKING:
    from delta_downgrade.app.render.compat_html import CompatReportJson, ReportTableJson
    from delta_downgrade.compat.catalogue import Client
    from delta_downgrade.operations.compat import ClientJson, FleetCompatJson, TableCompatJson

__all__ = ["CompatReportPaths", "JSON_NAME", "HTML_NAME", "fleet_document_of", "prepare_report_directory",
           "with_timelines", "write_compat_report"]

JSON_NAME = "compat.json"
HTML_NAME = "compat.html"
#: Both files: readable by colleagues the report is shared with.
REPORT_FILE_MODE = 0o644


class CompatReportPaths(Struct, frozen=True):
    json: str
    html: str


def with_timelines(document: FleetCompatJson | CompatReportJson, *,
                   storage_options: Mapping[str, str] | None = None) -> CompatReportJson:
    """``document`` (a fleet document) with ``"timeline"`` added to each table that has none
    (a table that has one keeps it)."""
    from delta_downgrade.app.render.protocol_timeline import timeline_json
    from delta_downgrade.app.table_ref import parse_table_ref
    from delta_downgrade.operations.protocol_timeline import protocol_timeline

    clients = _catalogue_clients(document)
    tables: list[ReportTableJson] = []
    for table in document["tables"]:
        if "timeline" in table:  # already a table of a report: its timeline stays
            tables.append(cast("ReportTableJson", dict(table)))
            continue
        entry: ReportTableJson = {**table, "timeline": None}
        ref = parse_table_ref(table["table"])
        if not ref.is_name:  # a catalog name is reached through Delta SQL: its log is not read
            try:
                entry["timeline"] = timeline_json(
                    protocol_timeline(ref.path or table["table"], storage_options=storage_options), clients)
            except DeltaDowngradeError as exc:
                entry["timeline"] = {"error_class": exc.error_class, "message": str(exc)}
            except OSError as exc:  # the log could be listed for the verdicts, not read now
                entry["timeline"] = {"error_class": type(exc).__name__, "message": str(exc)}
        tables.append(entry)
    return {"tables": tables, "errors": document["errors"], "clients": document["clients"]}


def _catalogue_clients(document: FleetCompatJson | CompatReportJson) -> list[Client]:
    """The catalogue entries of the document's clients (the packaged catalogue's ids)."""
    from delta_downgrade.compat.catalogue import packaged_catalogue

    catalogue = packaged_catalogue()
    by_id = {c.id: c for c in catalogue.clients}
    return [by_id[c["client"]] for c in document["clients"] if c["client"] in by_id]


def prepare_report_directory(directory: str) -> Path:
    """``directory``, created when missing; one that cannot be created or written is
    :class:`ReportDirectoryError` (exit 2). Commands call it before looking at any table."""
    target = Path(directory)
    try:
        target.mkdir(parents=True, exist_ok=True)
        if not os.access(target, os.W_OK):
            raise PermissionError(f"{target} is not writable")
    except OSError as exc:
        raise ReportDirectoryError(
            f"cannot write the compat report into {directory}: {exc}. Pass --report (compat_report) a "
            f"directory this user can create or write", params={"directory": str(directory)}) from exc
    return target


def fleet_document_of(table_document: TableCompatJson, clients: list[ClientJson]) -> FleetCompatJson:
    """The fleet document of one table's compat document (a report of one table)."""
    return {"tables": [table_document], "errors": [], "clients": clients}


def write_compat_report(document: FleetCompatJson | CompatReportJson, directory: str, *,
                        storage_options: Mapping[str, str] | None = None) -> CompatReportPaths:
    """Write ``directory``/compat.json and compat.html for the fleet ``document`` (timelines added
    where missing); the two paths. ``directory`` is created when missing; one that cannot be
    written is :class:`ReportDirectoryError` (exit 2), raised before either file is written."""
    from delta_downgrade.app.render.compat_html import render_compat_html

    target = prepare_report_directory(directory)
    full = with_timelines(document, storage_options=storage_options)
    json_path, html_path = target / JSON_NAME, target / HTML_NAME
    _replace(json_path, json.dumps(full, indent=2, sort_keys=False) + "\n")
    _replace(html_path, render_compat_html(full))
    return CompatReportPaths(str(json_path.resolve()), str(html_path.resolve()))


def _replace(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        # mkstemp makes the file 0600; a report is for colleagues to open: 0644, as a plain
        # file written through open() would be under the usual umask.
        os.chmod(tmp, REPORT_FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
