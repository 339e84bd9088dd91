"""A :class:`~delta_downgrade.operations.protocol_timeline.ProtocolTimeline` as JSON: the
``timeline`` of each table in the compat report's ``compat.json`` (README "compat report")."""

from __future__ import annotations

from typing import Sequence

from delta_downgrade.compat.catalogue import Client
from delta_downgrade.operations.protocol_timeline import ProtocolTimeline
from delta_downgrade.operations.version_access import client_versions, protocol_spans
from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.protocol.protocol import protocol_document

__all__ = ["timeline_json"]


def timeline_json(timeline: ProtocolTimeline, clients: Sequence[Client] | None = None) -> JsonObject:
    """The timeline; with ``clients``, ``spans`` (each run of versions with one protocol) says
    which of them read those versions (time travel per client, operations.version_access)."""
    out = _timeline_json(timeline)
    if clients is not None:
        per_client = client_versions(timeline, clients)
        out["spans"] = [
            {"from": span.first, "to": span.last, "protocol": protocol_document(span.protocol),
             "readers": [cv.client.id for cv in per_client if cv.spans[i].verdict.value == "yes"],
             "judged": len(per_client)}
            for i, span in enumerate(protocol_spans(timeline))]
    return out


def _timeline_json(timeline: ProtocolTimeline) -> JsonObject:
    return {
        "earliest_version": timeline.earliest_version,
        "latest_version": timeline.latest_version,
        "drawn_from": timeline.drawn_from,
        "older_history_not_drawn": timeline.older_history_not_drawn,
        "initial_protocol": protocol_document(timeline.initial_protocol),
        "protocol_changes": [
            {"version": c.version, "protocol": protocol_document(c.protocol),
             "added": list(c.added), "removed": list(c.removed)}
            for c in timeline.protocol_changes],
        "drop_feature_commits": [
            {"version": d.version, "feature": d.feature, "truncate_history": d.truncate_history}
            for d in timeline.drop_feature_commits],
        "checkpoints": [
            {"version": c.version, "kind": c.kind, "parts": c.parts, "complete": c.complete,
             "sidecars": c.sidecars, "protected": c.protected, "at_boundary": c.at_boundary}
            for c in timeline.checkpoints],
        "checkpoints_not_drawn": timeline.checkpoints_not_drawn,
        "boundary_version": timeline.boundary_version,
        "checkpoint_protection": timeline.checkpoint_protection,
    }
