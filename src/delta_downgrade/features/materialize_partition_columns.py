"""materializePartitionColumns: no traces and no pre-downgrade; the downgrade commit removes its
enablement property."""

from __future__ import annotations

from delta_downgrade.features.base import RemovableFeature


class MaterializePartitionColumns(RemovableFeature):
    name = "materializePartitionColumns"

    def properties_to_remove(self) -> tuple[str, ...]:
        # The registry entry's one property, delta.enableMaterializePartitionColumnsFeature.
        return self.spec.properties


MATERIALIZE_PARTITION_COLUMNS = MaterializePartitionColumns()
