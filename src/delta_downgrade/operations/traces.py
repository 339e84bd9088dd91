"""Traces a feature leaves in the latest state of a table.

A feature can be in the protocol yet unused; DROP FEATURE must remove every trace before the
protocol may lose the feature (delta-spark's ``validateDropInvariants``), and
``inspect`` reports the same traces as "in use". One function per feature, one registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY, Snapshot, TableState
from delta_downgrade.protocol.schema import CM_METADATA_KEYS, iter_fields, type_change_fields

@dataclass
class TraceContext:
    """What trace checks look at. ``state`` is loaded only for checks that need files."""

    snapshot: Snapshot
    _state: TableState | None = None

    @property
    def configuration(self) -> dict[str, str]:
        return self.snapshot.metadata.configuration

    @property
    def state(self) -> TableState:
        if self._state is None:
            self._state = self.snapshot.state()
        return self._state

    def prop_true(self, key: str) -> bool:
        return str(self.configuration.get(key, "")).strip().lower() == "true"


def _deletion_vectors(ctx: TraceContext) -> list[str]:
    out = []
    if ctx.prop_true("delta.enableDeletionVectors"):
        out.append("delta.enableDeletionVectors=true")
    with_dv = [f for f in ctx.state.files.values() if f.dv is not None]
    if with_dv:
        deleted = sum(f.dv.cardinality for f in with_dv if f.dv)  # type: ignore[union-attr]
        out.append(f"{len(with_dv)} live file(s) carry deletion vectors ({deleted} deleted rows)")
    return out


def _column_mapping(ctx: TraceContext) -> list[str]:
    out = []
    mode = ctx.configuration.get("delta.columnMapping.mode")
    if mode and mode.lower() != "none":
        out.append(f"delta.columnMapping.mode={mode}")
    fields = [f["name"] for f in iter_fields(ctx.snapshot.schema)
              if any(k in (f.get("metadata") or {}) for k in CM_METADATA_KEYS)]
    if fields:
        out.append(f"{len(fields)} field(s) carry column-mapping metadata")
    return out


def constraint_names(configuration: dict[str, str]) -> list[str]:
    return sorted(k[len("delta.constraints."):] for k in configuration if k.startswith("delta.constraints."))


def _check_constraints(ctx: TraceContext) -> list[str]:
    names = constraint_names(ctx.configuration)
    return [f"constraint(s) {', '.join('`%s`' % n for n in names)}"] if names else []


def _type_widening(ctx: TraceContext) -> list[str]:
    out = []
    if ctx.prop_true("delta.enableTypeWidening"):
        out.append("delta.enableTypeWidening=true")
    changed = type_change_fields(ctx.snapshot.schema)
    if changed:
        out.append(f"type changes recorded on field(s) {', '.join(changed)}")
    return out


def _v2_checkpoint(ctx: TraceContext) -> list[str]:
    out = []
    policy = ctx.configuration.get("delta.checkpointPolicy")
    if policy and policy.lower() == "v2":
        out.append("delta.checkpointPolicy=v2")
    checkpoint = ctx.snapshot.segment.checkpoint
    if checkpoint is not None and checkpoint.kind == "v2":
        out.append(f"the current checkpoint (version {checkpoint.version}) is a v2 checkpoint")
    return out


def _in_commit_timestamp(ctx: TraceContext) -> list[str]:
    out = []
    if ctx.prop_true("delta.enableInCommitTimestamps"):
        out.append("delta.enableInCommitTimestamps=true")
    for key in ("delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp"):
        if key in ctx.configuration:
            out.append(f"{key} is set")
    return out


def _row_tracking(ctx: TraceContext) -> list[str]:
    out = []
    if ctx.prop_true("delta.enableRowTracking"):
        out.append("delta.enableRowTracking=true")
    if not ctx.prop_true("delta.rowTrackingSuspended"):
        out.append("delta.rowTrackingSuspended is not true")
    with_ids = sum(1 for f in ctx.state.files.values()
                   if f.baseRowId is not None or f.defaultRowCommitVersion is not None)
    if with_ids:
        out.append(f"{with_ids} live file(s) carry baseRowId/defaultRowCommitVersion")
    return out


def _domain_metadata(ctx: TraceContext) -> list[str]:
    domains = sorted(ctx.state.live_domains)
    return [f"domain(s) {', '.join(domains)}"] if domains else []


def _checkpoint_protection(ctx: TraceContext) -> list[str]:
    value = ctx.configuration.get(BOUNDARY_PROPERTY)
    return [f"{BOUNDARY_PROPERTY}={value}"] if value is not None else []


def _property_traces(*keys: str) -> Callable[[TraceContext], list[str]]:
    def check(ctx: TraceContext) -> list[str]:
        return [f"{k}={ctx.configuration[k]}" for k in keys if k in ctx.configuration]
    return check


def _no_traces(ctx: TraceContext) -> list[str]:
    return []


TRACE_CHECKS: dict[str, Callable[[TraceContext], list[str]]] = {
    "deletionVectors": _deletion_vectors,
    "columnMapping": _column_mapping,
    "checkConstraints": _check_constraints,
    "typeWidening": _type_widening,
    "typeWidening-preview": _type_widening,
    "v2Checkpoint": _v2_checkpoint,
    "inCommitTimestamp": _in_commit_timestamp,
    "rowTracking": _row_tracking,
    "domainMetadata": _domain_metadata,
    "checkpointProtection": _checkpoint_protection,
    "vacuumProtocolCheck": _no_traces,
    "materializePartitionColumns": _no_traces,
    "coordinatedCommits-preview": _property_traces(
        "delta.coordinatedCommits.commitCoordinator-preview",
        "delta.coordinatedCommits.commitCoordinatorConf-preview",
        "delta.coordinatedCommits.tableConf-preview"),
    "redirectReaderWriter-preview": _property_traces("delta.redirectReaderWriter-preview"),
    "redirectWriterOnly-preview": _property_traces("delta.redirectWriterOnly-preview"),
    "geospatial": _no_traces,
    "geospatial-dev": _no_traces,
}


def feature_traces(feature: str, ctx: TraceContext) -> list[str]:
    """Human-readable traces of ``feature`` in the latest state; empty when none are left."""
    check = TRACE_CHECKS.get(feature)
    return check(ctx) if check else []
