"""One parse of a table argument, for the CLI and the tasks alike.

A table argument is one of:

- a path or URI (``/data/t``, ``./t``, ``s3://bucket/t``, ``abfss://c@a.dfs.core.windows.net/t``),
  or any argument that names an existing directory (``my_table`` in the current folder): the
  native engine reads and writes its log through the storage layer. A directory whose name also
  reads as a catalog name is taken as the path, with a note on stderr saying so and how to name
  the catalog table instead;
- ``delta.`<path>``` (Delta's SQL spelling of a path-based table, what a notebook user copies):
  unwrapped to the path, so that the native engine reads it like any other path;
- a catalog name ``[catalog.][schema.]table`` (1 to 3 parts), each part plain (letters, digits,
  ``_``) or backtick-quoted with a backtick doubled inside, as Spark's
  ``parseMultipartIdentifier`` reads it. A catalog table is reached only through SQL on the
  session (Unity Catalog forbids path access to managed tables).

Nothing is guessed: anything else is an :class:`InvalidIdentifierError` (exit 2) before any SQL
or any storage access.
"""

from __future__ import annotations

import os
import re
import sys

from msgspec import Struct
from delta_downgrade.errors import InvalidIdentifierError

# An unquoted identifier part as Spark's parser accepts it (letters, digits, underscore); anything
# else must be backtick-quoted.
_PLAIN_PART = re.compile(r"[A-Za-z0-9_]+")
# A catalog name has at most catalog, schema and table (Unity Catalog's three-level namespace).
MAX_NAME_PARTS = 3


def quote_identifier(part: str) -> str:
    """One backtick-quoted identifier part; an embedded backtick is doubled (Spark SQL syntax)."""
    return "`" + part.replace("`", "``") + "`"


def split_multipart(name: str) -> list[str]:
    """The parts of a (catalog.)(schema.)table name, as Spark's ``parseMultipartIdentifier`` reads
    it: parts are separated by ``.``; a part is either plain (letters, digits, ``_``) or quoted in
    backticks, where two backticks stand for one. Anything else is an
    :class:`InvalidIdentifierError` (nothing is guessed, nothing reaches SQL unquoted)."""
    parts: list[str] = []
    i, n = 0, len(name)
    while True:
        if i < n and name[i] == "`":
            i += 1
            buf = []
            while True:
                if i >= n:
                    raise InvalidIdentifierError(f"table name {name!r} has an unclosed backtick")
                if name[i] == "`":
                    if i + 1 < n and name[i + 1] == "`":
                        buf.append("`")
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(name[i])
                i += 1
            part = "".join(buf)
            if not part:
                raise InvalidIdentifierError(f"table name {name!r} has an empty quoted part")
        else:
            j = i
            while j < n and name[j] not in ".`":
                j += 1
            part = name[i:j]
            if not _PLAIN_PART.fullmatch(part):
                raise InvalidIdentifierError(
                    f"table name {name!r}: {part!r} is not a valid identifier part; quote a part with "
                    f"other characters in backticks (e.g. main.`my schema`.t)")
            i = j
        parts.append(part)
        if i == n:
            return parts
        if name[i] != ".":
            raise InvalidIdentifierError(f"table name {name!r}: expected '.' after {part!r}")
        i += 1


def _outside_backticks(text: str) -> str:
    out, quoted = [], False
    for ch in text:
        if ch == "`":
            quoted = not quoted  # a doubled backtick toggles twice: still the same state
        elif not quoted:
            out.append(ch)
    return "".join(out)


def is_path(table: str) -> bool:
    """Whether ``table`` is a storage path (``/data/t``, ``./t``, ``s3://b/t``) rather than a
    catalog name (``main.ops.t``, ``main.`a/b`.t``) or ``delta.`/data/t```."""
    return "://" in table or table.startswith(("/", ".", "~")) or "/" in _outside_backticks(table)


class TableRef(Struct, frozen=True):
    """A parsed table argument: a ``path`` (from a path or ``delta.`path```) or the ``parts`` of a
    catalog name; exactly one of them is set. ``text`` is the argument as given."""

    text: str
    path: str | None = None
    parts: tuple[str, ...] | None = None

    @property
    def is_name(self) -> bool:
        return self.parts is not None

    @property
    def identifier(self) -> str:
        """The SQL identifier: ``delta.`path``` for a path, else every part of the name
        backtick-quoted. Quoting every part with embedded backticks doubled means no table name
        can end the identifier early and add SQL of its own."""
        if self.parts is None:
            return "delta." + quote_identifier(self.path or "")
        return ".".join(quote_identifier(part) for part in self.parts)

    @property
    def display(self) -> str:
        """How outputs name the table: the path, or the name as given."""
        return self.path if self.path is not None else self.text


def parse_table_ref(text: str) -> TableRef:
    """The one parse of a table argument (see the module docstring). The text is taken as given:
    ``"/x/t "`` is a path that ends in a space, never ``/x/t`` (stripping it would name another
    table); a catalog name with surrounding blanks is not a valid identifier."""
    table = text
    if not table.strip():
        raise InvalidIdentifierError("the table is empty: give a path/URI or a catalog name "
                                     "(catalog.schema.table)")
    control = next((ch for ch in table if not ch.isprintable() and ch != " "), None)
    if control is not None:
        # No store names a table with a NUL or a line break; what holds one is not a table (a
        # file read by mistake), so it is not quoted back either.
        raise InvalidIdentifierError(f"the table holds a control character (U+{ord(control):04X}); give a "
                                     f"path/URI or a catalog name (catalog.schema.table)")
    # delta.`<path>`: Delta's data-source qualifier (matched case-insensitively, as Spark does)
    # before one quoted part that holds a path (delta-spark's isPathIdentifier); the native engine
    # reads the path. Checked first: the quoted path may hold "://".
    if table[:7].lower() == "delta.`":
        parts = split_multipart(table)
        if len(parts) == 2 and is_path(parts[1]):
            return TableRef(text, path=parts[1])
    if is_path(table):
        return TableRef(text, path=table)
    if os.path.isdir(table):
        _note_directory(table)
        return TableRef(text, path=table)
    parts = split_multipart(table)
    if len(parts) > MAX_NAME_PARTS:
        raise InvalidIdentifierError(
            f"table name {table!r} has {len(parts)} parts; a catalog name is at most "
            f"catalog.schema.table (quote a part that holds a dot in backticks)")
    return TableRef(text, parts=tuple(parts))


def as_table_ref(table: TableRef | str) -> TableRef:
    """The table argument as a :class:`TableRef`: the one given (parsed where the argument came
    in, and carried from there), or text parsed here."""
    return table if isinstance(table, TableRef) else parse_table_ref(table)


# Arguments already noted in this process: every layer parses the same argument again.
_NOTED: set[str] = set()


def _note_directory(table: str) -> None:
    """Say once that a name-like argument was taken as the directory it names."""
    try:
        parts = split_multipart(table)
    except InvalidIdentifierError:
        return  # not a name at all: nothing to explain
    if table in _NOTED or len(parts) > MAX_NAME_PARTS:
        return
    _NOTED.add(table)
    how = (f"for a catalog table of that name, give its full name (catalog.schema.{table})" if len(parts) == 1
           else "to reach the catalog table of that name, run where no such directory exists")
    print(f"note: {table} is taken as the directory ./{table} here; {how}", file=sys.stderr)
