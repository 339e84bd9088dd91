"""checkpointProtection (the Checkpoint Protection RFC): dropped only by truncating the history
before its boundary, which :mod:`delta_downgrade.operations.truncate` does; its trace is the
boundary property."""

from __future__ import annotations

from delta_downgrade.features.base import RemovableFeature, TraceContext
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY
from delta_downgrade.protocol.features import CHECKPOINT_PROTECTION


class CheckpointProtection(RemovableFeature):
    name = CHECKPOINT_PROTECTION

    def traces(self, ctx: TraceContext) -> list[str]:
        value = ctx.configuration.get(BOUNDARY_PROPERTY)
        return [f"{BOUNDARY_PROPERTY}={value}"] if value is not None else []


CHECKPOINT_PROTECTION_FEATURE = CheckpointProtection()
