"""The VACUUM Protocol Check (accepted RFC ``protocol_rfcs/vacuum-protocol-check.md``; PROTOCOL.md
"VACUUM Protocol Check").

"Before performing a VACUUM operation, writers must ensure that they check the table's write
protocol"; the RFC recommends doing it unconditionally for every table, which is what this package
does (dry runs included). ``vacuumProtocolCheck`` is a reader-writer feature so that old clients,
which checked only the reader protocol, fail on such tables; the check itself is the same with or
without it.
"""

from __future__ import annotations

from delta_downgrade.protocol.protocol import Protocol
from delta_downgrade.protocol.support import Decision, Operation, unsupported_features

__all__ = ["vacuum_protocol_check"]


def vacuum_protocol_check(protocol: Protocol) -> Decision:
    """May this package VACUUM a table with ``protocol``? Only when it supports every writer
    feature of it. :func:`~delta_downgrade.protocol.support.ensure_supported` with
    ``Operation.VACUUM`` raises on the same answer."""
    unsupported = unsupported_features(protocol, Operation.VACUUM)
    if unsupported:
        return Decision(False, "vacuumProtocolCheck",
                        f"VACUUM Protocol Check: protocol {protocol} has writer feature(s) "
                        f"{sorted(unsupported)} that delta-downgrade cannot write",
                        features=unsupported)
    return Decision(True, "vacuumProtocolCheck",
                    f"VACUUM Protocol Check: delta-downgrade writes every feature of {protocol}")
