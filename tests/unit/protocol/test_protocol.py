"""The protocol algebra as delta-spark's Protocol and TableFeature define it: legacy versions, the
downgrade guard (canDowngradeTo), fast drop's checkpointProtection and the protocol results of drops.

Spark's suites use test-only features; they are built here and put in force with
``with_registry`` so the production registry never sees them.
"""

from __future__ import annotations

import random

import pytest

from delta_downgrade.errors import InvalidProtocolError
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, FEATURES, FeatureKind, Protocol, TableFeature
from delta_downgrade.protocol.features import lookup_feature, registry_with, with_registry
from delta_downgrade.protocol.protocol import required_closure

CP = CHECKPOINT_PROTECTION

# Test-only features (names as in Spark's suites).
W_T = "testRemovableWriter"
RW_T = "testRemovableReaderWriter"
LW_T = "testRemovableLegacyWriter"
LRW_T = "testRemovableLegacyReaderWriter"
DEP_T = "testDependsOnRemovables"  # a feature that requires {RW-T, W-T}

TEST_FEATURES = (
    TableFeature(W_T, FeatureKind.WRITER, 1, 7, removable=True),
    TableFeature(RW_T, FeatureKind.READER_WRITER, 3, 7, removable=True,
                 requires_history_protection=True),
    TableFeature(LW_T, FeatureKind.WRITER, 0, 5, is_legacy=True, removable=True),
    TableFeature(LRW_T, FeatureKind.READER_WRITER, 2, 5, is_legacy=True, removable=True,
                 requires_history_protection=True),
    TableFeature(DEP_T, FeatureKind.WRITER, 1, 7, required_features={W_T, RW_T}),
)
# The same without the legacy test features, which change what (1,5)…(2,6) imply.
TABLE_FEATURE_TESTS_ONLY = tuple(f for f in TEST_FEATURES if not f.is_legacy)

LEGACY_1_2 = frozenset({"appendOnly", "invariants"})
LEGACY_1_3 = LEGACY_1_2 | {"checkConstraints"}
LEGACY_1_4 = LEGACY_1_3 | {"changeDataFeed", "generatedColumns"}
LEGACY_ALL = LEGACY_1_4 | {"columnMapping", "identityColumns"}


def fs(*names: str) -> frozenset[str]:
    return frozenset(names)


def W(*names: str) -> Protocol:
    """(1,7) listing writer features only."""
    return Protocol(1, 7, None, frozenset(names))


@pytest.fixture
def spark_tests():
    """Every test feature in force, as in Spark's test JVM."""
    with with_registry(registry_with(*TEST_FEATURES)) as registry:
        yield registry


@pytest.fixture(params=["all-test-features", "no-legacy-test-features"])
def any_tests(request):
    """Scenarios whose results must not depend on the legacy test features being registered."""
    extra = TEST_FEATURES if request.param == "all-test-features" else TABLE_FEATURE_TESTS_ONLY
    with with_registry(registry_with(*extra)) as registry:
        yield registry


def drop(p: Protocol, name: str, *, fast: bool = True) -> Protocol:
    """The downgrade-commit protocol: fast drop adds CP when the feature needs history
    protection (Checkpoint Protection RFC); the legacy path never does. Also checks the commit guard
    (canDowngradeTo)."""
    feature = lookup_feature(name)
    protect = fast and feature is not None and feature.requires_history_protection
    new = p.downgrade_for_drop(name, checkpoint_protection=protect)
    assert p.can_downgrade_to(new, name), f"{p} -> {new} dropping {name}"
    assert new.problems() == []
    return new


# --- protocol results of drops ---------------------------------------------------------------------------------
# 13–23 come from DeltaProtocolVersionSuite, which runs with fast drop OFF: legacy path, no CP.
# Dropping a writer feature never adds CP anyway, so only the reader-writer drops say so.

def test_b13_create_1_4_add_and_drop_writer(any_tests):
    p = Protocol(1, 4).with_feature(W_T)
    assert p == Protocol(1, 7, None, LEGACY_1_4 | {W_T})
    assert drop(p, W_T) == Protocol(1, 4)


