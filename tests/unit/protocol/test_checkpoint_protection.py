"""The writer rules of the Checkpoint Protection RFC (protocol/checkpoint_protection.py), one by
one, on plain values. ``V`` is ``delta.requireCheckpointProtectionBeforeVersion``; ``boundary=None``
means checkpointProtection is not in the protocol. No I/O here."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.checkpoint_protection import (
    ALL_AT_ONCE, NO_BOUNDARY, NO_RANGE, SUPPORTED_RANGE, SUPPORTED_RANGE_DISABLED,
    UNSUPPORTED_VERSION, first_unsupported_version, rule_a, rule_b, rule_c, rule_d,
)

BASE = Protocol(1, 7, None, {"appendOnly", "invariants", "checkpointProtection"})
# What a fast DROP FEATURE deletionVectors leaves before the boundary: supported here.
WITH_DV = Protocol(3, 7, {"deletionVectors"}, {"deletionVectors", "appendOnly", "invariants"})
UNKNOWN_READER = Protocol(3, 7, {"unknownReaderFeature"}, BASE.writer_features | {"unknownReaderFeature"})
UNKNOWN_WRITER = Protocol(1, 7, None, BASE.writer_features | {"unknownWriterFeature"})
INVALID = Protocol(3, 5)   # reader 3 needs writer 7


class Span(NamedTuple):
    start: int
    end: int
    protocol: Protocol


def spans(*changes: tuple[int, Protocol], last: int = 15) -> list[Span]:
    """Protocol history from ``(first version, protocol)`` changes, up to ``last``."""
    out = []
    for i, (start, protocol) in enumerate(changes):
        end = changes[i + 1][0] - 1 if i + 1 < len(changes) else last
        out.append(Span(start, end, protocol))
    return out


# --- (a) writers must not clean up checkpoints for versions before V -----------------------------

@pytest.mark.parametrize("boundary", [None, 0, -1])
def test_a_without_boundary_protects_nothing(boundary):
    decision = rule_a([0, 3, 6], boundary=boundary, truncates_before=8)
    assert decision.allowed and decision.rule == "a" and decision.clause == NO_BOUNDARY


@pytest.mark.parametrize("checkpoints, truncates_before", [([6], 8), ([0, 4], 6), ([2, 6], 7)])
def test_a_refuses_checkpoints_before_v_when_the_cleanup_stops_before_v(checkpoints, truncates_before):
    decision = rule_a(checkpoints, boundary=9, truncates_before=truncates_before)
    assert not decision.allowed and decision.rule == "a"
    assert decision.version == min(checkpoints)
    assert decision.reason.startswith("rule (a)") and "V = 9" in decision.reason


@pytest.mark.parametrize("boundary", [2, 6, 7, 8])
def test_a_all_at_once(boundary):
    """Every version < V goes in this one cleanup (C = 8 >= V): the checkpoints before V go with
    them, no version is left before V for them to hide."""
    decision = rule_a([0, 6], boundary=boundary, truncates_before=8)
    assert decision.allowed and decision.clause == ALL_AT_ONCE


def test_a_chunks_versus_one_go():
    """The RFC: one cleanup up to V, not several truncating in chunks."""
    assert not rule_a([2], boundary=10, truncates_before=5).allowed      # a chunk
    assert rule_a([2, 5, 8], boundary=10, truncates_before=10).allowed   # in one go


def test_a_no_checkpoint_before_v_is_deleted():
    assert rule_a([], boundary=9, truncates_before=8).allowed
    assert rule_a([9, 10], boundary=9, truncates_before=8).allowed


# --- (b) no checkpoint before V unless the protocol at that version is supported ------------------

@pytest.mark.parametrize("protocol", [BASE, UNKNOWN_READER, UNKNOWN_WRITER])
@pytest.mark.parametrize("version, boundary", [(10, None), (3, None), (3, 0), (10, 10), (12, 10)])
def test_b_says_nothing_at_or_after_v(protocol, version, boundary):
    decision = rule_b(version, protocol, boundary=boundary)
    assert decision.allowed and decision.rule == "b" and decision.version == version


@pytest.mark.parametrize("protocol", [BASE, WITH_DV, Protocol(1, 2), Protocol(2, 5)])
def test_b_allows_supported_protocols_before_v(protocol):
    assert rule_b(4, protocol, boundary=10).allowed


@pytest.mark.parametrize("protocol, missing", [
    (UNKNOWN_READER, {"unknownReaderFeature"}),
    (UNKNOWN_WRITER, {"unknownWriterFeature"}),   # readable is not enough: *all* the features
])
def test_b_refuses_unsupported_protocols_before_v(protocol, missing):
    decision = rule_b(9, protocol, boundary=10)
    assert not decision.allowed and decision.features == frozenset(missing)
    assert "rule (b)" in decision.reason and "version 9" in decision.reason


def test_b_looks_at_the_protocol_of_that_version():
    """After a fast drop the latest protocol no longer has the feature; a checkpoint of an older
    version must be judged by that version's protocol."""
    assert rule_b(11, BASE, boundary=10).allowed
    assert not rule_b(5, UNKNOWN_READER, boundary=10).allowed


# --- (c) no cleanup of unsupported history, unless all versions before V go in one go -------------

@pytest.mark.parametrize("boundary, clause", [(None, NO_BOUNDARY), (0, NO_BOUNDARY)])
def test_c_without_boundary(boundary, clause):
    decision = rule_c(None, boundary=boundary, truncates_before=8, first_deleted=0)
    assert decision.allowed and decision.clause == clause and decision.rule == "c"


