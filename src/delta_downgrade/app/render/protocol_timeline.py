"""A :class:`~delta_downgrade.operations.protocol_timeline.ProtocolTimeline` as JSON: the
``timeline`` of each table in the compat report's ``compat.json`` (README "compat report")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, TypedDict, final

from delta_downgrade.compat.catalogue import Client
from delta_downgrade.operations.protocol_timeline import ProtocolTimeline
from delta_downgrade.operations.version_access import client_versions, protocol_spans
from delta_downgrade.protocol.protocol import ProtocolJson, protocol_json

if TYPE_CHECKING:
    from typing import NotRequired  # Python 3.11; annotations only (postponed)

__all__ = ["TimelineErrorJson", "TimelineJson", "timeline_json"]


class ProtocolChangeJson(TypedDict):
    version: int
    protocol: ProtocolJson
    added: list[str]
    removed: list[str]


class DropFeatureCommitJson(TypedDict):
    version: int
    feature: str | None
    #: null: the commit's operationParameters do not say (neither a boolean nor "true"/"false")
    truncate_history: bool | None


class CheckpointJson(TypedDict):
    version: int
    kind: str  # "classic" | "multipart" | "v2"
    parts: int
    complete: bool
    sidecars: int | None
    protected: bool
    at_boundary: bool


#: A run of versions with one protocol, and the clients (of ``judged``) that read them.
ReadersSpanJson = TypedDict("ReadersSpanJson", {"from": int, "to": int, "protocol": ProtocolJson,
                                                "readers": list[str], "judged": int})


@final
class TimelineJson(TypedDict):
    """:func:`timeline_json` (its pydantic model: app/schemas/compat.py ``Timeline``)."""

    earliest_version: int
    latest_version: int
    drawn_from: int
    older_history_not_drawn: bool
    initial_protocol: ProtocolJson
    protocol_changes: list[ProtocolChangeJson]
    drop_feature_commits: list[DropFeatureCommitJson]
    checkpoints: list[CheckpointJson]
    checkpoints_not_drawn: int
    boundary_version: int | None
    checkpoint_protection: bool
    spans: NotRequired[list[ReadersSpanJson]]


@final  # no other key: a timeline (latest_version) and an error (error_class) tell apart by a key
class TimelineErrorJson(TypedDict):
    """A log whose timeline cannot be drawn: the error that kept it from being read."""

    error_class: str
    message: str


def timeline_json(timeline: ProtocolTimeline, clients: Sequence[Client] | None = None) -> TimelineJson:
    """The timeline; with ``clients``, ``spans`` (each run of versions with one protocol) says
    which of them read those versions (time travel per client, operations.version_access)."""
    out = _timeline_json(timeline)
    if clients is not None:
        per_client = client_versions(timeline, clients)
        out["spans"] = [
            {"from": span.first, "to": span.last, "protocol": protocol_json(span.protocol),
             "readers": [cv.client.id for cv in per_client if cv.spans[i].verdict.value == "yes"],
             "judged": len(per_client)}
            for i, span in enumerate(protocol_spans(timeline))]
    return out


def _timeline_json(timeline: ProtocolTimeline) -> TimelineJson:
    return {
        "earliest_version": timeline.earliest_version,
        "latest_version": timeline.latest_version,
        "drawn_from": timeline.drawn_from,
        "older_history_not_drawn": timeline.older_history_not_drawn,
        "initial_protocol": protocol_json(timeline.initial_protocol),
        "protocol_changes": [
            {"version": c.version, "protocol": protocol_json(c.protocol),
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