def test_b14_create_2_4_add_and_drop_writer(any_tests):
    p = Protocol(2, 4).with_feature(W_T)
    assert p == Protocol(1, 7, None, LEGACY_1_4 | {W_T})
    assert drop(p, W_T) == Protocol(1, 4)


def test_b15_create_2_5_add_and_drop_writer(any_tests):
    p = Protocol(2, 5).with_feature(W_T)
    assert p.min_reader_version == 2 and p.reader_features is None
    assert p.writer_features == Protocol(2, 5).implicit_features | {W_T}
    assert drop(p, W_T) == Protocol(2, 5)


def test_b16_create_1_1_add_and_drop_writer(any_tests):
    p = Protocol(1, 1).with_feature(W_T)
    assert p == W(W_T)
    assert drop(p, W_T) == Protocol(1, 1)


@pytest.mark.parametrize("created", [Protocol(3, 7, fs(), fs(W_T)), W(W_T)], ids=str)
def test_b17_only_writer_feature_dropped_gives_1_1(any_tests, created):
    assert created.problems() == []
    assert drop(created, W_T) == Protocol(1, 1)


def test_b18_default_create_with_writer_feature(any_tests):
    p = Protocol(1, 2).with_feature(W_T)
    assert p == W("appendOnly", "invariants", W_T)
    dropped = drop(p, W_T)
    assert dropped == Protocol(1, 2)
    assert dropped.with_feature(W_T) == p


def test_b19_3_7_with_writer_and_2_5_legacy_set(any_tests):
    legacy_2_5 = Protocol(2, 5).implicit_features
    rw = fs(*(n for n in legacy_2_5 if any_tests[n].kind is FeatureKind.READER_WRITER))
    explicit = Protocol(3, 7, rw, legacy_2_5 | {W_T})
    assert explicit.problems() == []
    assert drop(explicit, W_T) == Protocol(2, 5)
    # The same table grown feature by feature from (3,7,W=[W-T]).
    grown = Protocol(3, 7, fs(), fs(W_T))
    for name in sorted(legacy_2_5):
        grown = grown.with_feature(name)
    assert grown.features == explicit.features
    assert drop(grown, W_T) == Protocol(2, 5)


def test_b20_legacy_test_writer_listed_explicitly(spark_tests):
    p = W(W_T, LW_T)
    after = drop(p, W_T)
    # (1,5) would imply the five legacy writer features as well, so it stays listed.
    assert after == W(LW_T)
    assert drop(after, LW_T) == Protocol(1, 1)
    assert drop(drop(p, LW_T), W_T) == Protocol(1, 1)


def test_b21_column_mapping_with_reader_2(any_tests):
    p = W(W_T).with_feature("columnMapping")
    assert p == Protocol(2, 7, None, fs(W_T, "columnMapping"))
    assert drop(p, W_T) == Protocol(2, 7, None, fs("columnMapping"))


def test_b22_dropping_one_of_two(any_tests):
    assert drop(Protocol.minimum_for([W_T, "domainMetadata"]), W_T) == W("domainMetadata")
    dv = Protocol.minimum_for([RW_T, "deletionVectors"])
    assert dv == Protocol(3, 7, fs(RW_T, "deletionVectors"), fs(RW_T, "deletionVectors"))
    assert drop(dv, RW_T, fast=False) == Protocol(3, 7, fs("deletionVectors"), fs("deletionVectors"))
    # With fast drop on, the same drop would add CP (Checkpoint Protection RFC).
    assert drop(dv, RW_T) == Protocol(3, 7, fs("deletionVectors"), fs("deletionVectors", CP))
    both = Protocol.minimum_for([RW_T, W_T])
    assert drop(both, W_T) == Protocol(3, 7, fs(RW_T), fs(RW_T))


