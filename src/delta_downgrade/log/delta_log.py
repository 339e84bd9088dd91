"""A table's log as a whole: snapshots at any retained version, the protocol history and the
checkpoint inventory — the two views checkpoint protection reasons about."""

from __future__ import annotations

import logging
from enum import Enum
from typing import Any, Mapping, NoReturn, Sequence

from msgspec import Struct
from delta_downgrade.protocol.actions import Metadata, ProtocolAction
from delta_downgrade.errors import (
    CheckpointUnreadableError, CorruptLogError, DeltaDowngradeError, UnsupportedFeaturesError,
    VersionNotFoundError, VersionsNotContiguousError,
)
from delta_downgrade.log.format.file_names import commit_path, parse_log_file
from delta_downgrade.log.read.listing import (
    CheckpointInstance, LogListing, after_writing, extended_to_whole_log, list_from_last_checkpoint,
    list_whole_log, refreshed,
)
from delta_downgrade.log.read.segment import LogSegment
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY, Snapshot
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.support import Operation, ensure_supported
from delta_downgrade.storage import FileStatus, Storage, open_storage


_log = logging.getLogger(__name__)


class ProtocolSpan(Struct, frozen=True):
    """Versions ``start..end`` (inclusive) share this protocol and boundary property."""

    start: int
    end: int
    protocol: Protocol
    boundary_version: int | None


class Refresh(Enum):
    """How much of the log :meth:`DeltaLog.refresh` looks at again (from the least to the most)."""

    #: Only what lies after the last known version: one existence check of the next commit file,
    #: and a :attr:`TAIL` listing only when it is there. For a log whose own writes since the last
    #: listing were recorded (:meth:`DeltaLog.note_written`): another writer's commit shows as the
    #: next version's file. What this does not see until a :attr:`TAIL` refresh - another writer's
    #: new checkpoint, a concurrent metadata cleanup, ``_last_checkpoint`` rewritten - never
    #: changes a version's content (PROTOCOL.md "Creation of New Log Entries"): an older
    #: checkpoint gives the same state, and a commit is found by the check above.
    NEW_COMMITS = "new-commits"
    #: The log's tail: the listing is updated from the current one (:func:`refreshed`): on local
    #: storage the directory is read for names only, new files (and checkpoints, which a writer may
    #: replace) are stat'ed, vanished files (metadata cleanup) are dropped; a known commit keeps
    #: its status - a log entry never changes (PROTOCOL.md "Creation of New Log Entries"). Where
    #: listings return statuses anyway (an object store), only the files from the last known
    #: version on are listed: files below it that another process deleted stay in the listing.
    TAIL = "tail"
    #: Every file of the directory (keeping the cached snapshots): what operations that decide
    #: from old files or delete them (metadata cleanup) and reports of the whole log need.
    WHOLE_LOG = "whole-log"
    #: A new listing from scratch (every file stat'ed: after changing modification times, as
    #: tests that age files do), and every cached snapshot dropped.
    FROM_SCRATCH = "from-scratch"


