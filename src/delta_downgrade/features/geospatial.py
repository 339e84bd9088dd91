"""geospatial and its dev name: the feature is in use while a geometry or geography column
exists, and this package never drops columns, so such a table is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_downgrade.errors import GeospatialColumnsPresentError
from delta_downgrade.features.base import RemovableFeature
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol.schema import iter_fields

if TYPE_CHECKING:  # imported where a run is built: a trace check needs no commit machinery
    from delta_downgrade.drop.run import DropRun

GEO_TYPES = ("geometry", "geography")


class Geospatial(RemovableFeature):
    """Both names of the feature behave the same."""

    def preflight(self, run: DropRun, snapshot: Snapshot) -> None:
        cols = [f["name"] for f in iter_fields(snapshot.schema)
                if isinstance(f.get("type"), str) and f["type"].split("(")[0] in GEO_TYPES]
        if cols:
            raise GeospatialColumnsPresentError(
                f"cannot drop {self.name}: drop or recreate the geometry/geography column(s) "
                f"{', '.join(cols)} first", table=run.table, feature=self.name)


GEOSPATIAL = Geospatial("geospatial")
GEOSPATIAL_DEV = Geospatial("geospatial-dev")