@pytest.mark.parametrize("truncate", [False, True])
def test_b23_legacy_path_reader_writer_drop(any_tests, truncate):
    # Legacy path (fast OFF), TRUNCATE HISTORY or not: never checkpointProtection.
    p = Protocol(3, 7, fs(RW_T), fs("rowTracking", "domainMetadata", RW_T))
    assert drop(p, RW_T, fast=False) == W("rowTracking", "domainMetadata")
    q = Protocol(3, 7, fs(RW_T, "columnMapping"),
                 fs("domainMetadata", "changeDataFeed", "columnMapping", RW_T))
    assert drop(q, RW_T, fast=False) == Protocol(
        2, 7, None, fs("domainMetadata", "changeDataFeed", "columnMapping"))


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "legacy"])
def test_b24_check_constraints(fast):
    assert drop(Protocol(1, 3), "checkConstraints", fast=fast) == Protocol(1, 2)
    assert drop(Protocol(1, 4), "checkConstraints", fast=fast) == W(
        "appendOnly", "invariants", "generatedColumns", "changeDataFeed")


def test_b25_column_mapping_from_2_5():
    assert drop(Protocol(2, 5), "columnMapping", fast=False) == Protocol(1, 4)
    assert drop(Protocol(2, 5), "columnMapping", fast=True) == Protocol(
        1, 7, None, LEGACY_1_4 | {CP})


def test_b26_column_mapping_and_test_features(any_tests):
    p = Protocol(1, 2).with_feature("columnMapping").with_feature(W_T).with_feature(RW_T)
    assert p == Protocol(3, 7, fs("columnMapping", RW_T),
                         LEGACY_1_2 | {"columnMapping", W_T, RW_T})
    assert drop(p, RW_T) == Protocol(
        2, 7, None, fs("invariants", "appendOnly", "columnMapping", W_T, CP))
    assert drop(p, RW_T, fast=False) == Protocol(
        2, 7, None, fs("invariants", "appendOnly", "columnMapping", W_T))


# --- fast drop and downgrade-guard examples -----------------------------------------------------------------------

def test_s3_reader_writer_drop_from_3_7_leaves_reader_1(any_tests):
    p = Protocol(3, 7, fs(RW_T), fs(W_T, RW_T))
    assert drop(p, RW_T) == W(W_T, CP)
    assert drop(p, RW_T, fast=False) == W(W_T)


def test_s3_writer_feature_fast_drop_adds_no_checkpoint_protection(any_tests):
    p = Protocol(3, 7, fs(RW_T), fs(W_T, RW_T))
    assert drop(p, W_T) == Protocol(3, 7, fs(RW_T), fs(RW_T))


def test_s3_second_history_protected_drop_keeps_single_cp(any_tests):
    p = Protocol(3, 7, fs(RW_T, "vacuumProtocolCheck"), fs(RW_T, "vacuumProtocolCheck"))
    once = drop(p, RW_T)
    assert once == Protocol(3, 7, fs("vacuumProtocolCheck"), fs("vacuumProtocolCheck", CP))
    assert drop(once, "vacuumProtocolCheck") == W(CP)


def test_s5_dropping_checkpoint_protection_goes_back_to_legacy():
    p = drop(Protocol(1, 2).with_feature("deletionVectors"), "deletionVectors")
    assert p == W("appendOnly", "invariants", CP)
    assert drop(p, CP, fast=False) == Protocol(1, 2)


@pytest.mark.parametrize("given, normal", [
    (W("appendOnly", "invariants", "checkConstraints"), Protocol(1, 3)),
    (Protocol(3, 7, fs(), fs("rowTracking")), W("rowTracking")),
    (W(), Protocol(1, 1)),
    (Protocol(3, 7, fs(), fs()), Protocol(1, 1)),
    (W(*LEGACY_1_4), Protocol(1, 4)),
    (W(*(LEGACY_1_4 - {"checkConstraints"})), W(*(LEGACY_1_4 - {"checkConstraints"}))),
    (Protocol(2, 7, None, LEGACY_1_4 | {"columnMapping"}), Protocol(2, 5)),
    (Protocol(3, 7, fs("columnMapping"), LEGACY_ALL), Protocol(2, 6)),
    (Protocol(3, 7, fs("columnMapping"), fs("columnMapping")),
     Protocol(2, 7, None, fs("columnMapping"))),
    (Protocol(3, 7, fs("deletionVectors"), fs("deletionVectors", "appendOnly")),
     Protocol(3, 7, fs("deletionVectors"), fs("deletionVectors", "appendOnly"))),
    (Protocol(1, 2), Protocol(1, 2)),
    (Protocol(2, 4), Protocol(2, 4)),  # legacy protocols are already normal
], ids=str)
def test_s1_4_normalize_examples(given, normal):
    assert given.normalized() == normal
    assert normal.normalized() == normal
    assert given.features == normal.features


