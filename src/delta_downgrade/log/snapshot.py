"""A table at one version: protocol, metadata, domain metadata and — only when asked — its files.

Protocol and metadata are found without materialising the file list: commits are read newest
first and only until both are known, and a checkpoint is read with a ``protocol``/``metaData``
column projection. The full state (live files, tombstones, app transactions, domains) is a
separate, explicit :meth:`Snapshot.state` call.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from delta_downgrade.protocol.actions import (AddCDCFile, AddFile, AnyAction, CommitInfo, DomainMetadata,
                                              Metadata, ProtocolAction, RemoveFile, Txn)
from delta_downgrade.errors import DeltaDowngradeError, MissingCommitInfoError, MissingCommitTimestampError
from delta_downgrade.log.replay.choice import python_replay_fits, replay_state
from delta_downgrade.log.replay.reconcile import TableState
from delta_downgrade.log.read.segment import LogSegment, iter_commit_actions, read_commit_actions, with_checkpoint_fallback
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.table_config import TableConfig
from delta_downgrade.storage import FileStatus, Storage

if TYPE_CHECKING:
    from delta_downgrade.log.replay.arrow_pieces import Pieces
    from delta_downgrade.log.replay.arrow_replay import ArrowState

# A table's boundary property (Checkpoint Protection RFC).
BOUNDARY_PROPERTY = "delta.requireCheckpointProtectionBeforeVersion"


class Snapshot:
    """The table at ``segment.version``. Cheap to create; reads happen on first use.

    With ``base`` (an earlier snapshot of the same log) and ``base_commits`` (every commit after
    it up to ``segment.version``), what ``base`` has already computed is reused: the protocol and
    metadata (when both have the same checkpoint, so that the result and the errors are those
    of a fresh snapshot: the new commits are the newest of this segment's, read first either
    way; or when ``checkpoint_written_here``: the segment's checkpoint is one this process wrote)
    and the file state (the base's state plus the new commits). Log entries never change
    (PROTOCOL.md "Creation of New Log Entries"), so the result is the fresh replay's.

    :meth:`with_commits` is the one way to derive a table from commits given by value (a plan's
    commits, which are never written; the winners of a lost race, already read).
    """

    def __init__(self, storage: Storage, table: str, segment: LogSegment, *,
                 base: "Snapshot | None" = None, base_commits: Sequence[FileStatus] = (),
                 checkpoint_written_here: bool = False) -> None:
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
        # The commits after ``base`` given by value (with_commits), instead of read from the log.
        self._given: tuple[tuple[AnyAction, ...], ...] = ()
        self._checkpoint_written_here = checkpoint_written_here
        self._state: TableState | None = None
        self._arrow: ArrowState | None = None
        # The segment's commits as :meth:`validate_commits` parsed them with Arrow, kept for the
        # one replay that follows (the commits are parsed once per run); None once used.
        self._parsed_commits: list[Pieces] | None = None

    def with_commits(self, commits: Sequence[Sequence[AnyAction]]) -> "Snapshot":
        """This table after ``commits`` (each one commit's actions, oldest first), at version
        ``version + len(commits)``. Nothing of them is read from storage: they may be commits a
        plan only intends (a dry run) or the winners of a lost race, already read.

        Protocol and metadata are the newest the commits carry, else this snapshot's; a domain
        is the newest ``domainMetadata`` of its name; the file state is this snapshot's with the
        commits applied by the reconciliation rules (``TableState.apply_commit``, PROTOCOL.md
        "Action Reconciliation") - the same result a fresh replay of the log gives once they
        are written. A chain of derivations copies the nearest computed state once."""
        if not commits:
            return self
        derived = Snapshot(self.storage, self.table,
                           LogSegment(self.version + len(commits), self.segment.checkpoint, self.segment.commits))
        derived._base = self
        derived._given = tuple(tuple(actions) for actions in commits)
        return derived

    @property
    def derived_commits(self) -> list[list[AnyAction]]:
        """The commits given by value (:meth:`with_commits`) that lead from the last snapshot
        read from the log to this one, oldest first; empty for a snapshot of the log."""
        out: list[list[AnyAction]] = []
        snapshot: Snapshot | None = self
        while snapshot is not None and snapshot._given:
            out[:0] = [list(actions) for actions in snapshot._given]
            snapshot = snapshot._base
        return out

    def _given_newest_first(self) -> Iterator[AnyAction]:
        for actions in reversed(self._given):
            yield from reversed(actions)

    def __repr__(self) -> str:
        return f"Snapshot({self.table!r}, version={self.version})"

    # --- protocol and metadata, without the file list ---------------------------------------------

    @cached_property
    def _protocol_and_metadata(self) -> tuple[ProtocolAction, Metadata]:
        base = self._base
        if self._given and base is not None:
            given_protocol = next((a for a in self._given_newest_first() if isinstance(a, ProtocolAction)), None)
            given_metadata = next((a for a in self._given_newest_first() if isinstance(a, Metadata)), None)
            return given_protocol or base.protocol_action, given_metadata or base.metadata
        if base is not None and (base.segment.checkpoint == self.segment.checkpoint or (
                self._checkpoint_written_here and "_protocol_and_metadata" in base.__dict__)):
            # Same checkpoint: the base read it. A checkpoint this process has just written
            # holds the state the base and the commits after it make (PROTOCOL.md "Action
            # Reconciliation"), so it need not be read (a fresh snapshot reads it to find out
            # whether it can, and falls back to an older one if not).
            commits: Sequence[FileStatus] = self._base_commits
        else:
            base, commits = None, self.segment.commits
        protocol: ProtocolAction | None = None
        metadata: Metadata | None = None
        for _status, actions in iter_commit_actions(self.storage, commits[::-1], ("protocol", "metaData")):
            # Newest commit first (each holds at most one of each: read_commit_actions checks).
            for action in actions:
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

    # --- one domain, without the file list -------------------------------------------------------

    def domain(self, name: str) -> DomainMetadata | None:
        """The live ``domainMetadata`` of domain ``name`` at this version, or None (absent or
        removed). PROTOCOL.md "Action Reconciliation": the last action per domain wins, so the
        commits are read newest first (only their ``domainMetadata`` lines) and the checkpoint's
        ``domainMetadata`` column only when none of them names the domain; the file list is
        never built (unless :meth:`state` already has it)."""
        if self._state is not None:
            found = self._state.domains.get(name)
            return found if found is not None and not found.removed else None
        if self._given and self._base is not None:
            newest = next((a for a in self._given_newest_first()
                           if isinstance(a, DomainMetadata) and a.domain == name), None)
            if newest is not None:
                return newest if not newest.removed else None
            return self._base.domain(name)
        for _status, actions in iter_commit_actions(self.storage, self.segment.commits[::-1], ("domainMetadata",)):
            mine = [a for a in actions if isinstance(a, DomainMetadata) and a.domain == name]
            if mine:
                return mine[-1] if not mine[-1].removed else None
        if self.segment.checkpoint is not None:
            from delta_downgrade.log.read.checkpoint_reader import CheckpointReader  # pyarrow: only when needed

            found_in = CheckpointReader(self.storage, self.segment.checkpoint).actions(["domainMetadata"])
            mine = [a for a in found_in.get("domainMetadata", [])
                    if isinstance(a, DomainMetadata) and a.domain == name]
            if mine:
                return mine[-1] if not mine[-1].removed else None
        return None

    # --- commit information ------------------------------------------------------------------------

    def commit_info(self, version: int | None = None) -> CommitInfo | None:
        version = self.version if version is None else version
        if self._given and self._base is not None:
            if version <= self._base.version:
                return self._base.commit_info(version)
            given = self._given[version - self._base.version - 1] if version <= self.version else ()
            return next((a for a in given if isinstance(a, CommitInfo)), None)
        status = self._commit_file(version)
        if status is not None:
            for action in read_commit_actions(self.storage, status, ("commitInfo",)):
                if isinstance(action, CommitInfo):
                    return action
        return None

    def in_commit_timestamp(self) -> int | None:
        """This version's in-commit timestamp when the table has them enabled here; None when it
        has not, or when the commit file is gone (a version a checkpoint stands for). A commit
        that is there without one is refused as delta-spark refuses it (PROTOCOL.md "In-Commit
        Timestamps": with the feature enabled, every commit's commitInfo carries it): the next
        commit's timestamp must be greater, and nothing else says by how much."""
        if not TableConfig(self.metadata.configuration).in_commit_timestamps_enabled:
            return None
        if not self._has_commit_file(self.version):
            return None
        return required_in_commit_timestamp(self.table, self.version, self.commit_info())

    def _has_commit_file(self, version: int) -> bool:
        if self._given and self._base is not None:
            return version > self._base.version or self._base._has_commit_file(version)
        return self._commit_file(version) is not None

    def _commit_file(self, version: int) -> FileStatus | None:
        """The listed commit file of ``version`` in this snapshot's segment; None when the
        segment has none (a version a checkpoint stands for, or one given by value)."""
        name = f"{version:020d}.json"
        return next((status for status in self.segment.commits if status.path.endswith(name)), None)

    def timestamp_ms(self) -> int:
        """In-commit timestamp when the commit has one, else the commit file's modification time."""
        info = self.commit_info()
        if info is not None and info.inCommitTimestamp is not None:
            return int(info.inCommitTimestamp)
        if self._given and self._base is not None:
            # A commit given by value has no file: its commitInfo's time, else (a plan's commit,
            # which has none) the time of the table it was derived from.
            return int(info.timestamp) if info is not None and info.timestamp is not None else self._base.timestamp_ms()
        status = self._commit_file(self.version)
        if status is not None:
            return status.modification_time_ms
        if self.segment.checkpoint is not None:
            return self.segment.checkpoint.modification_time_ms
        return 0

    # --- the full state, on demand ----------------------------------------------------------------

    def state(self) -> TableState:
        """Replay the checkpoint and the commits after it into the reconciled state (computed
        once per snapshot; each call returns its own copy, free to modify)."""
        if self._state is None:
            try:
                self._state = self._derived_state() or self._replayed_state()
            finally:
                self._parsed_commits = None  # used or not, never held past the replay
        return self._state.copy()

    def _derived_state(self) -> TableState | None:
        """The base's state plus the new commits, when the base has computed its state. Any
        error gives None: the fresh replay then decides (it may not read the failing file)."""
        if self._given:
            return self._state_with_given_commits()
        base = self._base
        if base is None or base._state is None:
            return None
        protocol, metadata = self._protocol_and_metadata
        state = base._state.copy()
        try:
            for _status, actions in iter_commit_actions(self.storage, self._base_commits):
                state.apply_commit(actions)
        except (DeltaDowngradeError, OSError):
            return None
        state.version = self.version
        state.protocol_action, state.metadata = protocol, metadata
        return state

    def _state_with_given_commits(self) -> TableState:
        """The nearest snapshot of the derivation chain with a state (or the one read from the
        log, replayed once), copied once, and every given commit after it applied in order: a plan
        of many purge batches costs one copy of the file state, not one per batch."""
        chain: list[Snapshot] = [self]
        base = self._base
        assert base is not None
        while base._given and base._state is None:
            chain.append(base)
            base = base._base
            assert base is not None
        state = base.state()
        for link in reversed(chain):
            for actions in link._given:
                state.apply_commit(actions)
        state.version = self.version
        state.protocol_action, state.metadata = self._protocol_and_metadata
        return state

    def _replayed_state(self) -> TableState:
        """The Arrow replay of the segment (:func:`~delta_downgrade.log.replay.arrow_replay.replay_state`);
        for a shape of log it does not know, the checkpoint and the commits applied one at a
        time, by the same rules."""
        protocol, metadata = self._protocol_and_metadata
        state = replay_state(self.storage, self.table, self.segment, protocol, metadata,
                             parsed_commits=self._parsed_commits)
        if state is not None:
            return state
        state = TableState(self.version, protocol, metadata)
        if self.segment.checkpoint is not None:
            from delta_downgrade.log.read.checkpoint_reader import CheckpointReader  # pyarrow: only when needed

            # protocol and metaData come from _protocol_and_metadata (projected, checked there)
            found = CheckpointReader(self.storage, self.segment.checkpoint).actions(
                ["txn", "domainMetadata", "add", "remove"])
            # the reader returns each key's own actions (txn, domainMetadata, add, remove)
            state.apply_checkpoint(found.get("txn", []), found.get("domainMetadata", []),  # type: ignore[arg-type]
                                   found.get("add", []), found.get("remove", []))  # type: ignore[arg-type]  # (the same)
        for _status, actions in iter_commit_actions(self.storage, self.segment.commits):
            state.apply_commit(actions)
        state.protocol_action, state.metadata = protocol, metadata
        return state

    # --- the full state as Arrow columns, carried forward -----------------------------------------

    def arrow_state(self) -> "ArrowState":
        """The reconciled state with its file actions as Arrow columns (what a checkpoint of this
        version holds, before tombstone expiry), computed once per snapshot and shared (do not
        modify it).

        With a base snapshot whose Arrow state is known and new commits that hold no file
        action (empty commits, protocol or metadata changes, txns, domains - what a drop commits
        between its checkpoints), the base's file actions are carried forward: PROTOCOL.md
        "Action Reconciliation" changes a logical file only through an ``add`` or a ``remove``,
        so the replay would give the same columns. Otherwise the segment is replayed
        (:func:`~delta_downgrade.log.replay.arrow_replay.replay_segment`), or, for a shape of log the
        Arrow replay does not know, built from :meth:`state`.

        Raises what the replay raises (:class:`CheckpointUnreadableError`, :class:`CorruptLogError`)."""
        if self._arrow is None:
            try:
                self._arrow = self._derived_arrow() or self._replayed_arrow()
            finally:
                self._parsed_commits = None  # used or not, never held past the replay
        return self._arrow

    def _derived_arrow(self) -> "ArrowState | None":
        """The state carried from the nearest snapshot of the ``base`` chain that has one, when
        no commit in between holds a file action (each link derives and keeps its own)."""
        if self._arrow is not None:
            return self._arrow
        if self._given:
            return self._arrow_with_given_commits()
        base = self._base
        if base is None:
            return None
        known = base._derived_arrow()
        if known is None:
            return None
        base._arrow = known
        txns = {t.appId: t for t in known.txns}
        domains = {d.domain: d for d in known.domains}
        try:
            for status in self._base_commits:
                for action in read_commit_actions(self.storage, status):
                    if isinstance(action, (AddFile, RemoveFile)):
                        return None  # a file changed: the replay decides
                    if isinstance(action, Txn):
                        txns[action.appId] = action
                    elif isinstance(action, DomainMetadata):
                        domains[action.domain] = action
        except (DeltaDowngradeError, OSError):
            return None
        protocol, metadata = self._protocol_and_metadata
        return known.advanced(self.version, protocol, metadata, list(txns.values()),
                              list(domains.values()))

    def _arrow_with_given_commits(self) -> "ArrowState | None":
        """The base's Arrow state carried over given commits that hold no file action; None
        otherwise (then built from :meth:`state`)."""
        if any(isinstance(a, (AddFile, RemoveFile, AddCDCFile)) for actions in self._given for a in actions):
            return None
        assert self._base is not None
        known = self._base.arrow_state()
        txns = {t.appId: t for t in known.txns}
        domains = {d.domain: d for d in known.domains}
        for actions in self._given:
            for action in actions:
                if isinstance(action, Txn):
                    txns[action.appId] = action
                elif isinstance(action, DomainMetadata):
                    domains[action.domain] = action
        protocol, metadata = self._protocol_and_metadata
        return known.advanced(self.version, protocol, metadata, list(txns.values()), list(domains.values()))

    def _replayed_arrow(self) -> "ArrowState":
        import pyarrow as pa

        from delta_downgrade.log.replay.arrow_replay import arrow_state_of, replay_segment

        if self._given:
            return arrow_state_of(self.state())  # given commits are in no file to replay
        try:
            return replay_segment(self.storage, self.table, self.segment,
                                  protocol_and_metadata=self._protocol_and_metadata,
                                  parsed_commits=self._parsed_commits)
        except pa.ArrowException:
            pass  # a shape of log the Arrow replay does not know: the rules applied one by one
        return arrow_state_of(self.state())

    def validate_commits(self) -> None:
        """Parse every commit of the segment, every line, with every check of
        :func:`read_commit_actions` (a line that is not an action, a field of the wrong type, two
        protocol or metaData actions): raises :class:`CorruptLogError` for the first that fails.
        What a run checks before its first write, since planning reads only the protocol and
        metaData lines.

        A segment too large for the Python replay (:func:`~delta_downgrade.log.replay.choice.python_replay_fits`)
        is read by the Arrow replay's parser with the Python parser's checks (its Python view,
        which differential tests hold to the Python parser's objects and errors); when small
        enough to be held parsed, it is kept: the replay that follows (:meth:`arrow_state`,
        :meth:`state`) takes those commits instead of parsing them again (a larger one is
        checked as a stream, its replay streams it again). Whatever that parse
        does not accept (an error, a shape it does not know) is left to the Python parser, so
        that the error raised is always its own."""
        self._parsed_commits = None
        commits = self.segment.commits
        if commits and not self._given:
            if not python_replay_fits(self.segment):
                from delta_downgrade.log.replay.arrow_replay import parse_commits_checked

                accepted, self._parsed_commits = parse_commits_checked(self.storage, self.segment)
                if accepted:
                    return
        for _status, _actions in iter_commit_actions(self.storage, commits):
            pass

    def iter_commit_actions(self) -> Iterator[tuple[int, list[AnyAction]]]:
        """The commits of the segment, oldest first, with their version."""
        for status in self.segment.commits:
            version = int(status.path.rsplit("/", 1)[-1].split(".", 1)[0])
            yield version, read_commit_actions(self.storage, status)


def required_in_commit_timestamp(table: str, version: int, info: CommitInfo | None) -> int:
    """The ``inCommitTimestamp`` of commit ``version`` of a table with in-commit timestamps
    enabled there (``info``: the commit's commitInfo, None when it has none), else the error
    delta-spark raises for that commit."""
    feature = "inCommitTimestamp"
    if info is None:
        raise MissingCommitInfoError(
            f"This table has the feature {feature} enabled which requires the presence of the CommitInfo "
            f"action in every commit. However, the CommitInfo action is missing from commit version "
            f"{version}. The log is damaged: restore that commit file from a backup, then run again",
            table=table, params={"featureName": feature, "version": str(version)})
    if info.inCommitTimestamp is None:
        raise MissingCommitTimestampError(
            f"This table has the feature {feature} enabled which requires the presence of inCommitTimestamp "
            f"in the CommitInfo action. However, this field has not been set in commit version {version}. "
            f"The log is damaged: restore that commit file from a backup, then run again",
            table=table, params={"featureName": feature, "version": str(version)})
    return int(info.inCommitTimestamp)
