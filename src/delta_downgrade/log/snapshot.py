"""A table at one version: protocol, metadata, domain metadata and — only when asked — its files.

Protocol and metadata are found without materialising the file list: commits are read newest
first and only until both are known, and a checkpoint is read with a ``protocol``/``metaData``
column projection. The full state (live files, tombstones, app transactions, domains) is a
separate, explicit :meth:`Snapshot.state` call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterator, Sequence

from delta_downgrade.protocol.actions import (
    AnyAction, CommitInfo, MalformedActionError, Metadata, ProtocolAction, parse_action, parse_commit,
)
from delta_downgrade.errors import CorruptLogError, DeltaDowngradeError, DuplicateActionsError
from delta_downgrade.log.checkpoint_reader import CheckpointReader
from delta_downgrade.log.listing import CheckpointInstance
from delta_downgrade.log.reconcile import TableState
from delta_downgrade.protocol import Protocol
from delta_downgrade.storage import FileStatus, Storage

# A table's boundary property (Checkpoint Protection RFC).
BOUNDARY_PROPERTY = "delta.requireCheckpointProtectionBeforeVersion"


@dataclass(frozen=True)
class LogSegment:
    """What must be read to build version ``version``: a checkpoint (or none) and the commits after it."""

    version: int
    checkpoint: CheckpointInstance | None
    commits: tuple[FileStatus, ...]  # ascending, checkpoint.version + 1 .. version

    @property
    def start_version(self) -> int:
        return self.checkpoint.version + 1 if self.checkpoint else 0


def _might_hold(line: str, keys: tuple[str, ...]) -> bool:
    return any(f'"{k}"' in line for k in keys)


def commit_parse_error(storage: Storage, path: str, exc: Exception) -> CorruptLogError:
    """The error for a commit that cannot be parsed (both replays raise this one)."""
    return CorruptLogError(
        f"cannot parse commit {path}: {exc}. The log is damaged there; restore the file from a "
        f"backup (nothing was written)", table=getattr(storage, "root", None))


def check_single_protocol_and_metadata(actions: Sequence[AnyAction], where: str,
                                       table: str | None = None) -> None:
    """PROTOCOL.md "Delta Log Entries": a log entry MUST NOT hold more than one metaData action
    or more than one protocol action ("Change Metadata": at most one metadata action per
    version). With two, which one holds is undefined: refuse the log rather than pick one."""
    protocols = metadatas = 0
    for action in actions:
        if isinstance(action, ProtocolAction):
            protocols += 1
        elif isinstance(action, Metadata):
            metadatas += 1
    if protocols > 1 or metadatas > 1:
        kind = "protocol" if protocols > 1 else "metaData"
        raise DuplicateActionsError(
            f"{where} holds {max(protocols, metadatas)} {kind} actions; a version may have at most "
            f"one (PROTOCOL.md \"Delta Log Entries\"), so the table's {kind} there is undefined. "
            f"The writer that produced it is broken; restore the file from a backup",
            table=table, params={"actionType": kind, "path": where})


def read_commit_actions(storage: Storage, status: FileStatus, keys: tuple[str, ...] | None = None) -> list[AnyAction]:
    """Parse one commit; with ``keys``, only the lines that can hold those actions.

    Raises :class:`CorruptLogError` naming the file and line for a line that is not a JSON
    object or holds a malformed action, and :class:`DuplicateActionsError` for a commit with two
    protocol or two metaData actions (checked whenever those are read)."""
    try:
        text = storage.read_bytes(status.path).decode("utf-8")
        if keys is None:
            out = parse_commit(text)
        else:
            out = []
            if not _might_hold(text, keys):  # one scan of the file instead of one per line
                return out
            for number, line in enumerate(text.split("\n"), 1):  # not splitlines(): U+2028 may sit inside a JSON string
                if line.strip() and _might_hold(line, keys):
                    try:
                        action = parse_action(json.loads(line))
                    except ValueError as exc:
                        raise MalformedActionError(f"line {number}: {exc}") from None
                    if action is not None and getattr(action, "KEY", None) in keys:
                        out.append(action)
    except (ValueError, UnicodeDecodeError) as exc:
        raise commit_parse_error(storage, status.path, exc) from exc
    check_single_protocol_and_metadata(out, status.path, getattr(storage, "root", None))
    return out


def with_checkpoint_fallback(storage: Storage, table: str, segment: LogSegment,
                             protocol: ProtocolAction | None, metadata: Metadata | None
                             ) -> tuple[ProtocolAction, Metadata]:
    """Complete what the segment's commits did not set from its checkpoint (a projected read), or
    raise: a version without a protocol or metaData action cannot be reconstructed."""
    if (protocol is None or metadata is None) and segment.checkpoint is not None:
        found = CheckpointReader(storage, segment.checkpoint).actions(["protocol", "metaData"])
        # A checkpoint holds the table's one protocol and one metaData (PROTOCOL.md "Checkpoints")
        check_single_protocol_and_metadata(
            [*found.get("protocol", []), *found.get("metaData", [])],
            f"checkpoint {segment.checkpoint.paths[0]}" + (
                f" ({len(segment.checkpoint.paths)} parts)" if len(segment.checkpoint.paths) > 1 else ""),
            table)
        if protocol is None and found.get("protocol"):
            protocol = found["protocol"][-1]  # type: ignore[assignment]
        if metadata is None and found.get("metaData"):
            metadata = found["metaData"][-1]  # type: ignore[assignment]
    if protocol is None:
        where = (f"checkpoint {segment.checkpoint.version} and the commits after it"
                 if segment.checkpoint else f"commits 0..{segment.version}")
        raise CorruptLogError(
            f"no protocol action found for version {segment.version} in {where}: the log is "
            f"damaged; restore the missing files or rebuild the table", table=table)
    if metadata is None:
        raise CorruptLogError(
            f"no metaData action found for version {segment.version}: the log is damaged", table=table)
    return protocol, metadata


class Snapshot:
    """The table at ``segment.version``. Cheap to create; reads happen on first use.

    With ``base`` (an earlier snapshot of the same log) and ``base_commits`` (every commit after
    it up to ``segment.version``), what ``base`` has already computed is reused: the protocol and
    metadata (when both have the same checkpoint, so that the result and the errors are those
    of a fresh snapshot: the new commits are the newest of this segment's, read first either
    way) and the file state (the base's state plus the new commits). Log entries never change
    (PROTOCOL.md "Creation of New Log Entries"), so the result is the fresh replay's.
    """

    def __init__(self, storage: Storage, table: str, segment: LogSegment, *,
                 base: "Snapshot | None" = None, base_commits: Sequence[FileStatus] = ()) -> None:
        self.storage = storage
        self.table = table
        self.segment = segment
        self.version = segment.version
        if base is not None and (base.version > segment.version
                                 or len(base_commits) != segment.version - base.version):
            raise ValueError(f"{base!r} and {len(base_commits)} commit(s) do not lead to version "
                             f"{segment.version}")
        self._base = base
        self._base_commits = tuple(base_commits)
        self._state: TableState | None = None

    def __repr__(self) -> str:
        return f"Snapshot({self.table!r}, version={self.version})"

    # --- protocol and metadata, without the file list ---------------------------------------------

    @cached_property
    def _protocol_and_metadata(self) -> tuple[ProtocolAction, Metadata]:
        base = self._base
        if base is not None and base.segment.checkpoint == self.segment.checkpoint:
            commits: Sequence[FileStatus] = self._base_commits
        else:
            base, commits = None, self.segment.commits
        protocol: ProtocolAction | None = None
        metadata: Metadata | None = None
        for status in reversed(commits):
            # Newest commit first (each holds at most one of each: read_commit_actions checks).
            for action in read_commit_actions(self.storage, status, ("protocol", "metaData")):
                if isinstance(action, ProtocolAction) and protocol is None:
                    protocol = action
                elif isinstance(action, Metadata) and metadata is None:
                    metadata = action
            if protocol is not None and metadata is not None:
                break
        if base is not None:
            base_protocol, base_metadata = base._protocol_and_metadata
            return protocol or base_protocol, metadata or base_metadata
        return with_checkpoint_fallback(self.storage, self.table, self.segment, protocol, metadata)

    @property
    def protocol_action(self) -> ProtocolAction:
        return self._protocol_and_metadata[0]

    @property
    def protocol(self) -> Protocol:
        return self.protocol_action.protocol

    @property
    def metadata(self) -> Metadata:
        return self._protocol_and_metadata[1]

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self.metadata.configuration)

    @property
    def schema(self) -> dict[str, Any]:
        return self.metadata.schema

    @property
    def boundary_version(self) -> int | None:
        """``delta.requireCheckpointProtectionBeforeVersion``, when set."""
        value = self.metadata.configuration.get(BOUNDARY_PROPERTY)
        return int(value) if value not in (None, "") else None

    # --- commit information ------------------------------------------------------------------------

    def commit_info(self, version: int | None = None) -> CommitInfo | None:
        version = self.version if version is None else version
        for status in self.segment.commits:
            if status.path.endswith(f"{version:020d}.json"):
                for action in read_commit_actions(self.storage, status, ("commitInfo",)):
                    if isinstance(action, CommitInfo):
                        return action
        return None

    def timestamp_ms(self) -> int:
        """In-commit timestamp when the commit has one, else the commit file's modification time."""
        info = self.commit_info()
        if info is not None and info.inCommitTimestamp is not None:
            return int(info.inCommitTimestamp)
        for status in self.segment.commits:
            if status.path.endswith(f"{self.version:020d}.json"):
                return status.modification_time_ms
        if self.segment.checkpoint is not None:
            return self.segment.checkpoint.modification_time_ms
        return 0

    # --- the full state, on demand ----------------------------------------------------------------

    def state(self) -> TableState:
        """Replay the checkpoint and the commits after it into the reconciled state (computed
        once per snapshot; each call returns its own copy, free to modify)."""
        if self._state is None:
            self._state = self._derived_state() or self._replayed_state()
        return self._state.copy()

    def _derived_state(self) -> TableState | None:
        """The base's state plus the new commits, when the base has computed its state. Any
        error gives None: the fresh replay then decides (it may not read the failing file)."""
        base = self._base
        if base is None or base._state is None:
            return None
        protocol, metadata = self._protocol_and_metadata
        state = base._state.copy()
        try:
            for status in self._base_commits:
                state.apply_commit(read_commit_actions(self.storage, status))
        except (DeltaDowngradeError, OSError):
            return None
        state.version = self.version
        state.protocol_action, state.metadata = protocol, metadata
        return state

    def _replayed_state(self) -> TableState:
        protocol, metadata = self._protocol_and_metadata
        state = TableState(self.version, protocol, metadata)
        if self.segment.checkpoint is not None:
            # protocol and metaData come from _protocol_and_metadata (projected, checked there)
            found = CheckpointReader(self.storage, self.segment.checkpoint).actions(
                ["txn", "domainMetadata", "add", "remove"])
            state.apply_checkpoint(found.get("txn", []), found.get("domainMetadata", []),  # type: ignore[arg-type]
                                   found.get("add", []), found.get("remove", []))  # type: ignore[arg-type]
        for status in self.segment.commits:
            state.apply_commit(read_commit_actions(self.storage, status))
        state.protocol_action, state.metadata = protocol, metadata
        return state

    def iter_commit_actions(self) -> Iterator[tuple[int, list[AnyAction]]]:
        """The commits of the segment, oldest first, with their version."""
        for status in self.segment.commits:
            version = int(status.path.rsplit("/", 1)[-1].split(".", 1)[0])
            yield version, read_commit_actions(self.storage, status)

