"""The one support gate (protocol/support.py) and the VACUUM Protocol Check: which features keep
this package from each operation, and the typed error each refusal raises. Pure, no I/O."""

from __future__ import annotations

import pytest

from delta_downgrade.errors import EXIT_BAD_INPUT, UnsupportedFeaturesError
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.support import Operation, ensure_supported, unsupported_features

SUPPORTED = Protocol(1, 7, None, {"appendOnly", "invariants", "checkpointProtection"})
LEGACY = Protocol(1, 2)
DELETION_VECTORS = Protocol(3, 7, {"deletionVectors"}, {"deletionVectors"})
# A writer-only feature nobody knows: readable (readers never see it), not writable.
UNKNOWN_WRITER = Protocol(1, 7, None, {"appendOnly", "unknownWriterFeature"})
# A reader-writer feature nobody knows: neither readable nor writable.
UNKNOWN_READER = Protocol(3, 7, {"unknownReaderFeature"}, {"unknownReaderFeature"})
CATALOG_MANAGED = Protocol(3, 7, {"catalogManaged", "vacuumProtocolCheck"},
                           {"catalogManaged", "vacuumProtocolCheck", "inCommitTimestamp"})
VACUUM_PROTOCOL_CHECK = Protocol(3, 7, {"vacuumProtocolCheck"}, {"vacuumProtocolCheck"})

ALL = list(Operation)
WRITING = [Operation.WRITE, Operation.CHECKPOINT, Operation.CLEANUP, Operation.VACUUM]


def test_operations():
    assert [op.value for op in Operation] == ["read", "read_log", "write", "checkpoint", "cleanup", "vacuum"]


@pytest.mark.parametrize("protocol", [SUPPORTED, LEGACY, DELETION_VECTORS, VACUUM_PROTOCOL_CHECK,
                                      Protocol(1, 1)])
@pytest.mark.parametrize("operation", ALL)
def test_supported_protocols_pass_every_operation(protocol, operation):
    assert unsupported_features(protocol, operation) == frozenset()
    ensure_supported(protocol, operation)   # does not raise


@pytest.mark.parametrize("protocol, operation, expected", [
    # Reading needs the reader side only: an unknown writer-only feature does not stop it.
    (UNKNOWN_WRITER, Operation.READ, set()),
    (UNKNOWN_WRITER, Operation.WRITE, {"unknownWriterFeature"}),
    (UNKNOWN_WRITER, Operation.VACUUM, {"unknownWriterFeature"}),
    (UNKNOWN_WRITER, Operation.CHECKPOINT, {"unknownWriterFeature"}),
    (UNKNOWN_WRITER, Operation.CLEANUP, {"unknownWriterFeature"}),
    (UNKNOWN_READER, Operation.READ, {"unknownReaderFeature"}),
    (UNKNOWN_READER, Operation.WRITE, {"unknownReaderFeature"}),
    (UNKNOWN_READER, Operation.CHECKPOINT, {"unknownReaderFeature"}),
    (UNKNOWN_READER, Operation.CLEANUP, {"unknownReaderFeature"}),
    (UNKNOWN_READER, Operation.VACUUM, {"unknownReaderFeature"}),
    (CATALOG_MANAGED, Operation.READ, {"catalogManaged"}),
    (CATALOG_MANAGED, Operation.VACUUM, {"catalogManaged"}),
    (CATALOG_MANAGED, Operation.CLEANUP, {"catalogManaged"}),
])
def test_unsupported_features_per_operation(protocol, operation, expected):
    assert unsupported_features(protocol, operation) == frozenset(expected)


@pytest.mark.parametrize("protocol, expected", [
    (UNKNOWN_READER, {"unknownReaderFeature"}),   # an unknown reader feature: the log's meaning is unknown
    (UNKNOWN_WRITER, set()),                      # writer-only features never change what a reader sees
    (CATALOG_MANAGED, set()),                     # known: described and flagged; its writes are refused
    (DELETION_VECTORS, set()),
])
def test_reading_a_log_is_stopped_by_unknown_reader_features_only(protocol, expected):
    assert unsupported_features(protocol, Operation.READ_LOG) == frozenset(expected)


