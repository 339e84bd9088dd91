"""``tables_from=catalog[.schema]``: the Delta tables of a Unity Catalog catalog or schema, as the
full names a fleet run takes, listed through databricks-sdk.

``WorkspaceClient().tables.list(catalog_name=…, schema_name=…)`` (REST ``GET
/api/2.1/unity-catalog/tables``, every page: the SDK follows ``next_page_token``); with only a
catalog, every schema of it through ``schemas.list`` (``GET /api/2.1/unity-catalog/schemas``)
first. Kept: ``data_source_format`` DELTA and a table type that is a table with its own Delta log
(managed, external, shallow clones) — no views, materialized views, streaming tables or foreign
tables, which DROP FEATURE cannot rewrite. Authentication is the SDK's own (``DATABRICKS_HOST`` /
``DATABRICKS_TOKEN``, a profile, the Databricks runtime's). databricks-sdk is the optional
``databricks`` extra: without it, one error line, exit 2.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from delta_downgrade.errors import (
    BadSettingsError, OptionalDependencyMissingError, UnityCatalogListingError, from_unity_catalog_error,
)

#: Table types with a Delta log of their own (the SDK's ``catalog.TableType`` values).
DELTA_TABLE_TYPES = frozenset({"MANAGED", "EXTERNAL", "MANAGED_SHALLOW_CLONE", "EXTERNAL_SHALLOW_CLONE"})
# A name part that Spark's parser reads as an identifier without quotes; anything else (a dash,
# a dot, a space, a leading digit, a reserved word) is backtick-quoted.
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Spark SQL's reserved keywords under ANSI mode (the Spark SQL reference, "ANSI Compliance",
# "SQL Keywords"): as a bare name part they do not parse, so they are quoted too.
_RESERVED = frozenset("""
all and any as authorization both case cast check collate column constraint create cross
current_date current_time current_timestamp current_user distinct else end escape except false
fetch filter for foreign from full grant group having in inner intersect into is join lateral
leading left natural not null of on only or order outer overlaps primary references right select
session_user some table then to trailing true union unique unknown user using when where with
""".split())


def quote_part(part: str) -> str:
    """One part of a catalog name as Spark SQL reads it: bare when it can be, else in backticks
    with every backtick doubled."""
    if _PLAIN.fullmatch(part) and part.lower() not in _RESERVED:
        return part
    return "`" + part.replace("`", "``") + "`"


def full_name(*parts: str) -> str:
    return ".".join(quote_part(p) for p in parts)


def parse_source(text: str) -> tuple[str, str | None]:
    """``catalog`` or ``catalog.schema``, each part bare or in backticks (a doubled backtick is
    one); anything else is :class:`BadSettingsError`."""
    parts: list[str] = []
    i, source = 0, text.strip()
    while True:
        if source.startswith("`", i):
            j, part = i + 1, []
            while True:
                k = source.find("`", j)
                if k < 0:
                    raise BadSettingsError(f"--tables_from={text!r}: a backtick-quoted part is not closed")
                if source.startswith("``", k):
                    part.append(source[j:k + 1])
                    j = k + 2
                    continue
                part.append(source[j:k])
                i = k + 1
                break
            parts.append("".join(part))
        else:
            k = source.find(".", i)
            k = len(source) if k < 0 else k
            parts.append(source[i:k].strip())
            i = k
        if i == len(source):
            break
        if source[i] != ".":
            raise BadSettingsError(f"--tables_from={text!r}: expected '.' after a quoted part")
        i += 1
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise BadSettingsError(f"--tables_from={text!r} must name a Unity Catalog catalog or schema: "
                               f"catalog or catalog.schema (parts may be `backticked`)")
    return parts[0], parts[1] if len(parts) == 2 else None


def _client() -> Any:
    try:
        from databricks.sdk import WorkspaceClient
    except ImportError:
        raise OptionalDependencyMissingError(
            "--tables_from needs databricks-sdk: pip install 'delta-downgrade[databricks]'") from None
    try:
        return WorkspaceClient()
    except ValueError as exc:  # the SDK's "cannot configure default credentials"
        raise UnityCatalogListingError(f"--tables_from: no Databricks workspace to ask: set DATABRICKS_HOST "
                                       f"and DATABRICKS_TOKEN, or a profile, or run on Databricks "
                                       f"({' '.join(str(exc).split())})") from None


def _delta_tables(infos: Iterable[Any]) -> list[tuple[str, str, str]]:
    found = []
    for info in infos:
        fmt = getattr(info.data_source_format, "value", info.data_source_format)
        kind = getattr(info.table_type, "value", info.table_type)
        if fmt == "DELTA" and kind in DELTA_TABLE_TYPES:
            found.append((info.catalog_name, info.schema_name, info.name))
    return found


def list_delta_tables(source: str, client: Any = None) -> list[str]:
    """The full names (``catalog.schema.table``, parts quoted where Spark needs it) of the Delta
    tables of ``source`` (``catalog`` or ``catalog.schema``), sorted. A REST error is a
    :class:`UnityCatalogListingError` carrying the API's error code."""
    catalog, schema = parse_source(source)
    client = client if client is not None else _client()
    from databricks.sdk.errors import DatabricksError  # _client checked the import
    try:
        schemas = [schema] if schema is not None else [
            s.name for s in client.schemas.list(catalog_name=catalog)
            if s.name != "information_schema"]  # the catalog's views about itself, never Delta tables
        found = []
        for name in schemas:
            found.extend(_delta_tables(client.tables.list(catalog_name=catalog, schema_name=name,
                                                          omit_columns=True, omit_properties=True)))
    except DatabricksError as exc:
        status = _status_of(exc)
        where = f"{catalog}.{schema}" if schema is not None else catalog
        raise from_unity_catalog_error(
            status, getattr(exc, "error_code", None),
            f"--tables_from={source}: Unity Catalog refused to list {where}: {exc}"
            + (" (the listing needs USE_CATALOG and USE_SCHEMA, and SELECT or ownership of each table)"
               if status == 403 else "")) from None
    return [full_name(*parts) for parts in sorted(set(found))]


def _status_of(exc: Exception) -> int | None:
    """The HTTP status of an SDK error, from the type the SDK mapped it to."""
    from databricks.sdk import errors

    for kind, status in ((errors.PermissionDenied, 403), (errors.NotFound, 404)):
        if isinstance(exc, kind):
            return status
    return None
