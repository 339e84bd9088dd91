"""Can client X read / write a table of protocol P, what blocks it, and what would unblock it.

Pure functions of a :class:`~delta_downgrade.protocol.protocol.Protocol`, the table's schema (a
dict, optional) and a catalogue :class:`~delta_downgrade.compat.catalogue.Client`. The rules are
PROTOCOL.md's:

- "Protocol Evolution": a legacy protocol (reader < 3, writer < 7) implies its features; reader
  version 2 means column mapping.
- "Table Features": with reader version 3 a reader must support every name in
  ``readerFeatures``; readers ignore writer-only features. With writer version 7 a writer must
  support every name in ``writerFeatures`` (and, being a reader too, every reader feature).

A verdict is ``yes``, ``no`` (refuses, or fails on the table), ``misreads`` (accepts the protocol
but ignores a reader feature it implies, so it returns wrong data: deltalake 1.6.6's pyarrow
reader on a reader-version-2 column-mapping table), ``unknown`` (the catalogue has no source), or
``n/a`` (the entry describes a read path only).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

from msgspec import Struct, field
from delta_downgrade.compat.catalogue import Client, ReadSide
from delta_downgrade.protocol.features import CHECKPOINT_PROTECTION, get_feature
from delta_downgrade.protocol.protocol import Protocol

__all__ = ["Access", "Blocker", "ClientVerdict", "FeatureDrop", "UnblockPlan", "Verdict", "Undroppable",
           "client_verdict", "read_verdict", "unblock_plan", "write_verdict"]


class Verdict(str, Enum):
    YES = "yes"
    NO = "no"
    MISREADS = "misreads"
    UNKNOWN = "unknown"
    NOT_APPLICABLE = "n/a"


class Blocker(Struct, frozen=True):
    """One reason a client cannot use the table. ``feature`` is the table feature to blame (None
    for a protocol version or a schema detail no feature owns); ``kind`` is one of
    ``reader_version``, ``writer_version``, ``feature``, ``field_metadata``, ``invalid_protocol``."""

    kind: str
    reason: str
    feature: str | None = None


class Access(Struct, frozen=True):
    verdict: Verdict
    blockers: tuple[Blocker, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def blocking_features(self) -> tuple[str, ...]:
        return tuple(sorted({b.feature for b in self.blockers if b.feature is not None}))

    @property
    def blocked_only_by_checkpoint_protection(self) -> bool:
        """Refused (for writes) by checkpointProtection alone, which the fast drops add and only
        ``truncate-history`` removes (Checkpoint Protection RFC, "Dropping the feature")."""
        return self.verdict is Verdict.NO and set(self.blocking_features) == {CHECKPOINT_PROTECTION}


# Field metadata keys whose values are JSON objects or arrays, and the features that write them
# (PROTOCOL.md "Type Widening" delta.typeChanges, "Iceberg Compatibility V2"
# parquet.field.nested.ids; the Collated String Type RFC's __COLLATIONS).
_FIELD_METADATA_OWNERS: dict[str, tuple[str, ...]] = {
    "delta.typeChanges": ("typeWidening", "typeWidening-preview"),
    "parquet.field.nested.ids": ("icebergCompatV1", "icebergCompatV2", "icebergCompatV3"),
    "__COLLATIONS": ("collations",),
}
_I32 = (-(2 ** 31), 2 ** 31 - 1)


def _non_scalar_metadata(schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(column path, key) of every field metadata value that is not a string, a boolean or a
    32-bit integer, anywhere in the schema (nested structs, arrays and maps included)."""
    out: list[tuple[str, str]] = []

    def visit_type(dtype: Any, path: str) -> None:
        if not isinstance(dtype, Mapping):
            return
        kind = dtype.get("type")
        if kind == "struct":
            for f in dtype.get("fields") or ():
                visit_field(f, f"{path}.{f.get('name')}" if path else str(f.get("name")))
        elif kind == "array":
            visit_type(dtype.get("elementType"), f"{path}.element")
        elif kind == "map":
            visit_type(dtype.get("keyType"), f"{path}.key")
            visit_type(dtype.get("valueType"), f"{path}.value")

    def visit_field(f: Mapping[str, Any], path: str) -> None:
        for key, value in (f.get("metadata") or {}).items():
            scalar = isinstance(value, (str, bool)) or (
                isinstance(value, int) and _I32[0] <= value <= _I32[1])
            if not scalar:
                out.append((path, key))
        visit_type(f.get("type"), path)

    visit_type(schema, "")
    return out


