"""Clustered tables (PROTOCOL.md "Clustered Table"): which columns a table is clustered by, as
its clustering domain records them, and that domain after column-mapping removal. Pure: no I/O.

The writer requirements this package has to honour when it writes a clustered table:

- the clustering columns live in a ``domainMetadata`` action of domain ``delta.clustering``
  (``{"clusteringColumns": [...]}``), as *physical* names when column mapping is on;
- every ``add`` carries per-column statistics for the clustering columns;
- ``clusteringProvider`` names the clustering implementation of clustered files (a file whose
  provider is unset is unclustered).

Two spellings of the domain exist:

- ``delta.clustering`` (the ``clustering`` feature): delta-spark and the kernels write every
  column as the list of its physical name parts (``[["a"], ["s", "b"]]``,
  ``ClusteringMetadataDomain``); PROTOCOL.md's example writes a flat name per column
  (``["col-…"]``). Both are read, and a rewrite keeps each column's shape.
- ``delta.liquid`` (``liquid``, the preview name Databricks Runtime 13.x wrote before the
  feature was named ``clustering``): ``{"clusteringColumns": [{"physicalName": ["id"]}],
  "domainName": "delta.liquid"}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from delta_downgrade.protocol.actions import DomainMetadata
from delta_downgrade.protocol.schema import COLUMN_MAPPING_PHYSICAL_NAME_KEY

__all__ = [
    "CLUSTERING_DOMAIN",
    "CLUSTERING_DOMAINS",
    "CLUSTERING_FEATURES",
    "LIQUID_DOMAIN",
    "clustering_columns",
    "domain_clustering_columns",
    "domains_with_logical_names",
]

CLUSTERING_DOMAIN = "delta.clustering"
LIQUID_DOMAIN = "delta.liquid"
#: The domains that record clustering columns, by feature name.
CLUSTERING_DOMAINS: Mapping[str, str] = {"clustering": CLUSTERING_DOMAIN, "liquid": LIQUID_DOMAIN}
CLUSTERING_FEATURES = frozenset(CLUSTERING_DOMAINS)

ColumnPath = tuple[str, ...]


def _column_parts(entry: object) -> ColumnPath | None:
    """One entry of ``clusteringColumns`` as its name parts; None for a shape this is not."""
    if isinstance(entry, Mapping):
        entry = entry.get("physicalName")
    if isinstance(entry, str):
        return (entry,)
    if isinstance(entry, Sequence) and entry and all(isinstance(p, str) for p in entry):
        return tuple(entry)
    return None


def _configuration(domain: DomainMetadata) -> dict[str, Any] | None:
    try:
        parsed = json.loads(domain.configuration or "{}")
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def domain_clustering_columns(domain: DomainMetadata) -> list[ColumnPath]:
    """The clustering columns a ``delta.clustering`` / ``delta.liquid`` domain records, as
    physical name parts; entries of an unknown shape are skipped (they name nothing this package
    could keep statistics for, and the domain itself is never dropped)."""
    config = _configuration(domain)
    if config is None or domain.removed:
        return []
    entries = config.get("clusteringColumns")
    if not isinstance(entries, list):
        return []
    return [parts for parts in (_column_parts(e) for e in entries) if parts is not None]


def clustering_columns(domains: Iterable[DomainMetadata]) -> list[ColumnPath]:
    """The clustering columns of a table from its live domains (physical name parts, in the
    order recorded, each once), whichever of the two clustering domains holds them."""
    out: list[ColumnPath] = []
    for domain in domains:
        if domain.domain in (CLUSTERING_DOMAIN, LIQUID_DOMAIN):
            for parts in domain_clustering_columns(domain):
                if parts not in out:
                    out.append(parts)
    return out


def _physical_to_logical(schema: Mapping[str, Any], parts: ColumnPath) -> ColumnPath | None:
    """The logical name parts of the column whose physical name parts are ``parts`` (nested
    through structs only: clustering columns are primitive leaves of structs). Names resolve
    case-insensitively, as delta-spark's ``ClusteringColumnInfo`` does; None when the schema has
    no such column."""
    fields: Any = schema.get("fields", [])
    out: list[str] = []
    for i, part in enumerate(parts):
        found = None
        for f in fields or []:
            physical = (f.get("metadata") or {}).get(COLUMN_MAPPING_PHYSICAL_NAME_KEY) or f["name"]
            if str(physical).lower() == part.lower():
                found = f
                break
        if found is None:
            return None
        out.append(str(found["name"]))
        t = found.get("type")
        fields = t.get("fields") if isinstance(t, dict) and t.get("type") == "struct" else None
        if fields is None and i < len(parts) - 1:
            return None
    return tuple(out)


def _renamed_entry(entry: object, schema: Mapping[str, Any]) -> object:
    """``entry`` naming the same column by its logical name parts, in the entry's own shape."""
    parts = _column_parts(entry)
    if parts is None:
        return entry
    logical = _physical_to_logical(schema, parts)
    if logical is None:
        return entry  # a column the schema lost: left as written, as delta-spark leaves it
    if isinstance(entry, Mapping):
        return {**entry, "physicalName": list(logical)}
    if isinstance(entry, str):
        return ".".join(logical) if len(logical) > 1 else logical[0]
    return list(logical)


def domains_with_logical_names(domains: Iterable[DomainMetadata],
                               schema: Mapping[str, Any]) -> list[DomainMetadata]:
    """The clustering domains among ``domains`` rewritten for column-mapping removal: PROTOCOL.md
    "Clustered Table" asks for physical names while column mapping is on; once it is removed the
    data files use the logical names, which become the physical ones. ``schema`` is the schema
    *with* column-mapping metadata (physical names resolve through it). Only domains that change
    are returned; they go into the same commit as the metadata without column mapping, so that no
    reader sees the new schema with the old names."""
    out: list[DomainMetadata] = []
    for domain in domains:
        if domain.domain not in (CLUSTERING_DOMAIN, LIQUID_DOMAIN) or domain.removed:
            continue
        config = _configuration(domain)
        entries = config.get("clusteringColumns") if config is not None else None
        if not isinstance(entries, list):
            continue
        renamed = [_renamed_entry(e, schema) for e in entries]
        if renamed == entries:
            continue
        configuration = json.dumps({**(config or {}), "clusteringColumns": renamed}, separators=(",", ":"),
                                   ensure_ascii=False)
        out.append(DomainMetadata(domain=domain.domain, configuration=configuration, removed=False))
    return out
