"""The ``protocol`` action as a value type, with the algebra DROP FEATURE needs.

Rules implemented here, with the tags their citations below use:
- [TF] PROTOCOL.md "Table Features": which lists may appear with which versions, and where each
  kind of feature goes;
- [PE] PROTOCOL.md "Protocol Evolution": legacy versions imply features;
- [DS] delta-spark's ``Protocol`` and DROP FEATURE: minimum versions, normalize / denormalize,
  ``removeFeature``, the commit-time guard ``canDowngradeTo``, validation and dependents;
- [CP] the Checkpoint Protection RFC: the protocol of a fast drop's downgrade commit (a TRUNCATE
  HISTORY drop's is plain ``removeFeature``, [DS]).

Feature names in a protocol action are matched **exactly** against the active registry (see
:func:`delta_downgrade.protocol.features.active_registry`). Spark resolves them
case-insensitively, but another client (delta-rs, Kernel) may not, so a differently-spelled name is
treated as an unknown feature: unsupported, and carried along untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from msgspec import Struct
from msgspec.structs import force_setattr
from delta_downgrade.errors import InvalidProtocolError
from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.protocol.features import (
    CHECKPOINT_PROTECTION,
    TABLE_FEATURES_READER_VERSION,
    TABLE_FEATURES_WRITER_VERSION,
    FeatureKind,
    TableFeature,
    active_registry,
    get_feature,
    lookup_feature,
)

__all__ = ["Protocol", "ProtocolJson", "protocol_document", "protocol_json", "required_closure"]

_MAX_READER = TABLE_FEATURES_READER_VERSION
_MAX_WRITER = TABLE_FEATURES_WRITER_VERSION


def _as_names(value: Iterable[str] | None, what: str) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        # A bare string would silently become a set of characters.
        raise TypeError(f"{what} must be a collection of feature names, not a string")
    names = frozenset(value)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what} must hold strings, got {name!r}")
    return names


def _unknown_feature(name: str, *, reader_writer: bool) -> TableFeature:
    """Stand-in for a name the registry lacks. Where it was listed is all we know: a name in
    ``readerFeatures`` is reader-writer and needs (3,7); otherwise it is writer-only, (1,7)."""
    if reader_writer:
        return TableFeature(name, FeatureKind.READER_WRITER, _MAX_READER, _MAX_WRITER,
                            package_reads=False, package_writes=False)
    return TableFeature(name, FeatureKind.WRITER, 1, _MAX_WRITER,
                        package_reads=False, package_writes=False)


def _canonical(name: str) -> str:
    """The registry's spelling of a user-typed name; the name itself when unknown."""
    feature = lookup_feature(name)
    return feature.name if feature is not None else name


def required_closure(names: Iterable[str]) -> frozenset[str]:
    """``names`` plus everything they require, transitively (Spark's ``withFeature`` adds
    ``requiredFeatures`` recursively). Unknown names contribute only themselves."""
    out: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in out:
            continue
        out.add(name)
        feature = get_feature(name)
        if feature is not None:
            stack.extend(feature.required_features - out)
    return frozenset(out)


def _minimum_versions(features: Iterable[TableFeature]) -> tuple[int, int]:
    """[DS] ``minimumRequiredVersions``: the highest minimum of each side, at least 1 (writer-only
    features say reader 0 in Spark; 0 and 1 are alike here)."""
    reader, writer = 1, 1
    for feature in features:
        reader = max(reader, feature.min_reader_version)
        writer = max(writer, feature.min_writer_version)
    return reader, writer


