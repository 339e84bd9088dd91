"""columnMapping (PROTOCOL.md "Column Mapping"): its traces are the mapping mode and the
physical names and ids in the schema's field metadata; the data files use the physical names, so
only a rewrite of the files removes them."""

from __future__ import annotations

from delta_downgrade.features.base import NO_REWRITE, DataRewriteFeature, RewriteFootprint, TraceContext
from delta_downgrade.log.replay.file_summary import file_counts
from delta_downgrade.protocol.actions import AnyAction, Metadata
from delta_downgrade.protocol.schema import CM_METADATA_KEYS, iter_fields

MODE_PROPERTY = "delta.columnMapping.mode"


class ColumnMapping(DataRewriteFeature):
    name = "columnMapping"
    rewrite = "delta_downgrade.rewrite.column_mapping:remove_column_mapping"

    def traces(self, ctx: TraceContext) -> list[str]:
        out = []
        mode = ctx.configuration.get(MODE_PROPERTY)
        if mode and mode.lower() != "none":
            out.append(f"{MODE_PROPERTY}={mode}")
        fields = [f["name"] for f in iter_fields(ctx.snapshot.schema)
                  if any(k in (f.get("metadata") or {}) for k in CM_METADATA_KEYS)]
        if fields:
            out.append(f"{len(fields)} field(s) carry column-mapping metadata")
        return out

    def rewrite_footprint(self, ctx: TraceContext) -> RewriteFootprint:
        """Mode ``none``: no file uses physical names, the drop rewrites nothing. Mode ``name`` or
        ``id``: at most every live file - the rewrite (rewrite/column_mapping.py) reads each
        footer and keeps only a file that already holds logical names and no Parquet field ids,
        which the log cannot tell (PROTOCOL.md "Column Mapping": files may carry field ids in
        either mode), so this is an upper bound."""
        mode = str(ctx.configuration.get(MODE_PROPERTY) or "none").lower()
        if mode == "none":
            return NO_REWRITE
        counts = file_counts(ctx.arrow)
        return RewriteFootprint(counts.live_files, counts.live_bytes, exact=False)

    def action_uses_feature(self, action: AnyAction) -> bool:
        return isinstance(action, Metadata) and action.configuration.get(MODE_PROPERTY, "none").lower() != "none"


COLUMN_MAPPING = ColumnMapping()