def _metadata_owner(key: str, protocol: Protocol) -> str | None:
    for name in _FIELD_METADATA_OWNERS.get(key, ()):
        if name in protocol.features:
            return name
    return None


def read_verdict(client: Client, protocol: Protocol, schema: Mapping[str, Any] | None = None, *,
                 dropped: Iterable[str] = ()) -> Access:
    """Whether ``client`` reads the table's latest version correctly. ``dropped``: features a plan
    drops, whose field metadata (``delta.typeChanges`` …) the drop removes from the schema."""
    side = client.read
    r = protocol.min_reader_version
    accepted = side.accepts_version(r)
    if accepted is None:
        return Access(Verdict.UNKNOWN, notes=("the catalogue does not know which reader versions "
                                              "this client accepts",))
    if not accepted:
        return Access(Verdict.NO, _reader_version_blockers(client, protocol, _version_reason("reader", r, side)))
    if protocol.problems():
        # Clients differ on invalid protocols (delta-kernel-rs refuses them outright).
        return Access(Verdict.UNKNOWN, (Blocker("invalid_protocol", "; ".join(protocol.problems())),),
                      ("the protocol action is invalid (PROTOCOL.md 'Table Features')",))
    supported = client.read_features()
    needed = protocol.reader_side_features
    if supported is None:
        if needed:
            return Access(Verdict.UNKNOWN, notes=("the catalogue does not know this client's reader "
                                                  "features; the table needs " + ", ".join(sorted(needed)),))
        verdict, blockers = Verdict.YES, []
    else:
        unsure = side.undetermined(needed - supported)
        missing = sorted(needed - supported - unsure)
        if missing and protocol.supports_reader_features:
            blockers = [Blocker("feature", f"reader feature {n} is not supported", n) for n in missing]
            return Access(Verdict.NO, tuple(blockers))
        if unsure:
            return Access(Verdict.UNKNOWN, notes=(_unsure_note("reader", unsure),))
        if missing:
            # A legacy reader version accepted without the feature it implies: the client reads,
            # wrongly (column mapping ignored: physical names unresolved, columns come back null).
            blockers = [Blocker("feature", f"reader version {r} implies {n}, which this client "
                                           "accepts without applying it", n) for n in missing]
            return Access(Verdict.MISREADS, tuple(blockers))
        verdict, blockers = Verdict.YES, []
        for combo in side.misreads_with:
            if set(combo) <= protocol.features:
                return Access(Verdict.MISREADS, tuple(
                    Blocker("feature", "this client reads tables with " + " + ".join(combo)
                            + " wrongly (observed, see the catalogue's sources)", n) for n in combo))
    return _field_metadata_check(side, protocol, schema, verdict, frozenset(dropped))


def _reader_version_blockers(client: Client, protocol: Protocol, reason: str) -> tuple[Blocker, ...]:
    """A refused reader version, blamed on the reader-side features that raise it (PROTOCOL.md
    "Protocol Evolution": reader version 2 is column mapping, 3 lists readerFeatures) and that the
    client does not support: dropping them lowers the version (the protocol is normalised on each
    drop). Every reader-side feature when the client's features are unknown; none (a blocker no
    drop removes) when the table has no reader-side feature."""
    needed = protocol.reader_side_features
    supported = client.read_features()
    owners = sorted(needed - supported) if supported is not None else sorted(needed)
    if not owners:
        return (Blocker("reader_version", reason),)
    return tuple(Blocker("reader_version", f"{reason}; {n} needs it", n) for n in owners)


