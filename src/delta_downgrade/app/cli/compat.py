"""``delta-downgrade compat TABLE [--client NAME]... [--details] [--versions] [--json]``,
``compat --tables-file F`` and ``compat --list-clients``.

For every client of the packaged catalogue (or those ``--client`` names: an id, an alias, a
family, or a product and version such as ``deltalake==0.18.2``), whether it can read / write the
table's latest version, what blocks it and the plan that unblocks it
(:mod:`delta_downgrade.operations.compat`); from the log alone, no data file read. The text is a
summary first (``--details``: a line per client); ``--versions`` adds time travel per client
(:mod:`delta_downgrade.operations.version_access`). TABLE is a path/URI, ``delta.`path```, or a catalog name (protocol through ``DESCRIBE
DETAIL`` on a session with Delta, :mod:`delta_downgrade.app.engines.sql_compat`).

A blocked client is a finding, not a failure: exit 0, RESULT status ``blocked`` (else
``compatible``). A fleet (``--tables-file``, one table per line) prints a RESULT per table, an
error RESULT per table that could not be loaded, and a summary; its exit code is the worst of the
tables'. With ``--json``: one document (the table's, or the fleet's) with the RESULT fields.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Callable

from delta_downgrade.app.cli.storage_option import add_storage_option_argument

if TYPE_CHECKING:
    from delta_downgrade.compat.catalogue import Client
    from delta_downgrade.operations.compat import FleetCompatJson, TableCompat
    from delta_downgrade.operations.version_access import VersionsJson

Command = Callable[[argparse.Namespace], int]


def register(sub: argparse._SubParsersAction, commands: dict[str, Command]) -> None:
    p = sub.add_parser("compat", help="which clients can read / write a table, what blocks them, and the "
                                      "drops that would unblock them")
    p.add_argument("table", nargs="?", default=None,
                   help="table path/URI, delta.`path`, or catalog name (catalog.schema.table)")
    p.add_argument("--tables-file", dest="tables_file", default=None, metavar="FILE",
                   help="a fleet: one table per line (# starts a comment line); one summary")
    p.add_argument("--client", dest="clients", action="append", default=None, metavar="NAME",
                   help="only this client (an id, an alias, a family such as duckdb, or a product and "
                        "version such as deltalake==0.18.2 or 'trino 447'), with the full detail and "
                        "sources; repeatable")
    p.add_argument("--list-clients", dest="list_clients", action="store_true",
                   help="list every catalogue entry (id, aliases, product and release range, read path, "
                        "sources) and exit; no table needed. --client / --for take an id, an alias, a "
                        "family, or a product with a version: deltalake==0.18.2, 'trino 447', 'dbr 15.4'")
    p.add_argument("--details", action="store_true",
                   help="after each table's summary, one line per client (verdicts, blockers, plan)")
    p.add_argument("--versions", action="store_true",
                   help="time travel per client: which retained versions each client can read (the "
                        "protocol in force at each version, from the log's protocol history)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document (README 'compat') with the RESULT fields")
    p.add_argument("--report", dest="report", default=None, metavar="DIR",
                   help="also write DIR/compat.json (the fleet document, each table with its protocol "
                        "and checkpoint timeline) and DIR/compat.html (a page to open in a browser: "
                        "which tables block which clients); their paths are printed")
    add_storage_option_argument(p)
    commands["compat"] = _run


def _run(args: argparse.Namespace) -> int:
    from delta_downgrade.compat.catalogue import packaged_catalogue
    from delta_downgrade.errors import BadInputError
    from delta_downgrade.operations.compat import resolve_clients

    if args.list_clients:
        return _list_clients(args)
    if (args.table is None) == (args.tables_file is None):
        raise BadInputError("give either TABLE or --tables-file FILE (one of them)", table=args.table)
    catalogue = packaged_catalogue()
    clients = resolve_clients(catalogue, args.clients)
    if args.versions:
        _check_versions_target(args)
    if args.report is not None:
        from delta_downgrade.app.compat_report import prepare_report_directory

        prepare_report_directory(args.report)  # exit 2 before any table is looked at
    if args.tables_file is not None:
        return _run_fleet(args, catalogue, clients)
    from delta_downgrade.app.cli.lean_imports import pyarrow_without_numpy
    from delta_downgrade.app.cli.output import finish
    from delta_downgrade.app.render.compat import compat_result, render_text
    from delta_downgrade.app.table_ref import parse_table_ref

    if not parse_table_ref(args.table).is_name:  # a path: every use of pyarrow is ours (lean_imports)
        pyarrow_without_numpy()
    report = _compat_of(args, clients)(args.table)
    result = compat_result(report)
    versions = _versions(args, clients) if args.versions else None
    if args.report is not None:
        from delta_downgrade.app.compat_report import fleet_document_of
        from delta_downgrade.operations.compat import client_json

        result["compat_report"] = _write_report(
            args, fleet_document_of(report.to_json(), [client_json(c) for c in clients]))
    document = report.to_json() if args.json else None
    text = None if args.json else render_text(report, detail=bool(args.clients), details=args.details)
    if versions is not None:
        from delta_downgrade.app.render.compat import render_versions

        if document is not None:
            document["versions"] = versions
        else:
            text = f"{text}\n{render_versions(versions)}"
    return finish(args, result, document=document, text=text, text_on_stdout=True)


def _check_versions_target(args: argparse.Namespace) -> None:
    """``--versions`` needs one table's log: refused (exit 2) before anything is read otherwise."""
    from delta_downgrade.app.table_ref import parse_table_ref
    from delta_downgrade.errors import BadInputError

    if args.table is None:
        raise BadInputError("--versions takes one TABLE (not --tables-file): the compat report "
                            "(--report) marks each table's readable versions on its timeline")
    ref = parse_table_ref(args.table)
    if ref.is_name:
        raise BadInputError(f"--versions reads the table's protocol history from its log; {ref.display} is a "
                            "catalog name: pass the table's storage path", table=ref.display)