class DeltaLog:
    """Entry point for reading a table. ``listing()`` is cached until ``refresh()``.

    Snapshots are cached too (the few most recent): ``snapshot(v)`` for a ``v`` newer than a cached
    snapshot derives it from that one and the commits it missed (:class:`Snapshot` ``base``)
    instead of replaying the log again. A log entry never changes once written (PROTOCOL.md
    "Creation of New Log Entries"), so what a cached snapshot knows stays true; a cached snapshot
    is dropped when one of its commit files is gone or changed in the listing.

    The one way to the latest state after other writers committed is :meth:`refresh`, then any
    question (it looks at the log again on next use, as much as its :class:`Refresh` says)::

        log.refresh().snapshot()      # names-only listing, then the cached snapshot + new commits

    The first listing starts at the checkpoint ``_last_checkpoint`` names when that checkpoint
    is there (:func:`list_from_last_checkpoint`, PROTOCOL.md "Last Checkpoint File"): the latest
    snapshot, and any at or after that checkpoint, need nothing older. What needs the whole log
    - the earliest version, the protocol history, a snapshot before that checkpoint, the
    checkpoint inventory, the gaps reported - asks for it (:meth:`whole_listing`); the listing
    value itself never lists anything (it refuses questions about files it did not list).
    """

    #: How many snapshots are kept (newest versions win).
    CACHED_SNAPSHOTS = 3

    def __init__(self, location: str, storage: Storage | None = None, *,
                 storage_options: Mapping[str, str] | None = None) -> None:
        self.table = location
        self.storage = storage if storage is not None else open_storage(location, options=storage_options)
        self._listing: LogListing | None = None
        self._stale: LogListing | None = None  # the listing refresh() updates from
        self._tail_only = True  # whether that update may list only the log's tail (refresh())
        self._snapshots: dict[int, Snapshot] = {}
        self._checked: dict[int, LogListing] = {}  # version -> listing its snapshot was checked against
        #: The checkpoint ``checkpoint_table`` last wrote through this log
        #: (:class:`~delta_downgrade.log.checkpoint.copy_forward.WrittenCheckpoint`), so that the next one
        #: of the same content is copied instead of encoded again.
        self.written_checkpoint: Any = None
        #: A checkpoint of a version not committed yet, being encoded and held unpublished until
        #: ``checkpoint_table`` is asked for that version
        #: (:class:`~delta_downgrade.log.checkpoint.prepared.PreparedCheckpoint`).
        self.prepared_checkpoint: Any = None
        self._own_checkpoints: set[str] = set()  # checkpoint files written through this log
        # Checkpoints found damaged (their files -> why), never used again by this log; and the
        # checkpoints verified (checkpoint_integrity) already.
        self._rejected: dict[tuple[str, ...], CheckpointUnreadableError] = {}
        self._verified: set[tuple[str, ...]] = set()

    def __repr__(self) -> str:
        return f"DeltaLog({self.table!r})"

    # --- listing -------------------------------------------------------------------------------

    def listing(self, *, from_version: int | None = None) -> LogListing:
        """The log's current listing; the first one (and the first after
        ``refresh(Refresh.FROM_SCRATCH)``) may be partial, from the hinted checkpoint on (see the
        class docstring). With ``from_version``: a listing that holds every file of that version
        and later (the current one when it does, else the whole one)."""
        if from_version is not None:
            listing = self.listing()
            return listing if listing.covers(from_version) else self.whole_listing()
        if self._listing is None:
            if self._stale is not None:
                self._listing = refreshed(self._stale, self.storage, self.table, stat_known=False,
                                          tail_only=self._tail_only)
            elif self._tail_only:
                self._listing = list_from_last_checkpoint(self.storage, self.table)
            else:  # a whole-log refresh asked for (Refresh.WHOLE_LOG): the whole directory
                self._listing = list_whole_log(self.storage, self.table)
            self._stale = None
            self._tail_only = True
        return self._listing

    def whole_listing(self) -> LogListing:
        """The current listing with every file of the log (a partial one is extended to the
        whole log, and is the current listing from then on): what questions about old versions,
        the oldest files or the whole history need."""
        listing = self.listing()
        if not listing.is_partial:
            return listing
        whole = extended_to_whole_log(listing, self.storage, self.table)
        self._replace_listing(listing, whole)
        return whole

    def _replace_listing(self, old: LogListing, new: LogListing) -> None:
        """Make ``new`` - ``old`` with files added - the current listing: what the cached
        snapshots were checked against in ``old`` holds in ``new``."""
        self._listing = new
        for version, checked in self._checked.items():
            if checked is old:
                self._checked[version] = new

    def refresh(self, scope: Refresh = Refresh.TAIL) -> "DeltaLog":
        """Look at the log again on next use, as much of it as ``scope`` says (:class:`Refresh`:
        by default the log's tail); returns this log, so that ``log.refresh().snapshot()`` is the
        latest snapshot."""
        if scope is Refresh.NEW_COMMITS:
            listing = self._listing
            if listing is None:
                return self
            latest = listing.latest_commit_version
            if latest is not None and not self.storage.exists(commit_path(latest + 1)):
                return self
            scope = Refresh.TAIL
        # a whole-log listing asked for and not made yet stays asked for
        self._tail_only = scope is not Refresh.WHOLE_LOG and (self._tail_only or self._listing is not None)
        if scope is Refresh.FROM_SCRATCH:
            self._stale = None
            self._snapshots.clear()
            self._checked.clear()
        elif self._listing is not None:
            self._stale = self._listing
        self._listing = None
        return self

    def note_written(self, paths: Sequence[str]) -> None:
        """Record files this process has just written in ``_delta_log`` (a commit, checkpoint
        files) in the current listing (:func:`after_writing`), so that
        ``refresh(Refresh.NEW_COMMITS)`` need not list the directory."""
        listing = self._listing
        if listing is None:
            return
        latest = listing.latest_commit_version
        expected = 0 if latest is None else latest + 1
        for path in paths:
            found = parse_log_file(path.rsplit("/", 1)[-1])
            if found is not None and found.kind == "commit" and found.version != expected:
                # other commits came first (a lost race): those only a listing finds
                self.refresh()
                return
        statuses = [self.storage.status(p) for p in paths if p.count("/") == 1]
        self._own_checkpoints.update(s.path for s in statuses if ".checkpoint." in s.path)
        if statuses:
            # only files were added: what the snapshots were checked against still holds
            self._replace_listing(listing, after_writing(listing, self.storage, self.table, statuses))

    def latest_version(self) -> int:
        listing = self.listing()
        latest = listing.latest_commit_version
        newest_checkpoint = listing.latest_checkpoint_version
        if newest_checkpoint is not None and (latest is None or newest_checkpoint > latest):
            return newest_checkpoint
        assert latest is not None  # the listing's builders refuse a log without commits and checkpoints
        return latest

    def _starting_points(self) -> list[int]:
        """Versions a replay can start from: 0 (if its commit exists) and every complete checkpoint."""
        listing = self.whole_listing()
        points = set(listing.checkpoint_versions)
        if 0 in listing.commits:
            points.add(-1)  # "before version 0": replay from commit 0
        return sorted(points)

    def earliest_version(self) -> int:
        """The oldest version that can still be reconstructed (the whole log decides)."""
        listing = self.whole_listing()
        latest = self.latest_version()
        # A replay from point p needs commits p+1 .. latest: p must be at or after the start of
        # the run of consecutive commits that ends at latest.
        first_needed = listing.contiguous_start(latest)
        for point in self._starting_points():
            if point + 1 >= first_needed:
                return max(point, 0)
        self._raise_gap(latest)

    def _raise_gap(self, version: int) -> NoReturn:
        """Report the gaps below ``version`` from the versions present (bounded by the number of
        files, whatever the versions): the first missing versions, and the commit file after
        each gap - a stray file with a far too large version shows up there by name."""
        listing = self.whole_listing()
        gaps = listing.missing_ranges(version)
        missing: list[int] = []
        for first, last, _ in gaps:
            missing += range(first, min(last, first + 10 - len(missing) - 1) + 1)
            if len(missing) >= 10:
                break
        described = []
        for first, last, after in gaps[:3]:
            span = f"{first}" if first == last else f"{first}..{last} ({last - first + 1} versions)"
            described.append(f"{span} before {after.path}" if after is not None else span)
        more = "" if len(gaps) <= 3 else f" and {len(gaps) - 3} more gap(s)"
        stray = [after.path for first, last, after in gaps if after is not None and last - first >= 1000]
        hint = (f"; a file like {stray[0]} far after the others is often stray: if it does not belong "
                f"to the table, move it out of _delta_log" if stray else "")
        raise VersionsNotContiguousError(
            f"the log has a gap: commit version(s) {', '.join(described)}{more} are missing before "
            f"version {version}, and no checkpoint covers them; the table cannot be reconstructed. "
            f"Restore the missing commit files from a backup{hint}", table=self.table,
            params={"missingVersions": missing[:10],
                    "gaps": [[first, last] for first, last, _ in gaps[:10]],
                    "filesAfterGaps": [after.path for _, _, after in gaps[:10] if after is not None]})

    def segment(self, version: int | None = None) -> LogSegment:
        listing = self.listing()
        latest = self.latest_version()
        if version is None:
            version = latest
        if version > latest or version < 0:
            raise VersionNotFoundError(
                f"version {version} does not exist: the latest version is {latest}", table=self.table)
        if listing.listed_from is not None and version < listing.listed_from:
            listing = self.whole_listing()  # a version before the hinted checkpoint: older files decide
        # On a partial listing, the newest listed checkpoint at or before version that the listed
        # commits follow without a gap serves (an older one would only replay more commits);
        # when none does, the whole listing decides, and reports the gap.
        found = self._segment_from(listing, version,
                                   self._usable(listing.complete_checkpoints(at_most=version, listed_only=True)))
        if found is None and listing.listed_from is not None:
            listing = self.whole_listing()
            found = self._segment_from(listing, version, self._usable(listing.complete_checkpoints(at_most=version)))
        if found is not None:
            return found
        earliest = None
        try:
            earliest = self.earliest_version()
        except VersionsNotContiguousError:
            pass
        if earliest is not None and version < earliest:
            raise VersionNotFoundError(
                f"version {version} is no longer retained: history before version {earliest} was "
                f"cleaned up", table=self.table, params={"earliestVersion": earliest})
        self._raise_gap(version)

    def _usable(self, checkpoints: list[CheckpointInstance]) -> list[CheckpointInstance]:
        """``checkpoints`` less those this log found damaged."""
        if not self._rejected:
            return checkpoints
        return [c for c in checkpoints if c.paths not in self._rejected]

    @staticmethod
    def _segment_from(listing: LogListing, version: int,
                      checkpoints: list[CheckpointInstance]) -> LogSegment | None:
        """The segment of ``version`` from the first of ``checkpoints`` (newest first) whose
        following commits are all there, else from commit 0 if all commits are; None if neither.
        On a partial listing, None instead of the commit-0 segment (which needs the whole log)."""
        for checkpoint in checkpoints:
            if listing.has_commits(checkpoint.version + 1, version):
                return LogSegment(version, checkpoint,
                                  listing.commits_between(checkpoint.version + 1, version))
        if listing.listed_from is None and listing.has_commits(0, version):
            return LogSegment(version, None, listing.commits_between(0, version))
        return None

    def snapshot(self, version: int | None = None, *, check_read: bool = True) -> Snapshot:
        """The table at ``version`` (latest by default).

        The protocol is validated; with ``check_read`` the package must also know every reader
        feature (unknown ones may change what the log means, so guessing would be wrong).
        Checkpoints that cannot be read are skipped for an older one, as Spark does.
        """
        while True:
            segment = self.segment(version)
            snap = self._cached_snapshot(segment) or Snapshot(self.storage, self.table, segment)
            try:
                _ = snap.protocol_action  # reads and checks the protocol and metadata
                self._verify_checkpoint(segment)
            except CheckpointUnreadableError as exc:
                self._reject(segment, exc)
                continue
            break
        check_protocol(snap.protocol, self.table, snap.version, check_read=check_read)
        self._remember(snap)
        return snap

    def validated_snapshot(self, version: int | None = None, *, check_read: bool = True,
                           replay: str | None = "arrow") -> Snapshot:
        """:meth:`snapshot`, with every action a run on it will replay read and checked first:
        every commit of its segment parsed line by line (:meth:`Snapshot.validate_commits`), and
        with ``replay`` the whole state replayed (``"arrow"``: :meth:`Snapshot.arrow_state`,
        what a checkpoint is written from; ``"python"``: :meth:`Snapshot.state`; ``"auto"``: the
        Python one for a segment small enough, as inspect chooses). A commit that
        cannot be read raises (exit 2); a checkpoint whose rows cannot be read is set aside for
        an older checkpoint and the commits after it, as for an unreadable one. What a writing
        operation calls before its first write, so that it never writes on top of a log it then
        fails to read."""
        while True:
            snap = self.snapshot(version, check_read=check_read)
            snap.validate_commits()
            try:
                if replay == "auto":
                    from delta_downgrade.log.replay.choice import python_replay_fits

                    replay = "python" if python_replay_fits(snap.segment) else "arrow"
                if replay == "arrow":
                    snap.arrow_state()
                elif replay == "python":
                    snap.state()
            except CorruptLogError as exc:
                # the commits parsed: what failed is (almost always) the checkpoint; without one
                # the error stands
                if snap.segment.checkpoint is None:
                    raise
                self._reject(snap.segment, exc if isinstance(exc, CheckpointUnreadableError) else
                             CheckpointUnreadableError(exc.message, table=self.table))
                continue
            return snap

    def checkpoint_problems(self) -> list[str]:
        """What readers that do not fall back (delta-rs, delta-kernel) fail on in this log, that
        this log read around: the checkpoints it set aside as damaged, and a ``_last_checkpoint``
        naming a version without a complete, sound checkpoint. Empty for a sound log."""
        out = [exc.message for exc in self._rejected.values()]
        hint = self.listing().last_checkpoint
        if hint is not None:
            version = hint["version"]
            there = self.listing(from_version=version).checkpoints_from(version)
            rejected_there = any(c.version == version and c.paths in self._rejected for c in there)
            if not rejected_there and not any(c.version == version and c.complete and c.paths not in self._rejected
                                              for c in there):
                out.append(f"_last_checkpoint names version {version}, which has no complete checkpoint")
        return out

    def wrote_checkpoint(self, checkpoint: CheckpointInstance) -> bool:
        """Whether every file of ``checkpoint`` was written through this log: published whole
        (a rename of a finished file), with the rows the writer chose, so that reading it back
        tells nothing new."""
        return set(checkpoint.paths) <= self._own_checkpoints

    def _verify_checkpoint(self, segment: LogSegment) -> None:
        """:func:`~delta_downgrade.log.read.checkpoint_integrity.verify_checkpoint` for the segment's
        checkpoint, once per log (not for checkpoints this log wrote itself)."""
        checkpoint = segment.checkpoint
        if checkpoint is None or checkpoint.paths in self._verified or self.wrote_checkpoint(checkpoint):
            return
        from delta_downgrade.log.read.checkpoint_integrity import verify_checkpoint  # pyarrow: only when needed

        listing = self.listing()
        verify_checkpoint(self.storage, checkpoint, listing.last_checkpoint, hinted=listing.is_hinted(checkpoint),
                          checksum=self.crc(checkpoint.version))
        self._verified.add(checkpoint.paths)

    def _reject(self, segment: LogSegment, exc: CheckpointUnreadableError) -> None:
        """Set the segment's damaged checkpoint aside (readers may fall back to an older one, as
        Spark does), or raise ``exc`` when there is none or nothing older can rebuild the version."""
        checkpoint = segment.checkpoint
        if checkpoint is None:
            raise exc
        self._rejected[checkpoint.paths] = exc
        for v, snap in list(self._snapshots.items()):
            if snap.segment.checkpoint is not None and snap.segment.checkpoint.paths in self._rejected:
                del self._snapshots[v]
                self._checked.pop(v, None)
        try:
            self.segment(segment.version)
        except (VersionsNotContiguousError, VersionNotFoundError):
            raise exc.amended(
                f"{exc.message}. No older checkpoint with every commit after it is left to rebuild "
                f"version {segment.version} from: restore the damaged file from a backup (nothing "
                f"was written)", table=self.table) from exc
        _log.warning("%s: %s; reading version %d from an older checkpoint and the commits after it "
                     "instead", self.table, exc.message, segment.version)

    # --- the snapshot cache ----------------------------------------------------------------------

    def _still_listed(self, snap: Snapshot, listing: LogListing) -> bool:
        """Whether the files ``snap`` was built from are unchanged where still listed (cleanup may
        have deleted some: what they said stays true). Checked once per listing; ``listing``
        covers them (:meth:`listing` ``from_version``)."""
        if self._checked.get(snap.version) is listing:
            return True
        for status in snap.segment.commits:
            current = listing.commit_status(commit_version(status))
            if current is not None and current != status:
                return False
        self._checked[snap.version] = listing
        return True

    def _cached_snapshot(self, segment: LogSegment) -> Snapshot | None:
        """``segment``'s snapshot from the cache: the cached one itself, or one derived from the
        newest cached snapshot at or before it and the commits after that one."""
        if not self._snapshots:
            return None
        version = segment.version
        for base_version in sorted(self._snapshots, reverse=True):
            if base_version > version:
                continue
            base = self._snapshots[base_version]
            # the base's commits and those after it, from the current listing when it holds them
            commits = base.segment.commits
            listing = self.listing(from_version=commit_version(commits[0]) if commits else base_version + 1)
            if not self._still_listed(base, listing):
                del self._snapshots[base_version]
                self._checked.pop(base_version, None)
                continue
            if base.segment == segment:
                return base
            if not listing.has_commits(base_version + 1, version):
                return None  # commits between them are missing: no derivation
            delta = listing.commits_between(base_version + 1, version)
            own = segment.checkpoint is not None and self.wrote_checkpoint(segment.checkpoint)
            return Snapshot(self.storage, self.table, segment, base=base, base_commits=delta,
                            checkpoint_written_here=own)
        return None

    def _remember(self, snap: Snapshot) -> None:
        if self._snapshots.get(snap.version) is not snap:
            self._checked.pop(snap.version, None)
        self._snapshots[snap.version] = snap
        while len(self._snapshots) > self.CACHED_SNAPSHOTS:
            oldest = min(self._snapshots)
            del self._snapshots[oldest]
            self._checked.pop(oldest, None)

    # --- history ---------------------------------------------------------------------------------

    def checkpoint_inventory(self) -> list[CheckpointInstance]:
        """Every checkpoint of the log, complete or not, by version (the whole listing)."""
        return list(self.whole_listing().checkpoints)

    def protocol_history(self) -> list[ProtocolSpan]:
        """The protocol (and boundary property) of every retained version, as spans.

        After a fast DROP FEATURE protocols are no longer monotonic in version: the spans are what
        the cleanup rules (b) and (c) of Checkpoint Protection check versions against.
        """
        start = self.earliest_version()
        latest = self.latest_version()
        base = self.segment(start)
        first = Snapshot(self.storage, self.table, base)
        protocol = first.protocol
        boundary = first.boundary_version
        spans: list[ProtocolSpan] = []
        span_start = start
        from delta_downgrade.log.read.protocol_history import projected_commit_actions

        listing = self.whole_listing()
        # The commits after start are contiguous up to latest (earliest_version checked that).
        # Each is read once and checked in order as read_commit_actions checks it (it refuses a
        # commit with two protocol or two metaData actions); only those that hold one of the two
        # actions come out.
        commits = listing.commits_between(start + 1, latest)
        for status, actions in projected_commit_actions(self.storage, commits):
            new_protocol, new_boundary = protocol, boundary
            for action in actions:
                if isinstance(action, ProtocolAction):
                    new_protocol = action.protocol
                elif isinstance(action, Metadata):
                    value = action.configuration.get(BOUNDARY_PROPERTY)
                    new_boundary = int(value) if value not in (None, "") else None
            if new_protocol != protocol or new_boundary != boundary:
                version = commit_version(status)
                spans.append(ProtocolSpan(span_start, version - 1, protocol, boundary))
                protocol, boundary, span_start = new_protocol, new_boundary, version
        spans.append(ProtocolSpan(span_start, latest, protocol, boundary))
        return spans

    def crc(self, version: int) -> dict[str, Any] | None:
        """The ``.crc`` checksum file of a version, when present and readable."""
        import json

        status = self.listing(from_version=version).crc_status(version)
        if status is None:
            return None
        try:
            data = json.loads(self.storage.read_bytes(status.path))
        except (ValueError, OSError, RecursionError):
            return None
        return data if isinstance(data, dict) else None

    def sidecars_of(self, checkpoint: CheckpointInstance) -> list[str]:
        """The sidecar files a checkpoint references (table-root relative). A UUID-named
        checkpoint and a classic one may follow the V2 spec and have sidecars; a multi-part
        checkpoint never does (PROTOCOL.md "Allowed combinations for checkpoint spec <->
        checkpoint file naming"). Reads only the ``sidecar`` actions (a projected read)."""
        if checkpoint.kind == "multipart":
            return []
        from delta_downgrade.log.read.checkpoint_reader import CheckpointReader  # pyarrow: only when needed

        return CheckpointReader(self.storage, checkpoint).sidecar_paths()

    def checkpoint_files(self, checkpoint: CheckpointInstance) -> list[str]:
        """Every file a reader of ``checkpoint`` needs: its own files, then its sidecars."""
        return [*checkpoint.paths, *self.sidecars_of(checkpoint)]


def commit_version(status: FileStatus) -> int:
    """The version of a commit file, from its name."""
    return int(status.path.rsplit("/", 1)[-1].split(".", 1)[0])


def check_protocol(protocol: Protocol, table: str, version: int, *, check_read: bool) -> None:
    """Refuse protocols that are invalid; with ``check_read``, also those this package cannot
    read the log of (the READ gate: reader features it does not know)."""
    problems = protocol.problems()
    if problems:
        raise_invalid(protocol, table, version, problems)
    if check_read:
        try:
            ensure_supported(protocol, Operation.READ_LOG, version=version)
        except UnsupportedFeaturesError as exc:  # a DeltaLog names its table in what it raises
            raise exc.amended(exc.message, table=table) from None


def raise_invalid(protocol: Protocol, table: str, version: int, problems: list[str]) -> None:
    from delta_downgrade.errors import InvalidProtocolError

    raise InvalidProtocolError(
        f"version {version} has an invalid or unsupported protocol {protocol}: "
        + "; ".join(problems) + ". No Delta client can read it safely; check which writer produced it",
        table=table)


__all__ = ["DeltaLog", "ProtocolSpan", "Refresh", "check_protocol", "DeltaDowngradeError"]