def test_s1_4_denormalize_2_5():
    assert Protocol(2, 5).denormalized() == Protocol(
        2, 7, None, LEGACY_1_4 | {"columnMapping"})


@pytest.mark.parametrize("legacy, denormal", [
    (Protocol(1, 1), W()),
    (Protocol(1, 2), W(*LEGACY_1_2)),
    (Protocol(2, 2), W(*LEGACY_1_2)),
    (Protocol(2, 4), W(*LEGACY_1_4)),
    (Protocol(1, 6), W(*(LEGACY_1_4 | {"identityColumns"}))),
    (Protocol(2, 6), Protocol(2, 7, None, LEGACY_ALL)),
], ids=str)
def test_denormalize_legacy_pairs(legacy, denormal):
    assert legacy.denormalized() == denormal
    assert denormal.denormalized() == denormal


def test_s1_4_readding_a_dropped_feature_gives_the_original(any_tests):
    for original in (Protocol(1, 4).with_feature(W_T), Protocol(1, 2).with_feature(W_T),
                     Protocol.minimum_for([RW_T, "deletionVectors"])):
        for name in (W_T, RW_T):
            if name in original.features:
                assert original.without_feature(name).with_feature(name) == original


# --- legacy versions ---------------------------------------------------------------------

IMPLICIT = {
    (1, 1): fs(), (1, 2): LEGACY_1_2, (1, 3): LEGACY_1_3, (1, 4): LEGACY_1_4,
    (1, 5): LEGACY_1_4, (1, 6): LEGACY_1_4 | {"identityColumns"},
    (2, 1): fs(), (2, 2): LEGACY_1_2, (2, 3): LEGACY_1_3, (2, 4): LEGACY_1_4,
    (2, 5): LEGACY_1_4 | {"columnMapping"}, (2, 6): LEGACY_ALL,
}


@pytest.mark.parametrize("versions", sorted(IMPLICIT), ids=str)
def test_implicit_features_of_every_legacy_pair(versions):
    p = Protocol(*versions)
    assert p.problems() == []
    assert p.implicit_features == IMPLICIT[versions]
    assert p.explicit_features == fs()
    assert p.features == IMPLICIT[versions]
    assert not p.supports_reader_features and not p.supports_writer_features
    assert p.reader_side_features == (fs("columnMapping") if versions[0] == 2 else fs())
    assert p.unsupported_for_read() == fs() and p.unsupported_for_write() == fs()


@pytest.mark.parametrize("versions", sorted(IMPLICIT), ids=str)
def test_legacy_pairs_reach_their_canonical_pair(versions):
    # The canonical spelling of each legacy pair: (1,5) ≡ (1,4), (2,4) ≡ (1,4), (2,1) ≡ (1,1) …
    p = Protocol(*versions)
    canonical = p.denormalized().normalized()
    assert canonical.features == p.features
    assert canonical == Protocol.minimum_for(p.features)
    expected = {(1, 5): (1, 4), (2, 1): (1, 1), (2, 2): (1, 2), (2, 3): (1, 3),
                (2, 4): (1, 4)}.get(versions, versions)
    assert canonical == Protocol(*expected)


def test_nothing_is_implicit_with_writer_7():
    assert Protocol(2, 7, None, fs()).implicit_features == fs()
    assert Protocol(3, 7, fs(), fs()).implicit_features == fs()
    assert W("deletionVectors").implicit_features == fs()


def test_legacy_test_features_join_the_implicit_sets(spark_tests):
    assert Protocol(1, 5).implicit_features == LEGACY_1_4 | {LW_T}
    assert Protocol(2, 5).implicit_features == LEGACY_1_4 | {"columnMapping", LW_T, LRW_T}
    assert Protocol(1, 4).implicit_features == LEGACY_1_4


def test_supports_flags_and_aliases():
    p = Protocol(3, 7, fs(), fs())
    assert p.supports_reader_features and p.supports_writer_features
    assert p.supports_table_features_reader and p.supports_table_features_writer
    q = W()
    assert not q.supports_reader_features and q.supports_writer_features
    assert not q.supports_table_features_reader and q.supports_table_features_writer


