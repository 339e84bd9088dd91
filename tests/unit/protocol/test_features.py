"""The feature registry against delta-spark's TableFeature.scala, row by row."""

from __future__ import annotations



import pytest

from delta_downgrade.protocol import (
    CHECKPOINT_PROTECTION,
    FEATURES,
    FeatureKind,
    TableFeature,
    lookup_feature,
)
from delta_downgrade.protocol.features import (
    DELTA_TABLE_PROPERTIES,
    active_registry,
    get_feature,
    is_delta_table_property,
    registry_with,
    with_registry,
)

L_W, L_RW, W, RW = "L-W", "L-RW", "W", "RW"
_ = None  # "–" in the HistProt column: not removable

# delta-spark's features transcribed: name, kind, Spark (r,w), spec, removable, HistProt, requires.
CATALOG_1_3 = [
    ("appendOnly", L_W, (0, 2), "yes", False, _, set()),
    ("invariants", L_W, (0, 2), "yes", False, _, set()),
    ("checkConstraints", L_W, (0, 3), "yes", True, False, set()),
    ("changeDataFeed", L_W, (0, 4), "yes", False, _, set()),
    ("generatedColumns", L_W, (0, 4), "yes", False, _, set()),
    ("columnMapping", L_RW, (2, 5), "yes", True, True, set()),
    ("identityColumns", L_W, (0, 6), "yes", False, _, set()),
    ("allowColumnDefaults", W, (0, 7), "yes", False, _, set()),
    ("deletionVectors", RW, (3, 7), "yes", True, True, set()),
    ("rowTracking", W, (0, 7), "yes", True, False, {"domainMetadata"}),
    ("domainMetadata", W, (0, 7), "yes", True, False, set()),
    ("timestampNtz", RW, (3, 7), "yes", False, _, set()),
    ("v2Checkpoint", RW, (3, 7), "yes", True, True, set()),
    ("icebergCompatV1", W, (0, 7), "yes", False, _, {"columnMapping"}),
    ("icebergCompatV2", W, (0, 7), "yes", False, _, {"columnMapping"}),
    ("icebergCompatV3", W, (0, 7), "RFC", False, _, {"columnMapping", "rowTracking"}),
    ("clustering", W, (0, 7), "yes", False, _, {"domainMetadata"}),
    ("vacuumProtocolCheck", RW, (3, 7), "yes", True, True, set()),
    ("inCommitTimestamp", W, (0, 7), "yes", True, False, set()),
    ("typeWidening", RW, (3, 7), "section only", True, True, set()),
    ("typeWidening-preview", RW, (3, 7), "section only", True, True, set()),
    ("variantType", RW, (3, 7), "section only", False, _, set()),
    ("variantType-preview", RW, (3, 7), "section only", False, _, set()),
    ("variantShredding", RW, (3, 7), "section only", False, _, {"variantType"}),
    ("variantShredding-preview", RW, (3, 7), "section only", False, _, set()),
    ("catalogManaged", RW, (3, 7), "yes", True, True, {"inCommitTimestamp", "vacuumProtocolCheck"}),
    ("coordinatedCommits-preview", W, (0, 7), "no", True, False,
     {"inCommitTimestamp", "vacuumProtocolCheck"}),
    ("geospatial", RW, (3, 7), "no", True, True, set()),
    ("geospatial-dev", RW, (3, 7), "no", True, True, set()),
    ("materializePartitionColumns", W, (0, 7), "RFC", True, False, set()),
    ("redirectReaderWriter-preview", RW, (3, 7), "no", True, False, set()),
    ("redirectWriterOnly-preview", W, (0, 7), "no", True, False, set()),
    ("checkpointProtection", W, (0, 7), "RFC only", True, False, set()),
    ("adaptiveMetadata-preview", RW, (3, 7), "RFC", False, _,
     {"catalogManaged", "rowTracking", "domainMetadata", "deletionVectors", "columnMapping"}),
]

