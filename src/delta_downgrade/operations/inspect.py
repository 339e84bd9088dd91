"""``delta-downgrade inspect``: what a table's log says at one version, as a :class:`TableReport`.

The report holds facts only; the CLI renders it as the stable JSON document of ``inspect --json``
(a contract documented in the README: add fields, never rename or drop them) and as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from delta_downgrade.log.delta_log import DeltaLog, ProtocolSpan
from delta_downgrade.log.file_summary import file_counts
from delta_downgrade.log.listing import CheckpointInstance
from delta_downgrade.features import TraceContext, feature_traces
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from delta_downgrade.protocol.features import get_feature
from delta_downgrade.protocol.support import Operation, unsupported_features


@dataclass(frozen=True)
class FeatureReport:
    """One feature of the protocol, listed or implied by legacy versions."""

    name: str
    known: bool
    kind: str | None                      # the registry's FeatureKind value; None when unknown
    implicit: bool
    removable: bool
    requires_history_protection: bool
    #: What the feature left in the table (:func:`feature_traces`); None when not looked for: only
    #: the traces of removable features are.
    traces: list[str] | None = None

    @property
    def in_use(self) -> bool | None:
        return None if self.traces is None else bool(self.traces)


@dataclass(frozen=True)
class CheckpointReport:
    checkpoint: CheckpointInstance
    sidecars: list[str] | None = None     # v2 checkpoints only


@dataclass(frozen=True)
class FileSummary:
    live_files: int
    live_bytes: int
    files_with_deletion_vectors: int
    deleted_rows_in_deletion_vectors: int
    tombstones: int
    domains: list[str]                    # names of the live domains, sorted


@dataclass(frozen=True)
class TableReport:
    """The table ``table`` at ``version``: protocol, features, checkpoints, boundary, files."""

    table: str
    version: int
    latest_version: int
    earliest_version: int
    timestamp_ms: int | None
    protocol: Protocol
    features: list[FeatureReport]         # sorted by name
    unsupported_for_read: frozenset[str]
    unsupported_for_write: frozenset[str]
    table_id: str
    partition_columns: list[str]
    properties: Mapping[str, str]         # sorted by key
    checkpoints: list[CheckpointReport]
    last_checkpoint: dict[str, Any] | None
    boundary_version: int | None
    protected_checkpoint_versions: list[int]
    files: FileSummary
    unknown_log_files: list[str]
    protocol_history: list[ProtocolSpan] | None   # None: not read (``history=False``)

    @property
    def checkpoint_protection(self) -> bool:
        return CHECKPOINT_PROTECTION in self.protocol.features

    @property
    def droppable_features(self) -> list[str]:
        return [f.name for f in self.features if f.removable]


def inspect_table(location: str, version: int | None = None, *, history: bool = True) -> TableReport:
    """Inspect ``location`` at ``version`` (latest by default)."""
    log = DeltaLog(location)
    snapshot = log.snapshot(version, check_read=True)
    protocol = snapshot.protocol
    metadata = snapshot.metadata
    ctx = TraceContext(snapshot)
    listing = log.listing()

    features = []
    for name in sorted(protocol.features):
        spec = get_feature(name)
        removable = bool(spec and spec.removable)
        features.append(FeatureReport(
            name=name, known=spec is not None, kind=spec.kind.value if spec else None,
            implicit=name in protocol.implicit_features, removable=removable,
            requires_history_protection=bool(spec and spec.requires_history_protection),
            traces=feature_traces(name, ctx) if removable else None))

    boundary = snapshot.boundary_version
    checkpoints = [CheckpointReport(c, log.sidecars_of(c) if c.kind == "v2" else None)
                   for c in log.checkpoint_inventory()]
    protected = [r.checkpoint.version for r in checkpoints
                 if boundary is not None and r.checkpoint.complete and r.checkpoint.version >= boundary]
    latest, earliest = log.latest_version(), log.earliest_version()
    return TableReport(
        table=location,
        version=snapshot.version,
        latest_version=latest,
        earliest_version=earliest,
        timestamp_ms=snapshot.timestamp_ms(),
        protocol=protocol,
        features=features,
        unsupported_for_read=unsupported_features(protocol, Operation.READ),
        unsupported_for_write=unsupported_features(protocol, Operation.WRITE),
        table_id=metadata.id,
        partition_columns=list(metadata.partitionColumns),
        properties=dict(sorted(metadata.configuration.items())),
        checkpoints=checkpoints,
        last_checkpoint=listing.last_checkpoint,
        boundary_version=boundary,
        protected_checkpoint_versions=protected,
        files=_file_summary(ctx),
        unknown_log_files=[s.path for s in listing.unknown],
        protocol_history=log.protocol_history() if history else None,
    )


def _file_summary(ctx: TraceContext) -> FileSummary:
    counts = file_counts(ctx.arrow)
    return FileSummary(
        live_files=counts.live_files,
        live_bytes=counts.live_bytes,
        files_with_deletion_vectors=counts.files_with_deletion_vectors,
        deleted_rows_in_deletion_vectors=counts.deleted_rows_in_deletion_vectors,
        tombstones=counts.tombstones,
        domains=sorted(ctx.live_domains),
    )
