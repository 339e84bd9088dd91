"""Engines: ``native`` (this package writes the log) and ``delta-sql`` (ALTER TABLE … DROP FEATURE
through a Spark session with Delta). Both return a :class:`DropOutcome` and log their steps on
the ``delta_downgrade.drop`` logger.

``storage_options`` (credentials and endpoint of the table's store, deltalake's keys) reach the
native engine's storage layer; the delta-sql engine's Spark session has its own (its Hadoop
configuration), and the options serve only its reading the outcome back."""

from __future__ import annotations

from typing import Any, Mapping, Protocol


class Engine(Protocol):
    name: str

    def drop_feature(self, table: str, feature: str, *, truncate_history: bool, dry_run: bool,
                     storage_options: Mapping[str, str] | None = None) -> Any: ...


class NativeEngine:
    name = "native"

    def drop_feature(self, table: str, feature: str, *, truncate_history: bool = False,
                     dry_run: bool = False, clock: Any = None,
                     storage_options: Mapping[str, str] | None = None) -> Any:
        from delta_downgrade.clock import SYSTEM_CLOCK
        from delta_downgrade.operations.drop_feature import drop_feature

        return drop_feature(table, feature, truncate_history=truncate_history, dry_run=dry_run,
                            clock=clock or SYSTEM_CLOCK, storage_options=storage_options or None)


def select_engine(name: str, table: str) -> Engine:
    if name in ("native", "auto"):
        # auto: delta-sql only for catalog tables on a session with the Delta SQL extension;
        # path-based tables always go native.
        if name == "auto" and not _looks_like_path(table):
            from delta_downgrade.app.engines.delta_sql import DeltaSqlEngine, delta_sql_available
            if delta_sql_available():
                return DeltaSqlEngine()
        return NativeEngine()
    from delta_downgrade.app.engines.delta_sql import DeltaSqlEngine

    return DeltaSqlEngine()


def _looks_like_path(table: str) -> bool:
    from delta_downgrade.app.engines.delta_sql import is_path

    return is_path(table)