# Beyond delta-spark's list (it has neither): Databricks' preview name of clustering, written by DBR
# 13.x (golden liquid_row_tracking_dbr), and the Collated String Type RFC's writer feature.
# Both writer-only, needing domainMetadata, not removable.
BEYOND_SPARK = [
    ("liquid", W, (0, 7), "no", False, _, {"domainMetadata"}),
    ("collations", W, (0, 7), "RFC", False, _, {"domainMetadata"}),
    # Other names Databricks tables carry, known by name (none removable).
    ("collations-preview", W, (0, 7), "no", False, _, {"domainMetadata"}),
    ("inCommitTimestamp-preview", W, (0, 7), "no", False, _, set()),
    ("catalogOwned-preview", RW, (3, 7), "no", False, _, {"inCommitTimestamp"}),
    ("icebergWriterCompatV1", W, (0, 7), "no", False, _, {"icebergCompatV2"}),
    ("icebergWriterCompatV3", W, (0, 7), "no", False, _, {"icebergCompatV3"}),
    ("timestampNanos", RW, (3, 7), "no", False, _, set()),
]
REGISTRY_ROWS = CATALOG_1_3 + BEYOND_SPARK

NOT_HANDLED_BY_PACKAGE = {"catalogManaged", "coordinatedCommits-preview",
                          "redirectReaderWriter-preview", "redirectWriterOnly-preview",
                          "adaptiveMetadata-preview", "catalogOwned-preview"}
#: Read (their log means what it says) but never written by this package.
READ_ONLY_FOR_PACKAGE = {"inCommitTimestamp-preview", "icebergWriterCompatV1", "icebergWriterCompatV3",
                         "timestampNanos"}


def test_registry_has_exactly_the_catalog_features():
    assert set(FEATURES) == {row[0] for row in REGISTRY_ROWS}
    assert len(FEATURES) == 42


