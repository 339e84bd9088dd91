"""Storage bad input: overflowing retentions and unserved URI schemes are bad
input — exit 2, a Delta error class on stderr, no traceback, and not one byte of the table
changed. Every command runs as its own process, as a user runs it."""

from __future__ import annotations


import pytest

from delta_downgrade.errors import BadInputError
from delta_downgrade.protocol.table_config import parse_interval_ms


@pytest.fixture
def table(golden_table) -> str:
    return golden_table("classic_checkpoint")


def test_durations_are_bounded_where_they_are_parsed():
    with pytest.raises(BadInputError) as info:
        parse_interval_ms("99999999999999999999 days", key="--retention")
    assert info.value.error_class == "DELTA_DOWNGRADE_BAD_DURATION"
    # The bound leaves every real retention alone.
    assert parse_interval_ms("interval 3650 days") == 3650 * 86_400_000
