"""Which stored types a reader widens to the table type, and which statistics bounds survive the
widening (PROTOCOL.md "Type Widening").
"""

from __future__ import annotations

import decimal
import re
from typing import Any

_INTEGRAL_RANK = {"byte": 0, "short": 1, "integer": 2, "long": 3}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def _decimal(t: str) -> tuple[int, int] | None:
    m = _DECIMAL.fullmatch(t)
    return (int(m.group(1)), int(m.group(2))) if m else None


def normalize_primitive(t: str) -> str:
    d = _decimal(t)
    return f"decimal({d[0]},{d[1]})" if d else t


def is_widening(from_type: str, to_type: str) -> bool:
    """Whether ``from_type`` -> ``to_type`` is one of the spec's supported type changes (or a chain
    of them): Byte -> Short -> Int -> Long; Float -> Double; Byte/Short/Int -> Double;
    Date -> TimestampNTZ; Decimal(p, s) -> Decimal(p + k1, s + k2) with k1 >= k2 >= 0;
    Byte/Short/Int -> Decimal(10 + k1, k2) and Long -> Decimal(20 + k1, k2) with k1 >= k2 >= 0."""
    a, b = normalize_primitive(from_type), normalize_primitive(to_type)
    if a == b:
        return False
    if a in _INTEGRAL_RANK and b in _INTEGRAL_RANK:
        return _INTEGRAL_RANK[a] < _INTEGRAL_RANK[b]
    if b == "double":
        return a == "float" or a in ("byte", "short", "integer")
    if a == "date":
        return b == "timestamp_ntz"
    db = _decimal(b)
    if db is None:
        return False
    p, s = db
    da = _decimal(a)
    if da is not None:
        k1, k2 = p - da[0], s - da[1]
        return k1 >= k2 >= 0
    if a in ("byte", "short", "integer"):
        return p - s >= 10
    if a == "long":
        return p - s >= 20
    return False


def convert_bound(value: Any, stored: str, table_type: str) -> tuple[bool, Any]:
    """A min/max value written for ``stored`` as a value of ``table_type`` (ok=False: drop it)."""
    if value is None:
        return True, None
    if stored == "date" and table_type == "timestamp_ntz" and isinstance(value, str):
        return True, f"{value}T00:00:00.000"
    # Integers and decimals are exact in JSON and in every wider type. A float bound is not: the
    # float 3.4 widens to the double 3.4000000953674316, above a max bound written as 3.4.
    exact = {"byte", "short", "integer", "long"}
    if (stored in exact or _decimal(stored)) and (table_type in exact | {"double"} or _decimal(table_type)):
        return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool), value
    return False, None