@pytest.mark.parametrize("boundary", [2, 6, 7, 8])
@pytest.mark.parametrize("history", [None, spans((0, BASE), (3, UNKNOWN_READER), (5, BASE))])
def test_c_all_at_once_whatever_the_protocols(boundary, history):
    decision = rule_c(history, boundary=boundary, truncates_before=8, first_deleted=0,
                      allow_supported_range=False)
    assert decision.allowed and decision.clause == ALL_AT_ONCE
    assert "rules (a) and (c)" in decision.reason


def test_c_supported_range():
    decision = rule_c(spans((0, BASE), (4, WITH_DV)), boundary=9, truncates_before=8, first_deleted=0)
    assert decision.allowed and decision.clause == SUPPORTED_RANGE and "rule (c)" in decision.reason


def test_c_supported_range_can_be_disabled():
    decision = rule_c(spans((0, BASE)), boundary=9, truncates_before=8, first_deleted=0,
                      allow_supported_range=False)
    assert not decision.allowed and decision.clause == SUPPORTED_RANGE_DISABLED


def test_c_no_commit_deleted_no_range():
    decision = rule_c(None, boundary=10, truncates_before=8, first_deleted=None)
    assert decision.allowed and decision.clause == NO_RANGE


@pytest.mark.parametrize("history, bad_version", [
    (spans((0, UNKNOWN_READER), (1, BASE)), 0),
    (spans((0, BASE), (4, UNKNOWN_READER), (8, BASE)), 4),
    (spans((0, BASE), (8, UNKNOWN_READER), (10, BASE)), 8),       # the kept checkpoint itself
    (spans((0, BASE), (8, UNKNOWN_WRITER), (10, BASE)), 8),       # readable is not enough
    (spans((0, BASE), (5, INVALID), (6, BASE)), 5),               # an invalid protocol
    (spans((3, BASE)), 0),                                        # 0..2 not reconstructable
    (None, 0),                                                    # history unreadable
])
def test_c_refuses_a_range_with_an_unsupported_version(history, bad_version):
    decision = rule_c(history, boundary=10, truncates_before=8, first_deleted=0)
    assert not decision.allowed and decision.clause == UNSUPPORTED_VERSION
    assert decision.version == bad_version
    assert f"version {bad_version} " in decision.reason and "rule (c)" in decision.reason


def test_c_only_the_range_matters():
    """Unsupported versions after the cutoff checkpoint, or before the first deleted commit, do
    not stop the cleanup of a supported range."""
    history = spans((0, UNKNOWN_READER), (3, BASE), (10, UNKNOWN_READER), (12, BASE))
    assert rule_c(history, boundary=10, truncates_before=8, first_deleted=3).allowed
    assert not rule_c(history, boundary=10, truncates_before=8, first_deleted=2).allowed


def test_c_unknown_reader_feature_named():
    decision = rule_c(spans((0, BASE), (4, UNKNOWN_READER)), boundary=10, truncates_before=8,
                      first_deleted=0)
    assert "unknownReaderFeature" in decision.reason


def test_first_unsupported_version():
    history = spans((0, BASE), (4, UNKNOWN_READER), (7, BASE))
    assert first_unsupported_version(history, 0, 3) is None
    assert first_unsupported_version(history, 0, 8)[0] == 4
    assert first_unsupported_version(history, 5, 8)[0] == 5
    assert first_unsupported_version(history, 7, 15) is None
    assert first_unsupported_version(history, 7, 16)[0] == 16   # beyond the history
    assert first_unsupported_version([], 0, 0)[0] == 0
    assert first_unsupported_version(None, 3, 5) == (3, "the protocol history could not be read")
    # Spans in any order; overlapping spans are fine.
    assert first_unsupported_version(list(reversed(history)), 0, 3) is None


# --- (d) commits before their checkpoints ----------------------------------------------------------

@pytest.mark.parametrize("order", [
    [],
    [("commit", 0), ("commit", 1), ("checkpoint", 4), ("checkpoint", 6)],
    [("commit", 0), ("crc", 0), ("commit", 1), ("checkpoint", 1), ("compacted", 0), ("sidecar", None)],
    [("checkpoint", 4), ("checkpoint", 6)],
    [("commit", 3)],
    [("crc", 0), ("checkpoint", 2), ("crc", 1)],     # only commits and checkpoints matter
])
def test_d_allows_commits_first(order):
    decision = rule_d(order)
    assert decision.allowed and decision.rule == "d"


@pytest.mark.parametrize("order, commit", [
    ([("checkpoint", 4), ("commit", 0)], 0),
    ([("commit", 0), ("checkpoint", 4), ("commit", 1), ("checkpoint", 6)], 1),
    # Even a commit after an unrelated (later) checkpoint: an interrupted run must never leave a
    # commit whose barrier checkpoint is gone, whichever checkpoint that is.
    ([("commit", 0), ("checkpoint", 8), ("commit", 9)], 9),
])
def test_d_refuses_a_commit_after_a_checkpoint(order, commit):
    decision = rule_d(order)
    assert not decision.allowed and decision.version == commit
    assert decision.reason.startswith("rule (d)")


def test_d_takes_any_iterable():
    assert rule_d(iter([("commit", 0), ("checkpoint", 1)])).allowed
