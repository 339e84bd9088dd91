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
