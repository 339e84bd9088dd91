"""typeWidening and its preview name (the "Type Widening" section of PROTOCOL.md): the type
changes recorded in the schema's field metadata; files written before a change hold the narrower
type, so only a rewrite of those files removes the traces (delta-spark's
``TypeWideningPreDowngradeCommand``)."""

from __future__ import annotations

import json

from delta_downgrade.features.base import NO_REWRITE, DataRewriteFeature, RewriteFootprint, TraceContext
from delta_downgrade.log.replay.file_summary import file_counts
from delta_downgrade.protocol.actions import AnyAction, Metadata
from delta_downgrade.protocol.schema import type_change_fields

ENABLE_PROPERTY = "delta.enableTypeWidening"


class TypeWidening(DataRewriteFeature):
    """Both names of the feature behave the same."""

    rewrite = "delta_downgrade.rewrite.type_widening:rewrite_type_widening"

    def traces(self, ctx: TraceContext) -> list[str]:
        out = []
        if ctx.prop_true(ENABLE_PROPERTY):
            out.append(f"{ENABLE_PROPERTY}=true")
        changed = type_change_fields(ctx.snapshot.schema)
        if changed:
            out.append(f"type changes recorded on field(s) {', '.join(changed)}")
        return out

    def rewrite_footprint(self, ctx: TraceContext) -> RewriteFootprint:
        """No ``delta.typeChanges`` in the schema: nothing to rewrite. Otherwise at most every
        live file: PROTOCOL.md "Type Widening" records no version per change, so which files were
        written before it is known only from their footers, which the rewrite
        (rewrite/type_widening.stale_files, like delta-spark's REORG) reads; an upper bound."""
        if not type_change_fields(ctx.snapshot.schema):
            return NO_REWRITE
        counts = file_counts(ctx.arrow)
        return RewriteFootprint(counts.live_files, counts.live_bytes, exact=False)

    def action_uses_feature(self, action: AnyAction) -> bool:
        return isinstance(action, Metadata) and bool(type_change_fields(json.loads(action.schemaString)))


TYPE_WIDENING = TypeWidening("typeWidening")
TYPE_WIDENING_PREVIEW = TypeWidening("typeWidening-preview")