def test_registry_is_keyed_by_exact_name_and_immutable():
    for name, feature in FEATURES.items():
        assert feature.name == name
    with pytest.raises(TypeError):
        FEATURES["x"] = FEATURES["appendOnly"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        FEATURES["appendOnly"].removable = True  # type: ignore[misc]


@pytest.mark.parametrize("row", REGISTRY_ROWS, ids=[row[0] for row in REGISTRY_ROWS])
def test_feature_matches_catalog_row(row):
    name, kind, (reader, writer), spec, removable, hist_prot, requires = row
    f = FEATURES[name]
    assert f.kind is (FeatureKind.READER_WRITER if kind in (L_RW, RW) else FeatureKind.WRITER)
    assert f.is_legacy is kind.startswith("L-")
    # Spark's reader 0 for writer-only features is 1 here (PROTOCOL.md 'Table Features' clamps to 1).
    assert f.min_reader_version == max(1, reader)
    assert f.min_writer_version == writer
    assert f.removable is removable
    if hist_prot is None:
        # Non-removable: record Spark's default (true for reader-writer, false for writer).
        assert f.requires_history_protection is (f.kind is FeatureKind.READER_WRITER)
    else:
        assert f.requires_history_protection is hist_prot
    assert f.required_features == frozenset(requires)
    assert f.in_spec is (spec == "yes")
    assert f.package_reads is (name not in NOT_HANDLED_BY_PACKAGE)
    assert f.package_writes is (name not in NOT_HANDLED_BY_PACKAGE | READ_ONLY_FOR_PACKAGE)


def test_required_features_are_registered_and_acyclic():
    def visit(name, path):
        assert name in FEATURES, f"{path} requires unregistered {name}"
        assert name not in path, f"cycle {path + (name,)}"
        for dep in FEATURES[name].required_features:
            visit(dep, path + (name,))

    for name in FEATURES:
        visit(name, ())


def test_legacy_features_are_exactly_the_seven_of_1_2():
    assert {n for n, f in FEATURES.items() if f.is_legacy} == {
        "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
        "columnMapping", "identityColumns"}


def test_checkpoint_protection_constant():
    assert CHECKPOINT_PROTECTION == "checkpointProtection"
    assert FEATURES[CHECKPOINT_PROTECTION].properties == (
        "delta.requireCheckpointProtectionBeforeVersion",)


@pytest.mark.parametrize("typed, expected", [
    ("deletionVectors", "deletionVectors"),
    ("DELETIONVECTORS", "deletionVectors"),
    ("deletionvectors", "deletionVectors"),
    ("TypeWidening-Preview", "typeWidening-preview"),
    ("CHECKPOINTPROTECTION", "checkpointProtection"),
    ("v2checkpoint", "v2Checkpoint"),
])
def test_lookup_is_case_insensitive(typed, expected):
    feature = lookup_feature(typed)
    assert feature is not None and feature.name == expected


@pytest.mark.parametrize("name", ["NonSupportedFeature", "", "delta.enableRowTracking",
                                  "deletionVectors ", "testRemovableWriter"])
def test_lookup_unknown_is_none(name):
    assert lookup_feature(name) is None


def test_get_feature_is_exact():
    assert get_feature("deletionVectors") is FEATURES["deletionVectors"]
    assert get_feature("DeletionVectors") is None


@pytest.mark.parametrize("name, props", [
    ("deletionVectors", ("delta.enableDeletionVectors",)),
    ("columnMapping", ("delta.columnMapping.mode", "delta.columnMapping.maxColumnId")),
    ("typeWidening", ("delta.enableTypeWidening",)),
    ("typeWidening-preview", ("delta.enableTypeWidening",)),
    ("rowTracking", ("delta.enableRowTracking", "delta.rowTrackingSuspended",
                     "delta.rowTracking.materializedRowIdColumnName",
                     "delta.rowTracking.materializedRowCommitVersionColumnName")),
    ("inCommitTimestamp", ("delta.enableInCommitTimestamps",
                           "delta.inCommitTimestampEnablementVersion",
                           "delta.inCommitTimestampEnablementTimestamp")),
    ("v2Checkpoint", ("delta.checkpointPolicy",)),
    ("changeDataFeed", ("delta.enableChangeDataFeed",)),
    ("appendOnly", ("delta.appendOnly",)),
    ("materializePartitionColumns", ("delta.enableMaterializePartitionColumnsFeature",)),
    ("vacuumProtocolCheck", ()),
])
def test_feature_properties(name, props):
    assert FEATURES[name].properties == props


def test_traces_property_handles_prefix_families():
    cc = FEATURES["checkConstraints"]
    assert cc.traces_property("delta.constraints.c1")
    assert not cc.traces_property("delta.constraints.")
    assert not cc.traces_property("delta.constraintsX")
    assert FEATURES["deletionVectors"].traces_property("delta.enableDeletionVectors")
    assert not FEATURES["deletionVectors"].traces_property("delta.enableRowTracking")


#: Properties Delta writes for a feature without declaring them as table configs (DeltaConfigs):
#: row tracking's materialized column names.
UNDECLARED_FEATURE_PROPERTIES = {"delta.rowTracking.materializedRowIdColumnName",
                                 "delta.rowTracking.materializedRowCommitVersionColumnName"}


def test_every_feature_property_is_a_delta_property():
    for feature in FEATURES.values():
        for prop in feature.properties:
            assert prop.startswith("delta.")
            if not prop.endswith(".*") and prop not in UNDECLARED_FEATURE_PROPERTIES:
                assert prop in DELTA_TABLE_PROPERTIES
                assert is_delta_table_property(prop)


@pytest.mark.parametrize("name", [
    "delta.enableRowTracking", "DELTA.ENABLEROWTRACKING", "Delta.EnableRowTracking",
    "delta.requireCheckpointProtectionBeforeVersion", "delta.dropFeatureTruncateHistory.retentionDuration",
    "delta.logRetentionDuration", "delta.deletedFileRetentionDuration",
    "delta.checkpointRetentionDuration", "delta.enableExpiredLogCleanup", "delta.checkpointInterval",
    "delta.checkpointPolicy", "delta.enableDeletionVectors", "delta.enableTypeWidening",
    "delta.rowTrackingSuspended", "delta.enableInCommitTimestamps", "delta.columnMapping.mode",
    "delta.columnMapping.maxColumnId", "delta.appendOnly", "delta.dataSkippingNumIndexedCols",
    "delta.dataSkippingStatsColumns", "delta.isolationLevel", "delta.minReaderVersion",
    "delta.minWriterVersion", "delta.randomizeFilePrefixes", "delta.randomPrefixLength",
    "delta.setTransactionRetentionDuration", "delta.checkpoint.writeStatsAsJson",
    "delta.checkpoint.writeStatsAsStruct", "delta.autoOptimize.autoCompact",
    "delta.autoOptimize.optimizeWrite", "delta.universalFormat.enabledFormats",
    "delta.enableIcebergCompatV1", "delta.enableIcebergCompatV2", "delta.enableChangeDataFeed",
])
def test_known_delta_properties(name):
    assert is_delta_table_property(name)


@pytest.mark.parametrize("name", [
    "delta.feature.deletionVectors", "delta.feature.anything", "delta.constraints.c1",
    "deletionVectors", "enableRowTracking", "delta.", "delta.noSuchThing", "spark.foo",
    # Not Delta table configs: Databricks-only settings, and row tracking's undeclared keys.
    "delta.targetFileSize", "delta.tuneFileSizesForRewrites",
    "delta.rowTracking.materializedRowIdColumnName",
])
def test_not_delta_properties(name):
    assert not is_delta_table_property(name)


# --- registry swapping for tests ---------------------------------------------------------------

TEST_WRITER = TableFeature("testRemovableWriter", FeatureKind.WRITER, 1, 7, removable=True)


def test_with_registry_swaps_and_restores():
    assert active_registry() is FEATURES
    extended = registry_with(TEST_WRITER)
    with with_registry(extended):
        assert lookup_feature("TESTREMOVABLEWRITER") is TEST_WRITER
        assert get_feature("deletionVectors") is FEATURES["deletionVectors"]
        assert "testRemovableWriter" not in FEATURES
    assert lookup_feature("testRemovableWriter") is None
    assert active_registry() is FEATURES


def test_with_registry_restores_on_error():
    with pytest.raises(RuntimeError):
        with with_registry(registry_with(TEST_WRITER)):
            raise RuntimeError
    assert active_registry() is FEATURES


def test_registry_with_rejects_clashes():
    with pytest.raises(ValueError):
        registry_with(TableFeature("DeletionVectors", FeatureKind.WRITER, 1, 7))
    with pytest.raises(ValueError):
        registry_with(TEST_WRITER, TEST_WRITER)


def test_with_registry_rejects_mismatched_keys():
    with pytest.raises(ValueError):
        with with_registry({"other": TEST_WRITER}):
            pass


@pytest.mark.parametrize("kwargs", [
    dict(name="x", kind=FeatureKind.READER_WRITER, min_reader_version=1, min_writer_version=7),
    dict(name="x", kind=FeatureKind.WRITER, min_reader_version=3, min_writer_version=7),
    dict(name="x", kind=FeatureKind.WRITER, min_reader_version=1, min_writer_version=5),
    dict(name="x", kind=FeatureKind.WRITER, min_reader_version=1, min_writer_version=7,
         is_legacy=True),
    dict(name="x", kind=FeatureKind.READER_WRITER, min_reader_version=2, min_writer_version=7),
    dict(name="x", kind=FeatureKind.WRITER, min_reader_version=1, min_writer_version=7,
         required_features={"x"}),
    dict(name="", kind=FeatureKind.WRITER, min_reader_version=1, min_writer_version=7),
])
def test_inconsistent_feature_definitions_are_rejected(kwargs):
    with pytest.raises(ValueError):
        TableFeature(**kwargs)


def test_spark_reader_zero_is_accepted_for_writer_features():
    f = TableFeature("legacyW", FeatureKind.WRITER, 0, 5, is_legacy=True)
    assert f.min_reader_version == 0 and f.is_writer_only


def test_feature_kind_is_a_str_enum():
    assert FeatureKind.WRITER == "writer" and FeatureKind.READER_WRITER == "readerWriter"
    assert FeatureKind("readerWriter") is FeatureKind.READER_WRITER
