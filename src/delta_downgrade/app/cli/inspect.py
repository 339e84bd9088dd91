"""``delta-downgrade inspect TABLE [--version N] [--json] [--no-history]``.

TABLE is a path/URI, ``delta.`path``` (read as the path), or a catalog name
(``catalog.schema.table``), described through ``DESCRIBE DETAIL`` / ``DESCRIBE HISTORY`` on a
session with Delta (:mod:`delta_downgrade.app.engines.sql_inspect`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Callable

from delta_downgrade.app.cli.storage_option import add_storage_option_argument

if TYPE_CHECKING:
    from delta_downgrade.app.table_ref import TableRef

Command = Callable[[argparse.Namespace], int]


def register(sub: argparse._SubParsersAction, commands: dict[str, Command]) -> None:
    p = sub.add_parser("inspect", help="show a table's protocol, features, checkpoints and boundary")
    p.add_argument("table", help="table path/URI, delta.`path`, or catalog name (catalog.schema.table)")
    p.add_argument("--version", dest="version", type=int, default=None, help="version to inspect (latest)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document (the stable inspect document with the RESULT fields)")
    p.add_argument("--no-history", action="store_true", help="skip the protocol history (faster)")
    add_storage_option_argument(p)
    commands["inspect"] = _run


def _run(args: argparse.Namespace) -> int:
    from delta_downgrade.app.cli.output import finish
    from delta_downgrade.app.table_ref import parse_table_ref

    ref = parse_table_ref(args.table)
    if ref.is_name:
        return _run_catalog(args, ref)
    # a path is inspected from its log alone, never with Spark: pyarrow without numpy
    from delta_downgrade.app.cli.lean_imports import pyarrow_without_numpy

    pyarrow_without_numpy()
    from delta_downgrade.app.render.inspect import inspect_document, render_text
    from delta_downgrade.app.render.result import inspect_result
    from delta_downgrade.operations.inspect import inspect_table

    report = inspect_table(ref.path or args.table, args.version, history=not args.no_history,
                           storage_options=args.storage_options)
    return finish(args, inspect_result(report), document=inspect_document(report) if args.json else None,
                  text=None if args.json else render_text(report), text_on_stdout=True)


def _run_catalog(args: argparse.Namespace, ref: TableRef) -> int:
    from delta_downgrade.app.cli.output import finish
    from delta_downgrade.app.engines.sql_inspect import inspect_catalog_table
    from delta_downgrade.app.engines.sql_session import delta_sql_session
    from delta_downgrade.app.render.catalog_inspect import catalog_inspect_document, render_catalog_text
    from delta_downgrade.app.render.result import catalog_inspect_result
    from delta_downgrade.errors import BadInputError

    if args.version is not None:
        raise BadInputError("--version needs the table's path: DESCRIBE DETAIL of a catalog name "
                            "describes its latest version only", table=args.table)
    report = inspect_catalog_table(delta_sql_session(ref), ref)
    return finish(args, catalog_inspect_result(report),
                  document=catalog_inspect_document(report) if args.json else None,
                  text=None if args.json else render_catalog_text(report), text_on_stdout=True)
