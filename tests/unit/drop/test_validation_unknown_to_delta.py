"""Names Databricks tables carry that delta-spark's registry does not know (``collations``,
``liquid``): DROP FEATURE answers them as Delta does, as an unsupported feature, while saying what
the feature is."""

from __future__ import annotations

import pytest

from delta_downgrade.errors import UnsupportedClientFeatureError
from delta_downgrade.drop.validation import validate_drop
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.features import FEATURES


@pytest.mark.parametrize("name", ["collations", "liquid", "COLLATIONS"])
def test_a_feature_delta_does_not_know_is_an_unsupported_client_feature(name):
    protocol = Protocol(1, 7, None, frozenset({"domainMetadata", "collations", "liquid"}))
    with pytest.raises(UnsupportedClientFeatureError) as info:
        validate_drop(protocol, name, truncate_history=False)
    assert info.value.error_class == "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"
    assert "delta-spark does not implement" in info.value.message


def test_only_names_real_tables_carry_are_marked_unknown_to_delta():
    assert {n for n, f in FEATURES.items() if not f.known_to_delta_spark} == {
        "collations", "liquid", "collations-preview", "inCommitTimestamp-preview", "catalogOwned-preview",
        "icebergWriterCompatV1", "icebergWriterCompatV3", "timestampNanos"}


@pytest.mark.parametrize("name", ["inCommitTimestamp-preview", "catalogOwned-preview", "icebergWriterCompatV1",
                                  "icebergWriterCompatV3", "timestampNanos", "collations-preview"])
def test_names_real_tables_carry_are_known_by_name(name):
    protocol = Protocol(3, 7, frozenset({name}) if FEATURES[name].is_reader_writer else frozenset(),
                        frozenset({name, *FEATURES[name].required_features}))
    assert protocol.unsupported_for_read() <= {"catalogOwned-preview"}
    with pytest.raises(UnsupportedClientFeatureError) as info:
        validate_drop(protocol, name, truncate_history=False)
    assert f"cannot drop {name}:" in info.value.message


def test_a_preview_counterpart_that_cannot_be_dropped_is_not_suggested():
    protocol = Protocol(1, 7, None, frozenset({"inCommitTimestamp-preview"}))
    with pytest.raises(Exception) as info:
        validate_drop(protocol, "inCommitTimestamp", truncate_history=False)
    assert info.value.error_class == "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"
    assert "Did you mean" not in info.value.message


def test_a_feature_delta_knows_that_cannot_be_dropped_stays_nonremovable():
    protocol = Protocol(1, 7, None, frozenset({"allowColumnDefaults"}))
    with pytest.raises(Exception) as info:
        validate_drop(protocol, "allowColumnDefaults", truncate_history=False)
    assert info.value.error_class == "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"
