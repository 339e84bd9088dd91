"""The feature registry and the ``delta.*`` property list against the running delta-spark jar:
Delta's own ``TableFeature.allSupportedFeaturesMap`` and ``DeltaConfigs.getAllConfigs``, read
through the session's JVM (classic Spark only)."""

from __future__ import annotations

import pytest

from delta_downgrade.protocol.features import DELTA_TABLE_PROPERTIES, FEATURES

pytestmark = pytest.mark.classic_spark("reads Delta's registry through the driver JVM")

#: Names this registry knows that Delta 4.4 OSS does not, besides those marked
#: ``known_to_delta_spark=False`` (names Databricks tables carry: collations_dbr, liquid_row_tracking_dbr).
KNOWN_BEYOND_DELTA = {
    "redirectReaderWriter-preview": "delta-spark registers it only under its test mode",
    "redirectWriterOnly-preview": "delta-spark registers it only under its test mode",
}


def _scala_values(mapping) -> list:
    out, values = [], mapping.valuesIterator()
    while values.hasNext():
        out.append(values.next())
    return out


def _scala_keys(mapping) -> list[str]:
    out, keys = [], mapping.keysIterator()
    while keys.hasNext():
        out.append(keys.next())
    return out


def _delta_features(spark) -> dict[str, dict]:
    table_feature = getattr(spark._jvm, "org.apache.spark.sql.delta.TableFeature")
    features = {}
    for f in _scala_values(table_feature.allSupportedFeaturesMap()):
        required, it = [], f.requiredFeatures().iterator()
        while it.hasNext():
            required.append(it.next().name())
        removable = bool(f.isRemovable())
        features[f.name()] = {
            "reader_writer": bool(f.isReaderWriterFeature()),
            "min_reader": max(int(f.minReaderVersion()), 1),
            "min_writer": int(f.minWriterVersion()),
            "legacy": bool(f.isLegacyFeature()),
            "removable": removable,
            "requires": frozenset(required),
            "history_protection": bool(f.requiresHistoryProtection()) if removable else None,
        }
    return features


def _ours(name: str) -> dict:
    f = FEATURES[name]
    return {"reader_writer": f.is_reader_writer, "min_reader": max(f.min_reader_version, 1),
            "min_writer": f.min_writer_version, "legacy": f.is_legacy, "removable": f.removable,
            "requires": frozenset(f.required_features),
            "history_protection": f.requires_history_protection if f.removable else None}


def test_every_delta_feature_is_registered_alike(delta_spark):
    theirs = _delta_features(delta_spark)
    assert theirs, "delta-spark listed no table features"
    missing = sorted(set(theirs) - set(FEATURES))
    assert not missing, f"features of Delta 4.4 this registry does not know: {missing}"
    different = {name: {k: (v, _ours(name)[k]) for k, v in spec.items() if _ours(name)[k] != v}
                 for name, spec in theirs.items()}
    different = {name: d for name, d in different.items() if d}
    assert not different, f"(delta-spark, ours) per differing attribute: {different}"
    beyond = set(FEATURES) - set(theirs)
    unknown_to_delta = {name for name, f in FEATURES.items() if not f.known_to_delta_spark}
    assert unknown_to_delta <= beyond, f"marked unknown to delta-spark, but it knows: {unknown_to_delta - beyond}"
    beyond -= unknown_to_delta
    assert beyond == set(KNOWN_BEYOND_DELTA), (
        f"names known here but not to Delta, unexplained: {sorted(beyond - set(KNOWN_BEYOND_DELTA))}; "
        f"explained but now known to Delta (or gone): {sorted(set(KNOWN_BEYOND_DELTA) - beyond)}")


def test_delta_property_list_is_deltas(delta_spark):
    """DROP FEATURE's DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY: Delta refuses a name that
    starts with ``delta.`` whose rest is a key of ``DeltaConfigs.getAllConfigs`` (lower case)."""
    configs = getattr(delta_spark._jvm, "org.apache.spark.sql.delta.DeltaConfigs")
    theirs = set(_scala_keys(configs.getAllConfigs()))
    ours = {p.lower().removeprefix("delta.") for p in DELTA_TABLE_PROPERTIES}
    assert ours == theirs, (f"only Delta's: {sorted(theirs - ours)}; only ours: {sorted(ours - theirs)}")
