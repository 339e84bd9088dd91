"""vacuumProtocolCheck (the VACUUM Protocol Check RFC): no traces and no pre-downgrade; as a
reader-writer feature it requires history protection, so the fast path still writes its barriers."""

from __future__ import annotations

from delta_downgrade.features.base import RemovableFeature


class VacuumProtocolCheck(RemovableFeature):
    name = "vacuumProtocolCheck"


VACUUM_PROTOCOL_CHECK = VacuumProtocolCheck()
