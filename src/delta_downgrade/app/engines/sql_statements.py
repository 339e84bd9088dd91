"""Every SQL statement this package can issue, built here and nowhere else.

Each builder takes a parsed :class:`~delta_downgrade.app.table_ref.TableRef` (whose identifier has
every part backtick-quoted) and a feature name that passed :func:`feature_name`, so no argument
can end an identifier early and add SQL of its own. The tests check every statement against the
grammar that parses it: Delta's ``DeltaSqlBase.g4`` rules for ``ALTER TABLE … DROP FEATURE``
(``#alterTableDropFeature``), ``DESCRIBE DETAIL`` (``#describeDeltaDetail``) and ``DESCRIBE
HISTORY`` (``#describeDeltaHistory``); Spark's own parser for the ``SELECT`` and for every
identifier (``parseMultipartIdentifier`` gives back exactly the parts meant).
"""

from __future__ import annotations

import re

from delta_downgrade.app.table_ref import TableRef, quote_identifier
from delta_downgrade.errors import UnsupportedClientFeatureError

# A feature name this package does not know is passed to the runtime (it may know newer features)
# only when it is a plain name: the spelling of PROTOCOL.md's "Valid Feature Names" (letters,
# digits, '-' and '_').
_PLAIN_FEATURE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def feature_name(feature: str, table: str | None = None) -> str:
    """The feature name to put in SQL: the registry's spelling for a known feature (matched
    case-insensitively, as Spark resolves it), else the name itself when it is a plain feature name.
    One pair of surrounding backticks or quotes is accepted. Anything else is refused: a backtick
    or a space in a name could close the quoted identifier and add clauses (``TRUNCATE HISTORY``)."""
    from delta_downgrade.protocol.features import lookup_feature

    name = feature.strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "`'\"":
        name = name[1:-1]
    known = lookup_feature(name)
    if known is not None:
        return known.name
    if not _PLAIN_FEATURE.fullmatch(name):
        raise UnsupportedClientFeatureError(
            f"{feature!r} is not a table feature name: a feature name is letters, digits, '-' and "
            f"'_' (e.g. deletionVectors)", table=table, feature=feature)
    return name


def drop_feature_statement(ref: TableRef, feature: str, truncate_history: bool) -> str:
    """``ALTER TABLE t DROP FEATURE f [TRUNCATE HISTORY]`` (Delta's ``#alterTableDropFeature``)."""
    name = feature_name(feature, ref.display)
    return (f"ALTER TABLE {ref.identifier} DROP FEATURE {quote_identifier(name)}"
            + (" TRUNCATE HISTORY" if truncate_history else ""))


def describe_detail_statement(ref: TableRef) -> str:
    """``DESCRIBE DETAIL t``: protocol versions, ``tableFeatures``, ``properties`` (Delta's
    ``#describeDeltaDetail``)."""
    return f"DESCRIBE DETAIL {ref.identifier}"


def describe_history_statement(ref: TableRef, limit: int | None = None) -> str:
    """``DESCRIBE HISTORY t [LIMIT n]``: the commits, newest first (Delta's
    ``#describeDeltaHistory``)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"a history limit is a positive int, not {limit!r}")
    return f"DESCRIBE HISTORY {ref.identifier}" + (f" LIMIT {limit}" if limit is not None else "")


def read_statement(ref: TableRef) -> str:
    """A read of the latest version by the runtime: one row is enough to prove the runtime can
    reconstruct the snapshot and open a data file (the protocol check happens first)."""
    return f"SELECT * FROM {ref.identifier} LIMIT 1"
