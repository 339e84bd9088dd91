"""The one gate: may this package perform an operation on a table with a given protocol?

PROTOCOL.md "Table Features": a reader must support every feature of ``readerFeatures`` to read a
table, and a writer every feature of ``writerFeatures`` to write it. Each operation of this package
is one of the kinds below, and :func:`ensure_supported` is the only place that turns a protocol
into "allowed" or a typed refusal, as delta-kernel-rs's ``ensure_operation_supported`` and
delta-rs's ``ProtocolChecker`` do. Callers read the protocol (I/O); the decision is made here.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from msgspec import Struct
from delta_downgrade.errors import UnsupportedFeaturesError
from delta_downgrade.protocol.features import get_feature
from delta_downgrade.protocol.protocol import Protocol

__all__ = ["Decision", "Operation", "ensure_supported", "unsupported_features"]


class Decision(Struct, frozen=True):
    """What a protocol rule says about a planned action: ``allowed`` or not, and why.

    ``rule`` names the rule (``"a"``…``"d"`` of the Checkpoint Protection RFC); ``reason`` starts with it. ``clause`` says which part of the rule
    decided, for callers that act differently per part; ``version`` is the version that decided
    (when one did) and ``features`` the unsupported features behind a refusal.
    """

    allowed: bool
    rule: str
    reason: str
    clause: str = ""
    version: int | None = None
    features: frozenset[str] = frozenset()


class Operation(Enum):
    """What the caller is about to do to the table."""

    #: Read the table's state (PROTOCOL.md: reader features).
    READ = "read"
    #: Read the log to describe the table or to plan an operation on it
    #: (``DeltaLog.snapshot(check_read=True)``: inspect, verify, the start of a drop). Only
    #: reader-side features this package does not know stop it: an unknown feature may change
    #: what the log means (PROTOCOL.md "Table Features": readers must support every reader
    #: feature), while a known one the package cannot serve reads of (catalogManaged, whose
    #: latest commits may not be published in ``_delta_log`` yet) is described and flagged, and
    #: refused by the operation's own gate when it writes.
    READ_LOG = "read_log"
    #: Write a commit (PROTOCOL.md: writer features).
    WRITE = "write"
    #: Write a checkpoint: it restates the whole reconciled state, so every reader-side feature
    #: must be understood as well as every writer feature (Checkpoint Protection RFC rule (b)
    #: asks this for versions before the boundary; this package asks it for every version, since
    #: a checkpoint that loses what an unknown feature means corrupts the table for everyone).
    CHECKPOINT = "checkpoint"
    #: Delete log files (PROTOCOL.md "Metadata Cleanup"): a write, and one that decides which
    #: history stays readable, so reading and writing must both be supported.
    CLEANUP = "cleanup"
    #: Delete data files. VACUUM Protocol Check RFC: "Before performing a VACUUM operation,
    #: writers must ensure that they check the table's write protocol"; the RFC recommends the
    #: check for every table, which this gate does (``vacuumProtocolCheck`` itself is a
    #: reader-writer feature only so that old clients, which checked the reader protocol, fail).
    VACUUM = "vacuum"


def unsupported_features(protocol: Protocol, operation: Operation) -> frozenset[str]:
    """The features of ``protocol`` that keep this package from doing ``operation``."""
    if operation is Operation.READ_LOG:
        return frozenset(n for n in protocol.reader_side_features if get_feature(n) is None)
    if operation is Operation.READ:
        return protocol.unsupported_for_read()
    if operation in (Operation.WRITE, Operation.VACUUM):
        return protocol.unsupported_for_write()
    return protocol.unsupported_for_read() | protocol.unsupported_for_write()


# What each refusal says: the verb of "cannot <verb>" and what was left undone.
_WORDING: dict[Operation, tuple[str, str]] = {
    Operation.READ: ("read", "nothing was read"),
    Operation.WRITE: ("write", "nothing was written"),
    Operation.CHECKPOINT: ("write a checkpoint for", "no checkpoint was written"),
    Operation.CLEANUP: ("write", "metadata cleanup is a write, nothing was deleted"),
    Operation.VACUUM: ("write", ("a client that does not support every writer feature must not "
                                 "vacuum (VACUUM Protocol Check); use a client that supports them")),
}


def ensure_supported(protocol: Protocol, operation: Operation, *, version: int | None = None,
                     ignore: Iterable[str] = (), purpose: str | None = None) -> None:
    """Raise :class:`UnsupportedFeaturesError` unless this package can do ``operation`` on a table
    with ``protocol``: ``DELTA_UNSUPPORTED_FEATURES_FOR_READ`` for :attr:`Operation.READ` and
    :attr:`Operation.READ_LOG`, ``DELTA_UNSUPPORTED_FEATURES_FOR_WRITE`` for every other operation
    (all of them write).

    ``ignore``: features the operation itself removes (a DROP FEATURE of one of them needs no
    support for it). ``version`` and ``purpose`` (e.g. ``"drop deletionVectors"``) only word the
    message.
    """
    unsupported = unsupported_features(protocol, operation) - frozenset(ignore)
    if not unsupported:
        return
    if operation is Operation.READ_LOG:
        subject = f"version {version} has" if version is not None else "the table has"
        raise UnsupportedFeaturesError(
            f"{subject} reader feature(s) {sorted(unsupported)} that delta-downgrade does not know; "
            f"it cannot tell what the log means and will not touch the table",
            features=unsupported, for_write=False)
    verb, outcome = _WORDING[operation]
    subject = (f"version {version} has protocol {protocol} with" if version is not None
               else f"the table's protocol {protocol} has")
    because = f", so it cannot {purpose} safely" if purpose else ""
    prefix = "VACUUM refused: " if operation is Operation.VACUUM else ""
    raise UnsupportedFeaturesError(
        f"{prefix}{subject} feature(s) {sorted(unsupported)} that delta-downgrade cannot "
        f"{verb}{because}; {outcome}", features=unsupported,
        for_write=operation is not Operation.READ)
