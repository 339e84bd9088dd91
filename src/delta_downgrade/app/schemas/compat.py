"""The ``compat --json`` documents (README "compat --json document"): one table's, a fleet's,
``--list-clients``'s, and the compat report's ``compat.json`` (the fleet document with each
table's ``timeline``). Built by ``operations/compat.py`` (``TableCompat.to_json``,
``FleetCompat.to_json``, ``catalogue_entry_json``), ``operations/version_access.py``
(``versions_json``) and ``app/render/protocol_timeline.py`` (``timeline_json``)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from delta_downgrade.app.schemas.base import (
    Document,
    ProtocolDocument,
    VerdictValue,
    when_present,
)
from delta_downgrade.app.schemas.results import (
    ClientListResult,
    CompatFleetSummary,
    CompatResult,
)

__all__ = [
    "BLOCKER_KINDS",
    "ClientListOutput",
    "CompatFleetDocument",
    "CompatFleetOutput",
    "CompatReportDocument",
    "CompatTableDocument",
    "CompatTableOutput",
    "Timeline",
]

BlockerKind = Literal["feature", "reader_version", "writer_version", "field_metadata", "invalid_protocol"]
BLOCKER_KINDS: tuple[str, ...] = get_args(BlockerKind)


class Blocker(Document):
    kind: BlockerKind
    feature: str | None = Field(description="the feature to blame; null for a protocol version or a schema "
                                            "detail no feature owns")
    reason: str


class Access(Document):
    """A client's verdict on reading or on writing the table."""

    verdict: VerdictValue
    blockers: list[Blocker]
    notes: list[str]


class Rewrite(Document):
    """The data rewrite of one drop on this table: null ``files`` / ``bytes`` when the files are
    not reachable (a catalog name); ``exact`` false: an upper bound."""

    needed: bool
    files: int | None
    bytes: int | None
    exact: bool


class UnblockStep(Document):
    feature: str
    required_by: str | None
    checkpoint_protection: bool
    rewrite: Rewrite


class Undroppable(Document):
    feature: str
    reason: str


class Unblock(Document):
    possible: bool
    steps: list[UnblockStep]
    undroppable: list[Undroppable]
    protocol_after: ProtocolDocument | None
    read_after: Access | None
    write_after: Access | None
    truncate_history_before_write: bool
    notes: list[str]


class Source(Document):
    url: str
    states: str


class ClientRef(Document):
    """A client of the catalogue, as a fleet document lists it."""

    client: str
    name: str
    family: str
    versions: str


class ClientCompat(ClientRef):
    read: Access
    write: Access
    unblock: Unblock | None
    sources: list[Source]


class Blocked(Document):
    read: list[str]
    write: list[str]


class VerdictCounts(Document):
    yes: int
    blocked: int
    unknown: int
    not_applicable: int = Field(alias="n/a")


class BlockingFeature(Document):
    feature: str
    blocks_read: int
    blocks_write: int


class BestDrop(Document):
    features: list[str]
    drops: list[str]
    then_readable_by: list[str]
    then_writable_by: list[str]


class Summary(Document):
    clients: int
    read: VerdictCounts
    write: VerdictCounts
    blocking_features: list[BlockingFeature]
    best_drop: BestDrop | None


class ProtocolSpan(Document):
    first: int = Field(alias="from")
    last: int = Field(alias="to")
    protocol: ProtocolDocument


class SpanVerdict(Document):
    first: int = Field(alias="from")
    last: int = Field(alias="to")
    verdict: VerdictValue
    features: list[str]


class ClientVersions(Document):
    client: str
    readable: list[tuple[int, int]] = Field(description="[from, to] ranges of readable versions")
    spans: list[SpanVerdict]


class Versions(Document):
    """``--versions``: time travel per client."""

    earliest_version: int
    latest_version: int
    judged_from: int
    boundary_version: int | None
    spans: list[ProtocolSpan]
    clients: list[ClientVersions]


class CompatTableDocument(Document):
    """One table's ``compat --json`` document."""

    table: str
    version: int
    protocol: ProtocolDocument
    clients: list[ClientCompat]
    blocked: Blocked
    summary: Summary
    notes: list[str] = when_present("what the report could not see (a catalog name)")
    versions: Versions = when_present("with --versions")


