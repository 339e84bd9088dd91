"""What ``_delta_log`` holds: commits, checkpoints, checksums, and the files we do not know.

A listing is a value (:class:`LogListing`, frozen): taken at one moment, never changed. Each way
of getting one is a function of this module that returns a new value: the whole log
(:func:`list_whole_log`), the log from its last checkpoint (:func:`list_from_last_checkpoint`),
the log now from an earlier listing (:func:`refreshed`), the listing once this process wrote some
files (:func:`after_writing`), a partial listing extended to the whole log
(:func:`extended_to_whole_log`), and the listing of given files (:func:`listing_of`).

The listing is the ground truth; ``_last_checkpoint`` is only a hint. It is used to prefer one of
several checkpoints at the same version, and ignored when it is missing, empty, not JSON, or
points to a checkpoint that is not there (PROTOCOL.md, "Last Checkpoint File").

Version ranges are never enumerated: a stray ``00000000000100000000.json`` makes the latest
version 10^8, so every question about contiguity is answered from the sorted versions that are
present (:meth:`LogListing.contiguous_start`, :meth:`LogListing.missing_ranges`), in time and
memory bounded by the number of files.

:func:`refreshed` builds the new listing from the previous one instead of from scratch: only the
names not seen before are parsed, the commits and checksums of the previous listing are kept and
only the differences applied (files gone after a metadata cleanup are dropped, a changed size or
modification time is taken). Where a listing returns statuses anyway (an object store), such an
update lists only the tail of the log, from the last known commit's version on
(:func:`_scan_tail`). With ``stat_known=False`` (what ``DeltaLog.refresh()`` passes) a
local directory is read for names only: only new names are stat'ed - commits never change once
written (PROTOCOL.md "Creation of New Log Entries") - and, again each time, the files that may
change in place: checkpoints (a writer may replace one), unknown files and empty files (a write
in progress?).

The first listing of a long log (:func:`list_from_last_checkpoint`, what ``DeltaLog.listing()``
asks for) starts at the checkpoint ``_last_checkpoint`` names: PROTOCOL.md "Last Checkpoint File"
exists so that a reader need not list the whole directory, and delta-spark and delta-kernel list
from the hinted checkpoint version too (``listFrom(checkpointVersion)``). Such a listing is
*partial* (:attr:`LogListing.listed_from`): it holds the files whose names sort at or after that
version's 20 digits. It is used only when the hinted checkpoint is there and complete; a missing,
unreadable or stale hint (its checkpoint deleted, a part missing) lists the whole log as before.
Every accessor whose answer could differ on a partial listing (the commits, checkpoints,
checksums, unknown files as collections, gaps, contiguity, anything before the listed version)
raises :class:`PartialListingError` there: the caller asks for the whole listing
(:func:`extended_to_whole_log`; ``DeltaLog.whole_listing()``). The accessors that are exact on the
tail answer from it: the latest commit and checkpoint, the commits, checksums and checkpoints
from the listed version on, whether a range of those commits is contiguous
(:meth:`LogListing.has_commits`), and the checkpoints among the listed files
(``complete_checkpoints(listed_only=True)``). No accessor returns a silently partial answer.
"""

from __future__ import annotations

import bisect
import functools
import gc
from functools import cached_property
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, NoReturn, ParamSpec, TypeVar

from msgspec import Struct
from delta_downgrade.errors import (CorruptLogError, NotADeltaTableError, PartialListingError,
                                    TableNotFoundError, VersionsNotContiguousError)
from delta_downgrade.log.format.file_names import LOG_DIR, MAX_VERSION, LogFile, parse_log_file
from delta_downgrade.log.format.last_checkpoint import read_last_checkpoint
from delta_downgrade.storage import FileStatus, Storage


class CheckpointInstance(Struct, frozen=True):
    """One checkpoint of the log: a single file, all parts of a multi-part one, or a v2 manifest."""

    version: int
    kind: str                      # "classic" | "multipart" | "v2"
    files: tuple[FileStatus, ...]  # every part, in part order
    num_parts: int | None = None

    @property
    def complete(self) -> bool:
        """A multi-part checkpoint counts only when every part is present."""
        if self.kind != "multipart":
            return True
        return self.num_parts is not None and len(self.files) == self.num_parts

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files)

    @property
    def size_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def modification_time_ms(self) -> int:
        return max(f.modification_time_ms for f in self.files)


#: One listed file: its parsed name (None for a name that is not a log file's) and its status.
Entry = tuple[LogFile | None, FileStatus]


