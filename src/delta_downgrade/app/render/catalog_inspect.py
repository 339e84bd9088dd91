"""``inspect NAME`` output: the ``inspect --json`` document's fields that ``DESCRIBE DETAIL`` and
``DESCRIBE HISTORY`` give, under the same keys, and ``unavailable`` naming the others (they
need the table's log files, which a catalog table does not expose)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_downgrade.app.render.inspect import INSPECT_FORMAT_VERSION, iso_utc, protocol_lines
from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.protocol.protocol import protocol_document
from delta_downgrade.protocol.support import Operation, unsupported_features

if TYPE_CHECKING:
    from delta_downgrade.app.engines.sql_inspect import CatalogTableReport

#: Keys of the path document that SQL cannot fill (``features[].traces``: file-level traces).
UNAVAILABLE = ("checkpoints", "last_checkpoint", "checkpoint_protection.protected_checkpoint_versions",
               "features[].in_use", "features[].traces", "files.files_with_deletion_vectors",
               "files.deleted_rows_in_deletion_vectors", "files.tombstones", "files.domains",
               "unknown_log_files", "protocol_history")


#: Where a catalog table's document comes from.
SOURCE = "DESCRIBE DETAIL, DESCRIBE HISTORY"


def catalog_inspect_document(report: CatalogTableReport) -> JsonObject:
    d, history, protocol = report.detail, report.history, report.protocol
    latest = history[0] if history else None
    return {
        "format_version": INSPECT_FORMAT_VERSION,
        "table": report.table,
        "source": SOURCE,
        "version": latest.version if latest else None,
        "latest_version": latest.version if latest else None,
        # The oldest commit DESCRIBE HISTORY still lists (the log's retained history).
        "earliest_version": history[-1].version if history else None,
        "timestamp": iso_utc(latest.timestamp_ms) if latest else None,
        "protocol": protocol_document(protocol),
        "implicit_features": sorted(protocol.implicit_features),
        "features": [{"name": f.name, "known": f.known, "kind": f.kind, "implicit": f.implicit,
                      "removable": f.removable, "requires_history_protection": f.requires_history_protection}
                     for f in report.features],
        "unsupported_features": {"read": sorted(unsupported_features(protocol, Operation.READ)),
                                 "write": sorted(unsupported_features(protocol, Operation.WRITE))},
        "table_id": d.table_id,
        "partition_columns": list(d.partition_columns),
        "properties": dict(sorted(d.properties.items())),
        "checkpoint_protection": {"feature_present": d.boundary_version is not None or
                                  "checkpointProtection" in d.table_features,
                                  "boundary_version": d.boundary_version},
        "droppable_features": [f.name for f in report.features if f.removable],
        "files": {"live_files": d.num_files, "live_bytes": d.size_in_bytes},
        "drop_feature_commits": [e.to_dict() for e in history if e.drops()],
        "unavailable": list(UNAVAILABLE),
    }


def render_catalog_text(report: CatalogTableReport) -> str:
    # The values of catalog_inspect_document, read from the report.
    d, history = report.detail, report.history
    latest = history[0] if history else None
    version = latest.version if latest else None
    earliest = history[-1].version if history else None
    timestamp = iso_utc(latest.timestamp_ms) if latest else None
    boundary = d.boundary_version
    feature_present = boundary is not None or "checkpointProtection" in d.table_features
    droppable = [f.name for f in report.features if f.removable]
    lines = [f"table            {report.table} (through {SOURCE})",
             f"version          {version} (history back to {earliest}) at {timestamp}",
             *protocol_lines(report.protocol)]
    lines.append(f"checkpoint protection  {'on' if feature_present else 'off'}"
                 + (f", boundary version {boundary}" if boundary is not None else ""))
    lines.append(f"droppable        {', '.join(droppable) or '(none)'}")
    lines.append(f"files            {d.num_files} live ({d.size_in_bytes} bytes)")
    for e in history:
        if e.drops():
            lines.append(f"  v{e.version} DROP FEATURE {dict(e.parameters)} at {e.timestamp_iso}")
    lines.append(f"not shown through SQL: {', '.join(UNAVAILABLE)}")
    return "\n".join(lines)
