"""The writer rules of the Checkpoint Protection RFC, one pure function per rule letter.

RFC ``protocol_rfcs/checkpoint-protection.md`` (delta-io/delta, issue #4152), "Writer
Requirements for Checkpoint Protection". For tables with ``checkpointProtection`` in the protocol,
with ``V`` the table property ``delta.requireCheckpointProtectionBeforeVersion``:

a) writers must not clean up any checkpoints for table versions before ``V``;
b) writers must not create checkpoints for versions before ``V`` unless they support all the
   features of the table protocol *at that version*;
c) writers must not clean up version history for versions whose protocol they do not support; a
   range may be cleaned up when every version in it is supported, otherwise only a cleanup that
   removes *all* versions before ``V`` in one operation is allowed;
d) in version history cleanup, writers remove commits *before* the associated checkpoints, so that
   (a) holds during the cleanup too.

Each function takes plain values (versions, protocols, the boundary) and returns a
:class:`~delta_downgrade.protocol.support.Decision`; reading the log is the caller's business.
``boundary`` is ``V`` when ``checkpointProtection`` is in the latest protocol and None otherwise;
``V <= 0`` protects nothing (no version is before it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol as Structural

from delta_downgrade.protocol.protocol import Protocol
from delta_downgrade.protocol.support import Decision, Operation, unsupported_features

__all__ = [
    "ALL_AT_ONCE", "NO_BOUNDARY", "NO_RANGE", "SUPPORTED_RANGE", "SUPPORTED_RANGE_DISABLED",
    "UNSUPPORTED_VERSION", "ProtocolRange", "first_unsupported_version", "rule_a", "rule_b",
    "rule_c", "rule_d",
]

# Clauses of the rules (Decision.clause).
NO_BOUNDARY = "no-boundary"
ALL_AT_ONCE = "all-at-once"
SUPPORTED_RANGE = "supported-range"
SUPPORTED_RANGE_DISABLED = "supported-range-disabled"
NO_RANGE = "no-range"
UNSUPPORTED_VERSION = "unsupported-version"


class ProtocolRange(Structural):
    """Versions ``start..end`` (inclusive) that share one protocol (the log's protocol history)."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def protocol(self) -> Protocol: ...


def _protects(boundary: int | None) -> bool:
    return boundary is not None and boundary > 0


def _why_unsupported(protocol: Protocol) -> str | None:
    """Why this package does not support ``protocol`` in the sense of rule (c), or None: it must
    be a valid protocol (PROTOCOL.md "Protocol Evolution") whose every feature this package reads
    and writes."""
    problems = protocol.problems()
    if problems:
        return "invalid protocol: " + "; ".join(problems)
    missing = unsupported_features(protocol, Operation.CLEANUP)
    if missing:
        return "unsupported feature(s) " + ", ".join(sorted(missing))
    return None


# --- (a) ------------------------------------------------------------------------------------------

def rule_a(checkpoint_versions: Iterable[int], *, boundary: int | None,
           truncates_before: int) -> Decision:
    """RFC rule (a): may a cleanup that removes every version ``< truncates_before`` delete the
    checkpoints of ``checkpoint_versions``?

    No when one of them is before ``V`` — unless ``truncates_before >= V``: then this one
    operation removes every version before ``V`` (rule (c)'s all-at-once form), so no version
    before ``V`` is left for a checkpoint to hide, and the checkpoints go with them.
    """
    if not _protects(boundary):
        return Decision(True, "a", f"rule (a): no boundary (V = {boundary}), no checkpoint is "
                                   f"protected", clause=NO_BOUNDARY)
    assert boundary is not None
    if truncates_before >= boundary:
        return Decision(True, "a", f"rule (a): the cleanup removes every version < {boundary} in "
                                   f"one operation, checkpoints included", clause=ALL_AT_ONCE)
    protected = sorted(v for v in set(checkpoint_versions) if v < boundary)
    if protected:
        return Decision(False, "a", f"rule (a): checkpoint(s) {protected} are before the boundary "
                                    f"V = {boundary} and the cleanup stops at {truncates_before}, so "
                                    f"every checkpoint is kept", version=protected[0])
    return Decision(True, "a", f"rule (a): no checkpoint before the boundary V = {boundary} is "
                               f"deleted")


# --- (b) ------------------------------------------------------------------------------------------

def rule_b(version: int, protocol: Protocol, *, boundary: int | None) -> Decision:
    """RFC rule (b): may a checkpoint of ``version``, whose protocol is ``protocol``, be written?

    Yes at or after ``V``; before ``V`` only when this package supports every feature of
    ``protocol`` (reading the state it restates and writing it). After a fast DROP FEATURE the
    protocols are no longer monotonic in the version, so the latest protocol does not answer for
    an older version.
    """
    if boundary is None or boundary <= 0 or version >= boundary:
        return Decision(True, "b", f"rule (b): version {version} is not before the boundary "
                                   f"(V = {boundary})", version=version)
    unsupported = unsupported_features(protocol, Operation.CHECKPOINT)
    if unsupported:
        return Decision(False, "b", f"checkpoint protection rule (b): version {version} is below "
                                    f"the boundary {boundary} and its protocol {protocol} has "
                                    f"features this package does not support",
                        version=version, features=unsupported)
    return Decision(True, "b", f"rule (b): version {version} is before the boundary {boundary} and "
                               f"this package supports its protocol {protocol}", version=version)


# --- (c) ------------------------------------------------------------------------------------------

def first_unsupported_version(spans: Sequence[ProtocolRange] | None, start: int,
                              end: int) -> tuple[int, str] | None:
    """The first version in ``[start, end]`` whose protocol this package does not support (rule
    (c)), with why; None when every version is supported. A version no span covers (not
    reconstructable) counts as unsupported: its protocol cannot be established. ``spans`` None:
    the protocol history could not be read."""
    if spans is None:
        return start, "the protocol history could not be read"
    covered = start
    for span in sorted(spans, key=lambda s: s.start):
        if span.end < covered:
            continue
        if span.start > covered:
            return covered, "its protocol cannot be established (the version is not reconstructable)"
        why = _why_unsupported(span.protocol)
        if why is not None:
            return max(span.start, covered), f"protocol {span.protocol} has {why}"
        covered = span.end + 1
        if covered > end:
            return None
    return covered, "its protocol cannot be established (the version is not reconstructable)"


def rule_c(spans: Sequence[ProtocolRange] | None, *, boundary: int | None, truncates_before: int,
           first_deleted: int | None, allow_supported_range: bool = True) -> Decision:
    """RFC rule (c): may a cleanup delete the commits of versions ``first_deleted`` up to (not
    including) ``truncates_before``, the cutoff checkpoint ``C`` it keeps?

    - no boundary: yes (nothing is protected);
    - ``C >= V``: yes, all-at-once form — every version before ``V`` goes in this one operation,
      whatever its protocol;
    - ``C < V``: yes only when this package supports the protocol of every version of
      ``[first_deleted, C]`` (the RFC's ``[start, min(V, target)]``: ``C`` is the state that
      replaces them), as found in ``spans`` (the protocol history; None when unreadable);
      ``allow_supported_range=False`` turns this exception off (Spark's
      ``allowMetadataCleanupWhenAllProtocolsSupported=false``). ``first_deleted`` None: no commit
      is deleted, so there is no range to check.
    """
    c = truncates_before
    if boundary is None:
        return Decision(True, "c", f"PROTOCOL.md Metadata Cleanup: everything before checkpoint {c} "
                                   f"goes; checkpointProtection is not in the protocol",
                        clause=NO_BOUNDARY)
    if boundary <= 0:
        return Decision(True, "c", f"checkpointProtection without a boundary (V = {boundary}) "
                                   f"protects nothing: everything before checkpoint {c} goes",
                        clause=NO_BOUNDARY)
    if c >= boundary:
        return Decision(True, "c", f"rules (a) and (c), all-at-once form: the cutoff checkpoint {c} "
                                   f"is at or after the boundary V = {boundary}, so this one "
                                   f"operation removes every version < {boundary}, checkpoints "
                                   f"included", clause=ALL_AT_ONCE)
    if not allow_supported_range:
        return Decision(False, "c", f"rule (c): the cutoff checkpoint {c} is before the boundary "
                                    f"V = {boundary}, so this cleanup would not remove all versions "
                                    f"< {boundary} in one operation, and cleaning a supported range "
                                    f"is disabled; skipped", clause=SUPPORTED_RANGE_DISABLED)
    if first_deleted is None:
        return Decision(True, "c", "no commit is deleted, only leftovers of versions whose commits "
                                   "are already gone (rule (c) has no range to check)",
                        clause=NO_RANGE)
    bad = first_unsupported_version(spans, first_deleted, c)
    if bad is not None:
        version, why = bad
        return Decision(False, "c", f"rule (c): version {version} in the range {first_deleted}..{c} "
                                    f"is not supported by delta-downgrade ({why}), and the cutoff "
                                    f"checkpoint {c} is before the boundary V = {boundary}, so this "
                                    f"cleanup would not remove all versions < {boundary} in one "
                                    f"operation; skipped", clause=UNSUPPORTED_VERSION, version=version)
    return Decision(True, "c", f"rule (c): every version in {first_deleted}..{c} has a protocol "
                               f"delta-downgrade reads and writes, so commits before checkpoint {c} "
                               f"go although {c} is before the boundary V = {boundary}",
                    clause=SUPPORTED_RANGE)


# --- (d) ------------------------------------------------------------------------------------------

def rule_d(deletions: Iterable[tuple[str, int | None]]) -> Decision:
    """RFC rule (d): is this deletion order allowed? ``deletions`` are ``(kind, version)`` in the
    order they happen; kinds other than ``"commit"`` and ``"checkpoint"`` do not matter here.

    This package reads "before the associated checkpoints" strictly: no checkpoint file may be
    deleted while a commit of the cleanup is still to be deleted. An interrupted cleanup then
    never leaves a commit whose barrier checkpoint (the nearest checkpoint at or after
    ``max(commit, V)``) is gone, so (a) holds at every step, whichever checkpoint a commit is
    associated with.
    """
    first_checkpoint: int | None = None
    for kind, version in deletions:
        if kind == "checkpoint" and first_checkpoint is None:
            first_checkpoint = version if version is not None else -1
        elif kind == "commit" and first_checkpoint is not None:
            return Decision(False, "d", f"rule (d): commit {version} would be deleted after "
                                        f"checkpoint {first_checkpoint}", version=version)
    return Decision(True, "d", "rule (d): every commit is deleted before any checkpoint")
