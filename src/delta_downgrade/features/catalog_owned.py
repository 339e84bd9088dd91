"""Features whose commits are governed by a catalog, a commit coordinator or a redirect
(catalogManaged, coordinatedCommits-preview, the redirect previews): this package cannot write
their log, so their drop is refused up front. Their traces are the registry entry's table
properties that are set."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_downgrade.errors import UnsupportedClientFeatureError
from delta_downgrade.features.base import RemovableFeature, TraceContext
from delta_downgrade.log.snapshot import Snapshot

if TYPE_CHECKING:  # imported where a run is built: a trace check needs no commit machinery
    from delta_downgrade.operations.drop_run import DropRun


class CatalogOwned(RemovableFeature):
    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        raise UnsupportedClientFeatureError(
            f"cannot drop {self.name}: its commits are governed by a catalog or a commit "
            f"coordinator that delta-downgrade cannot write through. Use the engine that owns the "
            f"table (--engine=delta-sql on Databricks)", table=run.table, feature=self.name)

    def traces(self, ctx: TraceContext) -> list[str]:
        return [f"{k}={ctx.configuration[k]}" for k in self.spec.properties if k in ctx.configuration]


CATALOG_MANAGED = CatalogOwned("catalogManaged")
COORDINATED_COMMITS_PREVIEW = CatalogOwned("coordinatedCommits-preview")
REDIRECT_READER_WRITER_PREVIEW = CatalogOwned("redirectReaderWriter-preview")
REDIRECT_WRITER_ONLY_PREVIEW = CatalogOwned("redirectWriterOnly-preview")
