"""Type Widening rules (rewrite/type_widening_rules.py): bounds that survive a widening."""

from __future__ import annotations

import decimal

import pytest

from delta_downgrade.rewrite.type_widening_rules import convert_bound, is_widening, normalize_primitive


def test_normalize_primitive():
    assert normalize_primitive("decimal( 10 , 2 )") == "decimal(10,2)"
    assert normalize_primitive("long") == "long"
    assert is_widening("decimal(10, 2)", "decimal(12,2)")


@pytest.mark.parametrize(("value", "stored", "table_type", "expected"), [
    (None, "integer", "long", (True, None)),
    (5, "integer", "long", (True, 5)),
    (5, "short", "double", (True, 5)),
    (decimal.Decimal("1.25"), "decimal(4,2)", "decimal(10,4)", (True, decimal.Decimal("1.25"))),
    (7, "integer", "decimal(12,1)", (True, 7)),
    ("2024-02-29", "date", "timestamp_ntz", (True, "2024-02-29T00:00:00.000")),
    (3.4, "float", "double", (False, None)),     # 3.4f widens to 3.4000000953674316: above the bound
    (True, "integer", "long", (False, True)),    # not a number: dropped
    ("7", "integer", "long", (False, "7")),
    (5, "integer", "string", (False, None)),
])
def test_convert_bound(value, stored, table_type, expected):
    assert convert_bound(value, stored, table_type) == expected
