"""``inspect`` output: the stable JSON document (``--json``) and the aligned text of a
:class:`~delta_downgrade.operations.inspect.TableReport`.

The JSON fields are a contract (documented in the README): add fields, never rename or drop them.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.protocol.protocol import Protocol, protocol_document

if TYPE_CHECKING:
    from delta_downgrade.log.delta_log import ProtocolSpan
    from delta_downgrade.operations.inspect import CheckpointReport, FeatureReport, TableReport

INSPECT_FORMAT_VERSION = 1


def iso_utc(epoch_ms: int | None) -> str | None:
    """Milliseconds since the epoch as ``2024-01-02T03:04:05.678Z`` (UTC, to the millisecond)."""
    if epoch_ms is None:
        return None
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


def _feature(f: FeatureReport) -> JsonObject:
    out: JsonObject = {"name": f.name, "known": f.known, "kind": f.kind, "implicit": f.implicit,
                           "removable": f.removable,
                           "requires_history_protection": f.requires_history_protection}
    if f.traces is not None:
        out["in_use"] = f.in_use
        out["traces"] = f.traces
    return out


def _checkpoint(r: CheckpointReport) -> JsonObject:
    c = r.checkpoint
    out: JsonObject = {"version": c.version, "kind": c.kind, "parts": c.num_parts or 1,
                           "complete": c.complete, "files": list(c.paths), "size_bytes": c.size_bytes}
    if r.sidecars is not None:
        out["sidecars"] = r.sidecars
    return out


def span_document(span: ProtocolSpan) -> JsonObject:
    """One entry of the document's protocol history."""
    return {"start_version": span.start, "end_version": span.end,
            "protocol": protocol_document(span.protocol), "boundary_version": span.boundary_version}


def inspect_document(report: TableReport) -> JsonObject:
    """The ``inspect --json`` document, keys in their documented order."""
    doc: JsonObject = {
        "format_version": INSPECT_FORMAT_VERSION,
        "table": report.table,
        "version": report.version,
        "latest_version": report.latest_version,
        "earliest_version": report.earliest_version,
        "timestamp": iso_utc(report.timestamp_ms),
        "protocol": protocol_document(report.protocol),
        "implicit_features": sorted(report.protocol.implicit_features),
        "features": [_feature(f) for f in report.features],
        "unsupported_features": {"read": sorted(report.unsupported_for_read),
                                 "write": sorted(report.unsupported_for_write)},
        "table_id": report.table_id,
        "partition_columns": list(report.partition_columns),
        "properties": dict(report.properties),
        "checkpoints": [_checkpoint(c) for c in report.checkpoints],
        "last_checkpoint": report.last_checkpoint,
        "checkpoint_protection": {
            "feature_present": report.checkpoint_protection,
            "boundary_version": report.boundary_version,
            "protected_checkpoint_versions": list(report.protected_checkpoint_versions),
        },
        "droppable_features": report.droppable_features,
        "files": {
            "live_files": report.files.live_files,
            "live_bytes": report.files.live_bytes,
            "files_with_deletion_vectors": report.files.files_with_deletion_vectors,
            "deleted_rows_in_deletion_vectors": report.files.deleted_rows_in_deletion_vectors,
            "tombstones": report.files.tombstones,
            "domains": list(report.files.domains),
        },
        "unknown_log_files": list(report.unknown_log_files),
        "listed_from": report.listed_from,
    }
    if report.protocol_history is not None:
        doc["protocol_history"] = [span_document(span) for span in report.protocol_history]
    return doc


def render_json(report: TableReport) -> str:
    """``inspect --json``: the document, indented by two."""
    return json.dumps(inspect_document(report), indent=2, sort_keys=False, default=str)


def protocol_lines(protocol: Protocol) -> list[str]:
    """The aligned protocol lines of ``inspect``'s text; feature lists sorted, as in
    :func:`protocol_document`."""
    lines = [f"protocol         reader {protocol.min_reader_version}, writer {protocol.min_writer_version}"]
    if protocol.reader_features is not None:
        lines.append(f"  reader features  {', '.join(sorted(protocol.reader_features)) or '(none)'}")
    if protocol.writer_features is not None:
        lines.append(f"  writer features  {', '.join(sorted(protocol.writer_features)) or '(none)'}")
    return lines


def render_text(report: TableReport) -> str:
    """``inspect``: a readable, aligned rendering of the report."""
    lines = [f"table            {report.table}",
             f"version          {report.version} (latest {report.latest_version}, "
             + (f"earliest retained {report.earliest_version}" if report.listed_from is None else
                f"log listed from checkpoint {report.listed_from}")
             + f") at {iso_utc(report.timestamp_ms)}",
             *protocol_lines(report.protocol)]
    implicit = sorted(report.protocol.implicit_features)
    if implicit:
        lines.append(f"  implied by legacy versions  {', '.join(implicit)}")
    read, write = sorted(report.unsupported_for_read), sorted(report.unsupported_for_write)
    if read or write:
        lines.append(f"  not supported here  read: {read or '-'}  write: {write or '-'}")
    lines.append(f"checkpoint protection  {'on' if report.checkpoint_protection else 'off'}"
                 + (f", boundary version {report.boundary_version}, protected checkpoints "
                    f"{list(report.protected_checkpoint_versions)}" if report.boundary_version is not None else ""))
    lines.append("")
    lines.append(f"{'feature':<30} {'kind':<13} {'how':<9} {'removable':<10} in use")
    for f in report.features:
        in_use = ("yes: " + "; ".join(f.traces or ())) if f.in_use else ("no" if f.traces is not None else "-")
        lines.append(f"{f.name:<30} {(f.kind or 'unknown'):<13} "
                     f"{'implicit' if f.implicit else 'listed':<9} {'yes' if f.removable else 'no':<10} {in_use}")
    lines.append("")
    lines.append("checkpoints")
    if not report.checkpoints:
        lines.append("  (none)")
    for r in report.checkpoints:
        c = r.checkpoint
        extra = f", {len(r.sidecars)} sidecar(s)" if r.sidecars else ""
        lines.append(f"  v{c.version:<8} {c.kind:<10} parts {c.num_parts or 1}{'' if c.complete else ' INCOMPLETE'}"
                     f"{extra}  {c.size_bytes} bytes")
    files = report.files
    lines.append("")
    lines.append(f"files            {files.live_files} live ({files.live_bytes} bytes), "
                 f"{files.files_with_deletion_vectors} with deletion vectors, {files.tombstones} tombstones")
    if report.properties:
        lines.append("")
        lines.append("properties")
        for k, v in report.properties.items():
            lines.append(f"  {k} = {v}")
    if report.protocol_history and len(report.protocol_history) > 1:
        lines.append("")
        lines.append("protocol history")
        for span in report.protocol_history:
            pr = span.protocol
            feats = sorted((pr.reader_features or frozenset()) | (pr.writer_features or frozenset()))
            lines.append(f"  v{span.start}..v{span.end}  ({pr.min_reader_version},"
                         f"{pr.min_writer_version}) {', '.join(feats)}"
                         + (f"  boundary {span.boundary_version}" if span.boundary_version is not None else ""))
    return "\n".join(lines)
