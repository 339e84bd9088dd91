"""``delta-downgrade inspect``: what a table's log says at one version, as a :class:`TableReport`.

The report holds facts only; the CLI renders it as the stable JSON document of ``inspect --json``
(a contract documented in the README: add fields, never rename or drop them) and as text.

The files are summed up without a Python object per file: from the snapshot's Arrow state, part by
part (:func:`~delta_downgrade.log.replay.file_summary.file_counts`); only a segment small enough
for the Python replay (:func:`~delta_downgrade.log.replay_choice.python_replay_fits`) is summed up
from its Python state, so that ``inspect`` of a small table never imports pyarrow. The traces of
removable features (and the feature modules that find them) are looked at only when the protocol
has such a feature.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from msgspec import Struct
from delta_downgrade.errors import naming_table
from delta_downgrade.log.delta_log import DeltaLog, ProtocolSpan, Refresh
from delta_downgrade.log.replay.file_summary import file_counts
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.log.replay.choice import python_replay_fits
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from delta_downgrade.protocol.features import get_feature
from delta_downgrade.protocol.support import Operation, unsupported_features

if TYPE_CHECKING:
    from delta_downgrade.log.replay.reconcile import TableState
    from delta_downgrade.log.snapshot import Snapshot


class FeatureReport(Struct, frozen=True):
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


class CheckpointReport(Struct, frozen=True):
    checkpoint: CheckpointInstance
    sidecars: list[str] | None = None     # v2 checkpoints only


class FileSummary(Struct, frozen=True):
    live_files: int
    live_bytes: int
    files_with_deletion_vectors: int
    deleted_rows_in_deletion_vectors: int
    tombstones: int
    domains: list[str]                    # names of the live domains, sorted


class TableReport(Struct, frozen=True):
    """The table ``table`` at ``version``: protocol, features, checkpoints, boundary, files."""

    table: str
    version: int
    latest_version: int
    earliest_version: int | None          # None: not listed (``history=False`` lists the tail)
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
    #: None when the whole log was listed; else the version of the checkpoint ``_last_checkpoint``
    #: names, from which on the log was listed (``history=False``): ``checkpoints`` and
    #: ``unknown_log_files`` are those of that version and later.
    listed_from: int | None = None

    @property
    def checkpoint_protection(self) -> bool:
        return CHECKPOINT_PROTECTION in self.protocol.features

    @property
    def droppable_features(self) -> list[str]:
        return [f.name for f in self.features if f.removable]


@naming_table("location")
def inspect_table(location: str, version: int | None = None, *, history: bool = True,
                  storage_options: Mapping[str, str] | None = None) -> TableReport:
    """Inspect ``location`` at ``version`` (latest by default)."""
    log = DeltaLog(location, storage_options=storage_options)
    if history:
        # The report names the earliest version, every checkpoint and the unknown log files: one
        # listing of the whole log, not one from the hinted checkpoint completed afterwards.
        log.refresh(Refresh.WHOLE_LOG)
    # Without the history, the log is listed from the checkpoint _last_checkpoint names (PROTOCOL.md
    # "Last Checkpoint File"): what the latest version needs, not the whole directory.
    # Every commit and the checkpoint's rows read and checked: a damaged log is named, a damaged
    # checkpoint set aside for an older one (as for every command).
    snapshot = log.validated_snapshot(version, check_read=True, replay="auto")  # the one _file_summary uses
    protocol = snapshot.protocol
    metadata = snapshot.metadata
    listing = log.whole_listing() if history else log.listing()
    boundary = snapshot.boundary_version
    if listing.listed_from is not None and boundary is not None and boundary < listing.listed_from:
        listing = log.whole_listing()  # the protected checkpoints reach below the listed tail

    specs = {name: get_feature(name) for name in sorted(protocol.features)}
    traces: dict[str, list[str]] = {}
    if any(spec and spec.removable for spec in specs.values()):
        from delta_downgrade.features import TraceContext, feature_traces

        ctx = TraceContext(snapshot)
        traces = {name: feature_traces(name, ctx) for name, spec in specs.items() if spec and spec.removable}
    features = []
    for name, spec in specs.items():
        removable = bool(spec and spec.removable)
        features.append(FeatureReport(
            name=name, known=spec is not None, kind=spec.kind.value if spec else None,
            implicit=name in protocol.implicit_features, removable=removable,
            requires_history_protection=bool(spec and spec.requires_history_protection),
            traces=traces[name] if removable else None))

    listed_from = listing.listed_from
    inventory = log.checkpoint_inventory() if listed_from is None else listing.checkpoints_from(listed_from)
    checkpoints = [CheckpointReport(c, log.sidecars_of(c) if c.kind == "v2" else None) for c in inventory]
    protected = [r.checkpoint.version for r in checkpoints
                 if boundary is not None and r.checkpoint.complete and r.checkpoint.version >= boundary]
    latest = log.latest_version()
    earliest = log.earliest_version() if listed_from is None else None
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
        files=_file_summary(snapshot),
        unknown_log_files=[s.path for s in (listing.unknown if listed_from is None else listing.listed_unknown)],
        protocol_history=log.protocol_history() if history else None,
        listed_from=listed_from,
    )


def _file_summary(snapshot: Snapshot) -> FileSummary:
    if python_replay_fits(snapshot.segment):
        return _python_file_summary(snapshot.state())
    # the snapshot's Arrow state: the one the trace checks counted on, if they did (it is kept)
    state = snapshot.arrow_state()
    counts = file_counts(state)
    return FileSummary(
        live_files=counts.live_files,
        live_bytes=counts.live_bytes,
        files_with_deletion_vectors=counts.files_with_deletion_vectors,
        deleted_rows_in_deletion_vectors=counts.deleted_rows_in_deletion_vectors,
        tombstones=counts.tombstones,
        domains=sorted(d.domain for d in state.live_domains),
    )


def _python_file_summary(state: TableState) -> FileSummary:
    """The summary of a small segment's Python state (no pyarrow)."""
    files = state.files.values()
    with_dv = [f for f in files if f.dv is not None]
    return FileSummary(
        live_files=len(state.files),
        live_bytes=sum(f.size for f in files),
        files_with_deletion_vectors=len(with_dv),
        deleted_rows_in_deletion_vectors=sum(f.dv.cardinality for f in with_dv if f.dv),
        tombstones=len(state.tombstones),
        domains=sorted(state.live_domains),
    )