class LogListing(Struct, frozen=True, dict=True):
    """A listing of ``_delta_log`` taken at one moment: a value, never changed once built.

    Built by the named functions of this module, never by hand: :func:`list_whole_log`,
    :func:`list_from_last_checkpoint`, :func:`refreshed`, :func:`after_writing`,
    :func:`extended_to_whole_log`, :func:`listing_of`. A *partial* listing (:attr:`listed_from`
    set) holds every file whose name sorts at or after that version's 20 digits, among them a
    complete checkpoint and at least one commit (the builders see to it), so that the latest
    commit and checkpoint are always in it. Questions about older files raise
    :class:`PartialListingError` there: no accessor returns a silently partial answer.
    (``dict=True``: the instance dict holds what the cached properties compute.)
    """

    #: None when the whole directory was listed; a version ``C`` when only the files whose names
    #: sort at or after ``C``'s 20 digits were (a listing from the checkpoint ``_last_checkpoint``
    #: names, which is there and complete).
    listed_from: int | None
    #: ``_last_checkpoint`` as read with this listing (None when missing or unusable).
    last_checkpoint: dict[str, Any] | None
    # The files by kind (read them through the accessors below: read-only views, and the whole
    # log only on a whole listing).
    _commits: dict[int, FileStatus]
    _crcs: dict[int, FileStatus]
    _checkpoints: tuple[CheckpointInstance, ...]  # by version, complete or not
    _compactions: tuple[tuple[LogFile, FileStatus], ...]
    _unknown: tuple[FileStatus, ...]
    # name -> entry of every file listed, for the next incremental listing; of those, the entries
    # that are not commits or checksums, and the names of empty commits and checksums
    _entries: dict[str, Entry]
    _others: dict[str, Entry]
    _empty: frozenset[str]
    # the previous listing's version runs extended by the commits appended since (a seed for
    # _version_runs, which would compute the same from _commits)
    _runs_seed: tuple[tuple[int, ...], tuple[int, ...]] | None = None

    def __repr__(self) -> str:
        return f"LogListing(listed_from={self.listed_from!r}, last_checkpoint={self.last_checkpoint!r})"

    def __eq__(self, other: object) -> bool:
        """Two listings are equal when they list the same files; what is kept for the next
        incremental listing (the entries by name, the runs seed) is bookkeeping."""
        if not isinstance(other, LogListing):
            return NotImplemented
        return self._compared_fields() == other._compared_fields()

    __hash__ = None  # type: ignore[assignment]  # it holds dicts

    def _compared_fields(self) -> tuple[Any, ...]:
        return (self.listed_from, self.last_checkpoint, self._commits, self._crcs, self._checkpoints,
                self._compactions, self._unknown)

    # --- the files by kind: the whole log (PartialListingError on a partial listing) ------------

    def _whole(self, what: str) -> None:
        if self.listed_from is not None:
            raise PartialListingError(
                f"{what} of the whole log asked of a listing from version {self.listed_from} on: "
                f"extend it to the whole log first (extended_to_whole_log)")

    @property
    def commits(self) -> Mapping[int, FileStatus]:
        self._whole("the commits")
        return MappingProxyType(self._commits)

    @property
    def checkpoints(self) -> tuple[CheckpointInstance, ...]:
        self._whole("the checkpoints")
        return self._checkpoints

    @property
    def crcs(self) -> Mapping[int, FileStatus]:
        self._whole("the checksum files")
        return MappingProxyType(self._crcs)

    @property
    def compactions(self) -> tuple[tuple[LogFile, FileStatus], ...]:
        self._whole("the log compaction files")
        return self._compactions

    @property
    def unknown(self) -> tuple[FileStatus, ...]:
        self._whole("the unknown files")
        return self._unknown

    # --- partial listings ---------------------------------------------------------------------------

    @property
    def is_partial(self) -> bool:
        """Whether only the tail from :attr:`listed_from` on was listed."""
        return self.listed_from is not None

    def covers(self, version: int) -> bool:
        """Whether every file of ``version`` and later is in this listing (always, when whole)."""
        return self.listed_from is None or version >= self.listed_from

    def _covered(self, version: int, what: str) -> None:
        if not self.covers(version):
            raise PartialListingError(
                f"{what} from version {version} asked of a listing from version {self.listed_from} "
                f"on: extend it to the whole log first (extended_to_whole_log)")

    # --- exact on a partial listing too -----------------------------------------------------------

    @property
    def latest_commit_version(self) -> int | None:
        versions = self._version_runs[0]
        return versions[-1] if versions else None

    @property
    def latest_checkpoint_version(self) -> int | None:
        """The newest complete checkpoint's version (None without one)."""
        found = [c.version for c in self._checkpoints if c.complete]
        return max(found) if found else None

    def commit_status(self, version: int) -> FileStatus | None:
        """The commit file of ``version``, None when there is none."""
        self._covered(version, "a commit")
        return self._commits.get(version)

    def crc_status(self, version: int) -> FileStatus | None:
        """The ``.crc`` file of ``version``, None when there is none."""
        self._covered(version, "a checksum file")
        return self._crcs.get(version)

    def has_commits(self, first: int, last: int) -> bool:
        """Whether the commits ``first .. last`` all exist (True for an empty range)."""
        if first > last:
            return True
        self._covered(first, "commits")
        if last not in self._commits:
            return False
        versions, starts = self._version_runs
        return starts[bisect.bisect_left(versions, last)] <= first

    # --- contiguity, from the versions present (never by enumerating a range) -------------------

    @cached_property
    def _version_runs(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The commit versions, ascending, and per index where its run of consecutive versions
        starts (a pure cache of :attr:`_commits`)."""
        if self._runs_seed is not None:
            return self._runs_seed
        versions = sorted(self._commits)
        starts: list[int] = []
        previous = None
        for v in versions:
            starts.append(starts[-1] if previous is not None and v == previous + 1 else v)
            previous = v
        return tuple(versions), tuple(starts)

    def commit_versions(self) -> tuple[int, ...]:
        """The versions of the commit files, ascending."""
        self._whole("the commit versions")
        return self._version_runs[0]

    def contiguous_start(self, version: int) -> int:
        """The smallest ``s`` such that the commits ``s .. version`` all exist; ``version + 1``
        when commit ``version`` itself does not. (On a partial listing: use :meth:`has_commits`
        where the question is whether a range from the listed versions is contiguous.)"""
        self._whole("where a run of commits starts")
        if version not in self._commits:
            return version + 1
        versions, starts = self._version_runs
        return starts[bisect.bisect_left(versions, version)]

    def commits_between(self, first: int, last: int) -> tuple[FileStatus, ...]:
        """The commits ``first .. last`` that exist, ascending."""
        self._covered(first, "commits")
        versions = self._version_runs[0]
        lo, hi = bisect.bisect_left(versions, first), bisect.bisect_right(versions, last)
        return tuple(self._commits[v] for v in versions[lo:hi])

    def missing_ranges(self, up_to: int, limit: int = 10) -> list[tuple[int, int, FileStatus | None]]:
        """The first ``limit`` gaps among the commits ``<= up_to``, from the oldest commit present
        (or 0): ``(first missing, last missing, the commit file just after the gap or None)``."""
        versions = self.commit_versions()  # the whole log: a gap may lie before listed_from
        hi = bisect.bisect_right(versions, up_to)
        out: list[tuple[int, int, FileStatus | None]] = []
        expected = versions[0] if hi else 0
        for v in versions[:hi]:
            if v > expected:
                out.append((expected, v - 1, self._commits[v]))
                if len(out) == limit:
                    return out
            expected = v + 1
        if expected <= up_to:
            out.append((expected, up_to, None))
        return out[:limit]

    def complete_checkpoints(self, at_most: int | None = None, *,
                             listed_only: bool = False) -> list[CheckpointInstance]:
        """Complete checkpoints, newest first, one or more per version (hint-preferred first).

        ``listed_only``: those among the listed files, also on a partial listing (a caller that
        takes the newest one that serves, and asks the whole listing when none does)."""
        pool = self._checkpoints if listed_only else self.checkpoints
        found = [c for c in pool if c.complete and (at_most is None or c.version <= at_most)]
        kind_rank = {"classic": 0, "v2": 1, "multipart": 2}

        def rank(c: CheckpointInstance) -> tuple[int, int, int]:
            # Newest version first; within a version, the one _last_checkpoint names, then by kind.
            return (-c.version, 0 if self.is_hinted(c) else 1, kind_rank.get(c.kind, 9))

        return sorted(found, key=rank)

    def is_hinted(self, c: CheckpointInstance) -> bool:
        """Whether ``_last_checkpoint`` names ``c``: its version, and its kind (the V2 manifest it
        names, the number of parts it says)."""
        hint = self.last_checkpoint or {}
        if hint.get("version") != c.version:
            return False
        parts = hint.get("parts")
        v2 = hint.get("v2Checkpoint")
        if v2 and isinstance(v2, dict) and v2.get("path"):
            return c.kind == "v2" and any(f.path.endswith(str(v2["path"])) for f in c.files)
        if parts:
            return c.kind == "multipart" and c.num_parts == parts
        return c.kind != "multipart"

    @property
    def checkpoint_versions(self) -> list[int]:
        return sorted({c.version for c in self.checkpoints if c.complete})

    @property
    def listed_commits(self) -> Mapping[int, FileStatus]:
        """The commits listed: all of them on a whole listing, those from :attr:`listed_from`
        on for a partial one."""
        return MappingProxyType(self._commits)

    @property
    def listed_unknown(self) -> tuple[FileStatus, ...]:
        """The unknown files listed (those from :attr:`listed_from` on for a partial listing)."""
        return self._unknown

    def checkpoints_from(self, version: int) -> list[CheckpointInstance]:
        """The checkpoints (complete or not) of ``version`` and later, by version."""
        self._covered(version, "checkpoints")
        return [c for c in self._checkpoints if c.version >= version]

    def newest_checkpoints(self, at_most: int, count: int) -> list[CheckpointInstance] | None:
        """The newest ``count`` complete checkpoints at or below ``at_most``, one per version
        (the first listed of a version), oldest first. On a partial listing, None when its tail
        holds fewer than ``count`` such versions (older ones may count: ask the whole listing);
        when it holds that many, every checkpoint it does not list is older than all of them."""
        if count <= 0:
            return []
        by_version: dict[int, CheckpointInstance] = {}
        for c in self._checkpoints:
            if c.complete and c.version <= at_most:
                by_version.setdefault(c.version, c)
        if len(by_version) < count and self.listed_from is not None:
            return None
        return [by_version[v] for v in sorted(by_version)[-count:]]


# --- the named builders -------------------------------------------------------------------------

_P = ParamSpec("_P")
_R = TypeVar("_R")


#: A build that leaves more new objects than this for the collector to track moves them to the
#: oldest generation at once (:func:`_acyclic_bulk`): a listing of some 2,500 files and more.
PROMOTED_AFTER_OBJECTS = 10_000


def _acyclic_bulk(build: Callable[_P, _R]) -> Callable[_P, _R]:
    """``build`` with the cyclic garbage collector paused while it runs (and resumed after, when
    it was running). A listing of a long log makes several objects per file - a status, a parsed
    name, its tuple and dictionary entries - none of them in a reference cycle. Each 700 of them
    set off a collection, and every collection of the oldest generation walks every object the
    process holds: 15 % of the instructions of listing a 100,000-commit log, for nothing to
    collect. (Paused for the whole process: another thread's cycles wait until it resumes.)

    Those objects live as long as the listing, and were made while no collection ran: all of them
    are still in the youngest generation. The first collections after the build would walk each
    one twice - into the middle generation, then into the oldest - for nothing to collect: four
    fifths of the collector's time in a 100,000-commit ``inspect``. After a build that leaves
    more than :data:`PROMOTED_AFTER_OBJECTS` of them, every young object is moved to the oldest
    generation at once, without a walk: ``gc.freeze`` then ``gc.unfreeze``, whose documented
    effect together is that move (two list splices). A cycle that was young then is still
    collected, by the next collection of the oldest generation; a small build (a tail, a refresh)
    moves nothing, so the young cycles of a long operation are collected as usual. Not done when
    the process keeps objects frozen itself (a server that forks after ``gc.freeze``):
    ``unfreeze`` would release them."""

    @functools.wraps(build)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not gc.isenabled():
            return build(*args, **kwargs)
        gc.disable()
        try:
            return build(*args, **kwargs)
        finally:
            if gc.get_count()[0] > PROMOTED_AFTER_OBJECTS and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()

    return paused


@_acyclic_bulk
def list_whole_log(storage: Storage, table: str | None = None) -> LogListing:
    """The listing of the whole ``_delta_log`` (every file stat'ed); a named error when there is
    no table or no log."""
    table = table or storage.root
    entries, _, _ = _scan(storage, table, None, stat_known=True)
    return _updated(storage, table, None, entries, [], listed_from=None)


@_acyclic_bulk
def list_from_last_checkpoint(storage: Storage, table: str | None = None) -> LogListing:
    """The listing from the checkpoint ``_last_checkpoint`` names on (a partial listing, see the
    module docstring) when that checkpoint is there and complete and a commit is listed with it;
    else the listing of the whole log."""
    table = table or storage.root
    found = _scan_from_hint(storage, table)
    if found is None:
        return list_whole_log(storage, table)
    entries, hint = found
    return _updated(storage, table, None, entries, [], listed_from=hint["version"], last_checkpoint=hint)


@_acyclic_bulk
def refreshed(previous: LogListing, storage: Storage, table: str | None = None, *,
              stat_known: bool = False, tail_only: bool = True) -> LogListing:
    """The listing of the log now, from ``previous`` (an earlier listing of the same log; see the
    module docstring): only the names not seen before are parsed, what changed is applied.
    ``stat_known=False`` leaves the statuses of known files alone and, with ``tail_only`` (where
    listings return statuses), lists only the log's tail. ``tail_only=False`` reads the whole
    directory: the result is whole. A refreshed partial listing stays partial unless the whole
    directory was read (or its tail lost its checkpoint or every commit: then it is extended)."""
    table = table or storage.root
    new_entries, removed, whole = _scan(storage, table, previous, stat_known, tail_only)
    listed_from = None if whole else previous.listed_from
    listing = _updated(storage, table, previous, new_entries, removed, listed_from=listed_from)
    if listing.is_partial and not _tail_holds_its_anchor(listing):
        listing = extended_to_whole_log(listing, storage, table)
    return listing


def after_writing(previous: LogListing, storage: Storage, table: str,
                  statuses: list[FileStatus]) -> LogListing:
    """The listing ``previous`` once this process has written the files ``statuses`` (a commit
    it created, the files of a checkpoint): what a listing would add for them, without reading
    the directory. ``_last_checkpoint`` is read again only after a checkpoint (a commit does not
    change it): on an object store every read is a round trip."""
    new_entries = dict(e for e in map(_entry, statuses) if e is not None)
    wrote_checkpoint = any(lf is not None and lf.kind == "checkpoint" for lf, _ in new_entries.values())
    return _updated(storage, table, previous, new_entries, [], listed_from=previous.listed_from,
                    last_checkpoint=None if wrote_checkpoint else previous.last_checkpoint)


@_acyclic_bulk
def extended_to_whole_log(listing: LogListing, storage: Storage, table: str | None = None) -> LogListing:
    """The listing of the whole log from a partial ``listing``: the directory is listed, the
    files whose names sort before :attr:`LogListing.listed_from`'s 20 digits are added, the tail
    stays as listed (so that every answer comes from one view of it). ``listing`` itself when it
    is whole."""
    if listing.listed_from is None:
        return listing
    table = table or storage.root
    anchor = f"{listing.listed_from:020d}"
    head: dict[str, Entry] = {}
    for status in _list_log_dir(storage, table):
        name = status.path.rsplit("/", 1)[-1]
        if name < anchor and name[:1] not in (".", "_"):
            head[name] = (parse_log_file(name), status)
    return _updated(storage, table, listing, head, [], listed_from=None,
                    last_checkpoint=listing.last_checkpoint)


def listing_of(statuses: Iterable[FileStatus], *, last_checkpoint: dict[str, Any] | None = None,
               table: str = "") -> LogListing:
    """The whole listing of a log that holds the files ``statuses`` (paths under
    ``_delta_log/``), with ``last_checkpoint`` as its hint: a listing without storage (what a
    plan is computed from in tests)."""
    entries = dict(e for e in map(_entry, statuses) if e is not None)
    return _built(table, None, entries, [], listed_from=None, last_checkpoint=last_checkpoint)


def _tail_holds_its_anchor(listing: LogListing) -> bool:
    """Whether a partial listing holds a complete checkpoint and a commit (then its latest
    commit and checkpoint are the log's)."""
    return bool(listing._commits) and any(c.complete for c in listing._checkpoints)


def _updated(storage: Storage, table: str, previous: LogListing | None,
             new_entries: dict[str, Entry], removed: list[str], *,
             listed_from: int | None, last_checkpoint: dict[str, Any] | None = None) -> LogListing:
    """:func:`_built`, with ``_last_checkpoint`` read when not given."""
    hint = last_checkpoint if last_checkpoint is not None else read_last_checkpoint(storage)
    return _built(table, previous, new_entries, removed, listed_from=listed_from, last_checkpoint=hint)


def _built(table: str, previous: LogListing | None, new_entries: dict[str, Entry],
           removed: list[str], *, listed_from: int | None,
           last_checkpoint: dict[str, Any] | None) -> LogListing:
    """The listing of ``previous`` with ``new_entries`` (new or changed) and without ``removed``;
    partial from ``listed_from`` on (None: whole)."""
    parts: dict[tuple[int, int], list[tuple[int, FileStatus]]] = {}
    stray: list[FileStatus] = []
    checkpoints: list[CheckpointInstance] = []
    compactions: list[tuple[LogFile, FileStatus]] = []
    unknown: list[FileStatus] = []
    empty: set[str] = set()
    appended: list[int] | None = None  # new commit versions, when only appended after the old ones
    if previous is not None and previous._entries:
        # Start from the previous listing's commits and checksums (the bulk of the log): only
        # what changed is applied, to copies; the other kinds are few and rebuilt below.
        merged = dict(previous._entries)
        commits = dict(previous._commits)
        crcs = dict(previous._crcs)
        gone = set(removed)
        empty = set(previous._empty - gone)
        if not removed:
            appended = []
        for name in removed:
            lf, _ = merged.pop(name)
            if lf is not None and lf.kind == "commit":
                commits.pop(lf.version, None)  # type: ignore[arg-type]  # a commit's name always has its version
            elif lf is not None and lf.kind == "crc":
                crcs.pop(lf.version, None)  # type: ignore[arg-type]  # a checksum's name always has its version
        merged.update(new_entries)
        others = {name: e for name, e in previous._others.items() if name not in gone}
    else:
        merged = new_entries
        commits, crcs = {}, {}
        others = {}
    for name, entry in new_entries.items():
        lf, status = entry
        kind = lf.kind if lf is not None else None
        if kind == "commit" or kind == "crc":
            if status.size == 0:
                empty.add(name)
            elif empty:
                empty.discard(name)
            version: int = lf.version  # type: ignore[union-attr,assignment]  # a commit or checksum name: parsed, with its version
            if version > MAX_VERSION:
                stray.append(status)
            elif kind == "commit":
                if appended is not None and version not in commits:
                    appended.append(version)
                commits[version] = status
            else:
                crcs[version] = status
        else:
            others[name] = entry
    for name, (lf, status) in others.items():
        if lf is None:
            unknown.append(status)
        elif lf.version is not None and lf.version > MAX_VERSION:
            stray.append(status)
        elif lf.kind == "compacted":
            compactions.append((lf, status))
        elif lf.kind == "checkpoint":
            if status.size == 0:
                # A zero-byte checkpoint is an interrupted write by a non-atomic writer; Spark
                # ignores it too.
                unknown.append(status)
            elif lf.checkpoint_kind == "multipart":
                assert lf.num_parts is not None and lf.part is not None
                parts.setdefault((lf.version, lf.num_parts), []).append((lf.part, status))  # type: ignore[arg-type]  # a checkpoint's name always has its version
            else:
                checkpoints.append(CheckpointInstance(lf.version, lf.checkpoint_kind, (status,)))  # type: ignore[arg-type]  # a checkpoint's name always has its version and kind
        else:
            unknown.append(status)
    if stray:
        # Versions are longs (PROTOCOL.md "Delta Log Entries"); no table reaches these, and
        # taking them as the latest version would make every range over versions unbounded.
        names = ", ".join(s.path for s in sorted(stray, key=lambda s: s.path)[:5])
        raise VersionsNotContiguousError(
            f"_delta_log holds {len(stray)} file(s) whose version is beyond the largest Delta version "
            f"{MAX_VERSION} (versions are longs): {names}. No table reaches that version: these are "
            f"stray files; move them out of _delta_log", table=table,
            params={"strayFiles": [s.path for s in stray[:10]]})
    for (version, num_parts), items in parts.items():
        items.sort(key=lambda t: t[0])
        checkpoints.append(CheckpointInstance(
            version, "multipart", tuple(s for _, s in items), num_parts=num_parts))
    checkpoints.sort(key=lambda c: (c.version, c.kind))
    unknown.sort(key=lambda s: s.path)
    compactions.sort(key=lambda c: c[1].path)
    if not commits and not any(c.complete for c in checkpoints):
        raise NotADeltaTableError(
            f"{table} is not a Delta table: _delta_log holds no commit and no checkpoint",
            table=table)
    seed = None
    if appended is not None and previous is not None and "_version_runs" in previous.__dict__:
        # the previous listing's runs were computed: extend them instead of sorting again
        seed = _extend_runs(previous._version_runs, sorted(appended))
    return LogListing(listed_from=listed_from, last_checkpoint=last_checkpoint, _commits=commits,
                      _crcs=crcs, _checkpoints=tuple(checkpoints), _compactions=tuple(compactions),
                      _unknown=tuple(unknown), _entries=merged, _others=others,
                      _empty=frozenset(empty), _runs_seed=seed)


def _extend_runs(runs: tuple[tuple[int, ...], tuple[int, ...]], appended: list[int]
                 ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """:attr:`LogListing._version_runs` of a log that got the commits ``appended`` (ascending),
    from the previous one without sorting again; None when they do not all come after it."""
    versions, starts = runs
    if not appended:
        return runs
    if versions and appended[0] <= versions[-1]:
        return None
    new_starts = list(starts)
    previous = versions[-1] if versions else None
    for v in appended:
        new_starts.append(new_starts[-1] if previous is not None and v == previous + 1 else v)
        previous = v
    return versions + tuple(appended), tuple(new_starts)


def _entry(status: FileStatus) -> tuple[str, tuple[LogFile | None, FileStatus]] | None:
    name = status.path.rsplit("/", 1)[-1]
    if name[:1] in (".", "_"):
        # Hidden Hadoop checksum files (.x.crc), _last_checkpoint, _commits temp files.
        return None
    return name, (parse_log_file(name), status)


def _scan(storage: Storage, table: str, previous: LogListing | None, stat_known: bool,
          tail_only: bool = True) -> tuple[dict[str, Entry], list[str], bool]:
    """The entries of ``_delta_log`` that are new or changed since ``previous`` (all of them
    without it), the names of the previous entries that are gone, and whether the whole
    directory was read (else only what ``previous`` covers). Names already known are not parsed
    again; with ``stat_known`` False (local storage) they are not even stat'ed."""
    if previous is not None and previous._entries and not stat_known:
        # (a partial listing asked to be made whole is listed whole below)
        if storage.lists_names_cheaply and (tail_only or previous.listed_from is None):
            return (*_scan_names(storage, table, previous), previous.listed_from is None)
        tail = _scan_tail(storage, table, previous) if tail_only else None
        if tail is not None:
            return (*tail, False)
    statuses = _list_log_dir(storage, table)
    if not statuses and not storage.exists(LOG_DIR):
        _no_log(storage, table, "it has no _delta_log directory")
    if previous is None or not previous._entries:
        found: dict[str, Entry] = {}
        for status in statuses:  # the first listing of a log: every name parsed, inline (hot)
            name = status.path.rsplit("/", 1)[-1]
            if name[:1] not in (".", "_"):  # hidden checksum files, _last_checkpoint, _commits
                found[name] = (parse_log_file(name), status)
        return found, [], True
    changed, seen = _compared(statuses, previous._entries)
    removed = list(previous._entries.keys() - seen)
    return changed, removed, True


def _compared(statuses: list[FileStatus], known: dict[str, Entry]
              ) -> tuple[dict[str, Entry], set[str]]:
    """The entries among ``statuses`` that are new or changed (size or modification time) against
    ``known``, and the names of the known ones listed again."""
    changed: dict[str, Entry] = {}
    seen = set()
    for status in statuses:
        name = status.path.rsplit("/", 1)[-1]
        entry = known.get(name)
        if entry is None:
            new = _entry(status)
            if new is not None:
                changed[new[0]] = new[1]
            continue
        seen.add(name)
        if entry[1] != status:
            changed[name] = (entry[0], status)
    return changed, seen


def _scan_from_hint(storage: Storage, table: str
                    ) -> tuple[dict[str, Entry], dict[str, Any]] | None:
    """The entries of ``_delta_log`` from the checkpoint ``_last_checkpoint`` names on (version
    ``C``: every name that sorts at or after ``C``'s 20 digits - its checkpoint, its commit and
    ``.crc``, everything later), and the hint; None - list the whole log - when there is no
    usable hint, or no complete checkpoint at ``C`` among them (PROTOCOL.md "Last Checkpoint
    File": the hint may be stale, the listing decides).

    One listing from the version before ``C`` (``list_dir(start_after=<C-1 as 20 digits>)``:
    S3 ``start-after``, the list offset of Azure and GCS; on a local directory only the names
    kept are stat'ed); the few files of ``C - 1`` it also returns are dropped."""
    try:
        hint = read_last_checkpoint(storage)
    except (OSError, CorruptLogError):  # e.g. the table is a file: the whole listing names the problem
        return None
    if hint is None:
        return None
    version = hint["version"]
    if version == 0 or version > MAX_VERSION:
        return None  # nothing to skip / not a version: the whole listing decides
    statuses = _list_log_dir(storage, table, f"{version - 1:020d}")
    anchor = f"{version:020d}"
    found: dict[str, Entry] = {}
    for status in statuses:
        name = status.path.rsplit("/", 1)[-1]
        if name >= anchor and name[:1] not in (".", "_"):
            found[name] = (parse_log_file(name), status)
    if not _has_complete_checkpoint(found.values(), version):
        return None
    return found, hint


def _has_complete_checkpoint(entries: Any, version: int) -> bool:
    """Whether ``entries`` hold a complete, non-empty checkpoint of ``version``: a single-file
    (classic or V2) one, or every part of a multi-part one (as :func:`_updated` decides)."""
    parts: dict[int, set[int]] = {}
    for lf, status in entries:
        if lf is None or lf.kind != "checkpoint" or lf.version != version or status.size == 0:
            continue
        if lf.checkpoint_kind != "multipart":
            return True
        parts.setdefault(lf.num_parts, set()).add(lf.part)
    return any(len(found) == num_parts for num_parts, found in parts.items())


def _scan_tail(storage: Storage, table: str, previous: LogListing
               ) -> tuple[dict[str, Entry], list[str]] | None:
    """:func:`_scan` where a listing returns statuses anyway (an object store, Hadoop): only the
    tail of the log is listed, the files of the last known commit's version and after
    (``list_dir(start_after=<its 20 digits>)``: S3 ``start-after``, the list offset of Azure and
    GCS), so that catching up on a long log costs one short listing, not the whole directory.
    Every file of that version and later sorts after the bare version number - its checkpoint
    (``.checkpoint.`` sorts before ``.json``), its ``.crc``, the commits after it.

    What this does not see until a listing of the whole directory (``refresh(Refresh.WHOLE_LOG)``,
    or an operation that lists from scratch): files below that version deleted or replaced by another writer (a
    metadata cleanup, a checkpoint rewritten at an older version). Neither changes what a version
    holds (PROTOCOL.md "Creation of New Log Entries"); the operations that decide from the whole
    directory (cleanup, vacuum, truncate) list it whole. None - list everything - when there is
    no known commit, or when the last known commit itself is gone (the log was cleaned or
    replaced under us)."""
    latest = previous.latest_commit_version
    if latest is None:
        return None
    anchor = f"{latest:020d}"
    statuses = _list_log_dir(storage, table, anchor)
    latest_name = f"{anchor}.json"
    known = previous._entries
    changed, seen = _compared(statuses, known)
    if latest_name not in seen:
        return None
    removed = [name for name in known if name > anchor and name not in seen]
    return changed, removed


def _scan_names(storage: Storage, table: str, previous: LogListing
                ) -> tuple[dict[str, Entry], list[str]]:
    """:func:`_scan` where names are cheap (:attr:`Storage.lists_names_cheaply`): names from the
    directory (set operations, no per-file work for the known ones), a stat for new names and
    again for the files that may change in place: checkpoints (a writer may replace one),
    unknown and empty files (maybe a write still in progress)."""
    prefix = f"{LOG_DIR}/"
    try:
        present = storage.list_names(LOG_DIR)
    except NotADirectoryError:
        _no_log(storage, table, "its _delta_log is a file, not a directory")
    except OSError as exc:
        _unlistable(table, exc)
    if not present and not storage.exists(LOG_DIR):
        _no_log(storage, table, "it has no _delta_log directory")
    if previous.listed_from is not None:
        # a partial listing is updated as one: only the names it covers
        anchor = f"{previous.listed_from:020d}"
        present = {n for n in present if n >= anchor}
    known = previous._entries
    removed = list(known.keys() - present)
    new = [n for n in present - known.keys() if not n.startswith((".", "_"))]
    changed: dict[str, Entry] = {}
    for name in sorted(new) + sorted((previous._others.keys() | previous._empty) & present):
        entry = known.get(name)
        lf = entry[0] if entry is not None else parse_log_file(name)
        if lf is None and storage.is_dir(prefix + name):
            continue  # a folder (list_dir lists files only); log file names are never folders
        if lf is not None:
            _refuse_unreadable(storage, table, name)
        try:
            status = storage.status(prefix + name)
        except FileNotFoundError:  # deleted since the directory was read
            if entry is not None:
                removed.append(name)
            continue
        if entry is None or entry[1] != status:
            changed[name] = (lf, status)
    return changed, removed


def _list_log_dir(storage: Storage, table: str, start_after: str | None = None) -> list[FileStatus]:
    """The files of ``_delta_log`` (after ``start_after``), with a named error for a log that
    cannot be listed (a file, a link loop, no permission). Where names are cheap (a local
    directory), every name that is a log file's but was not listed as a file - a directory, a
    link to nothing - is refused too (:func:`_refuse_unreadable`): a commit that exists and
    cannot be read must never be taken for a missing one."""
    # Where names are cheap (a local directory) the entries that are not files come from the
    # same read of the directory as the files: a long log's directory is read once.
    check = storage.lists_names_cheaply
    try:
        if check:
            statuses, others = storage.list_entries(LOG_DIR, start_after=start_after)
        else:
            statuses, others = storage.list_dir(LOG_DIR, start_after=start_after), frozenset()
    except NotADirectoryError:
        _no_log(storage, table, "its _delta_log is a file, not a directory")
    except FileNotFoundError:
        statuses, others = [], frozenset()
    except OSError as exc:
        _unlistable(table, exc)
    if check:
        # (with start_after, only names after it are read: "_sidecars" and "_last_checkpoint"
        # sort after every version's digits)
        sidecars = f"{LOG_DIR}/_sidecars"  # the files are sorted by path: found by bisection
        at = bisect.bisect_left(statuses, sidecars, key=_path_of)
        if "_sidecars" in others or (at < len(statuses) and statuses[at].path == sidecars):
            _refuse_unreadable(storage, table, "_sidecars")
        for name in sorted(others):
            if name == "_last_checkpoint" or (
                    name[:1] not in (".", "_") and parse_log_file(name) is not None):
                _refuse_unreadable(storage, table, name)
    return statuses


def _path_of(status: FileStatus) -> str:
    return status.path


def _refuse_unreadable(storage: Storage, table: str, name: str) -> None:
    """Raise :class:`CorruptLogError` when ``_delta_log/<name>`` - a log file's name, or
    ``_last_checkpoint`` - is there but is not a regular file (a directory, a link to nothing,
    a link loop), or ``_sidecars`` is there but not a directory."""
    rel = f"{LOG_DIR}/{name}"
    local = storage.local_file(rel)
    if local is None:  # an object store has no such entries: a key is an object
        return
    import os

    if name == "_sidecars":
        if os.path.lexists(local) and not os.path.isdir(local):
            raise CorruptLogError(
                f"{rel} is not a directory: V2 checkpoints keep their sidecar files there, so the log "
                f"cannot be read or written as it is. Move the file out of _delta_log (nothing was "
                f"written)", table=table, params={"path": rel})
        return
    if not os.path.lexists(local) or os.path.isfile(local):
        return
    what = ("a directory" if os.path.isdir(local)
            else "a link to nothing (or a link loop)" if os.path.islink(local) else "not a regular file")
    raise CorruptLogError(
        f"{rel} is {what}, not a readable file: the log cannot be read past it and a write must "
        f"never take that version for a free one. Restore the file from a backup or move the "
        f"entry out of _delta_log (nothing was written)", table=table, params={"path": rel})


def _unlistable(table: str, exc: OSError) -> NoReturn:
    raise CorruptLogError(
        f"cannot list {LOG_DIR} of {table}: {exc.strerror or exc}. Check that it is a directory "
        f"(not a link loop) that this user can read (nothing was written)", table=table) from exc


def _no_log(storage: Storage, table: str, why: str) -> NoReturn:
    """Raise the error for a location without a readable ``_delta_log``: no such path, a file
    where the table's directory belongs, or ``why``."""
    if not storage.exists(""):
        raise TableNotFoundError(f"path does not exist: {table}", table=table)
    is_dir = getattr(storage, "is_dir", None)
    if is_dir is not None and not is_dir(""):
        raise NotADeltaTableError(
            f"{table} is not a Delta table: it is a file, not a directory. Give the table's "
            f"directory (the one that holds _delta_log)", table=table)
    raise NotADeltaTableError(f"{table} is not a Delta table: {why}", table=table)