def _field_metadata_check(side: ReadSide, protocol: Protocol, schema: Mapping[str, Any] | None,
                          verdict: Verdict, dropped: frozenset[str]) -> Access:
    if side.field_metadata == "any":
        return Access(verdict)
    if schema is None:
        return Access(Verdict.UNKNOWN, notes=("this client parses only scalar field metadata and "
                                              "the table's schema was not given",))
    found = [(path, key) for path, key in _non_scalar_metadata(schema)
             if not dropped & set(_FIELD_METADATA_OWNERS.get(key, ()))]
    if not found:
        return Access(verdict)
    blockers = tuple(
        Blocker("field_metadata", f"column {path}: field metadata {key} is not a string, boolean "
                                  "or 32-bit integer, which this client's schema parser rejects",
                _metadata_owner(key, protocol))
        for path, key in found)
    return Access(Verdict.NO, blockers)


def write_verdict(client: Client, protocol: Protocol, schema: Mapping[str, Any] | None = None, *,
                  dropped: Iterable[str] = ()) -> Access:
    """Whether ``client`` can commit to the table (PROTOCOL.md: writers support every feature of
    the protocol, reader features included)."""
    side = client.write
    if side is None:
        return Access(Verdict.NOT_APPLICABLE, notes=("this entry describes a read path only",))
    if side.max_version == 0:
        # A read-only client (a query engine's reader, a sharing recipient): no table blocks its
        # writes, there are none to unblock.
        return Access(Verdict.NOT_APPLICABLE, notes=("this client does not write Delta tables",))
    read = read_verdict(client, protocol, schema, dropped=dropped)
    if read.verdict in (Verdict.NO, Verdict.MISREADS):
        return Access(Verdict.NO, read.blockers, ("a writer must read the table first",))
    w = protocol.min_writer_version
    accepted = side.accepts_version(w)
    if accepted is None:
        return Access(Verdict.UNKNOWN, notes=("the catalogue does not know which writer versions "
                                              "this client accepts",))
    if not accepted:
        return Access(Verdict.NO, (Blocker("writer_version", _version_reason("writer", w, side)),))
    if read.verdict is Verdict.UNKNOWN:
        return Access(Verdict.UNKNOWN, read.blockers, read.notes)
    supported = client.write_features()
    if supported is None:
        return Access(Verdict.UNKNOWN, notes=("the catalogue does not know this client's writer "
                                              "features",))
    unsure = side.undetermined(protocol.features - supported)
    missing = sorted(protocol.features - supported - unsure)
    if missing:
        return Access(Verdict.NO, tuple(Blocker("feature", f"feature {n} is not supported for writes", n)
                                        for n in missing))
    if unsure:
        return Access(Verdict.UNKNOWN, notes=(_unsure_note("writer", unsure),))
    return Access(Verdict.YES)


def _unsure_note(side: str, features: Iterable[str]) -> str:
    return (f"no source states whether this client supports {side} feature(s) "
            + ", ".join(sorted(features)) + " (the catalogue's sources name only some features)")


def _version_reason(side: str, version: int, spec: Any) -> str:
    if spec.versions is not None:
        return f"{side} version {version} is not one this client accepts ({spec.versions})"
    return f"{side} version {version} is above this client's maximum {spec.max_version}"


# --- the plan that unblocks a client --------------------------------------------------------------

class FeatureDrop(Struct, frozen=True):
    """One ``drop-feature`` run. ``checkpoint_protection``: the fast drop adds checkpointProtection
    (the feature needs history protection, Checkpoint Protection RFC). ``may_rewrite_data``: the
    feature has a data rewrite, run when its traces are in data files (DVs, physical names, widened
    types)."""

    feature: str
    checkpoint_protection: bool
    may_rewrite_data: bool
    required_by_blocker: str | None = None


class Undroppable(Struct, frozen=True):
    feature: str
    reason: str


class UnblockPlan(Struct, frozen=True):
    steps: tuple[FeatureDrop, ...] = ()
    undroppable: tuple[Undroppable, ...] = ()
    protocol_after: Protocol | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def possible(self) -> bool:
        return not self.undroppable


