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


def _crowded_lines(data: bytes) -> list[tuple[int, int, int]]:
    """(line number, start, end) of the lines of ``data`` with more than :data:`MAX_NESTING`
    opening brackets - only those can nest deeper - counted with vectorized kernels (a
    multi-megabyte commit of many actions costs milliseconds, not a Python loop per line)."""
    import pyarrow as pa  # only for a file with many brackets
    import pyarrow.compute as pc

    arr = pa.Array.from_buffers(pa.uint8(), len(data), [None, pa.py_buffer(data)])
    opens = pc.or_(pc.equal(arr, pa.scalar(ord("{"), pa.uint8())),
                   pc.equal(arr, pa.scalar(ord("["), pa.uint8())))
    before = pc.cumulative_sum(opens.cast(pa.int64()))  # openers up to and including each byte
    ends = pc.indices_nonzero(pc.equal(arr, pa.scalar(ord("\n"), pa.uint8())))
    ends = pa.concat_arrays([ends, pa.array([len(data)], ends.type)])
    # openers up to each line's end (the newline is none), and up to the previous line's end
    upto = before.take(pc.subtract(ends, pa.scalar(1, ends.type)).cast(pa.int64())) if len(data) else ends
    previous = pa.concat_arrays([pa.array([0], pa.int64()), upto.slice(0, len(upto) - 1)])
    crowded: list[int] = pc.indices_nonzero(pc.greater(pc.subtract(upto, previous), MAX_NESTING)).to_pylist()
    end_at: list[int] = ends.to_pylist()
    return [(i + 1, end_at[i - 1] + 1 if i else 0, end_at[i]) for i in crowded]


def check_nesting(data: str | bytes | bytearray | memoryview, where: str = "") -> None:
    """Raise :class:`NestingTooDeepError` when a line of ``data`` (one line or a whole
    newline-delimited file) nests deeper than :data:`MAX_NESTING`; linear time, and a mere
    count of brackets for the usual file."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if raw.count(b"{") + raw.count(b"[") <= MAX_NESTING:
        return
    for number, start, end in _crowded_lines(raw):
        depth = nesting_depth(raw[start:end])
        if depth > MAX_NESTING:
            raise NestingTooDeepError(
                f"{where + ' ' if where else ''}line {number} nests {depth} levels deep; a Delta log "
                f"line nests a few levels, and more than {MAX_NESTING} is refused before parsing")
