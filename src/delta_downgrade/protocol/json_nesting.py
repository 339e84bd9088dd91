"""A bound on how deeply the JSON of a log file may nest, checked before any parser sees it.

A Delta action nests a few levels (an ``add`` with a deletion vector: three; the schema is a JSON
*string*). A line nested thousands of levels deep is damage or an attack: Python's parser gives up
with a ``RecursionError`` near 1,000 levels, and ``pyarrow.json`` (RapidJSON, recursive) crashes the
process a little deeper. So every log line is measured first, in linear time and without
recursion, and a line deeper than :data:`MAX_NESTING` is refused as malformed (a ``ValueError``,
as the parsers' own errors are). Spark's parser (Jackson) refuses more than 1,000 levels and
delta-rs's (serde_json) more than 128; the bound lies between, below where Python fails.
"""

from __future__ import annotations

import re
from delta_downgrade.errors import NestingTooDeepError  # noqa: F401 - raised here, re-exported

#: The deepest nesting of arrays and objects a log line may have.
MAX_NESTING = 512

# JSON strings (brackets inside them do not nest) and brackets.
_TOKENS = re.compile(rb'"(?:[^"\\\n]|\\.)*"|[{}\[\]]')


def nesting_depth(line: bytes) -> int:
    """The deepest nesting of arrays and objects in one JSON line (brackets inside strings do
    not count); without recursion."""
    depth = deepest = 0
    for token in _TOKENS.finditer(line):
        c = token.group()
        if c in (b"{", b"["):
            depth += 1
            if depth > deepest:
                deepest = depth
        elif c in (b"}", b"]"):
            depth -= 1
    return deepest


# Every byte value but the opening brackets and the newline: what bytes.translate deletes to
# leave, line by line, only the brackets that can open a level.
_NOT_OPENERS = bytes(b for b in range(256) if b not in b"{[\n")

# In that residue, more than MAX_NESTING brackets in a row are one line's.
_CROWDED = re.compile(rb"[{\[]{%d}" % (MAX_NESTING + 1))


def may_nest_too_deep(data: bytes) -> bool:
    """Whether some line of ``data`` has more than :data:`MAX_NESTING` opening brackets - only
    such a line can nest deeper. False means no line of ``data`` can be refused by
    :func:`check_nesting`. Two passes in C (``bytes.translate`` keeps the brackets and newlines,
    a regular expression looks for a long run of brackets) and no object per line: a commit of
    many actions costs about a millisecond per megabyte."""
    if len(data) <= MAX_NESTING:  # too short to hold that many brackets
        return False
    return _CROWDED.search(data.translate(None, _NOT_OPENERS)) is not None


def _crowded_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(line number, line) of the lines of ``data`` with more than :data:`MAX_NESTING` opening
    brackets (:func:`may_nest_too_deep` said there is one)."""
    per_line = data.translate(None, _NOT_OPENERS).split(b"\n")
    lines = data.split(b"\n")
    return [(i + 1, lines[i]) for i, openers in enumerate(per_line) if len(openers) > MAX_NESTING]


def check_nesting(data: str | bytes | bytearray | memoryview, where: str = "") -> None:
    """Raise :class:`NestingTooDeepError` when a line of ``data`` (one line or a whole
    newline-delimited file) nests deeper than :data:`MAX_NESTING`; linear time, and a mere
    count of brackets per line (:func:`may_nest_too_deep`) for the usual file."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if not may_nest_too_deep(raw):
        return
    for number, line in _crowded_lines(raw):
        depth = nesting_depth(line)
        if depth > MAX_NESTING:
            raise NestingTooDeepError(
                f"{where + ' ' if where else ''}line {number} nests {depth} levels deep; a Delta log "
                f"line nests a few levels, and more than {MAX_NESTING} is refused before parsing")