# --- validity ----------------------------------------------------------------------------

@pytest.mark.parametrize("p, fragment", [
    (Protocol(0, 1), "minReaderVersion 0 is below 1"),
    (Protocol(1, 0), "minWriterVersion 0 is below 1"),
    (Protocol(4, 7, fs(), fs()), "minReaderVersion 4 is unknown"),
    (Protocol(1, 8), "minWriterVersion 8 is unknown"),
    (Protocol(3, 6, fs()), "minReaderVersion 3 requires minWriterVersion 7"),
    (Protocol(3, 7, None, fs()), "requires a readerFeatures list"),
    (Protocol(2, 7, fs(), fs()), "readerFeatures is only allowed with minReaderVersion 3"),
    (Protocol(1, 2, fs()), "readerFeatures is only allowed with minReaderVersion 3"),
    (Protocol(1, 7), "minWriterVersion 7 requires a writerFeatures list"),
    (Protocol(1, 6, None, fs()), "writerFeatures is only allowed with minWriterVersion 7"),
    (Protocol(3, 7, fs("deletionVectors"), fs()), "missing from writerFeatures: deletionVectors"),
    (Protocol(3, 7, fs("futureRW"), fs()), "missing from writerFeatures: futureRW"),
    (Protocol(3, 7, fs("appendOnly"), fs("appendOnly")), "writer-only features listed in readerFeatures"),
    (Protocol(3, 7, fs(), fs("deletionVectors")),
     "reader-writer features missing from readerFeatures: deletionVectors"),
    (Protocol(3, 7, fs(), fs("columnMapping")),
     "reader-writer features missing from readerFeatures: columnMapping"),
    (W("columnMapping"), "higher minReaderVersion than 1: columnMapping"),
    (Protocol(2, 7, None, fs("deletionVectors")), "higher minReaderVersion than 2: deletionVectors"),
], ids=str)
def test_each_validity_rule(p, fragment):
    problems = p.problems()
    assert any(fragment in problem for problem in problems), problems
    with pytest.raises(InvalidProtocolError) as info:
        p.validate()
    assert fragment in str(info.value)
    assert info.value.error_class == "DELTA_INVALID_PROTOCOL_VERSION"
    assert info.value.params["problems"] == problems


@pytest.mark.parametrize("p", [
    *(Protocol(*v) for v in IMPLICIT),
    Protocol(3, 7, fs(), fs()),
    W(),
    Protocol(2, 7, None, fs("columnMapping")),  # legacy RW only in writerFeatures (PROTOCOL.md 'Table Features')
    Protocol(3, 7, fs("columnMapping"), fs("columnMapping")),
    Protocol(3, 7, fs("deletionVectors"), fs("deletionVectors", "appendOnly")),
    Protocol(3, 7, fs("futureRW"), fs("futureRW")),  # unknown names: unsupported, not invalid
    W("futureWriter"),
    Protocol(3, 7, fs(), fs("futureWriter")),
], ids=str)
def test_valid_protocols(p):
    assert p.problems() == []
    assert p.validate() is p


def test_problems_accumulate():
    problems = Protocol(3, 5, None, fs("x")).problems()
    assert len(problems) == 3


# --- support by this package --------------------------------------------------------------------

@pytest.mark.parametrize("p, read, write", [
    (Protocol(3, 7, fs("futureRW"), fs("futureRW")), fs("futureRW"), fs("futureRW")),
    (W("futureWriter"), fs(), fs("futureWriter")),
    (Protocol.minimum_for(["catalogManaged"]), fs("catalogManaged"), fs("catalogManaged")),
    (Protocol.minimum_for(["coordinatedCommits-preview"]), fs(), fs("coordinatedCommits-preview")),
    (Protocol.minimum_for(["redirectReaderWriter-preview"]), fs("redirectReaderWriter-preview"),
     fs("redirectReaderWriter-preview")),
    (Protocol.minimum_for(["redirectWriterOnly-preview"]), fs(), fs("redirectWriterOnly-preview")),
    # Names match exactly: a differently-cased name is an unknown feature.
    (Protocol(3, 7, fs("DeletionVectors"), fs("DeletionVectors")), fs("DeletionVectors"),
     fs("DeletionVectors")),
    (Protocol.minimum_for(["deletionVectors", "rowTracking", "v2Checkpoint", CP]), fs(), fs()),
    (Protocol(2, 5), fs(), fs()),
], ids=str)
def test_unsupported_features(p, read, write):
    assert p.unsupported_for_read() == read
    assert p.unsupported_for_write() == write


