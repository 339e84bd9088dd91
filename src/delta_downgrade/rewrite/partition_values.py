"""Partition values of widened partition columns, spelled in the column's current type
(PROTOCOL.md "Partition Value Serialization", "Type Widening").

A file written before a partition column was widened keeps the old type's spelling in its
``partitionValues`` (``"1"`` for a column that is now ``decimal(12,2)``, ``"2024-06-19"`` for one
that is now ``timestamp_ntz``). Readers of a table with type widening convert it; once the feature
is dropped, readers parse the string as the current type, and delta-rs / delta-kernel-rs refuse
(or read NULL for) such spellings — delta-spark's own REORG leaves them so. The typeWidening drop
therefore re-spells them with a metadata-only ``remove`` + ``add`` (dataChange=false).

The widenings of PROTOCOL.md "Type Widening" whose spelling changes: integer -> decimal
(``"1"`` -> ``"1.00"``), decimal -> decimal with a larger scale (``"1.5"`` -> ``"1.500"``),
integer / float -> double (``"1"`` -> ``"1.0"``, Java's ``Double.toString`` as delta-spark writes
doubles) and date -> timestamp_ntz (``"2024-06-19"`` -> ``"2024-06-19 00:00:00"``). Integer ->
wider integer keeps its spelling.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec.structs import replace
from delta_downgrade.protocol.actions import AddFile
from delta_downgrade.protocol.schema import COLUMN_MAPPING_PHYSICAL_NAME_KEY, TYPE_CHANGES_KEY

__all__ = ["java_double_string", "respelled_partition_values", "reserialize", "widened_partition_columns",
           "respelled_add"]

_INTEGRAL_RANGE = {"byte": 8, "short": 16, "integer": 32, "long": 64}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_INTEGER = re.compile(r"[+-]?\d+")
_DATE = re.compile(r"(\d{4,})-(\d{1,2})-(\d{1,2})")
# PROTOCOL.md: "{year}-{month}-{day} {hour}:{minute}:{second}" with an optional ".{microsecond}".
_TIMESTAMP = re.compile(r"(\d{4,})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{1,2}):(\d{1,2})(\.\d{1,9})?")


def java_double_string(value: float) -> str:
    """``value`` as Java's ``Double.toString`` spells it (delta-spark writes partition values of
    a double column that way): the shortest digits that round-trip, plain for
    1e-3 <= |value| < 1e7 with at least one fractional digit (``"1.0"``), otherwise computerized
    scientific notation (``"1.0E7"``, ``"2.5E-4"``); ``NaN``, ``Infinity``, ``-Infinity``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = decimal.Decimal(repr(value))  # Python's repr is the shortest round-trip
    sign = "-" if value < 0 else ""
    if 1e-3 <= abs(value) < 1e7:
        text = format(abs(shortest), "f")
        if "." not in text:
            text += ".0"
        whole, frac = text.split(".")
        frac = frac.rstrip("0") or "0"
        return f"{sign}{whole}.{frac}"
    digits = "".join(str(d) for d in abs(shortest).as_tuple().digits).rstrip("0") or "0"
    exponent = abs(shortest).adjusted()
    if len(digits) == 1:
        # Java prints at least two digits ("d.d") and picks the two closest to the exact value,
        # which is not always "d.0": Double.MIN_VALUE is "4.9E-324", not "5.0E-324".
        exact = decimal.Decimal(abs(value))
        with decimal.localcontext() as ctx:
            ctx.prec = 2
            two = +exact
        if two.adjusted() == exponent and float(two) == abs(value):
            digits = "".join(str(d) for d in two.as_tuple().digits).ljust(2, "0")
            return f"{sign}{digits[0]}.{digits[1]}E{exponent}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _decimal_type(t: str) -> tuple[int, int] | None:
    m = _DECIMAL.fullmatch(t.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def _parse_number(value: str, to_type: str) -> decimal.Decimal:
    try:
        number = decimal.Decimal(value.strip())
    except decimal.InvalidOperation:
        raise ValueError(f"partition value {value!r} is not a number, so not a {to_type}") from None
    if not number.is_finite():
        raise ValueError(f"partition value {value!r} is not a finite number, so not a {to_type}")
    return number


def _to_integral(value: str, to_type: str) -> str:
    if not _INTEGER.fullmatch(value.strip()):
        raise ValueError(f"partition value {value!r} is not an integer, so not a {to_type}")
    number = int(value.strip())
    bits = _INTEGRAL_RANGE[to_type]
    if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
        raise ValueError(f"partition value {value!r} is out of range for {to_type}")
    return str(number)


def _to_decimal(value: str, precision: int, scale: int, to_type: str) -> str:
    number = _parse_number(value, to_type)
    with decimal.localcontext() as ctx:
        ctx.prec = 200  # exact: partition values of decimal(38, s) need at most 38 digits
        scaled = number.scaleb(scale)
        if scaled != scaled.to_integral_value():
            raise ValueError(f"partition value {value!r} has more than {scale} fractional digits, so it "
                             f"is not a {to_type}")
        unscaled = int(scaled)
    if len(str(abs(unscaled))) > precision:
        raise ValueError(f"partition value {value!r} does not fit {to_type}")
    whole, fraction = divmod(abs(unscaled), 10 ** scale)
    sign = "-" if unscaled < 0 else ""  # "-0.00" is "0.00"
    return f"{sign}{whole}.{fraction:0{scale}d}" if scale else f"{sign}{whole}"


def _to_double(value: str, to_type: str) -> str:
    text = value.strip()
    special = {"nan": math.nan, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf,
               "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}
    if text.lower() in special:
        return java_double_string(special[text.lower()])
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"partition value {value!r} is not a number, so not a {to_type}") from None
    return java_double_string(number)


def _to_timestamp_ntz(value: str, to_type: str) -> str:
    text = value.strip()
    if _TIMESTAMP.fullmatch(text):
        return text  # already a timestamp_ntz spelling of PROTOCOL.md: kept as written
    m = _DATE.fullmatch(text)
    if m is None:
        raise ValueError(f"partition value {value!r} is neither a date nor a timestamp, so not a {to_type}")
    year, month, day = (int(g) for g in m.groups())
    try:
        dt.date(year, month, day)
    except ValueError:
        raise ValueError(f"partition value {value!r} is not a valid date") from None
    return f"{m.group(1)}-{month:02d}-{day:02d} 00:00:00"


def reserialize(value: str | None, to_type: str) -> str | None:
    """The partition value ``value``, stored in whatever type the column had when the file was
    written (any type it can have been widened from), spelled in the column's current type
    ``to_type``. None and ``""`` (both mean null, PROTOCOL.md "Partition Value Serialization")
    come back unchanged, as does a value already spelled in ``to_type``. Raises ValueError for a
    string that is no value of a type ``to_type`` can be widened from."""
    if value is None or value == "":
        return value
    t = to_type.strip()
    if t in _INTEGRAL_RANGE:
        return _to_integral(value, t)
    dec = _decimal_type(t)
    if dec is not None:
        return _to_decimal(value, dec[0], dec[1], t)
    if t == "double":
        return _to_double(value, t)
    if t == "timestamp_ntz":
        return _to_timestamp_ntz(value, t)
    return value  # no widening ends in any other type (PROTOCOL.md "Type Widening")


# Partition columns hold few distinct values across many files: spell each once (a 1M-file table
# costs dictionary lookups, not a million parses).
_reserialize_cached = functools.lru_cache(maxsize=1 << 16)(reserialize)


def widened_partition_columns(schema: Mapping[str, Any], partition_columns: Sequence[str]) -> dict[str, str]:
    """Partition column -> current type, for the partition columns whose field records type
    changes (``delta.typeChanges``). Keys are the names ``partitionValues`` uses: the physical
    name under column mapping (PROTOCOL.md "Column Mapping"), else the logical one."""
    wanted = set(partition_columns)
    out: dict[str, str] = {}
    for f in schema.get("fields", []):
        metadata = f.get("metadata") or {}
        if f["name"] in wanted and metadata.get(TYPE_CHANGES_KEY) and isinstance(f.get("type"), str):
            key = str(metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY) or f["name"])
            out[key] = f["type"]
    return out


def respelled_partition_values(partition_values: Mapping[str, str | None] | None,
                               widened: Mapping[str, str]) -> dict[str, str | None] | None:
    """``partition_values`` with the widened columns spelled in their current type; None when
    nothing changes."""
    if not widened or not partition_values:
        return None
    out = dict(partition_values)
    changed = False
    for key, to_type in widened.items():
        if key in out:
            spelled = _reserialize_cached(out[key], to_type)
            if spelled != out[key]:
                out[key] = spelled
                changed = True
    return out if changed else None


def respelled_add(add: AddFile, partition_values: dict[str, str | None]) -> AddFile:
    """The metadata-only ``add`` that re-spells ``add``'s partition values: the same file, DV, stats,
    tags, row ids and clustering provider (PROTOCOL.md: dataChange=false, the file is already in
    the table)."""
    return replace(add, partitionValues=partition_values, dataChange=False)
