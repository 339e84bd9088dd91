"""Engines: ``native`` (this package writes the log of a table given by its path) and ``delta-sql``
(ALTER TABLE … DROP FEATURE through a Spark session with Delta: the only way to a catalog name).
Both return a :class:`DropOutcome` and log their steps on the ``delta_downgrade.drop`` logger.

``storage_options`` (credentials and endpoint of the table's store, deltalake's keys) reach the
native engine's storage layer; the delta-sql engine's Spark session has its own (its Hadoop
configuration), and the options serve only its reading the outcome back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Protocol

if TYPE_CHECKING:
    from delta_downgrade.app.table_ref import TableRef
    from delta_downgrade.clock import Clock
    from delta_downgrade.drop.run import DropOutcome
    from delta_downgrade.operations.drop_for_client import ClientDropOutcome


class Engine(Protocol):
    name: str

    def drop_feature(self, table: TableRef | str, feature: str, *, truncate_history: bool, dry_run: bool,
                     storage_options: Mapping[str, str] | None = None) -> DropOutcome: ...


class NativeEngine:
    name = "native"

    def drop_feature(self, table: TableRef | str, feature: str, *, truncate_history: bool = False,
                     dry_run: bool = False, clock: Clock | None = None,
                     storage_options: Mapping[str, str] | None = None) -> DropOutcome:
        from delta_downgrade.clock import SYSTEM_CLOCK
        from delta_downgrade.drop.committer import PlanRecorder
        from delta_downgrade.operations.drop_feature import drop_feature

        path = native_path(table)
        # --dry-run: the steps go to a plan, nothing is written
        return drop_feature(path, feature, truncate_history=truncate_history,
                            committer=PlanRecorder() if dry_run else None,
                            clock=clock or SYSTEM_CLOCK, storage_options=storage_options or None)


def native_path(table: TableRef | str) -> str:
    """The storage path the native engine works on: a path, or the path of ``delta.`path```; a
    catalog name is :class:`CatalogNameNeedsSqlError` (exit 2): the native engine reaches a
    table only through its storage, a catalog table only SQL reaches."""
    from delta_downgrade.app.table_ref import as_table_ref
    from delta_downgrade.errors import CatalogNameNeedsSqlError

    ref = as_table_ref(table)
    if ref.path is None:
        raise CatalogNameNeedsSqlError(
            f"--engine=native works on a table's storage path, and {ref.display} is a catalog "
            f"name, reached only through Delta's SQL on the session: use --engine=delta-sql (or "
            f"auto) on Databricks, or pass the table's path to use native", table=ref.display)
    return ref.path


def select_engine(name: str, table: TableRef | str) -> Engine:
    """The engine for ``table``: ``auto`` is delta-sql for a catalog name (only SQL reaches it)
    and native for a path; ``native`` refuses a catalog name (exit 2, before anything runs);
    ``delta-sql`` is delta-sql for both (it says in one line when the session has no Delta)."""
    from delta_downgrade.app.table_ref import as_table_ref

    ref = as_table_ref(table)  # a malformed name is exit 2 here, whatever the engine
    if name == "native" or (name == "auto" and not ref.is_name):
        if name == "native":
            native_path(ref)
        return NativeEngine()
    from delta_downgrade.app.engines.delta_sql import DeltaSqlEngine

    return DeltaSqlEngine()


def drop_for_client(engine: str, table: TableRef | str, client: str, *, dry_run: bool = False,
                    storage_options: Mapping[str, str] | None = None, clock: Clock | None = None) -> ClientDropOutcome:
    """``drop-feature TABLE --for CLIENT``: the catalogue entry named ``client`` (an id or an
    alias; UnknownClientError, exit 2) and the drops that unblock it, on the native engine.

    A catalog name is refused (exit 2, before anything runs): the plan needs the table's schema
    and each drop's plan from its log, which the delta-sql engine does not read; its features can
    be dropped one by one with ``drop-feature NAME FEATURE`` as ``compat`` lists them."""
    from delta_downgrade.app.table_ref import as_table_ref
    from delta_downgrade.clock import SYSTEM_CLOCK
    from delta_downgrade.compat import packaged_catalogue
    from delta_downgrade.errors import BadInputError, CatalogNameNeedsSqlError
    from delta_downgrade.drop.committer import PlanRecorder
    from delta_downgrade.operations.drop_for_client import drop_for_client as run

    entry = packaged_catalogue().client(client)
    ref = as_table_ref(table)
    if ref.path is None:
        raise CatalogNameNeedsSqlError(
            f"--for {client} works on a table's storage path; {ref.display} is a catalog name. Run "
            f"`delta-downgrade compat {ref.display} --client {client}` for the features to drop, then "
            f"`drop-feature {ref.display} FEATURE` for each, in that order", table=ref.display)
    if engine == "delta-sql":
        raise BadInputError(
            f"--for {client} runs on the native engine only (it plans every drop from the table's "
            f"log); use --engine=auto or native with the table's path", table=ref.display)
    return run(ref.path, entry, committer=PlanRecorder() if dry_run else None, clock=clock or SYSTEM_CLOCK,
               storage_options=storage_options or None)