def test_reader_side_features():
    assert Protocol(3, 7, fs("deletionVectors"), fs("deletionVectors", "rowTracking")
                    ).reader_side_features == fs("deletionVectors")
    assert Protocol(2, 7, None, fs("columnMapping", "rowTracking")).reader_side_features == fs(
        "columnMapping")
    assert Protocol(2, 7, None, fs("rowTracking")).reader_side_features == fs()
    assert W("appendOnly").reader_side_features == fs()
    assert Protocol(2, 1).reader_side_features == fs("columnMapping")


# --- dependents --------------------------------------------------------

def test_a7_dependents(spark_tests):
    p = Protocol.minimum_for([DEP_T])
    assert p.features == fs(DEP_T, W_T, RW_T)
    assert p.dependents_of(W_T) == fs(DEP_T) and p.dependents_of(RW_T) == fs(DEP_T)
    p2 = drop(p, DEP_T)
    assert p2.features == fs(W_T, RW_T)
    assert p2.dependents_of(W_T) == fs()
    assert drop(p2, W_T) == Protocol(3, 7, fs(RW_T), fs(RW_T))


def test_a8_a9_dependents():
    assert Protocol.minimum_for(["rowTracking"]).dependents_of("domainMetadata") == fs("rowTracking")
    assert Protocol.minimum_for(["catalogManaged"]).dependents_of("vacuumProtocolCheck") == fs(
        "catalogManaged")
    assert Protocol(1, 2).dependents_of("appendOnly") == fs()


# --- commit guard (canDowngradeTo) ---------------------------------------------------------

def test_can_downgrade_to():
    p = Protocol.minimum_for(["deletionVectors", "rowTracking"])
    assert p.can_downgrade_to(p.without_feature("deletionVectors"), "deletionVectors")
    assert p.can_downgrade_to(p.downgrade_for_drop("deletionVectors", checkpoint_protection=True),
                              "deletionVectors")
    assert p.can_downgrade_to(p.without_feature("deletionVectors"), "DELETIONVECTORS")
    # Another feature dropped as well, or only a different one.
    assert not p.can_downgrade_to(W("rowTracking"), "deletionVectors")
    assert not p.can_downgrade_to(p.without_feature("rowTracking"), "deletionVectors")
    # A feature other than checkpointProtection added.
    bigger = p.without_feature("deletionVectors").with_feature("v2Checkpoint")
    assert not p.can_downgrade_to(bigger, "deletionVectors")
    # Dropping checkpointProtection itself.
    q = W("appendOnly", "invariants", CP)
    assert q.can_downgrade_to(Protocol(1, 2), CP)
    # Stricter than Spark: the dropped feature must have been there (see the docstring).
    assert not Protocol(1, 2).can_downgrade_to(q, CP)
    assert not Protocol(1, 2).can_downgrade_to(Protocol(1, 2), "deletionVectors")
    assert not p.can_downgrade_to(p, "noSuchFeature")


# --- construction, JSON shape ------------------------------------------------------------------

