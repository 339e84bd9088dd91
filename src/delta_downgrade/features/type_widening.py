"""typeWidening and its preview name (the "Type Widening" section of PROTOCOL.md): the type
changes recorded in the schema's field metadata; files written before a change hold the narrower
type, so only a rewrite of those files removes the traces (delta-spark's
``TypeWideningPreDowngradeCommand``)."""

from __future__ import annotations

import json

from delta_downgrade.features.base import DataRewriteFeature, TraceContext
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

    def action_uses_feature(self, action: AnyAction) -> bool:
        return isinstance(action, Metadata) and bool(type_change_fields(json.loads(action.schemaString)))


TYPE_WIDENING = TypeWidening("typeWidening")
TYPE_WIDENING_PREVIEW = TypeWidening("typeWidening-preview")
