"""``add.stats`` from ``add.stats_parsed``: the JSON a checkpoint's typed statistics stand for.

PROTOCOL.md "Checkpoints" / "Checkpoint Schema": a writer with ``delta.checkpoint.writeStatsAsJson``
false omits ``add.stats`` and, with ``delta.checkpoint.writeStatsAsStruct`` true, writes
``add.stats_parsed`` - a struct with the fields of "Per-file Statistics" (``numRecords``,
``minValues``, ``maxValues``, ``nullCount``, ``tightBounds``) typed from the table schema. The
replay keeps actions with the JSON ``stats`` only, so a row without it takes the JSON built here
from its struct; rows that have ``stats`` are not touched (the struct is a copy of it).

The JSON is built column-wise with Arrow compute - one string fragment per leaf, joined - never
row by row, and only for the rows that need it. Values are spelled as delta-spark writes them:
numbers and booleans bare, dates ``yyyy-MM-dd``, timestamps ``yyyy-MM-ddTHH:mm:ss.SSS`` with
``Z`` when they are instants (``TIMESTAMP``, stored as INT96 or as an adjusted-to-UTC INT64) and
without a zone for ``TIMESTAMP_NTZ``. A bound the JSON cannot carry faithfully (binary, lists,
maps, non-finite floats, strings with control characters other than the usual escapes) is left
out: a missing bound means "unknown" to every reader ("Per-file Statistics"), a wrong one would
make them skip files that hold matching rows.
"""

from __future__ import annotations

import json

import pyarrow as pa
from delta_downgrade import arrow_compute as ac

from delta_downgrade.log.format.checkpoint_schema import STATS_PARSED as STATS_PARSED  # re-exported

_STR = pa.string()

# JSON string escapes: backslash first, so the later escapes are not escaped again.
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"),
            ("\b", "\\b"), ("\f", "\\f"))


def _json_string(values: pa.Array) -> pa.Array:
    """Strings as JSON string literals; null where a control character would need a
    ``\\u`` escape (left out rather than spelled differently from the original)."""
    out = ac.cast(values, _STR)
    special = ac.match_substring_regex(out, '["\\\\\\x00-\\x1f]')
    if special.null_count < len(special) and ac.any(special).as_py():  # most bounds need no escape
        for raw, escaped in _ESCAPES:
            out = ac.replace_substring(out, raw, escaped)
        out = ac.if_else(ac.match_substring_regex(out, "[\\x00-\\x1f]"), pa.scalar(None, _STR), out)
    return ac.binary_join_element_wise('"', out, '"', "")


def _timestamp(values: pa.Array, instant: bool) -> pa.Array:
    """Milliseconds, as delta-spark's stats (``yyyy-MM-dd'T'HH:mm:ss.SSSXXX`` in UTC)."""
    typ = values.type
    # the UTC wall time (a zone-less cast keeps the stored instant), cut to milliseconds; Arrow
    # spells it "yyyy-MM-dd HH:mm:ss.SSS" (a cast: several times faster than strftime)
    ms = ac.cast(ac.cast(values, pa.timestamp(typ.unit)), pa.timestamp("ms"), safe=False)
    text = ac.replace_substring(ac.cast(ms, _STR), " ", "T", max_replacements=1)
    if instant or typ.tz is not None:
        text = ac.binary_join_element_wise(text, "Z", "")
    return ac.binary_join_element_wise('"', text, '"', "")


def _value_json(values: pa.Array, path: str, instants: frozenset[str]) -> pa.Array | None:
    """Each value of a leaf (or nested struct) as JSON text, null where it is left out; None when
    no value of this type is written."""
    typ = values.type
    if pa.types.is_struct(typ):
        return _object_json(values, path, instants)
    if pa.types.is_integer(typ) or pa.types.is_decimal(typ) or pa.types.is_boolean(typ):
        return ac.cast(values, _STR)
    if pa.types.is_floating(typ):
        finite = ac.is_finite(values)
        return ac.if_else(finite, ac.cast(values, _STR), pa.scalar(None, _STR))
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return _json_string(values)
    if pa.types.is_date(typ):
        return ac.binary_join_element_wise('"', ac.cast(ac.cast(values, pa.date32()), _STR), '"', "")
    if pa.types.is_timestamp(typ):
        return _timestamp(values, path in instants)
    return None  # binary, lists, maps, ...: no bound in the JSON


def _object_json(s: pa.StructArray, path: str, instants: frozenset[str]) -> pa.Array:
    """A struct array as JSON objects of its non-null fields; null for a null struct and for one
    with no field left."""
    fragments = []
    for i in range(s.type.num_fields):
        name = s.type.field(i).name
        child = s.field(i)  # StructArray.field ignores the parent's validity: masked below
        value = _value_json(child, f"{path}.{name}" if path else name, instants)
        if value is not None:
            fragments.append(ac.binary_join_element_wise(json.dumps(name) + ":", value, ""))
    n = len(s)
    if not fragments:
        return pa.nulls(n, _STR)
    # A leading "" that is never null: pyarrow returns an empty array (not one of n) when every
    # input of a row-set is null under "skip"; the comma it brings is cut off after.
    body = ac.binary_join_element_wise("", *fragments, ",", null_handling="skip")
    body = ac.utf8_slice_codeunits(body, 1)
    # all fields null: the object says nothing, leave it out
    body = ac.if_else(ac.equal(body, ""), pa.scalar(None, _STR), body)
    text = ac.binary_join_element_wise("{", body, "}", "")
    if s.null_count:
        text = ac.if_else(ac.is_valid(s), text, pa.scalar(None, _STR))
    return text


def stats_json(parsed: pa.StructArray, instants: frozenset[str] = frozenset()) -> pa.Array:
    """The JSON ``stats`` of each row of a ``stats_parsed`` struct array (null for a null row).
    ``instants`` names the timestamp leaves (dotted paths below ``stats_parsed``, e.g.
    ``minValues.ts``) that are instants although their Arrow type has no zone (INT96)."""
    if len(parsed) == 0:
        return pa.array([], _STR)
    out = _object_json(parsed, "", instants)
    if out.null_count != parsed.null_count:  # a non-null struct with nothing in it is "{}"
        out = ac.if_else(ac.and_(ac.is_valid(parsed), ac.is_null(out)), pa.scalar("{}", _STR), out)
    return out


def fill_missing_stats(stats: pa.Array | None, parsed: pa.StructArray, valid: pa.Array,
                       instants: frozenset[str] = frozenset()) -> pa.Array:
    """``stats`` (of the ``add`` rows, ``valid`` marking the rows that are adds) with its nulls
    that have a ``stats_parsed`` filled with the JSON of it; the JSON is built for those rows
    only. ``stats`` None: the file has no ``add.stats`` at all."""
    n = len(parsed)
    if stats is None:
        stats = pa.nulls(n, _STR)
    need = ac.and_(ac.and_(valid, ac.is_null(stats)), ac.is_valid(parsed))
    count = ac.sum(ac.cast(need, pa.int64())).as_py() or 0
    if count == 0:
        return stats
    rows = ac.filter(parsed, need)
    filled = stats_json(rows, instants)
    return ac.replace_with_mask(ac.cast(stats, _STR), need, filled)