@pytest.mark.parametrize("action", [
    {"minReaderVersion": 1, "minWriterVersion": 2},
    {"minReaderVersion": 2, "minWriterVersion": 5},
    {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": []},
    {"minReaderVersion": 1, "minWriterVersion": 7,
     "writerFeatures": ["appendOnly", "checkpointProtection", "invariants"]},
    {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
     "writerFeatures": ["appendOnly", "deletionVectors"]},
    {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [], "writerFeatures": []},
    # Invalid but well-formed actions round-trip too: we never rewrite what we read.
    {"minReaderVersion": 3, "minWriterVersion": 7, "writerFeatures": ["x"]},
])
def test_action_round_trip(action):
    p = Protocol.from_action(action)
    assert p.to_action() == action
    assert Protocol.from_action(p.to_action()) == p


def test_from_action_shapes():
    p = Protocol.from_action({"minReaderVersion": 3, "minWriterVersion": 7,
                              "readerFeatures": ["deletionVectors"],
                              "writerFeatures": ["deletionVectors", "appendOnly", "appendOnly"],
                              "someFutureField": 1})
    assert p == Protocol(3, 7, fs("deletionVectors"), fs("deletionVectors", "appendOnly"))
    assert p.to_action()["writerFeatures"] == ["appendOnly", "deletionVectors"]
    assert list(p.to_action()) == ["minReaderVersion", "minWriterVersion", "readerFeatures",
                                   "writerFeatures"]
    nulls = Protocol.from_action({"minReaderVersion": 1, "minWriterVersion": 2,
                                  "readerFeatures": None, "writerFeatures": None})
    assert nulls == Protocol(1, 2) and nulls.reader_features is None


@pytest.mark.parametrize("action", [
    {"minWriterVersion": 2},
    {"minReaderVersion": 1},
    {"minReaderVersion": "1", "minWriterVersion": 2},
    {"minReaderVersion": True, "minWriterVersion": 2},
    {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": "appendOnly"},
    {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": [1]},
    {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": {"a": 1}, "writerFeatures": []},
])
def test_from_action_rejects_malformed(action):
    with pytest.raises(InvalidProtocolError):
        Protocol.from_action(action)


def test_value_semantics():
    a = Protocol(1, 7, None, ["a", "b"])
    b = Protocol(1, 7, None, frozenset({"b", "a"}))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert Protocol(1, 7, None, fs()) != Protocol(1, 7)
    assert Protocol(1, 2) != Protocol(1, 2, None, fs())
    with pytest.raises(AttributeError):
        a.min_reader_version = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Protocol(1, 7, None, "appendOnly")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Protocol("1", 2)  # type: ignore[arg-type]


@pytest.mark.parametrize("p, text", [
    (Protocol(1, 2), "(1,2)"),
    (Protocol(3, 7, fs("deletionVectors"), fs("appendOnly", "deletionVectors")),
     "(3,7,R=[deletionVectors],W=[appendOnly,deletionVectors])"),
    (W("rowTracking", "domainMetadata"), "(1,7,W=[domainMetadata,rowTracking])"),
    (W(), "(1,7,W=[])"),
])
def test_str(p, text):
    assert str(p) == text
    assert repr(p) == "Protocol" + text


# --- algebra details ---------------------------------------------------------------------------

def test_with_feature_adds_requirements_transitively():
    p = Protocol(1, 2).with_feature("icebergCompatV3")
    assert p == Protocol(2, 7, None, LEGACY_1_2 | {"icebergCompatV3", "columnMapping",
                                                   "rowTracking", "domainMetadata"})
    assert Protocol.minimum_for(["adaptiveMetadata-preview"]).features == fs(
        "adaptiveMetadata-preview", "catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck",
        "rowTracking", "domainMetadata", "deletionVectors", "columnMapping")
    assert required_closure(["variantShredding-preview"]) == fs("variantShredding-preview")
    assert required_closure(["variantShredding"]) == fs("variantShredding", "variantType")


def test_with_feature_is_case_insensitive_and_rejects_unknown():
    assert Protocol(1, 1).with_feature("DELETIONVECTORS") == Protocol.minimum_for(["deletionVectors"])
    with pytest.raises(ValueError):
        Protocol(1, 1).with_feature("noSuchFeature")
    with pytest.raises(ValueError):
        Protocol.minimum_for(["noSuchFeature"])


def test_algebra_refuses_unknown_versions():
    with pytest.raises(InvalidProtocolError):
        Protocol(1, 8).with_feature("appendOnly")
    with pytest.raises(InvalidProtocolError):
        Protocol(4, 7, fs(), fs()).without_feature("appendOnly")
    assert Protocol(1, 8).normalized() == Protocol(1, 8)
    assert Protocol(1, 8).denormalized() == Protocol(1, 8)


def test_with_feature_already_present_is_idempotent():
    assert Protocol(1, 2).with_feature("appendOnly") == Protocol(1, 2)
    p = Protocol.minimum_for(["deletionVectors"])
    assert p.with_feature("deletionVectors") == p


def test_without_feature_leaves_dependents_to_the_caller():
    p = Protocol.minimum_for(["rowTracking"])
    assert p.without_feature("domainMetadata") == W("rowTracking")


def test_without_feature_matching(any_tests):
    p = Protocol(1, 2).with_feature(W_T)
    assert p.without_feature("TESTREMOVABLEWRITER") == Protocol(1, 2)
    assert p.without_feature("notThere") == p


def test_unknown_names_are_carried_along(any_tests):
    p = Protocol(3, 7, fs("futureRW"), fs("futureRW", W_T))
    assert p.without_feature(W_T) == Protocol(3, 7, fs("futureRW"), fs("futureRW"))
    assert W("futureW", "appendOnly", "invariants").without_feature("futureW") == Protocol(1, 2)
    assert Protocol(3, 7, fs(), fs("futureW")).normalized() == W("futureW")
    q = Protocol(1, 2).with_feature(W_T)
    assert W(*q.writer_features, "futureW").without_feature(W_T) == W(
        "appendOnly", "invariants", "futureW")


def test_downgrade_for_drop_of_writer_feature_with_protection_flag():
    # The flag is the caller's choice (only features that need history protection add it).
    p = Protocol.minimum_for(["domainMetadata"])
    assert p.downgrade_for_drop("domainMetadata", checkpoint_protection=False) == Protocol(1, 1)
    assert p.downgrade_for_drop("domainMetadata", checkpoint_protection=True) == W(CP)


# --- property-style checks over random feature sets --------------------------------------------

def _random_sets(names, count, seed):
    rng = random.Random(seed)
    for _ in range(count):
        yield frozenset(rng.sample(names, rng.randint(0, min(9, len(names)))))


def _check_minimum(s: frozenset[str]) -> None:
    p = Protocol.minimum_for(s)
    assert p.features >= s
    assert p.features == required_closure(s)
    assert p.problems() == [], (s, p)
    assert p.normalized() == p
    assert p.denormalized().normalized() == p
    assert Protocol.from_action(p.to_action()) == p
    for name in sorted(p.features):
        if p.dependents_of(name):
            continue
        q = p.without_feature(name)
        assert q.features == p.features - {name}
        assert q.problems() == []
        assert q.normalized() == q
        assert q.with_feature(name) == p, (p, name, q)
        assert p.can_downgrade_to(q, name)
        protected = p.downgrade_for_drop(name, checkpoint_protection=True)
        assert p.can_downgrade_to(protected, name)
        assert protected.features == (p.features - {name}) | ({CP} if name != CP else set())


def test_random_feature_sets_production_registry():
    for s in _random_sets(sorted(FEATURES), 300, seed=1737):
        _check_minimum(s)


def test_random_feature_sets_with_test_features(spark_tests):
    for s in _random_sets(sorted(spark_tests), 300, seed=4152):
        _check_minimum(s)


def test_random_spellings_normalize_to_the_same_protocol():
    """Any valid spelling of a feature set normalizes to ``minimum_for`` of that set."""
    names = sorted(FEATURES)
    for s in _random_sets(names, 300, seed=99):
        s = required_closure(s)
        rw = frozenset(n for n in s if FEATURES[n].kind is FeatureKind.READER_WRITER)
        spellings = [Protocol(3, 7, rw, s)]
        if all(FEATURES[n].min_reader_version <= 2 for n in s):
            spellings.append(Protocol(2, 7, None, s))
        if all(FEATURES[n].min_reader_version <= 1 for n in s):
            spellings.append(Protocol(1, 7, None, s))
        expected = Protocol.minimum_for(s)
        for spelling in spellings:
            assert spelling.problems() == [], spelling
            assert spelling.normalized() == expected
            assert spelling.normalized().normalized() == expected
            assert spelling.normalized().features == spelling.features
        # And the legacy spellings: every pair whose implicit set is s.
        for r, w in IMPLICIT:
            legacy = Protocol(r, w)
            if legacy.features == s:
                assert legacy.denormalized().normalized() == expected