def unblock_plan(protocol: Protocol, features: Iterable[str]) -> UnblockPlan:
    """The drops that remove ``features`` from ``protocol``: each feature's dependents (features of
    the table that require it, delta-spark's DROP FEATURE refuses while they remain) first, then
    the feature; or why a feature cannot be dropped by this package."""
    wanted = sorted(set(features))
    undroppable: list[Undroppable] = []
    cannot_write = sorted(protocol.unsupported_for_write())
    if cannot_write:
        return UnblockPlan(undroppable=tuple(
            Undroppable(n, "this package cannot write the log of a table with this feature "
                           "(unknown to it, or commits governed by a catalog or redirect)")
            for n in cannot_write))
    order: list[str] = []
    required_by: dict[str, str] = {}

    def visit(name: str, blocker: str, trail: tuple[str, ...]) -> bool:
        if name in order:
            return True
        spec = get_feature(name)
        if spec is None:
            undroppable.append(Undroppable(name, "unknown table feature"))
            return False
        if not spec.removable:
            why = "not removable: delta-spark's DROP FEATURE does not support it, nor does this package"
            if trail:
                why += f" (it requires {trail[-1]}, which must go to unblock the client)"
            undroppable.append(Undroppable(name, why))
            return False
        ok = True
        for dependent in sorted(protocol.dependents_of(name)):
            if dependent not in trail:
                ok = visit(dependent, blocker, (*trail, name)) and ok
        if ok:
            order.append(name)
            if name != blocker:
                required_by[name] = blocker
        return ok

    for name in wanted:
        visit(name, name, ())
    if undroppable:
        return UnblockPlan(undroppable=tuple(undroppable))
    from delta_downgrade.features import removable  # the drop behaviours, only when planning

    steps: list[FeatureDrop] = []
    after = protocol
    for name in order:
        spec = get_feature(name)
        assert spec is not None
        protect = spec.requires_history_protection and name != CHECKPOINT_PROTECTION
        steps.append(FeatureDrop(name, protect, removable(name).rewrite is not None,
                              required_by.get(name)))
        after = after.downgrade_for_drop(name, checkpoint_protection=protect)
    return UnblockPlan(tuple(steps), protocol_after=after)


class ClientVerdict(Struct, frozen=True):
    client: Client
    read: Access
    write: Access
    plan: UnblockPlan | None = None
    read_after: Access | None = None
    write_after: Access | None = None
    truncate_history_for_write: bool = False


def client_verdict(client: Client, protocol: Protocol, schema: Mapping[str, Any] | None = None) -> ClientVerdict:
    """Read and write verdicts for ``client``, and when a feature blocks it, the plan and the
    verdicts on the protocol the plan leaves. ``truncate_history_for_write``: after the plan only
    checkpointProtection (added by the fast drops) keeps the client from writing, which
    ``truncate-history`` removes (Checkpoint Protection RFC, "Dropping the feature")."""
    read = read_verdict(client, protocol, schema)
    write = write_verdict(client, protocol, schema)
    blocking = set(read.blocking_features) | set(write.blocking_features)
    if not blocking:
        return ClientVerdict(client, read, write)
    plan = unblock_plan(protocol, blocking)
    unowned = [b.reason for b in (*read.blockers, *write.blockers) if b.feature is None]
    if unowned:
        plan = UnblockPlan(plan.steps, plan.undroppable, plan.protocol_after,
                           plan.notes + tuple(f"no feature drop removes: {r}" for r in unowned))
    if not plan.possible or plan.protocol_after is None:
        return ClientVerdict(client, read, write, plan)
    after = plan.protocol_after
    dropped = [s.feature for s in plan.steps]
    read_after = read_verdict(client, after, schema, dropped=dropped)
    write_after = write_verdict(client, after, schema, dropped=dropped)
    return ClientVerdict(client, read, write, plan, read_after, write_after,
                         write_after.blocked_only_by_checkpoint_protection)
