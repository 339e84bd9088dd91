"""``delta-downgrade inspect``: what a table's log says, in one stable JSON document.

The JSON fields are a contract (documented in the README): add fields, never rename or drop them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.listing import CheckpointInstance
from delta_downgrade.features import TraceContext, feature_traces
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from delta_downgrade.protocol.features import get_feature

INSPECT_FORMAT_VERSION = 1


def iso_utc(epoch_ms: int | None) -> str | None:
    if epoch_ms is None:
        return None
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


def protocol_document(protocol: Protocol) -> dict[str, Any]:
    """The protocol with all four keys; a feature list is null when the version has none."""
    action = protocol.to_action()
    return {"minReaderVersion": action["minReaderVersion"], "minWriterVersion": action["minWriterVersion"],
            "readerFeatures": action.get("readerFeatures"), "writerFeatures": action.get("writerFeatures")}


def checkpoint_to_dict(c: CheckpointInstance, sidecars: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"version": c.version, "kind": c.kind, "parts": c.num_parts or 1,
                           "complete": c.complete, "files": list(c.paths), "size_bytes": c.size_bytes}
    if sidecars is not None:
        out["sidecars"] = sidecars
    return out


def inspect_table(location: str, version: int | None = None, *, history: bool = True) -> dict[str, Any]:
    """Build the inspection document for ``location`` at ``version`` (latest by default)."""
    log = DeltaLog(location)
    snapshot = log.snapshot(version, check_read=True)
    protocol = snapshot.protocol
    metadata = snapshot.metadata
    ctx = TraceContext(snapshot)
    listing = log.listing()

    features = []
    for name in sorted(protocol.features):
        spec = get_feature(name)
        entry: dict[str, Any] = {
            "name": name,
            "known": spec is not None,
            "kind": spec.kind.value if spec else None,
            "implicit": name in protocol.implicit_features,
            "removable": bool(spec and spec.removable),
            "requires_history_protection": bool(spec and spec.requires_history_protection),
        }
        if spec and spec.removable:
            traces = feature_traces(name, ctx)
            entry["in_use"] = bool(traces)
            entry["traces"] = traces
        features.append(entry)

    boundary = snapshot.boundary_version
    checkpoints = [checkpoint_to_dict(c, log.sidecars_of(c) if c.kind == "v2" else None)
                   for c in log.checkpoint_inventory()]
    protected = [c["version"] for c in checkpoints
                 if boundary is not None and c["complete"] and c["version"] >= boundary]
    doc: dict[str, Any] = {
        "format_version": INSPECT_FORMAT_VERSION,
        "table": location,
        "version": snapshot.version,
        "latest_version": log.latest_version(),
        "earliest_version": log.earliest_version(),
        "timestamp": iso_utc(snapshot.timestamp_ms()),
        "protocol": protocol_document(protocol),
        "implicit_features": sorted(protocol.implicit_features),
        "features": features,
        "unsupported_features": {"read": sorted(protocol.unsupported_for_read()),
                                 "write": sorted(protocol.unsupported_for_write())},
        "table_id": metadata.id,
        "partition_columns": list(metadata.partitionColumns),
        "properties": dict(sorted(metadata.configuration.items())),
        "checkpoints": checkpoints,
        "last_checkpoint": listing.last_checkpoint,
        "checkpoint_protection": {
            "feature_present": CHECKPOINT_PROTECTION in protocol.features,
            "boundary_version": boundary,
            "protected_checkpoint_versions": protected,
        },
        "droppable_features": [f["name"] for f in features if f["removable"]],
        "files": _file_summary(ctx),
        "unknown_log_files": [s.path for s in listing.unknown],
    }
    if history:
        doc["protocol_history"] = [span.to_dict() for span in log.protocol_history()]
    return doc


def _file_summary(ctx: TraceContext) -> dict[str, Any]:
    files = ctx.state.files.values()
    with_dv = [f for f in files if f.dv is not None]
    return {
        "live_files": len(ctx.state.files),
        "live_bytes": sum(f.size for f in files),
        "files_with_deletion_vectors": len(with_dv),
        "deleted_rows_in_deletion_vectors": sum(f.dv.cardinality for f in with_dv if f.dv),
        "tombstones": len(ctx.state.tombstones),
        "domains": sorted(ctx.state.live_domains),
    }


def render_text(doc: dict[str, Any]) -> str:
    """A readable, aligned rendering of :func:`inspect_table`'s document."""
    p = doc["protocol"]
    lines = [f"table            {doc['table']}",
             f"version          {doc['version']} (latest {doc['latest_version']}, earliest retained "
             f"{doc['earliest_version']}) at {doc['timestamp']}",
             f"protocol         reader {p['minReaderVersion']}, writer {p['minWriterVersion']}"]
    if p.get("readerFeatures") is not None:
        lines.append(f"  reader features  {', '.join(p['readerFeatures']) or '(none)'}")
    if p.get("writerFeatures") is not None:
        lines.append(f"  writer features  {', '.join(p['writerFeatures']) or '(none)'}")
    if doc["implicit_features"]:
        lines.append(f"  implied by legacy versions  {', '.join(doc['implicit_features'])}")
    unsupported = doc["unsupported_features"]
    if unsupported["read"] or unsupported["write"]:
        lines.append(f"  not supported here  read: {unsupported['read'] or '-'}  write: {unsupported['write'] or '-'}")
    cp = doc["checkpoint_protection"]
    lines.append(f"checkpoint protection  {'on' if cp['feature_present'] else 'off'}"
                 + (f", boundary version {cp['boundary_version']}, protected checkpoints "
                    f"{cp['protected_checkpoint_versions']}" if cp["boundary_version"] is not None else ""))
    lines.append("")
    lines.append(f"{'feature':<30} {'kind':<13} {'how':<9} {'removable':<10} in use")
    for f in doc["features"]:
        in_use = ("yes: " + "; ".join(f["traces"])) if f.get("in_use") else ("no" if "in_use" in f else "-")
        lines.append(f"{f['name']:<30} {(f['kind'] or 'unknown'):<13} "
                     f"{'implicit' if f['implicit'] else 'listed':<9} {'yes' if f['removable'] else 'no':<10} {in_use}")
    lines.append("")
    lines.append("checkpoints")
    if not doc["checkpoints"]:
        lines.append("  (none)")
    for c in doc["checkpoints"]:
        extra = f", {len(c['sidecars'])} sidecar(s)" if c.get("sidecars") else ""
        lines.append(f"  v{c['version']:<8} {c['kind']:<10} parts {c['parts']}{'' if c['complete'] else ' INCOMPLETE'}"
                     f"{extra}  {c['size_bytes']} bytes")
    files = doc["files"]
    lines.append("")
    lines.append(f"files            {files['live_files']} live ({files['live_bytes']} bytes), "
                 f"{files['files_with_deletion_vectors']} with deletion vectors, {files['tombstones']} tombstones")
    if doc["properties"]:
        lines.append("")
        lines.append("properties")
        for k, v in doc["properties"].items():
            lines.append(f"  {k} = {v}")
    if doc.get("protocol_history") and len(doc["protocol_history"]) > 1:
        lines.append("")
        lines.append("protocol history")
        for span in doc["protocol_history"]:
            pr = span["protocol"]
            feats = sorted(set(pr.get("readerFeatures") or []) | set(pr.get("writerFeatures") or []))
            lines.append(f"  v{span['start_version']}..v{span['end_version']}  ({pr['minReaderVersion']},"
                         f"{pr['minWriterVersion']}) {', '.join(feats)}"
                         + (f"  boundary {span['boundary_version']}" if span["boundary_version"] is not None else ""))
    return "\n".join(lines)