class Protocol(Struct, frozen=True):
    """A ``protocol`` action (PROTOCOL.md "Protocol Evolution").

    ``reader_features`` / ``writer_features`` are None when the action has no such list, which is
    distinct from an empty list. Any iterable of names is accepted and stored as a frozenset.
    Instances are hashable and compare by value. Construction does not validate; see
    :meth:`problems` and :meth:`validate`.
    """

    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str] | None = None
    writer_features: frozenset[str] | None = None

    def __post_init__(self) -> None:
        for what in ("min_reader_version", "min_writer_version"):
            value = getattr(self, what)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{what} must be an int, got {value!r}")
        force_setattr(self, "reader_features", _as_names(self.reader_features, "reader_features"))
        force_setattr(self, "writer_features", _as_names(self.writer_features, "writer_features"))

    # --- JSON shape ------------------------------------------------------------------------------

    @classmethod
    def from_action(cls, obj: Mapping[str, Any]) -> Protocol:
        """From the JSON ``protocol`` action. Absent or null lists stay None. Malformed fields
        raise :class:`InvalidProtocolError`; a well-formed but illegal protocol does not (ask
        :meth:`problems`)."""
        try:
            reader = obj["minReaderVersion"]
            writer = obj["minWriterVersion"]
        except KeyError as exc:
            raise InvalidProtocolError(f"protocol action lacks {exc.args[0]}: {dict(obj)!r}") from None
        for key, value in (("minReaderVersion", reader), ("minWriterVersion", writer)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidProtocolError(f"protocol {key} must be an integer, got {value!r}")
        lists: dict[str, frozenset[str] | None] = {}
        for key in ("readerFeatures", "writerFeatures"):
            value = obj.get(key)
            if value is not None and (
                    isinstance(value, (str, bytes, Mapping))
                    or not all(isinstance(v, str) for v in value)):
                raise InvalidProtocolError(f"protocol {key} must be a list of names, got {value!r}")
            lists[key] = None if value is None else frozenset(value)
        return cls(reader, writer, lists["readerFeatures"], lists["writerFeatures"])

    def to_action(self) -> JsonObject:
        """The JSON ``protocol`` action; lists sorted (deterministic commits), absent lists
        omitted."""
        out: JsonObject = {"minReaderVersion": self.min_reader_version,
                               "minWriterVersion": self.min_writer_version}
        if self.reader_features is not None:
            out["readerFeatures"] = sorted(self.reader_features)
        if self.writer_features is not None:
            out["writerFeatures"] = sorted(self.writer_features)
        return out

    def __str__(self) -> str:
        parts = [str(self.min_reader_version), str(self.min_writer_version)]
        if self.reader_features is not None:
            parts.append("R=[" + ",".join(sorted(self.reader_features)) + "]")
        if self.writer_features is not None:
            parts.append("W=[" + ",".join(sorted(self.writer_features)) + "]")
        return "(" + ",".join(parts) + ")"

    def __repr__(self) -> str:
        return f"Protocol{self}"

    # --- validity ([TF]) -------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """Every way this action breaks [TF], in a stable order; empty when valid.

        Unknown feature names are not a validity problem (they make the table unsupported, see
        :meth:`unsupported_for_read`). Beyond the brief's list, a known feature listed while the
        reader version is below its minimum is a problem (e.g. ``(1,7,W=[columnMapping])`` or
        ``(2,7,W=[deletionVectors])``): old readers would read such a table wrongly, and Spark's
        ``withFeature`` refuses to build it.
        """
        r, w = self.min_reader_version, self.min_writer_version
        rf, wf = self.reader_features, self.writer_features
        out: list[str] = []
        if r < 1:
            out.append(f"minReaderVersion {r} is below 1")
        if w < 1:
            out.append(f"minWriterVersion {w} is below 1")
        if r > _MAX_READER:
            out.append(f"minReaderVersion {r} is unknown (this package supports up to {_MAX_READER})")
        if w > _MAX_WRITER:
            out.append(f"minWriterVersion {w} is unknown (this package supports up to {_MAX_WRITER})")
        if r == _MAX_READER and w != _MAX_WRITER:
            out.append(f"minReaderVersion 3 requires minWriterVersion 7, got {w}")
        if r == _MAX_READER and rf is None:
            out.append("minReaderVersion 3 requires a readerFeatures list")
        if rf is not None and r != _MAX_READER:
            out.append(f"readerFeatures is only allowed with minReaderVersion 3, got {r}")
        if w == _MAX_WRITER and wf is None:
            out.append("minWriterVersion 7 requires a writerFeatures list")
        if wf is not None and w != _MAX_WRITER:
            out.append(f"writerFeatures is only allowed with minWriterVersion 7, got {w}")
        if rf is not None:
            missing = sorted(rf - (wf or frozenset()))
            if missing:
                out.append("reader features missing from writerFeatures: " + ", ".join(missing))
            writer_only = sorted(n for n in rf if (f := get_feature(n)) is not None
                                 and f.is_writer_only)
            if writer_only:
                out.append("writer-only features listed in readerFeatures: "
                           + ", ".join(writer_only))
        if wf is not None and r == _MAX_READER:
            # Under reader 3 every reader-writer feature, legacy columnMapping included, must be
            # in both lists; only with reader 2 does columnMapping live in writerFeatures alone.
            not_read = sorted(n for n in wf - (rf or frozenset())
                              if (f := get_feature(n)) is not None and f.is_reader_writer)
            if not_read:
                out.append("reader-writer features missing from readerFeatures: "
                           + ", ".join(not_read))
        too_new = sorted(n for n in self.explicit_features
                         if (f := get_feature(n)) is not None and 1 <= r < f.min_reader_version)
        if too_new:
            out.append(f"features needing a higher minReaderVersion than {r}: " + ", ".join(too_new))
        return out

    def validate(self) -> Protocol:
        """Raise :class:`InvalidProtocolError` listing :meth:`problems`; return self when valid."""
        problems = self.problems()
        if problems:
            raise InvalidProtocolError(
                f"invalid protocol {self}: " + "; ".join(problems),
                params={"protocol": str(self), "problems": problems})
        return self

    # --- feature sets ([PE]) ---------------------------------------------------------------------

    @property
    def supports_reader_features(self) -> bool:
        """Reader version 3: readers must understand the explicit ``readerFeatures``."""
        return self.min_reader_version == _MAX_READER

    @property
    def supports_writer_features(self) -> bool:
        """Writer version 7: features are listed explicitly and nothing is implied."""
        return self.min_writer_version == _MAX_WRITER

    # ARCHITECTURE.md spells these with a ``table_features`` infix; both names are kept.
    supports_table_features_reader = supports_reader_features
    supports_table_features_writer = supports_writer_features

    @property
    def is_legacy(self) -> bool:
        """A protocol without writer features: its versions alone say what is supported."""
        return self.min_writer_version < _MAX_WRITER

    @property
    def implicit_features(self) -> frozenset[str]:
        """[PE]: with w < 7, every legacy feature whose minimum versions are both met; with
        w = 7 nothing is implied. So (1,5) ≡ (1,4), (2,4) ≡ (1,4) and (2,6) has all seven."""
        r, w = self.min_reader_version, self.min_writer_version
        if not self.is_legacy:
            return frozenset()
        return frozenset(f.name for f in active_registry().values()
                         if f.is_legacy and f.min_reader_version <= r and f.min_writer_version <= w)

    @property
    def explicit_features(self) -> frozenset[str]:
        """The names listed in either list."""
        return (self.reader_features or frozenset()) | (self.writer_features or frozenset())

    @property
    def features(self) -> frozenset[str]:
        """Every supported feature name, implied or listed (Spark's
        ``implicitlyAndExplicitlySupportedFeatureNames``)."""
        return self.implicit_features | self.explicit_features

    @property
    def reader_side_features(self) -> frozenset[str]:
        """Features a reader must understand: the ``readerFeatures`` list; for legacy reader 2,
        the legacy reader-writer features (columnMapping) the reader version stands for; and
        reader-writer features listed in ``writerFeatures`` only (columnMapping under (2,7) —
        for an invalid protocol, anything of that kind, to stay on the safe side)."""
        r = self.min_reader_version
        out = set(self.reader_features or ())
        if self.is_legacy:
            out.update(f.name for f in active_registry().values()
                       if f.is_legacy and f.is_reader_writer and f.min_reader_version <= r)
        out.update(n for n in self.writer_features or ()
                   if (f := get_feature(n)) is not None and f.is_reader_writer)
        return frozenset(out)

    def dependents_of(self, name: str) -> frozenset[str]:
        """Features of this protocol that directly require ``name`` ([DS] dependents)."""
        return frozenset(n for n in self.features
                         if (f := get_feature(n)) is not None and name in f.required_features)

    def unsupported_for_read(self) -> frozenset[str]:
        """Reader-side features this package cannot read: unknown, or ``package_reads`` false."""
        return frozenset(n for n in self.reader_side_features
                         if (f := get_feature(n)) is None or not f.package_reads)

    def unsupported_for_write(self) -> frozenset[str]:
        """Features (any side) whose log this package cannot write: unknown, or
        ``package_writes`` false."""
        return frozenset(n for n in self.features
                         if (f := get_feature(n)) is None or not f.package_writes)

    # --- algebra ([DS]) --------------------------------------------------------------------------

    def _require_known_versions(self) -> None:
        """Rewriting a protocol whose versions we do not know would misstate it."""
        r, w = self.min_reader_version, self.min_writer_version
        if not (1 <= r <= _MAX_READER and 1 <= w <= _MAX_WRITER):
            raise InvalidProtocolError(f"cannot change protocol {self}: unknown versions")

    def _info(self, name: str) -> TableFeature:
        feature = get_feature(name)
        if feature is not None:
            return feature
        return _unknown_feature(name, reader_writer=name in (self.reader_features or ()))

    @classmethod
    def _normal_form(cls, names: frozenset[str], infos: Mapping[str, TableFeature]) -> Protocol:
        """[DS] normalize, on a feature set: the legacy pair for the minimum versions when it
        implies exactly ``names``, else (r,7) listing them — reader-writer features in
        ``readerFeatures`` only when r ≥ 3 (so columnMapping with r = 2 is writer-listed only)."""
        reader, writer = _minimum_versions(infos[n] for n in names)
        if writer < _MAX_WRITER:
            legacy = cls(reader, writer)
            if legacy.implicit_features == names:
                return legacy
        # Empty sets never get here: their minimum (1,1) implies nothing, which matches.
        listed_for_read = None
        if reader >= _MAX_READER:
            listed_for_read = frozenset(n for n in names if infos[n].is_reader_writer)
        return cls(reader, _MAX_WRITER, listed_for_read, names)

    def normalized(self) -> Protocol:
        """[DS] normalize: the smallest spelling of the same feature set. Legacy protocols are
        already normal. Versions beyond those this package knows are left alone rather than
        reinterpreted."""
        if self.min_writer_version != _MAX_WRITER or self.min_reader_version > _MAX_READER:
            return self
        names = self.features
        return self._normal_form(names, {n: self._info(n) for n in names})

    def denormalized(self) -> Protocol:
        """[DS] denormalize: a legacy (r,w) spelled as (minReader(implicit),7) listing every
        implied feature; e.g. (2,5) → (2,7,W=[appendOnly,…,columnMapping]). Table-features
        protocols (and invalid versions) are returned as they are."""
        if not 1 <= self.min_writer_version < _MAX_WRITER:
            return self
        implied = self.implicit_features
        reader, _ = _minimum_versions(self._info(n) for n in implied)
        listed_for_read = None
        if reader >= _MAX_READER:  # never for today's legacy features; kept for symmetry
            listed_for_read = frozenset(n for n in implied if self._info(n).is_reader_writer)
        return Protocol(reader, _MAX_WRITER, listed_for_read, implied)

    def with_feature(self, name: str) -> Protocol:
        """Support ``name`` and, transitively, the features it requires; the result is
        normalized ([DS]). Re-adding a dropped feature gives back the original protocol.

        ``name`` is resolved case-insensitively; an unknown name is a ``ValueError`` because
        nothing says where it would go or what it needs.
        """
        self._require_known_versions()
        feature = lookup_feature(name)
        if feature is None:
            raise ValueError(f"unknown table feature {name!r}")
        base = self.denormalized()
        names = base.features | required_closure([feature.name])
        infos = {n: base._info(n) for n in names}
        return self._normal_form(names, infos)

    def without_feature(self, name: str) -> Protocol:
        """Spark's ``removeFeature``: denormalize, drop ``name`` from the lists, normalize ([DS]).

        Only ``name`` goes: dependents are the caller's business ([DS]). ``name`` is taken
        as spelled when the protocol lists it, else resolved case-insensitively.
        """
        self._require_known_versions()
        base = self.denormalized()
        target = name if name in base.features else _canonical(name)
        names = base.features - {target}
        infos = {n: base._info(n) for n in names}
        return self._normal_form(names, infos)

    def downgrade_for_drop(self, name: str, *, checkpoint_protection: bool) -> Protocol:
        """The protocol of the DROP FEATURE downgrade commit.

        Fast drop of a feature with history protection ([CP]): denormalize, add
        ``checkpointProtection``, remove ``name``, normalize. Otherwise — no history protection,
        or the TRUNCATE HISTORY path ([DS]) — just :meth:`without_feature`.
        """
        if not checkpoint_protection:
            return self.without_feature(name)
        return self.denormalized().with_feature(CHECKPOINT_PROTECTION).without_feature(name)

    @classmethod
    def minimum_for(cls, names: Iterable[str]) -> Protocol:
        """The normalized protocol supporting ``names`` and the features they require
        (transitively) — and nothing else, legacy implications aside. Names resolve
        case-insensitively; an unknown name is a ``ValueError``."""
        wanted: list[str] = []
        for name in names:
            feature = lookup_feature(name)
            if feature is None:
                raise ValueError(f"unknown table feature {name!r}")
            wanted.append(feature.name)
        closed = required_closure(wanted)
        return cls._normal_form(closed, {n: cls(1, 1)._info(n) for n in closed})

    def can_downgrade_to(self, new: Protocol, dropped: str) -> bool:
        """[DS] commit-time guard (Spark ``canDowngradeTo``): ``new`` supports exactly this
        protocol's features minus ``dropped``, except that ``checkpointProtection`` may be
        added. Anything else is ``DELTA_INVALID_PROTOCOL_DOWNGRADE``.

        Stricter than Spark in one point: ``dropped`` must be supported here. Spark's check
        passes when it is absent and nothing else changes, or when only checkpointProtection is
        added — an upgrade, not a drop; validation ([DS]) rules those out anyway.
        """
        old_names, new_names = self.features, new.features
        target = dropped if dropped in old_names else _canonical(dropped)
        if target not in old_names:
            return False
        added = new_names - old_names
        if not added <= {CHECKPOINT_PROTECTION}:
            return False
        return old_names - {target} == new_names - added


class ProtocolJson(TypedDict):
    """:func:`protocol_json`: the four keys of the ``protocol`` action, typed."""

    minReaderVersion: int
    minWriterVersion: int
    readerFeatures: list[str] | None
    writerFeatures: list[str] | None


def protocol_json(protocol: Protocol) -> ProtocolJson:
    """The protocol as a JSON document with all four keys of the ``protocol`` action
    (PROTOCOL.md "Protocol Evolution"), lists sorted as in the action; a feature list is null
    when the protocol has none."""
    reader, writer = protocol.reader_features, protocol.writer_features
    return {"minReaderVersion": protocol.min_reader_version, "minWriterVersion": protocol.min_writer_version,
            "readerFeatures": None if reader is None else sorted(reader),
            "writerFeatures": None if writer is None else sorted(writer)}


def protocol_document(protocol: Protocol) -> JsonObject:
    """:func:`protocol_json` as a value of a JSON document built as a :data:`JsonObject`."""
    doc = protocol_json(protocol)
    return {"minReaderVersion": doc["minReaderVersion"], "minWriterVersion": doc["minWriterVersion"],
            "readerFeatures": doc["readerFeatures"], "writerFeatures": doc["writerFeatures"]}
