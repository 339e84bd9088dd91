"""Delta schema fields as the log writes them (PROTOCOL.md "Schema Serialization Format"), for
tests that build schemas by hand."""

from __future__ import annotations

from typing import Any, Mapping


def field(name: str, type_: Any, physical: str | None = None, fid: int | None = None, *,
          metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A nullable struct field; ``physical`` / ``fid``: its column-mapping physical name and id
    (PROTOCOL.md "Column Mapping"); ``metadata``: further field metadata."""
    meta = dict(metadata or {})
    if physical is not None:
        meta["delta.columnMapping.physicalName"] = physical
    if fid is not None:
        meta["delta.columnMapping.id"] = fid
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}
