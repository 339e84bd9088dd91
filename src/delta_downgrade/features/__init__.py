"""Removable table features, one module each: what traces a feature leaves, how its
pre-downgrade removes them, and what the downgrade commit changes for it (delta-spark's
``RemovableFeature``, see :mod:`.base`). What the protocol says about a feature (kind, versions,
dependencies, properties) stays in its registry entry in :mod:`delta_downgrade.protocol.features`.

:func:`removable` is the one lookup a drop makes; :func:`feature_traces` is what ``inspect`` and
``verify`` report.
"""

from __future__ import annotations

from typing import Mapping

from delta_downgrade.features import (
    catalog_owned, check_constraints, checkpoint_protection, column_mapping, deletion_vectors,
    domain_metadata, geospatial, in_commit_timestamp, materialize_partition_columns, row_tracking,
    type_widening, v2_checkpoint, vacuum_protocol_check,
)
from delta_downgrade.features.base import RemovableFeature, RewriteFootprint, RewriteFunction, TraceContext
from delta_downgrade.protocol.features import FEATURES, get_feature

REMOVABLE: dict[str, RemovableFeature] = {f.name: f for f in (
    deletion_vectors.DELETION_VECTORS,
    column_mapping.COLUMN_MAPPING,
    type_widening.TYPE_WIDENING,
    type_widening.TYPE_WIDENING_PREVIEW,
    v2_checkpoint.V2_CHECKPOINT,
    check_constraints.CHECK_CONSTRAINTS,
    in_commit_timestamp.IN_COMMIT_TIMESTAMP,
    domain_metadata.DOMAIN_METADATA,
    row_tracking.ROW_TRACKING,
    materialize_partition_columns.MATERIALIZE_PARTITION_COLUMNS,
    geospatial.GEOSPATIAL,
    geospatial.GEOSPATIAL_DEV,
    vacuum_protocol_check.VACUUM_PROTOCOL_CHECK,
    checkpoint_protection.CHECKPOINT_PROTECTION_FEATURE,
    catalog_owned.CATALOG_MANAGED,
    catalog_owned.COORDINATED_COMMITS_PREVIEW,
    catalog_owned.REDIRECT_READER_WRITER_PREVIEW,
    catalog_owned.REDIRECT_WRITER_ONLY_PREVIEW,
)}
"""Every removable feature of the production registry, by its exact name. Tests add the
behaviour of their test-only features here for the duration of a test."""


def removable(name: str, *, rewrites: Mapping[str, RewriteFunction] | None = None) -> RemovableFeature:
    """The behaviour of removable feature ``name`` (its exact registry name); ``rewrites`` maps
    feature names to a data rewrite that replaces the feature's own (a caller's options, tests).

    A removable feature of a test registry that has no behaviour of its own gets the default:
    no traces, nothing to clean. A name that is not a removable feature is a programming error."""
    found = _behaviour(name)
    if rewrites and name in rewrites:
        return found.with_rewrite(rewrites[name])
    return found


def _behaviour(name: str) -> RemovableFeature:
    found = REMOVABLE.get(name)
    if found is not None:
        return found
    spec = get_feature(name)
    if spec is None or not spec.removable or name in FEATURES:
        raise KeyError(f"{name} is not a removable feature")
    return RemovableFeature(name)


def feature_traces(name: str, ctx: TraceContext) -> list[str]:
    """Human-readable traces of feature ``name`` in the latest state; empty when none are left
    (and for features that are not removable)."""
    found = REMOVABLE.get(name)
    return found.traces(ctx) if found is not None else []


__all__ = ["REMOVABLE", "RemovableFeature", "RewriteFootprint", "TraceContext", "feature_traces", "removable"]