def _versions(args: argparse.Namespace, clients: tuple[Client, ...]) -> VersionsJson:
    """``--versions``: each client's readable retained versions (a path's log; a catalog name is
    refused: its history is not read through SQL)."""
    from delta_downgrade.app.table_ref import parse_table_ref
    from delta_downgrade.operations.protocol_timeline import protocol_timeline
    from delta_downgrade.operations.version_access import client_versions, versions_json

    ref = parse_table_ref(args.table)
    timeline = protocol_timeline(ref.path or args.table, storage_options=args.storage_options)
    return versions_json(timeline, client_versions(timeline, clients))


def _compat_of(args: argparse.Namespace, clients: tuple[Client, ...]) -> Callable[[str], TableCompat]:
    """One table's report: the log through the storage layer for a path/URI, DESCRIBE DETAIL for
    a catalog name."""
    from delta_downgrade.app.table_ref import parse_table_ref

    def compat_of(table: str) -> TableCompat:
        ref = parse_table_ref(table)
        if ref.is_name:
            from delta_downgrade.app.engines.sql_compat import catalog_compat
            from delta_downgrade.app.engines.sql_session import delta_sql_session

            return catalog_compat(delta_sql_session(ref), ref, clients)
        from delta_downgrade.compat.catalogue import packaged_catalogue
        from delta_downgrade.operations.compat import table_compat

        return table_compat(ref.path or table, packaged_catalogue(), clients,
                            storage_options=args.storage_options)

    return compat_of


def _run_fleet(args: argparse.Namespace, catalogue, clients) -> int:
    import sys

    from delta_downgrade.app.cli.output import finish
    from delta_downgrade.app.render.compat import compat_result, fleet_summary, render_fleet_text
    from delta_downgrade.app.render.result import emit_result
    from delta_downgrade.app.tasks.settings import read_tables_file
    from delta_downgrade.errors import EXIT_OK, BadInputError
    from delta_downgrade.operations.compat import fleet_compat

    tables = read_tables_file(args.tables_file)
    if not tables:
        raise BadInputError(f"the tables file {args.tables_file} names no table")
    fleet = fleet_compat(tables, catalogue, clients, compat_of=_compat_of(args, clients))
    code = EXIT_OK
    if fleet.errors:
        from delta_downgrade.app.tasks.framework import worst

        code = worst([e.exit_code for e in fleet.errors])
    if not args.json:
        print(render_fleet_text(fleet, detail=bool(args.clients), details=args.details), file=sys.stdout)
        for table in fleet.tables:
            emit_result({"command": args.command, **compat_result(table), "exit_code": EXIT_OK},
                        secrets=args.secrets)
        for error in fleet.errors:
            emit_result({"command": args.command, "status": "error", **error.to_json(),
                         "exit_code": error.exit_code}, secrets=args.secrets)
    summary = fleet_summary(fleet)
    if args.report is not None:
        summary["compat_report"] = _write_report(args, fleet.to_json())
    return finish(args, summary, document=fleet.to_json() if args.json else None, code=code)


def _write_report(args: argparse.Namespace, document: FleetCompatJson) -> dict[str, str]:
    """``--report DIR``: compat.json and compat.html; their paths (on stderr for the person, and
    in the RESULT / --json document under ``compat_report``)."""
    import sys

    from delta_downgrade.app.compat_report import write_compat_report
    from delta_downgrade.app.storage_options import redact_output

    paths = write_compat_report(document, args.report, storage_options=args.storage_options)
    print(redact_output(f"compat report: {paths.html}\ncompat report data: {paths.json}",
                        args.secrets), file=sys.stderr)
    return {"json": paths.json, "html": paths.html}


def _list_clients(args: argparse.Namespace) -> int:
    """``compat --list-clients``: the catalogue itself, no table read."""
    from delta_downgrade.app.cli.output import finish
    from delta_downgrade.app.render.compat import render_client_list
    from delta_downgrade.compat.catalogue import packaged_catalogue
    from delta_downgrade.errors import BadInputError
    from delta_downgrade.operations.compat import catalogue_entry_json

    if args.table is not None or args.tables_file is not None or args.report is not None:
        raise BadInputError("--list-clients lists the catalogue; it takes no TABLE, --tables-file or --report")
    entries = [catalogue_entry_json(c) for c in packaged_catalogue().clients]
    return finish(args, {"status": "listed", "entries": len(entries)},
                  document={"clients": entries} if args.json else None,
                  text=None if args.json else render_client_list(entries), text_on_stdout=True)
