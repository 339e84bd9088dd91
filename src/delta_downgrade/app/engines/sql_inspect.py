"""``inspect`` for a catalog name: what ``DESCRIBE DETAIL`` and ``DESCRIBE HISTORY`` give.

A catalog table is described without its storage location (Unity Catalog forbids path access to
managed tables), so the report holds the protocol, features, properties, boundary, file counts
and commits; what only the log's files tell (checkpoints, file-level traces, tombstones, the
protocol of each version) is named in ``unavailable`` by
:func:`delta_downgrade.app.render.catalog_inspect.catalog_inspect_document`.
"""

from __future__ import annotations


from msgspec import Struct
from delta_downgrade.app.engines.catalog_answers import HistoryEntry, TableDetail, read_detail, read_history
from delta_downgrade.app.engines.sql_session import SqlSession
from delta_downgrade.app.table_ref import TableRef
from delta_downgrade.operations.inspect import FeatureReport
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.features import get_feature


class CatalogTableReport(Struct, frozen=True):
    table: str
    detail: TableDetail
    history: list[HistoryEntry]          # newest first, as much as the runtime retains

    @property
    def protocol(self) -> Protocol:
        return self.detail.protocol

    @property
    def features(self) -> list[FeatureReport]:
        protocol = self.protocol
        names = sorted(set(self.detail.table_features) | set(protocol.features))
        out = []
        for name in names:
            spec = get_feature(name)
            out.append(FeatureReport(
                name=name, known=spec is not None, kind=spec.kind.value if spec else None,
                implicit=name in protocol.implicit_features, removable=bool(spec and spec.removable),
                requires_history_protection=bool(spec and spec.requires_history_protection)))
        return out


def inspect_catalog_table(spark: SqlSession, ref: TableRef) -> CatalogTableReport:
    return CatalogTableReport(ref.display, read_detail(spark, ref), read_history(spark, ref))