class TableError(Document):
    """A table of a fleet that could not be loaded: the table and its error, as every error
    RESULT states one."""

    table: str
    error_class: str
    sqlstate: str
    message: str
    params: dict[str, Any] = when_present("the error's parameters, when it has any")


class CompatFleetDocument(Document):
    """A fleet's ``compat --json`` document (``compat --tables-file``)."""

    tables: list[CompatTableDocument]
    errors: list[TableError]
    clients: list[ClientRef]


class CompatTableOutput(CompatTableDocument, CompatResult):
    """``compat TABLE --json``: the table's document with the RESULT fields it lacks (its own
    ``clients`` stays: the document's keys win)."""

    # pydantic merges the bases' fields; the document's own list of clients replaces the names.
    clients: list[ClientCompat]  # type: ignore[assignment]


class CompatFleetOutput(CompatFleetDocument, CompatFleetSummary):
    """``compat --tables-file F --json``: the fleet document with the summary's RESULT fields it
    lacks (its own ``tables`` list stays)."""

    # the document's list of tables replaces the summary's count of them
    tables: list[CompatTableDocument]  # type: ignore[assignment]


# --- --list-clients -------------------------------------------------------------------------------

class Releases(Document):
    start: str | None = Field(alias="from")
    before: str | None


class CatalogueSide(Document):
    """What a client accepts on one side (read or write), with the sources that say so."""

    max_version: int | Literal["unknown"] = Field(description="the highest protocol version it accepts "
                                                              "(0: it does not do this at all)")
    versions: list[int] | None
    features: list[str] | Literal["unknown"] | None
    sources: list[Source]


class CatalogueEntry(ClientRef):
    aliases: list[str]
    product: str | None
    releases: Releases | None
    path: str | None
    tested_here: str | None
    verified: bool = Field(description="the entry's verdicts were checked against the real client "
                                       "here (tested_here names the releases); false: they rest on "
                                       "the sources cited")
    read: CatalogueSide | None
    write: CatalogueSide | None


class ClientListOutput(ClientListResult):
    """``compat --list-clients --json``."""

    clients: list[CatalogueEntry]


# --- the compat report's compat.json --------------------------------------------------------------

class ProtocolChange(Document):
    version: int
    protocol: ProtocolDocument
    added: list[str]
    removed: list[str]


class DropFeatureCommit(Document):
    version: int
    feature: str | None
    truncate_history: bool | None = Field(description="null: the commit's operationParameters do not say "
                                                       "(no truncateHistory, or not a boolean)")


class TimelineCheckpoint(Document):
    version: int
    kind: Literal["classic", "multipart", "v2"]
    parts: int
    complete: bool
    sidecars: int | None
    protected: bool
    at_boundary: bool


class ReadersSpan(Document):
    first: int = Field(alias="from")
    last: int = Field(alias="to")
    protocol: ProtocolDocument
    readers: list[str]
    judged: int


class Timeline(Document):
    """A table's protocol and checkpoint timeline (``timeline_json``), from its log only."""

    earliest_version: int
    latest_version: int
    drawn_from: int
    older_history_not_drawn: bool
    initial_protocol: ProtocolDocument
    protocol_changes: list[ProtocolChange]
    drop_feature_commits: list[DropFeatureCommit]
    checkpoints: list[TimelineCheckpoint]
    checkpoints_not_drawn: int
    boundary_version: int | None
    checkpoint_protection: bool
    spans: list[ReadersSpan] = when_present("which clients read each run of versions with one protocol")


class TimelineError(Document):
    """A log whose timeline cannot be drawn; the table keeps its verdicts."""

    error_class: str
    message: str


class ReportTable(CompatTableDocument):
    timeline: Timeline | TimelineError | None = Field(description="null: a catalog name, whose log this "
                                                                  "package does not read")


class CompatReportDocument(CompatFleetDocument):
    """``DIR/compat.json`` of ``compat --report DIR`` / ``verify_task compat_report=DIR``."""

    tables: list[ReportTable]  # type: ignore[assignment]  # each table with its report's fields too
