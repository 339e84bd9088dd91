"""A table's protocol and checkpoint timeline, from its log only (no data file is read): what the
compat report draws per table.

What it holds: the retained versions (earliest reconstructable → latest), every checkpoint
(classic, multi-part, V2 with its sidecar count) and whether Checkpoint Protection keeps it, every
protocol change (features added / removed), the DROP FEATURE commits (``commitInfo.operation``:
delta-spark and this package both write ``"DROP FEATURE"``
with ``featureName`` and ``truncateHistory``), and the boundary
``delta.requireCheckpointProtectionBeforeVersion``.

Cost: the listing of ``_delta_log`` (one, which the earliest version needs anyway) gives the
checkpoints for free; protocol changes and DROP FEATURE commits need the commits themselves, so
only the most recent :data:`MAX_DRAWN_COMMITS` are read - projected on ``protocol`` and
``commitInfo`` (:func:`~delta_downgrade.log.read.protocol_history.projected_commit_actions`) - and the
protocol in force where that window starts and the boundary come from snapshots whose segments
start at a checkpoint (their protocol and metadata read projected). Older history is counted,
not drawn: :attr:`ProtocolTimeline.older_history_not_drawn`.

Which checkpoints are protected: Checkpoint Protection RFC, writer requirement (a) - while the
protocol has ``checkpointProtection``, no checkpoint of a version before the boundary may be
cleaned up (except by truncating all history before the boundary in one go). The barrier
checkpoints of a fast DROP FEATURE and everything older are such checkpoints; the checkpoint at
the boundary itself (the downgrade commit's) is not covered by rule (a) and is marked as
``at_boundary``.
"""

from __future__ import annotations

from typing import Any, Mapping

from msgspec import Struct
from delta_downgrade.errors import DeltaDowngradeError, naming_table
from delta_downgrade.log.delta_log import DeltaLog, Refresh, commit_version
from delta_downgrade.log.read.protocol_history import projected_commit_actions
from delta_downgrade.log.snapshot import Snapshot
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from delta_downgrade.protocol.actions import CommitInfo, ProtocolAction

__all__ = ["CheckpointMark", "DropFeatureCommit", "MAX_DRAWN_COMMITS", "MAX_SIDECAR_READS",
           "ProtocolChange", "ProtocolTimeline", "protocol_timeline"]

#: Commits read (the newest ones): enough for every drop a person would look at in a picture,
#: few enough that a table with 100k commits costs what one with 2000 does.
MAX_DRAWN_COMMITS = 2000

#: V2 checkpoints whose sidecar list is read (the newest ones in the window; one small read each).
MAX_SIDECAR_READS = 10

#: commitInfo.operation of a drop (delta-spark's DropTableFeature, and this package's commits).
DROP_FEATURE_OPERATION = "DROP FEATURE"


class CheckpointMark(Struct, frozen=True):
    version: int
    kind: str                   # "classic" | "multipart" | "v2" (log/listing.CheckpointInstance)
    parts: int                  # files of the checkpoint itself (multi-part: parts present)
    complete: bool              # a multi-part checkpoint with a part missing is not
    sidecars: int | None        # V2 only: sidecar files it references; None when not read
    protected: bool             # Checkpoint Protection rule (a): before the boundary
    at_boundary: bool           # the checkpoint at the boundary version (the downgrade commit's)


class ProtocolChange(Struct, frozen=True):
    """The protocol at ``version`` differs from the one before; ``added`` / ``removed`` compare
    the features each protocol has, listed or implied by legacy versions (PROTOCOL.md "Protocol
    Evolution")."""

    version: int
    protocol: Protocol
    added: tuple[str, ...]
    removed: tuple[str, ...]


class DropFeatureCommit(Struct, frozen=True):
    version: int
    feature: str | None
    truncate_history: bool | None


class ProtocolTimeline(Struct, frozen=True):
    table: str
    earliest_version: int           # the oldest version that can be reconstructed
    latest_version: int
    drawn_from: int                 # the first version whose commit was read
    initial_protocol: Protocol      # the protocol in force at ``drawn_from``
    protocol_changes: tuple[ProtocolChange, ...]        # after ``drawn_from``
    drop_feature_commits: tuple[DropFeatureCommit, ...]  # from ``drawn_from`` on
    checkpoints: tuple[CheckpointMark, ...]             # from ``drawn_from`` on, by version
    checkpoints_not_drawn: int      # checkpoints before ``drawn_from``
    boundary_version: int | None    # delta.requireCheckpointProtectionBeforeVersion (latest)
    checkpoint_protection: bool     # the latest protocol has checkpointProtection
    latest_schema: Mapping[str, Any] | None = None  # the latest version's schema (field metadata checks)

    @property
    def older_history_not_drawn(self) -> bool:
        return self.drawn_from > self.earliest_version

    @property
    def latest_protocol(self) -> Protocol:
        return self.protocol_changes[-1].protocol if self.protocol_changes else self.initial_protocol


