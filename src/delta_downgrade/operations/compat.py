"""``delta-downgrade compat``: for every client of the catalogue, can it read / write the table's
latest version, what blocks it, and the plan that unblocks it - from the log alone.

The verdicts are :func:`delta_downgrade.compat.verdict.client_verdict` (PROTOCOL.md "Protocol
Evolution" and "Table Features" applied to the catalogue's data); this module adds what only the
table can tell: for each step of a plan, how many live files (and bytes) the feature's data rewrite
would touch (:meth:`RemovableFeature.rewrite_footprint`, counted on the snapshot's Arrow columns:
no data file, no footer is opened). The footprint of a feature is computed once per table and
shared by every client whose plan drops it.

:func:`fleet_compat` runs :func:`table_compat` over many tables; a table that cannot be loaded is
an entry in ``errors`` (its Delta error class), the others still run. :meth:`TableCompat.to_json`
and :meth:`FleetCompat.to_json` are the ``compat --json`` documents the README documents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from msgspec import Struct, field
from delta_downgrade.compat.catalogue import Catalogue, Client, ReadSide, Unknown, WriteSide
from delta_downgrade.compat.verdict import Access, ClientVerdict, UnblockPlan, Verdict, client_verdict
from delta_downgrade.errors import DeltaDowngradeError, naming_table
from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.protocol.protocol import Protocol, ProtocolJson, protocol_json

if TYPE_CHECKING:
    from typing import NotRequired  # Python 3.11; annotations only (postponed)

    from delta_downgrade.features.base import RewriteFootprint, TraceContext
    from delta_downgrade.operations.version_access import VersionsJson
    from delta_downgrade.log.snapshot import Snapshot

__all__ = ["catalogue_entry_json", "ClientCompat", "FleetCompat", "TableCompat", "TableError", "fleet_compat",
           "resolve_clients", "table_compat", "table_summary", "compat_of_protocol",
           "AccessJson", "CatalogueEntryJson", "ClientCompatJson", "ClientJson", "FleetCompatJson",
           "SummaryJson", "TableCompatJson", "UnblockJson", "StepJson"]

FootprintOf = Callable[[str], "RewriteFootprint | None"]
"""Feature name -> its rewrite footprint on the table; None when the table's files are not
reachable (a catalog name described through SQL)."""


# --- the documents' shapes (README "compat"; their pydantic models: app/schemas/compat.py) ---------
# TypedDicts, not models: the JSON is built and read as plain dictionaries (a command prints
# without loading the schemas), and the type checker holds every key to its type.

class BlockerJson(TypedDict):
    kind: str
    feature: str | None
    reason: str


class AccessJson(TypedDict):
    verdict: str
    blockers: list[BlockerJson]
    notes: list[str]


class RewriteJson(TypedDict):
    needed: bool
    files: int | None
    bytes: int | None
    exact: bool


class StepJson(TypedDict):
    feature: str
    required_by: str | None
    checkpoint_protection: bool
    rewrite: RewriteJson


class UndroppableJson(TypedDict):
    feature: str
    reason: str


class UnblockJson(TypedDict):
    possible: bool
    steps: list[StepJson]
    undroppable: list[UndroppableJson]
    protocol_after: ProtocolJson | None
    read_after: AccessJson | None
    write_after: AccessJson | None
    truncate_history_before_write: bool
    notes: list[str]


class SourceJson(TypedDict):
    url: str
    states: str


class ClientJson(TypedDict):
    client: str
    name: str
    family: str
    versions: str


class ClientCompatJson(ClientJson):
    read: AccessJson
    write: AccessJson
    unblock: UnblockJson | None
    sources: list[SourceJson]


class BlockedJson(TypedDict):
    read: list[str]
    write: list[str]


#: How many verdicts of one side are yes, blocked, unknown, n/a.
VerdictCountsJson = TypedDict("VerdictCountsJson", {"yes": int, "blocked": int, "unknown": int, "n/a": int})


class BlockingFeatureJson(TypedDict):
    feature: str
    blocks_read: int
    blocks_write: int


class BestDropJson(TypedDict):
    features: list[str]
    drops: list[str]
    then_readable_by: list[str]
    then_writable_by: list[str]


class SummaryJson(TypedDict):
    clients: int
    read: VerdictCountsJson
    write: VerdictCountsJson
    blocking_features: list[BlockingFeatureJson]
    best_drop: BestDropJson | None


class TableCompatJson(TypedDict):
    table: str
    version: int
    protocol: ProtocolJson
    clients: list[ClientCompatJson]
    blocked: BlockedJson
    summary: SummaryJson
    notes: NotRequired[list[str]]
    #: ``compat TABLE --versions --json`` (operations/version_access.py ``versions_json``)
    versions: NotRequired[VersionsJson]


class FleetCompatJson(TypedDict):
    tables: list[TableCompatJson]
    errors: list[JsonObject]
    clients: list[ClientJson]


class CatalogueSideJson(TypedDict):
    max_version: int | Unknown
    versions: list[int] | None
    features: list[str] | Unknown | None
    sources: list[SourceJson]


ReleasesJson = TypedDict("ReleasesJson", {"from": str | None, "before": str | None})


class CatalogueEntryJson(ClientJson):
    aliases: list[str]
    product: str
    releases: ReleasesJson | None
    path: str | None
    tested_here: str | None
    verified: bool
    read: CatalogueSideJson | None
    write: CatalogueSideJson | None


# --- the typed outcome ---------------------------------------------------------------------------

class ClientCompat(Struct, frozen=True):
    """One client's verdicts on one table, with the footprint of every step of its plan."""

    verdict: ClientVerdict
    footprints: Mapping[str, RewriteFootprint | None] = field(default_factory=dict)

    @property
    def client(self) -> Client:
        return self.verdict.client

    @property
    def blocked_read(self) -> bool:
        return self.verdict.read.verdict in (Verdict.NO, Verdict.MISREADS)

    @property
    def blocked_write(self) -> bool:
        """Cannot write this table (a client that writes no Delta table at all is ``n/a``)."""
        return self.verdict.write.verdict in (Verdict.NO, Verdict.MISREADS)

    def to_json(self) -> ClientCompatJson:
        c, v = self.client, self.verdict
        return {
            "client": c.id, "name": c.name, "family": c.family, "versions": c.versions,
            "read": access_json(v.read), "write": access_json(v.write),
            "unblock": None if v.plan is None else self._unblock_json(v.plan),
            "sources": client_sources(c),
        }

    def _unblock_json(self, plan: UnblockPlan) -> UnblockJson:
        v = self.verdict
        return {
            "possible": plan.possible,
            "steps": [{"feature": s.feature, "required_by": s.required_by_blocker,
                       "checkpoint_protection": s.checkpoint_protection,
                       "rewrite": footprint_json(s.may_rewrite_data, self.footprints.get(s.feature))}
                      for s in plan.steps],
            "undroppable": [{"feature": u.feature, "reason": u.reason} for u in plan.undroppable],
            "protocol_after": protocol_json(plan.protocol_after) if plan.protocol_after is not None else None,
            "read_after": access_json(v.read_after) if v.read_after is not None else None,
            "write_after": access_json(v.write_after) if v.write_after is not None else None,
            "truncate_history_before_write": v.truncate_history_for_write,
            "notes": list(plan.notes),
        }


