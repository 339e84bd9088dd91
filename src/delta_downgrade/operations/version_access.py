"""Time travel per client: which retained versions of a table each catalogue client can read.

A version is read with the protocol in force at it (PROTOCOL.md "Protocol Evolution": a reader
checks the protocol of the snapshot it reconstructs), so the retained history splits into spans
of one protocol each (:func:`protocol_spans`, from the table's
:class:`~delta_downgrade.operations.protocol_timeline.ProtocolTimeline`) and a client reads a
span when its read verdict on that protocol is ``yes``.

This is what Checkpoint Protection promises (Checkpoint Protection RFC, "Dropping the feature"):
after a fast drop, versions from the boundary on carry the lower protocol and a checkpoint at the
boundary, so a client without the dropped feature reads them without replaying the older commits
that still carry it; versions before the boundary keep the feature, and only the clients that
support it read them.

Limits, said in the output: the schema checked (field metadata a parser rejects) is the latest
version's; versions older than the timeline's window (``drawn_from``) are counted, not judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from msgspec import Struct
from delta_downgrade.compat.catalogue import Client
from delta_downgrade.compat.verdict import Verdict, read_verdict
from delta_downgrade.operations.protocol_timeline import ProtocolTimeline
from delta_downgrade.protocol.protocol import Protocol, ProtocolJson, protocol_json

__all__ = ["ClientVersions", "ProtocolSpan", "client_versions", "protocol_spans", "versions_json"]


class ProtocolSpan(Struct, frozen=True):
    """Versions ``first`` to ``last`` (inclusive), all with ``protocol``."""

    first: int
    last: int
    protocol: Protocol


class SpanAccess(Struct, frozen=True):
    span: ProtocolSpan
    verdict: Verdict
    features: tuple[str, ...]     # the features blamed when the verdict is not yes


class ClientVersions(Struct, frozen=True):
    client: Client
    spans: tuple[SpanAccess, ...]

    @property
    def readable(self) -> list[tuple[int, int]]:
        """The readable versions as ranges, adjacent spans joined."""
        out: list[tuple[int, int]] = []
        for s in self.spans:
            if s.verdict is not Verdict.YES:
                continue
            if out and out[-1][1] + 1 == s.span.first:
                out[-1] = (out[-1][0], s.span.last)
            else:
                out.append((s.span.first, s.span.last))
        return out


def protocol_spans(timeline: ProtocolTimeline) -> list[ProtocolSpan]:
    """The judged window (``drawn_from`` to the latest version) cut where the protocol changes."""
    spans: list[ProtocolSpan] = []
    start, protocol = timeline.drawn_from, timeline.initial_protocol
    for change in timeline.protocol_changes:
        if change.version > start:
            spans.append(ProtocolSpan(start, change.version - 1, protocol))
        start, protocol = change.version, change.protocol
    spans.append(ProtocolSpan(start, timeline.latest_version, protocol))
    return spans


def client_versions(timeline: ProtocolTimeline, clients: Iterable[Client],
                    schema: Mapping[str, Any] | None = None) -> list[ClientVersions]:
    """Each client's read verdict on every span (``schema``: the latest version's by default)."""
    spans = protocol_spans(timeline)
    schema = timeline.latest_schema if schema is None else schema
    out = []
    for client in clients:
        accesses = []
        for span in spans:
            access = read_verdict(client, span.protocol, schema)
            accesses.append(SpanAccess(span, access.verdict, access.blocking_features))
        out.append(ClientVersions(client, tuple(accesses)))
    return out


#: A run of retained versions with one protocol.
SpanJson = TypedDict("SpanJson", {"from": int, "to": int, "protocol": ProtocolJson})
#: A client's read verdict on a run of versions, and the features to blame.
SpanVerdictJson = TypedDict("SpanVerdictJson", {"from": int, "to": int, "verdict": str, "features": list[str]})


class ClientVersionsJson(TypedDict):
    client: str
    readable: list[list[int]]
    spans: list[SpanVerdictJson]


class VersionsJson(TypedDict):
    """:func:`versions_json` (its pydantic model: app/schemas/compat.py ``Versions``)."""

    earliest_version: int
    latest_version: int
    judged_from: int
    boundary_version: int | None
    spans: list[SpanJson]
    clients: list[ClientVersionsJson]


def versions_json(timeline: ProtocolTimeline, per_client: list[ClientVersions]) -> VersionsJson:
    """``versions`` of ``compat TABLE --versions --json``: the spans, then per client the
    readable ranges and each span's verdict."""
    spans = protocol_spans(timeline)
    return {
        "earliest_version": timeline.earliest_version,
        "latest_version": timeline.latest_version,
        "judged_from": timeline.drawn_from,
        "boundary_version": timeline.boundary_version,
        "spans": [{"from": s.first, "to": s.last, "protocol": protocol_json(s.protocol)} for s in spans],
        "clients": [
            {"client": cv.client.id,
             "readable": [list(r) for r in cv.readable],
             "spans": [{"from": a.span.first, "to": a.span.last, "verdict": a.verdict.value,
                        "features": list(a.features)} for a in cv.spans]}
            for cv in per_client],
    }