@naming_table("location")
def protocol_timeline(location: str, *, log: DeltaLog | None = None,
                      storage_options: Mapping[str, str] | None = None,
                      max_commits: int = MAX_DRAWN_COMMITS) -> ProtocolTimeline:
    """The timeline of ``location`` (or of ``log``, when the caller has the table open)."""
    if log is None:
        log = DeltaLog(location, storage_options=storage_options)
        log.refresh(Refresh.WHOLE_LOG)  # the earliest version and every checkpoint: the whole listing
    listing = log.whole_listing()
    latest = log.latest_version()
    earliest = log.earliest_version()
    drawn_from = max(earliest, latest - max(1, max_commits) + 1)

    protocol_actions: list[tuple[int, Protocol]] = []
    drops: list[DropFeatureCommit] = []
    commits = listing.commits_between(drawn_from, latest)
    for status, actions in projected_commit_actions(log.storage, commits, ("protocol", "commitInfo")):
        version = commit_version(status)
        for action in actions:
            if isinstance(action, ProtocolAction) and version > drawn_from:
                protocol_actions.append((version, action.protocol))
            elif isinstance(action, CommitInfo) and action.operation == DROP_FEATURE_OPERATION:
                params = action.operationParameters or {}
                drops.append(DropFeatureCommit(version, _text(params.get("featureName")),
                                               _flag(params.get("truncateHistory"))))
    # The latest snapshot gives the boundary and the latest protocol (its newest checkpoint and
    # the commits after it). The protocol in force at drawn_from is that of any version before
    # the window's first protocol action: the newest such version is read, so that its segment
    # starts at a checkpoint inside the window when there is one (reading the protocol at
    # drawn_from itself could replay every commit since an old checkpoint: 100k of them).
    newest = Snapshot(log.storage, log.table, log.segment(latest))
    boundary = newest.boundary_version
    before_first_change = protocol_actions[0][0] - 1 if protocol_actions else latest
    initial = (newest if before_first_change == latest
               else Snapshot(log.storage, log.table, log.segment(before_first_change))).protocol
    changes: list[ProtocolChange] = []
    protocol = initial
    for version, new in protocol_actions:
        if new != protocol:
            changes.append(ProtocolChange(version, new, tuple(sorted(new.features - protocol.features)),
                                          tuple(sorted(protocol.features - new.features))))
            protocol = new

    protected = CHECKPOINT_PROTECTION in newest.protocol.features
    protected_before = boundary if protected else None
    shown = [c for c in listing.checkpoints if c.version >= drawn_from]
    sidecar_reads = {c.paths for c in [c for c in shown if c.kind == "v2" and c.complete][-MAX_SIDECAR_READS:]}
    marks = []
    for c in shown:
        sidecars = None
        if c.paths in sidecar_reads:
            try:
                sidecars = len(log.sidecars_of(c))
            except (DeltaDowngradeError, OSError):  # an unreadable manifest: drawn without its count
                sidecars = None
        marks.append(CheckpointMark(
            c.version, c.kind, len(c.files), c.complete, sidecars,
            protected=protected_before is not None and c.version < protected_before,
            at_boundary=boundary is not None and c.version == boundary))
    return ProtocolTimeline(
        table=location, earliest_version=earliest, latest_version=latest, drawn_from=drawn_from,
        initial_protocol=initial, protocol_changes=tuple(changes), drop_feature_commits=tuple(drops),
        checkpoints=tuple(marks), checkpoints_not_drawn=len(listing.checkpoints) - len(shown),
        boundary_version=boundary, checkpoint_protection=protected, latest_schema=_schema(newest))


def _schema(snapshot: Snapshot) -> Mapping[str, Any] | None:
    try:
        return snapshot.schema
    except (DeltaDowngradeError, ValueError):  # no metaData or an unparsable schema: drawn without it
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _flag(value: object) -> bool | None:
    # delta-spark writes operationParameters values as strings ("false"); this package as JSON.
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None
