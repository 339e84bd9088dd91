"""checkConstraints (PROTOCOL.md "Check Constraints"): constraints are never dropped
automatically; a table that still has one is refused (delta-spark's
``CheckConstraintsPreDowngradeTableFeatureCommand``, ``DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_downgrade.errors import CheckConstraintsPresentError
from delta_downgrade.features.base import RemovableFeature, TraceContext
from delta_downgrade.log.snapshot import Snapshot

if TYPE_CHECKING:  # imported where a run is built: a trace check needs no commit machinery
    from delta_downgrade.drop.run import DropRun

CONSTRAINT_PREFIX = "delta.constraints."


def constraint_names(configuration: dict[str, str]) -> list[str]:
    return sorted(k[len(CONSTRAINT_PREFIX):] for k in configuration if k.startswith(CONSTRAINT_PREFIX))


class CheckConstraints(RemovableFeature):
    name = "checkConstraints"

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        names = constraint_names(snapshot.metadata.configuration)
        if names:
            listed = ", ".join(f"`{n}`" for n in names)
            raise CheckConstraintsPresentError(
                f"cannot drop checkConstraints: the following constraints must be dropped first: "
                f"{listed} (ALTER TABLE … DROP CONSTRAINT). delta-downgrade never drops constraints",
                table=run.table, feature=self.name, params={"constraints": listed})

    def traces(self, ctx: TraceContext) -> list[str]:
        names = constraint_names(ctx.configuration)
        return [f"constraint(s) {', '.join('`%s`' % n for n in names)}"] if names else []


CHECK_CONSTRAINTS = CheckConstraints()
