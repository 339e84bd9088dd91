"""The client catalogue: which Delta clients read and write which protocols, as data.

The data is ``clients.toml`` next to this module (shipped in the wheel); this module holds its
schema (pydantic models), loads it and checks it. Every entry names the public source it rests on
(release notes, documentation, or a source file at a named tag); what no source states is the
explicit value ``"unknown"``, never a guess.

An entry describes one read path of one client version range: its ``[read]`` side says which
reader versions it accepts and which reader features it supports, its optional ``[write]`` side
the same for writes. PROTOCOL.md "Table Features" and "Protocol Evolution" give the rules the
verdicts apply (:mod:`delta_downgrade.compat.verdict`): a legacy reader version (1, 2) implies
its features, reader version 3 lists them in ``readerFeatures``.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Union

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from delta_downgrade.compat.spelling import normalise_product, parse_spelling
from delta_downgrade.errors import (
    AmbiguousClientError, BadClientCatalogueError, UncoveredClientVersionError, UnknownClientError,
)
from delta_downgrade.protocol.features import (
    TABLE_FEATURES_READER_VERSION,
    TABLE_FEATURES_WRITER_VERSION,
    FEATURES,
)
from delta_downgrade.protocol.protocol import Protocol

__all__ = ["Catalogue", "Client", "ReadSide", "Releases", "Source", "WriteSide", "UNKNOWN", "load_catalogue",
           "packaged_catalogue"]

UNKNOWN = "unknown"
Unknown = Literal["unknown"]

_ID = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")
_URL = re.compile(r"^https://\S+$")


class _Model(BaseModel):
    # A misspelt key is an error, not a silently ignored setting.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Model):
    """Where a statement comes from: a public URL and what it states there."""

    url: str
    states: str = Field(min_length=1)

    @field_validator("url")
    @classmethod
    def _https(cls, value: str) -> str:
        if not _URL.match(value):
            raise ValueError(f"a source is a public https URL, got {value!r}")
        return value


class _Side(_Model):
    """What one side (read or write) of a client accepts.

    ``max_version``: the highest protocol version it accepts (reader or writer). ``versions``: the
    versions it accepts, when not every one up to the maximum (deltalake's pyarrow reader refuses
    reader version 2). ``features``: the table features it supports; omitted for a client that
    knows only legacy versions (then they are those the maximum versions imply, PROTOCOL.md
    "Protocol Evolution"), ``"unknown"`` when no source says.
    """

    max_version: Union[int, Unknown]
    versions: list[int] | None = None
    features: Union[list[str], Unknown, None] = None
    unlisted_features: Literal["unsupported", "unknown"] = "unsupported"
    """What a feature missing from ``features`` means: ``"unsupported"`` (the source lists every
    supported feature: a source file's feature set), or ``"unknown"`` (the source names some
    supported features and is silent on the rest: vendor documentation)."""
    unsupported_features: list[str] = Field(default_factory=list)
    """With ``unlisted_features = "unknown"``: the features a source states are not supported
    (a runtime older than the one that added the feature)."""
    sources: list[Source] = Field(min_length=1)
    notes: str = ""

    @model_validator(mode="after")
    def _versions(self) -> "_Side":
        if isinstance(self.max_version, int) and self.max_version < 0:
            raise ValueError("max_version is a protocol version (0: does not do it at all)")
        if self.versions is not None:
            max_version = self.max_version
            if not isinstance(max_version, int):  # UNKNOWN
                raise ValueError("versions given while max_version is unknown")
            bad = [v for v in self.versions if not 1 <= v <= max_version]
            if bad or len(set(self.versions)) != len(self.versions):
                raise ValueError(f"versions {self.versions} must be distinct, 1..max_version")
        if isinstance(self.features, list) and len(set(self.features)) != len(self.features):
            raise ValueError("a feature is listed twice")
        if self.unlisted_features == UNKNOWN and not isinstance(self.features, list):
            raise ValueError('unlisted_features = "unknown" needs a features list')
        if self.unsupported_features:
            if self.unlisted_features != UNKNOWN:
                raise ValueError('unsupported_features is only meaningful with unlisted_features = "unknown"')
            both = set(self.unsupported_features) & set(self.features or ())
            if both:
                raise ValueError(f"{sorted(both)} listed as both supported and unsupported")
        return self

    def undetermined(self, missing: Iterable[str]) -> frozenset[str]:
        """Of ``missing`` (features the table needs and ``features`` does not list), those whose
        support no source states: empty unless ``unlisted_features`` is ``"unknown"``."""
        if self.unlisted_features != UNKNOWN:
            return frozenset()
        return frozenset(missing) - set(self.unsupported_features)

    def accepts_version(self, version: int) -> bool | None:
        max_version = self.max_version
        if not isinstance(max_version, int):  # UNKNOWN
            return None
        if self.versions is not None:
            return version in self.versions
        return 1 <= version <= max_version


class ReadSide(_Side):
    """``field_metadata``: ``"any"``, or ``"scalar-i32"`` for a reader whose schema parser takes
    only string, boolean and 32-bit integer field metadata values (delta-kernel-rs 0.1's
    ``MetadataValue``, used by deltalake 0.18): a schema with an object or array value there
    (collations' ``__COLLATIONS``, type widening's ``delta.typeChanges``) is unreadable to it."""

    field_metadata: Literal["any", "scalar-i32"] = "any"
    misreads_with: list[list[str]] = Field(default_factory=list)
    """Feature combinations the client accepts but reads wrongly, each observed on a real table
    named in ``sources`` (a table with every feature of one combination: ``misreads``)."""


class WriteSide(_Side):
    """``max_version`` 0: the client does not write Delta tables."""


class Releases(_Model):
    """A release range of a product: ``from`` (inclusive) up to ``before`` (exclusive), PEP 440
    versions (Trino's 447 and Databricks' 15.4 parse as such); either end may be open."""

    start: str | None = Field(default=None, alias="from")
    before: str | None = None

    @model_validator(mode="after")
    def _ordered(self) -> "Releases":
        if self.start is None and self.before is None:
            raise ValueError("a release range needs from, before or both")
        try:
            low, high = self.low, self.high
        except InvalidVersion as exc:
            raise ValueError(f"not a release version: {exc}") from None
        if low is not None and high is not None and not low < high:
            raise ValueError(f"from {self.start} is not below before {self.before}")
        return self

    @property
    def low(self) -> Version | None:
        return None if self.start is None else Version(self.start)

    @property
    def high(self) -> Version | None:
        return None if self.before is None else Version(self.before)

    def holds(self, low: Version, high: Version, *, inclusive_high: bool) -> bool:
        """Whether every release from ``low`` to ``high`` (exclusive unless ``inclusive_high``)
        lies in this range."""
        if self.low is not None and low < self.low:
            return False
        if self.high is None:
            return True
        return high < self.high if inclusive_high else high <= self.high

    def overlaps(self, low: Version, high: Version, *, inclusive_high: bool) -> bool:
        if self.high is not None and low >= self.high:
            return False
        if self.low is None:
            return True
        return high >= self.low if inclusive_high else high > self.low

    def text(self) -> str:
        if self.start is None:
            return f"< {self.before}"
        if self.before is None:
            return f">= {self.start}"
        return f">= {self.start}, < {self.before}"


class Client(_Model):
    """One client (and read path) over one version range."""

    id: str
    name: str
    family: str
    versions: str
    product: str | None = None
    """What users name with a version (``delta-sharing-spark 3.3``); the family when not given."""
    releases: Releases | None = None
    path: str | None = None
    aliases: list[str] = Field(default_factory=list)
    tested_here: str = ""
    verified: bool = False
    """The entry's verdicts were checked against the real client on this repository's tables
    (``make test-clients-matrix``; ``tested_here`` names the releases). False: the entry rests on
    its cited sources alone (a client that cannot run here: Databricks, Trino, Snowflake ...)."""
    read: ReadSide
    write: WriteSide | None = None

    @field_validator("id")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(f"a client id is lower-case [a-z0-9.+-], got {value!r}")
        return value

    @property
    def product_name(self) -> str:
        return self.product or self.family

    def read_features(self) -> frozenset[str] | None:
        """The reader features supported; None when unknown. Omitted in the file: the legacy
        reader-writer features the maximum reader version implies (columnMapping from 2)."""
        return _resolved(self.read, reader=True, max_reader=self.read.max_version)

    def write_features(self) -> frozenset[str] | None:
        """The features (any side) a writer supports; None when unknown. Omitted in the file:
        the legacy features the maximum reader and writer versions imply."""
        if self.write is None:
            return None
        return _resolved(self.write, reader=False, max_reader=self.read.max_version)


def _resolved(side: _Side, *, reader: bool, max_reader: int | str) -> frozenset[str] | None:
    if side.features == UNKNOWN:
        return None
    if isinstance(side.features, list):
        return frozenset(side.features)
    if side.max_version == UNKNOWN or max_reader == UNKNOWN:
        return None
    r = min(int(max_reader), 2)
    if reader:
        return frozenset(f.name for f in FEATURES.values()
                         if f.is_legacy and f.is_reader_writer and f.min_reader_version <= r)
    w = min(int(side.max_version), TABLE_FEATURES_WRITER_VERSION - 1)
    return Protocol(max(r, 1), max(w, 1)).implicit_features if w >= 1 else frozenset()


class Catalogue(_Model):
    """The whole file. ``extra_features``: names clients support that the package's feature
    registry does not know (``timestampNanos``); any other unknown name is a typo and refused."""

    schema_version: Literal[1]
    extra_features: list[str] = Field(default_factory=list)
    default_paths: dict[str, str] = Field(default_factory=dict)
    """product -> the read path a spelling without a path means (deltalake: pyarrow)."""
    product_names: dict[str, str] = Field(default_factory=dict)
    """Other names users give a product (``dbr`` -> ``databricks``)."""
    clients: list[Client] = Field(alias="client", min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> "Catalogue":
        problems: list[str] = []
        known = set(FEATURES) | set(self.extra_features)
        seen: dict[str, str] = {}
        for client in self.clients:
            if client.verified and not client.tested_here:
                problems.append(f"{client.id}: verified = true needs tested_here (the releases run)")
            for name in (client.id, *client.aliases):
                key = name.lower()
                if key in seen:
                    problems.append(f"{name!r} names both {seen[key]} and {client.id}")
                seen[key] = client.id
            for side_name, side in (("read", client.read), ("write", client.write)):
                if side is None:
                    continue
                combos = getattr(side, "misreads_with", [])
                names = [*(side.features if isinstance(side.features, list) else []),
                         *side.unsupported_features,
                         *(n for combo in combos for n in combo)]
                if names:
                    for feature in names:
                        if feature not in known:
                            problems.append(f"{client.id}: {side_name} feature {feature!r} is not a "
                                            "known table feature (add it to extra_features if real)")
                        elif (side_name == "read" and feature in FEATURES
                              and feature in (*(side.features if isinstance(side.features, list)
                                                else ()), *side.unsupported_features)
                              and FEATURES[feature].is_writer_only):
                            problems.append(f"{client.id}: {feature!r} is a writer feature; readers "
                                            "do not check writer features (PROTOCOL.md 'Table "
                                            "Features')")
                needs_list = (TABLE_FEATURES_READER_VERSION if side_name == "read"
                              else TABLE_FEATURES_WRITER_VERSION)
                if (side.features is None and isinstance(side.max_version, int)
                        and side.max_version >= needs_list):
                    problems.append(f"{client.id}: {side_name} accepts version {side.max_version}, so "
                                    "its features must be listed (or be \"unknown\")")
        products = {c.product_name for c in self.clients}
        for spelled, product in self.product_names.items():
            if product not in products:
                problems.append(f"product_names: {spelled!r} names {product!r}, no entry's product")
        for product, path in self.default_paths.items():
            if not any(c.product_name == product and c.path == path for c in self.clients):
                problems.append(f"default_paths: no {product} entry has path {path!r}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def client(self, name: str) -> Client:
        """The entry ``name`` means: its id or an alias (case-insensitive), or a product with a
        version (``deltalake==0.18.2``, ``trino 447``, :mod:`delta_downgrade.compat.spelling`)
        whose release one entry covers - on the product's default read path when it has several.
        An ambiguous or uncovered version is an error naming the nearest entries."""
        found = self._named(name)
        if found is not None:
            return found
        by_version = self._by_version(name, all_paths=False)
        if by_version is not None:
            return by_version[0]
        raise self._unknown(name)

    def family(self, name: str) -> list[Client]:
        """Every entry of a family (``deltalake``, ``duckdb``); else the one named; else, for a
        product with a version, every entry covering it (each read path)."""
        wanted = name.strip().lower()
        found = [c for c in self.clients if c.family.lower() == wanted]
        if found:
            return found
        named = self._named(name)
        if named is not None:
            return [named]
        by_version = self._by_version(name, all_paths=True)
        if by_version is not None:
            return by_version
        raise self._unknown(name)

    def products(self) -> list[str]:
        return sorted({c.product_name for c in self.clients if c.releases is not None})

    def _named(self, name: str) -> Client | None:
        wanted = name.strip().lower()
        for client in self.clients:
            if wanted == client.id or wanted in (a.lower() for a in client.aliases):
                return client
        return None

    def _product(self, spelled: str) -> str | None:
        names = {normalise_product(k): v for k, v in self.product_names.items()}
        if spelled in names:
            return names[spelled]
        products = {normalise_product(c.product_name): c.product_name for c in self.clients}
        return products.get(spelled)

    def _by_version(self, name: str, *, all_paths: bool) -> list[Client] | None:
        """The entries covering a versioned spelling; None when ``name`` is not one (or names no
        product of the catalogue)."""
        spelling = parse_spelling(name)
        if spelling is None:
            return None
        product = self._product(spelling.product)
        if product is None:
            return None
        entries = [c for c in self.clients if c.product_name == product and c.releases is not None]
        what = spelling.describe()
        if not entries:
            ids = ", ".join(c.id for c in self.clients if c.product_name == product)
            raise UncoveredClientVersionError(
                f"{name!r}: the catalogue's {product} entries have no release numbers; name one of "
                f"them: {ids} (`delta-downgrade compat --list-clients`)",
                params={"client": name, "suggestions": ids.split(", ")})
        if spelling.path is not None:
            paths = sorted({c.path for c in entries if c.path})
            entries = [c for c in entries if c.path == spelling.path]
            if not entries:
                raise UnknownClientError(
                    f"{name!r}: {product} has no read path {spelling.path!r} in the catalogue"
                    + (f"; its paths: {', '.join(paths)}" if paths else "; it has one read path: "
                       "leave the path out"), params={"client": name, "suggestions": paths})
        span = (spelling.low, spelling.high)
        # (every entry has releases: chosen above)
        holding = [c for c in entries if c.releases is not None
                   and c.releases.holds(*span, inclusive_high=spelling.pinned)]
        partial = [c for c in entries if c not in holding and c.releases is not None
                   and c.releases.overlaps(*span, inclusive_high=spelling.pinned)]
        if holding and not partial:
            if all_paths and len({c.path for c in holding}) == len(holding):
                return holding
            if len(holding) == 1 and (spelling.path is not None or holding[0].path is None
                                      or holding[0].path == self.default_paths.get(product, holding[0].path)):
                return holding
            default = self.default_paths.get(product)
            on_default = [c for c in holding if c.path == default]
            if spelling.path is None and len(on_default) == 1:
                return on_default
            if spelling.path is None and default is not None and not on_default:
                raise AmbiguousClientError(
                    f"{name!r}: the catalogue covers {what} only on the "
                    + " and ".join(sorted({str(c.path) for c in holding})) + " read path ("
                    + _listed(holding) + f"), not on {product}'s default {default} path; name the "
                    f"path: {product}[{holding[0].path}]=={spelling.version}",
                    params={"client": name, "suggestions": [c.id for c in holding]})
        if holding or partial:
            raise AmbiguousClientError(
                f"{name!r}: {what} is not one catalogue entry: "
                + ("it spans " if partial else "entries ") + _listed([*holding, *partial])
                + "; name a full version (`delta-downgrade compat --list-clients` shows each range)",
                params={"client": name, "suggestions": [c.id for c in (*holding, *partial)]})
        nearest = _nearest(entries, spelling.low, spelling.high)
        raise UncoveredClientVersionError(
            f"{name!r}: no catalogue entry covers {what}; the nearest: " + _listed(nearest)
            + ". The catalogue states only what public sources say: pick the entry you mean, or "
            "`delta-downgrade compat --list-clients` for every range",
            params={"client": name, "suggestions": [c.id for c in nearest]})

    def _unknown(self, name: str) -> UnknownClientError:
        known = sorted({n for c in self.clients for n in (c.id, *c.aliases, c.family)})
        close = difflib.get_close_matches(name.strip().lower(), known, n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        return UnknownClientError(
            f"no client {name!r} in the catalogue; {hint}families: "
            + ", ".join(sorted({c.family for c in self.clients}))
            + "; a version may follow a product (" + ", ".join(self.products())
            + "), e.g. deltalake==0.18.2 or 'trino 447' (`delta-downgrade compat --list-clients` "
            "lists every entry)",
            params={"client": name, "suggestions": close})


def _listed(clients: Iterable[Client]) -> str:
    return ", ".join(f"{c.id} ({c.releases.text() if c.releases else c.versions})" for c in clients)


def _nearest(entries: list[Client], low: Version, high: Version) -> list[Client]:
    """The entry just below the spelled releases and the one just above (by release range)."""
    # (entry, its release bound) of the entries wholly below and wholly above
    below = [(c, c.releases.high) for c in entries
             if c.releases and c.releases.high is not None and c.releases.high <= low]
    above = [(c, c.releases.low) for c in entries
             if c.releases and c.releases.low is not None and c.releases.low >= high]
    out = []
    if below:
        top = max(bound for _, bound in below)
        out += [c for c, bound in below if bound == top]
    if above:
        bottom = min(bound for _, bound in above)
        out += [c for c, bound in above if bound == bottom]
    return out


def load_catalogue(source: str | Path | Mapping[str, Any]) -> Catalogue:
    """A catalogue from a TOML file, or from its already-parsed mapping (tests). Anything wrong
    is one :class:`BadClientCatalogueError` naming the file and every problem."""
    where = "<mapping>"
    if isinstance(source, Mapping):
        data: Any = source
    else:
        where = str(source)
        try:
            data = tomllib.loads(Path(source).read_text(encoding="utf-8"))
        except OSError as exc:
            raise BadClientCatalogueError(f"cannot read client catalogue {where}: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise BadClientCatalogueError(f"client catalogue {where} is not valid TOML: {exc}") from None
    return _validated(data, where)


def _validated(data: Any, where: str) -> Catalogue:
    try:
        return Catalogue.model_validate(data)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or '<top>'}: {e['msg']}" for e in exc.errors()]
        raise BadClientCatalogueError(
            f"client catalogue {where} is invalid: " + "; ".join(problems),
            params={"catalogue": where, "problems": problems}) from None


@lru_cache(maxsize=1)
def packaged_catalogue() -> Catalogue:
    """The catalogue shipped in the package (``delta_downgrade/compat/clients.toml``)."""
    text = resources.files(__package__).joinpath("clients.toml").read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadClientCatalogueError(f"the packaged client catalogue is not valid TOML: {exc}") from None
    return _validated(data, "delta_downgrade/compat/clients.toml")