def test_read_log_refusal_says_the_feature_is_unknown():
    with pytest.raises(UnsupportedFeaturesError) as exc:
        ensure_supported(UNKNOWN_READER, Operation.READ_LOG, version=3)
    err = exc.value
    assert err.error_class == "DELTA_UNSUPPORTED_FEATURES_FOR_READ" and err.exit_code == EXIT_BAD_INPUT
    assert err.features == ["unknownReaderFeature"]
    assert err.table is None  # the operation that asked names it (errors.naming_table)
    assert err.message.startswith("version 3 has reader feature(s) ['unknownReaderFeature'] that "
                                  "delta-downgrade does not know")


def test_read_refusal_is_for_read():
    with pytest.raises(UnsupportedFeaturesError) as exc:
        ensure_supported(UNKNOWN_READER, Operation.READ, version=3)
    err = exc.value
    assert err.error_class == "DELTA_UNSUPPORTED_FEATURES_FOR_READ"
    assert err.exit_code == EXIT_BAD_INPUT and err.sqlstate == "56038"
    assert err.features == ["unknownReaderFeature"]
    assert "version 3" in err.message and "cannot read" in err.message


@pytest.mark.parametrize("operation", WRITING)
def test_every_other_refusal_is_for_write(operation):
    with pytest.raises(UnsupportedFeaturesError) as exc:
        ensure_supported(UNKNOWN_READER, operation)
    err = exc.value
    assert err.error_class == "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE"
    assert err.exit_code == EXIT_BAD_INPUT
    assert err.params["unsupportedFeatures"] == "unknownReaderFeature"
    assert str(UNKNOWN_READER) in err.message


@pytest.mark.parametrize("operation, words", [
    (Operation.WRITE, "nothing was written"),
    (Operation.CHECKPOINT, "no checkpoint was written"),
    (Operation.CLEANUP, "nothing was deleted"),
    (Operation.VACUUM, "VACUUM Protocol Check"),
])
def test_messages_say_what_was_left_undone(operation, words):
    with pytest.raises(UnsupportedFeaturesError, match=words):
        ensure_supported(UNKNOWN_WRITER, operation)


def test_vacuum_refusal_names_vacuum():
    with pytest.raises(UnsupportedFeaturesError) as exc:
        ensure_supported(CATALOG_MANAGED, Operation.VACUUM, version=12)
    assert exc.value.message.startswith("VACUUM refused: version 12 ")


def test_ignore_and_purpose():
    """A DROP FEATURE needs no support for the feature it removes."""
    ensure_supported(UNKNOWN_WRITER, Operation.WRITE, ignore={"unknownWriterFeature"})
    two = Protocol(1, 7, None, {"unknownWriterFeature", "otherUnknown"})
    with pytest.raises(UnsupportedFeaturesError) as exc:
        ensure_supported(two, Operation.WRITE, ignore={"unknownWriterFeature"},
                         purpose="drop unknownWriterFeature")
    assert exc.value.features == ["otherUnknown"]
    assert "so it cannot drop unknownWriterFeature safely" in exc.value.message


# --- VACUUM Protocol Check -----------------------------------------------------------------------

@pytest.mark.parametrize("protocol", [SUPPORTED, LEGACY, DELETION_VECTORS, VACUUM_PROTOCOL_CHECK,
                                      UNKNOWN_WRITER, UNKNOWN_READER, CATALOG_MANAGED])
def test_vacuum_gate_checks_the_write_protocol(protocol):
    """VACUUM Protocol Check RFC: before a VACUUM, check the table's *write* protocol - the
    VACUUM gate refuses exactly the writer-side features this package cannot write."""
    assert unsupported_features(protocol, Operation.VACUUM) == protocol.unsupported_for_write()
    if not protocol.unsupported_for_write():
        ensure_supported(protocol, Operation.VACUUM)
    else:
        with pytest.raises(UnsupportedFeaturesError) as exc:
            ensure_supported(protocol, Operation.VACUUM)
        assert exc.value.message.startswith("VACUUM refused: ")


def test_vacuum_gate_is_unconditional():
    """RFC: check the write protocol of every table, not only of those listing
    vacuumProtocolCheck; an unknown writer feature refuses VACUUM although readers are fine."""
    with pytest.raises(UnsupportedFeaturesError):
        ensure_supported(UNKNOWN_WRITER, Operation.VACUUM)
    assert unsupported_features(UNKNOWN_WRITER, Operation.READ) == frozenset()
    ensure_supported(VACUUM_PROTOCOL_CHECK, Operation.VACUUM)
    with pytest.raises(UnsupportedFeaturesError) as refused:
        ensure_supported(CATALOG_MANAGED, Operation.VACUUM)
    assert "catalogManaged" in refused.value.message
