"""``inspect NAME`` output: the ``inspect --json`` document's fields that ``DESCRIBE DETAIL`` and
``DESCRIBE HISTORY`` give, under the same keys, and ``unavailable`` naming the others (they
need the table's log files, which a catalog table does not expose)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from delta_downgrade.app.render.inspect import INSPECT_FORMAT_VERSION, iso_utc, protocol_lines
from delta_downgrade.protocol.protocol import protocol_document
from delta_downgrade.protocol.support import Operation, unsupported_features

if TYPE_CHECKING:
    from delta_downgrade.app.engines.sql_inspect import CatalogTableReport

#: Keys of the path document that SQL cannot fill (``features[].traces``: file-level traces).
UNAVAILABLE = ("checkpoints", "last_checkpoint", "checkpoint_protection.protected_checkpoint_versions",
               "features[].in_use", "features[].traces", "files.files_with_deletion_vectors",
               "files.deleted_rows_in_deletion_vectors", "files.tombstones", "files.domains",
               "unknown_log_files", "protocol_history")


def catalog_inspect_document(report: CatalogTableReport) -> dict[str, Any]:
    d, history, protocol = report.detail, report.history, report.protocol
    latest = history[0] if history else None
    return {
        "format_version": INSPECT_FORMAT_VERSION,
        "table": report.table,
        "source": "DESCRIBE DETAIL, DESCRIBE HISTORY",
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
    doc = catalog_inspect_document(report)
    p = doc["protocol"]
    cp = doc["checkpoint_protection"]
    lines = [f"table            {doc['table']} (through {doc['source']})",
             f"version          {doc['version']} (history back to {doc['earliest_version']}) at {doc['timestamp']}",
             *protocol_lines(p)]
    lines.append(f"checkpoint protection  {'on' if cp['feature_present'] else 'off'}"
                 + (f", boundary version {cp['boundary_version']}" if cp["boundary_version"] is not None else ""))
    lines.append(f"droppable        {', '.join(doc['droppable_features']) or '(none)'}")
    lines.append(f"files            {doc['files']['live_files']} live ({doc['files']['live_bytes']} bytes)")
    for c in doc["drop_feature_commits"]:
        lines.append(f"  v{c['version']} DROP FEATURE {c['operation_parameters']} at {c['timestamp']}")
    lines.append(f"not shown through SQL: {', '.join(doc['unavailable'])}")
    return "\n".join(lines)