class TableCompat(Struct, frozen=True, dict=True):
    """Every selected client's verdicts on ``table`` at ``version``.

    ``schema`` (the table's, when read) is what the verdicts were made from: it takes no part in
    equality or the repr. ``dict=True``: the instance dict holds the cached summary."""

    table: str
    version: int
    protocol: Protocol
    clients: tuple[ClientCompat, ...]
    notes: tuple[str, ...] = ()
    schema: Mapping[str, Any] | None = None

    def _compared_fields(self) -> tuple[Any, ...]:
        return (self.table, self.version, self.protocol, self.clients, self.notes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TableCompat):
            return NotImplemented
        return self._compared_fields() == other._compared_fields()

    def __hash__(self) -> int:
        return hash(self._compared_fields())

    def __repr__(self) -> str:
        return (f"TableCompat(table={self.table!r}, version={self.version!r}, protocol={self.protocol!r}, "
                f"clients={self.clients!r}, notes={self.notes!r})")

    @property
    def blocked_read(self) -> list[str]:
        return [c.client.id for c in self.clients if c.blocked_read]

    @property
    def blocked_write(self) -> list[str]:
        return [c.client.id for c in self.clients if c.blocked_write]

    @cached_property
    def summary(self) -> SummaryJson:
        """How many clients read / write the table, the features that block them, and the one
        drop (with the dependents it needs dropped first) that unblocks the most clients:
        :func:`table_summary`."""
        return table_summary(self)

    def to_json(self) -> TableCompatJson:
        out: TableCompatJson = {
            "table": self.table, "version": self.version, "protocol": protocol_json(self.protocol),
            "clients": [c.to_json() for c in self.clients],
            "blocked": {"read": self.blocked_read, "write": self.blocked_write},
            "summary": self.summary,
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


class TableError(Struct, frozen=True):
    """A table of a fleet that could not be loaded, and why."""

    table: str
    error: DeltaDowngradeError

    @property
    def exit_code(self) -> int:
        return self.error.exit_code

    def to_json(self) -> JsonObject:
        """The table and its error as every error RESULT states one (error class, SQLSTATE,
        message)."""
        return {"table": self.table, **self.error.to_dict()}


class FleetCompat(Struct, frozen=True):
    tables: tuple[TableCompat, ...]
    errors: tuple[TableError, ...]
    clients: tuple[Client, ...]

    def to_json(self) -> FleetCompatJson:
        return {"tables": [t.to_json() for t in self.tables],
                "errors": [e.to_json() for e in self.errors],
                "clients": [client_json(c) for c in self.clients]}


# --- JSON pieces (the document's shape, README "compat") -----------------------------------------

def access_json(access: Access) -> AccessJson:
    return {"verdict": access.verdict.value,
            "blockers": [{"kind": b.kind, "feature": b.feature, "reason": b.reason} for b in access.blockers],
            "notes": list(access.notes)}


def footprint_json(may_rewrite: bool, footprint: RewriteFootprint | None) -> RewriteJson:
    """``needed``: the drop rewrites data files on this table; ``files`` / ``bytes``: the live
    files it touches; ``exact`` False: an upper bound (the rewrite decides per file from its
    footer). Unknown (a catalog name: the files are not reachable): ``needed`` says whether the
    feature has a data rewrite at all, ``files`` and ``bytes`` are null."""
    if footprint is None:
        if not may_rewrite:
            return {"needed": False, "files": 0, "bytes": 0, "exact": True}
        return {"needed": True, "files": None, "bytes": None, "exact": False}
    return {"needed": footprint.needed, "files": footprint.files, "bytes": footprint.bytes,
            "exact": footprint.exact}


def client_json(client: Client) -> ClientJson:
    return {"client": client.id, "name": client.name, "family": client.family, "versions": client.versions}


def catalogue_entry_json(client: Client) -> CatalogueEntryJson:
    """One entry of ``compat --list-clients --json``: what names it (id, aliases, product and
    release range, read path), what it accepts, and the sources of each side."""
    def side(s: ReadSide | WriteSide | None) -> CatalogueSideJson | None:
        if s is None:
            return None
        return {"max_version": s.max_version, "versions": s.versions, "features": s.features,
                "sources": [{"url": x.url, "states": x.states} for x in s.sources]}

    releases = client.releases
    return {**client_json(client), "aliases": list(client.aliases), "product": client.product_name,
            "releases": None if releases is None else {"from": releases.start, "before": releases.before},
            "path": client.path, "tested_here": client.tested_here or None,
            "verified": client.verified,
            "read": side(client.read), "write": side(client.write)}


def client_sources(client: Client) -> list[SourceJson]:
    """The read side's sources, then the write side's, each once."""
    out: list[SourceJson] = []
    seen: set[tuple[str, str]] = set()
    for side in (client.read, client.write):
        for source in (side.sources if side is not None else ()):
            key = (source.url, source.states)
            if key not in seen:
                seen.add(key)
                out.append({"url": source.url, "states": source.states})
    return out


# --- the summary ---------------------------------------------------------------------------------

_BLOCKING = (Verdict.NO, Verdict.MISREADS)
#: Of the blocking features, how many (the most blocking) are tried in pairs.
_PAIRED = 6


def _counts(accesses: Iterable[Access]) -> VerdictCountsJson:
    out: VerdictCountsJson = {"yes": 0, "blocked": 0, "unknown": 0, "n/a": 0}
    for a in accesses:
        key: Literal["yes", "blocked", "unknown", "n/a"] = (
               "blocked" if a.verdict in _BLOCKING else "yes" if a.verdict is Verdict.YES
               else "n/a" if a.verdict is Verdict.NOT_APPLICABLE else "unknown")
        out[key] += 1
    return out


def table_summary(report: TableCompat) -> SummaryJson:
    """The summary of one table (``summary`` in its ``compat --json`` document):

    - ``clients``; ``read`` / ``write``: how many verdicts are yes, blocked (no or misreads),
      unknown, n/a (an entry that does not write);
    - ``blocking_features``: each feature blamed by a blocked client, with how many clients it
      blocks from reading and from writing, most first;
    - ``best_drop``: of the drops of one blocking feature (its dependents first, as
      :func:`~delta_downgrade.compat.verdict.unblock_plan` orders them), the one after which the
      most clients now blocked can read (then write) - verdicts taken on the protocol the drop
      leaves, checkpointProtection included where the fast drop adds it; when no single feature
      unblocks anyone, the best pair; null when nothing blocks or nothing so small helps.
      ``features`` names what is dropped for, ``drops`` every drop in order."""
    from delta_downgrade.compat.verdict import read_verdict, unblock_plan, write_verdict

    reads = [c.verdict.read for c in report.clients]
    writes = [c.verdict.write for c in report.clients]
    blocks: dict[str, dict[str, int]] = {}
    for c in report.clients:
        for side, access in (("read", c.verdict.read), ("write", c.verdict.write)):
            if access.verdict in _BLOCKING:
                for feature in access.blocking_features:
                    blocks.setdefault(feature, {"read": 0, "write": 0})[side] += 1
    ranked = sorted(blocks.items(), key=lambda kv: (-kv[1]["read"], -kv[1]["write"], kv[0]))
    blocked = [c for c in report.clients if c.blocked_read or c.blocked_write]

    def unblocked_by(features: tuple[str, ...]) -> BestDropJson | None:
        plan = unblock_plan(report.protocol, features)
        if not plan.possible or plan.protocol_after is None:
            return None
        dropped = [s.feature for s in plan.steps]
        now_read, now_write = [], []
        for c in blocked:
            if c.blocked_read and read_verdict(c.client, plan.protocol_after, report.schema,
                                               dropped=dropped).verdict is Verdict.YES:
                now_read.append(c.client.id)
            if c.blocked_write and write_verdict(c.client, plan.protocol_after, report.schema,
                                                 dropped=dropped).verdict is Verdict.YES:
                now_write.append(c.client.id)
        if not (now_read or now_write):
            return None
        return {"features": list(features), "drops": dropped, "then_readable_by": now_read,
                "then_writable_by": now_write}

    def best_of(candidates: Iterable[tuple[str, ...]]) -> BestDropJson | None:
        found = [r for r in map(unblocked_by, candidates) if r is not None]
        return max(found, key=lambda r: (len(r["then_readable_by"]), len(r["then_writable_by"]),
                                         -len(r["drops"])), default=None)

    names = [f for f, _ in ranked]
    # one feature; when no single drop unblocks anyone (a client missing two reader features),
    # the best pair of the most blocking features
    best = best_of((f,) for f in names) or best_of(
        (a, b) for i, a in enumerate(names[:_PAIRED]) for b in names[i + 1:_PAIRED])
    return {"clients": len(report.clients), "read": _counts(reads), "write": _counts(writes),
            "blocking_features": [{"feature": f, "blocks_read": n["read"], "blocks_write": n["write"]}
                                  for f, n in ranked],
            "best_drop": best}


# --- clients -------------------------------------------------------------------------------------

def resolve_clients(catalogue: Catalogue, names: Sequence[str] | None) -> tuple[Client, ...]:
    """The catalogue's entries named by ``names`` (an id, an alias, or a family such as
    ``duckdb``), in catalogue order, each once; every entry when ``names`` is empty. An unknown
    name is :class:`UnknownClientError` with the nearest names."""
    if not names:
        return tuple(catalogue.clients)
    wanted: set[str] = set()
    for name in names:
        wanted.update(c.id for c in catalogue.family(name))
    return tuple(c for c in catalogue.clients if c.id in wanted)


# --- one table -----------------------------------------------------------------------------------

def compat_of_protocol(table: str, version: int, protocol: Protocol, schema: Mapping[str, Any] | None,
                       clients: Iterable[Client], footprint_of: FootprintOf,
                       notes: Sequence[str] = ()) -> TableCompat:
    """The verdicts of ``clients`` on a table described by its protocol and schema (None: not
    known, a client that needs it gets ``unknown``); ``footprint_of`` gives each planned
    feature's rewrite footprint, asked once per feature."""
    footprints: dict[str, RewriteFootprint | None] = {}

    def footprint(name: str) -> RewriteFootprint | None:
        if name not in footprints:
            footprints[name] = footprint_of(name)
        return footprints[name]

    out = []
    for client in clients:
        verdict = client_verdict(client, protocol, schema)
        steps = verdict.plan.steps if verdict.plan is not None else ()
        out.append(ClientCompat(verdict, {s.feature: footprint(s.feature) for s in steps}))
    return TableCompat(table, version, protocol, tuple(out), tuple(notes), schema)


@naming_table("table_or_snapshot")
def table_compat(table_or_snapshot: str | Snapshot, catalogue: Catalogue,
                 clients: Sequence[Client] | None = None, *,
                 storage_options: Mapping[str, str] | None = None) -> TableCompat:
    """Every client's verdicts on the latest version of a table (a path/URI, or a loaded
    :class:`Snapshot`); ``clients``: a selection (:func:`resolve_clients`), all by default.

    Only the log is read: the latest snapshot's protocol, metadata and, when a plan drops a
    feature with a data rewrite, the file state's Arrow columns (sizes, deletion vectors). A
    table whose reader features this package does not know is still reported (the plan calls
    them undroppable); an invalid protocol is refused, as by every command."""
    if isinstance(table_or_snapshot, str):
        from delta_downgrade.log.delta_log import DeltaLog

        snapshot = DeltaLog(table_or_snapshot, storage_options=storage_options).snapshot(check_read=False)
    else:
        snapshot = table_or_snapshot
    return compat_of_protocol(snapshot.table, snapshot.version, snapshot.protocol, snapshot.schema,
                              catalogue.clients if clients is None else clients,
                              _snapshot_footprints(snapshot))


def _snapshot_footprints(snapshot: Snapshot) -> FootprintOf:
    # The feature modules are imported only when a plan has steps: a table every client reads
    # loads none of them. One TraceContext: the Arrow state is built once for every feature.
    context: list[TraceContext] = []

    def footprint_of(name: str) -> RewriteFootprint:
        from delta_downgrade.features import removable
        from delta_downgrade.features.base import TraceContext

        if not context:
            context.append(TraceContext(snapshot))
        return removable(name).rewrite_footprint(context[0])

    return footprint_of


# --- a fleet -------------------------------------------------------------------------------------

def fleet_compat(tables: Iterable[str], catalogue: Catalogue, clients: Sequence[Client] | None = None, *,
                 storage_options: Mapping[str, str] | None = None,
                 compat_of: Callable[[str], TableCompat] | None = None) -> FleetCompat:
    """:func:`table_compat` of every table; a table that fails with a
    :class:`DeltaDowngradeError` (missing, not Delta, invalid protocol …) is an entry in
    ``errors`` and the others still run. ``compat_of``: how one table is reported (the CLI passes
    one that also reaches catalog names through Delta SQL); paths by default."""
    selected = tuple(catalogue.clients if clients is None else clients)

    def by_path(table: str) -> TableCompat:
        return table_compat(table, catalogue, selected, storage_options=storage_options)

    report = compat_of or by_path
    done: list[TableCompat] = []
    errors: list[TableError] = []
    for table in tables:
        try:
            done.append(report(table))
        except DeltaDowngradeError as exc:
            errors.append(TableError(table, exc))
    return FleetCompat(tuple(done), tuple(errors), selected)
