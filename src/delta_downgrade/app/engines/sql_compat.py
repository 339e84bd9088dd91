"""``compat`` for a catalog name: the protocol ``DESCRIBE DETAIL`` gives, and the latest version
``DESCRIBE HISTORY`` gives. What only the log tells is not there: the schema's field metadata
(clients that parse only scalar field metadata get ``unknown``) and which files a data rewrite
touches (each step's ``files`` / ``bytes`` are null), said in the report's notes."""

from __future__ import annotations

from typing import Sequence

from delta_downgrade.app.engines.catalog_answers import latest_version, read_detail
from delta_downgrade.app.engines.sql_session import SqlSession
from delta_downgrade.app.table_ref import TableRef
from delta_downgrade.compat.catalogue import Client
from delta_downgrade.operations.compat import TableCompat, compat_of_protocol

CATALOG_NOTES = (
    "described through DESCRIBE DETAIL (a catalog name): the schema's field metadata and the data "
    "files are not reachable, so a rewrite's file count is unknown and a client that parses only "
    "scalar field metadata gets 'unknown'; pass the table's path for the full report",
)


def catalog_compat(spark: SqlSession, ref: TableRef, clients: Sequence[Client]) -> TableCompat:
    detail = read_detail(spark, ref)
    return compat_of_protocol(ref.display, latest_version(spark, ref), detail.protocol, None, clients,
                              lambda _feature: None, CATALOG_NOTES)
