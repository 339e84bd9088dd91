"""``vacuum`` output: a :class:`~delta_downgrade.operations.vacuum.VacuumResult` as text and JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from delta_downgrade.clock import to_utc_iso
from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.protocol.table_config import HOUR_MS

if TYPE_CHECKING:
    from delta_downgrade.operations.vacuum import VacuumResult


def vacuum_document(result: VacuumResult) -> JsonObject:
    """``vacuum --json``: what was found, deleted and kept. Paths are table-relative."""
    return {
        "table": result.table, "operation": "VACUUM", "version": result.version,
        "dry_run": result.dry_run, "retention_ms": result.retention_ms,
        "configured_retention_ms": result.configured_retention_ms,
        "delete_before_ms": result.delete_before_ms,
        "delete_before": to_utc_iso(result.delete_before_ms),
        "files_to_delete": list(result.files_to_delete), "deleted": list(result.deleted),
        "checksum_companions": list(result.checksum_companions), "failed": dict(result.failed),
        "staging_dirs": list(result.staging_dirs), "removed_dirs": list(result.removed_dirs),
        "bytes_to_delete": result.bytes_to_delete, "referenced_count": result.referenced_count,
        "kept_count": result.kept_count,
        "recent_unreferenced_count": result.recent_unreferenced_count,
    }


def render_json(result: VacuumResult) -> str:
    return json.dumps(vacuum_document(result), indent=2)


def render_text(result: VacuumResult) -> str:
    verb = "would delete" if result.dry_run else "deleted"
    count = len(result.files_to_delete) if result.dry_run else len(result.deleted)
    lines = [
        f"VACUUM{' DRY RUN' if result.dry_run else ''} {result.table} at version {result.version}: "
        f"retention {result.retention_ms / HOUR_MS:g} hours (table: "
        f"{result.configured_retention_ms / HOUR_MS:g} hours), unreferenced files older than "
        f"{to_utc_iso(result.delete_before_ms)}",
        f"{verb} {count} file(s), {result.bytes_to_delete} bytes; kept {result.kept_count} "
        f"({result.recent_unreferenced_count} unreferenced but too recent)",
    ]
    lines += [f"  {path}" for path in (result.files_to_delete if result.dry_run else result.deleted)]
    lines += [f"  FAILED {path}: {why}" for path, why in result.failed.items()]
    return "\n".join(lines)
