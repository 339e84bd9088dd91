"""Features whose commits are governed by a catalog, a commit coordinator or a redirect
(catalogManaged, coordinatedCommits-preview, the redirect previews): this package cannot write
their log, so their drop is refused up front. Their traces are the registry entry's table
properties that are set.

coordinatedCommits-preview is the exception once no commit coordinator is configured (the
``delta.coordinatedCommits.*`` properties unset): every commit is then a published file of
``_delta_log`` (the Coordinated Commits RFC: without a coordinator the table is an ordinary
filesystem table, all its commits backfilled), and delta-spark 4.4's drop of it is the protocol
commit alone (a writer feature without history protection). This package drops it the same way;
with a coordinator still configured it refuses (unsetting it is a commit the coordinator must
accept, and its unbackfilled commits are not in ``_delta_log``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_downgrade.errors import UnsupportedClientFeatureError
from delta_downgrade.features.base import RemovableFeature, TraceContext
from delta_downgrade.log.snapshot import Snapshot

if TYPE_CHECKING:  # imported where a run is built: a trace check needs no commit machinery
    from delta_downgrade.drop.run import DropRun


class CatalogOwned(RemovableFeature):
    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        raise UnsupportedClientFeatureError(
            f"cannot drop {self.name}: its commits are governed by a catalog or a commit "
            f"coordinator that delta-downgrade cannot write through. Use the engine that owns the "
            f"table (--engine=delta-sql on Databricks)", table=run.table, feature=self.name)

    def traces(self, ctx: TraceContext) -> list[str]:
        return [f"{k}={ctx.configuration[k]}" for k in self.spec.properties if k in ctx.configuration]


class CoordinatedCommitsPreview(CatalogOwned):
    name = "coordinatedCommits-preview"

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        configured = [k for k in self.spec.properties if k in snapshot.metadata.configuration]
        if configured:
            raise UnsupportedClientFeatureError(
                f"cannot drop {self.name}: the table's commits still go through a commit coordinator "
                f"({', '.join(configured)} set), which delta-downgrade cannot write through. Use the engine "
                f"that owns the table (--engine=delta-sql on Databricks)", table=run.table, feature=self.name)


CATALOG_MANAGED = CatalogOwned("catalogManaged")
COORDINATED_COMMITS_PREVIEW = CoordinatedCommitsPreview()
REDIRECT_READER_WRITER_PREVIEW = CatalogOwned("redirectReaderWriter-preview")
REDIRECT_WRITER_ONLY_PREVIEW = CatalogOwned("redirectWriterOnly-preview")
