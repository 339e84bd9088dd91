"""Client names as users spell them: a product with a version, read into what the catalogue can
look up (:meth:`delta_downgrade.compat.catalogue.Catalogue.client`).

Accepted: pip's pin ``deltalake==0.18.2``, a product and a version ``polars 1.41``, ``trino 447``,
``databricks 15.4 LTS``, ``dbr-15.4.x``, ``spark-delta-3.2``, Maven coordinates
``io.delta:delta-spark_2.13:3.2.0``, and a read path in brackets ``deltalake[rust]==0.18.2`` (or
after the version: ``deltalake 0.18.2 rust``). Product names are normalised as pip normalises
package names (PEP 503: case, ``_`` and ``.`` are ``-``); a Maven group and Scala suffix are
dropped.

A pin (``==``) is one release; any other spelling means every release it prefixes: ``polars 1.41``
is 1.41.0 up to (not including) 1.42, ``trino 447`` is 447.x, ``polars 1`` every 1.x (which one
catalogue entry rarely covers: the lookup says which entries share it).
"""

from __future__ import annotations

import re

from msgspec import Struct
from packaging.version import InvalidVersion, Version

__all__ = ["VersionSpelling", "normalise_product", "parse_spelling"]

_SPELLING = re.compile(r"""
    ^(?P<name>[a-z][a-z0-9._:-]*?)
    (?:\[(?P<path>[a-z0-9-]+)\])?
    (?P<sep>==|=|@|:|\s+v?|-v?)
    (?P<version>\d+(?:\.\d+)*)
    (?P<wild>\.[x*])?
    (?:[\s-]+lts)?
    (?:\s+(?P<path_after>[a-z][a-z0-9-]*))?
    $""", re.IGNORECASE | re.VERBOSE)

# A Scala binary-version suffix of a Maven artifact (delta-spark_2.13).
_SCALA_SUFFIX = re.compile(r"_2\.1[0-9]$")


class VersionSpelling(Struct, frozen=True):
    """``product`` (normalised) at the releases ``low`` up to ``high`` (``high`` included only for
    a pin, where ``low == high``), on read ``path`` when one was named."""

    spelled: str
    product: str
    version: str
    low: Version
    high: Version
    pinned: bool
    path: str | None = None

    def describe(self) -> str:
        where = f" ({self.path} path)" if self.path else ""
        return f"{self.product} {'==' if self.pinned else ''}{self.version}{where}"


def normalise_product(name: str) -> str:
    """PEP 503's normal form of a package name, after a Maven group and Scala suffix are dropped
    (``io.delta:delta-spark_2.13`` -> ``delta-spark``)."""
    name = name.strip().lower()
    if ":" in name:
        name = name.rsplit(":", 1)[1]
    name = _SCALA_SUFFIX.sub("", name)
    return re.sub(r"[-_.]+", "-", name)


def parse_spelling(text: str) -> VersionSpelling | None:
    """The product, version and path of ``text``; None when it carries no version."""
    match = _SPELLING.match(text.strip())
    if match is None:
        return None
    version = match.group("version")
    try:
        low = Version(version)
    except InvalidVersion:  # pragma: no cover - the pattern admits only dotted numbers
        return None
    pinned = match.group("sep") == "==" and not match.group("wild")
    if pinned:
        high = low
    else:
        parts = [int(p) for p in version.split(".")]
        parts[-1] += 1
        high = Version(".".join(str(p) for p in parts))
    path = match.group("path") or match.group("path_after")
    return VersionSpelling(text.strip(), normalise_product(match.group("name")), version, low, high,
                           pinned, path.lower() if path else None)
