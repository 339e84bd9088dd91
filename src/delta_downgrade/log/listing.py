"""What ``_delta_log`` holds: commits, checkpoints, checksums, and the files we do not know.

The listing is the ground truth; ``_last_checkpoint`` is only a hint. It is used to prefer one of
several checkpoints at the same version, and ignored when it is missing, empty, not JSON, or
points to a checkpoint that is not there (PROTOCOL.md, "Last Checkpoint File").

Version ranges are never enumerated: a stray ``00000000000100000000.json`` makes the latest
version 10^8, so every question about contiguity is answered from the sorted versions that are
present (:meth:`LogListing.contiguous_start`, :meth:`LogListing.missing_ranges`), in time and
memory bounded by the number of files.

:func:`list_log` with ``previous`` updates a listing instead of rebuilding it: only the names not
seen before are parsed, the commits and checksums of the previous listing are kept and only the
differences applied (files gone after a metadata cleanup are dropped, a changed size or
modification time is taken). Where a listing returns statuses anyway (an object store), such an
update lists only the tail of the log, from the last known commit's version on
(:func:`_scan_tail`). With ``stat_known=False`` (what ``DeltaLog.refresh()`` passes) a
local directory is read for names only: only new names are stat'ed - commits never change once
written (PROTOCOL.md "Creation of New Log Entries") - and, again each time, the files that may
change in place: checkpoints (a writer may replace one), unknown files and empty files (a write
in progress?).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, NoReturn

from delta_downgrade.errors import NotADeltaTableError, TableNotFoundError, VersionsNotContiguousError
from delta_downgrade.log.files import LOG_DIR, MAX_VERSION, LogFile, parse_log_file
from delta_downgrade.log.last_checkpoint import read_last_checkpoint
from delta_downgrade.storage import FileStatus, Storage


@dataclass(frozen=True)
class CheckpointInstance:
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


@dataclass
class LogListing:
    """A listing of ``_delta_log`` taken at one moment."""

    commits: dict[int, FileStatus] = field(default_factory=dict)
    checkpoints: list[CheckpointInstance] = field(default_factory=list)  # by version, complete or not
    crcs: dict[int, FileStatus] = field(default_factory=dict)
    compactions: list[tuple[LogFile, FileStatus]] = field(default_factory=list)
    unknown: list[FileStatus] = field(default_factory=list)
    last_checkpoint: dict[str, Any] | None = None
    # name -> (parsed name, status) of every file listed, for the next incremental listing
    _entries: dict[str, tuple[LogFile | None, FileStatus]] = field(
        default_factory=dict, repr=False, compare=False)
    _others: dict[str, tuple[LogFile | None, FileStatus]] = field(  # the entries not commit/crc
        default_factory=dict, repr=False, compare=False)
    _empty: set[str] = field(default_factory=set, repr=False, compare=False)  # empty commits/crcs
    # sorted commit versions and, per index, where its run of consecutive versions starts
    _runs: tuple[int, list[int], list[int]] | None = field(default=None, repr=False, compare=False)

    @property
    def latest_commit_version(self) -> int | None:
        versions = self.commit_versions()
        return versions[-1] if versions else None

    # --- contiguity, from the versions present (never by enumerating a range) -------------------

    def _version_runs(self) -> tuple[list[int], list[int]]:
        if self._runs is None or self._runs[0] != len(self.commits):
            versions = sorted(self.commits)
            starts: list[int] = []
            previous = None
            for v in versions:
                starts.append(starts[-1] if previous is not None and v == previous + 1 else v)
                previous = v
            self._runs = (len(self.commits), versions, starts)
        return self._runs[1], self._runs[2]

    def commit_versions(self) -> list[int]:
        """The versions of the commit files, ascending (do not modify)."""
        return self._version_runs()[0]

    def contiguous_start(self, version: int) -> int:
        """The smallest ``s`` such that the commits ``s .. version`` all exist; ``version + 1``
        when commit ``version`` itself does not."""
        if version not in self.commits:
            return version + 1
        versions, starts = self._version_runs()
        return starts[bisect.bisect_left(versions, version)]

    def commits_between(self, first: int, last: int) -> tuple[FileStatus, ...]:
        """The commits ``first .. last`` that exist, ascending."""
        versions = self.commit_versions()
        lo, hi = bisect.bisect_left(versions, first), bisect.bisect_right(versions, last)
        return tuple(self.commits[v] for v in versions[lo:hi])

    def missing_ranges(self, up_to: int, limit: int = 10) -> list[tuple[int, int, FileStatus | None]]:
        """The first ``limit`` gaps among the commits ``<= up_to``, from the oldest commit present
        (or 0): ``(first missing, last missing, the commit file just after the gap or None)``."""
        versions = self.commit_versions()
        hi = bisect.bisect_right(versions, up_to)
        out: list[tuple[int, int, FileStatus | None]] = []
        expected = versions[0] if hi else 0
        for v in versions[:hi]:
            if v > expected:
                out.append((expected, v - 1, self.commits[v]))
                if len(out) == limit:
                    return out
            expected = v + 1
        if expected <= up_to:
            out.append((expected, up_to, None))
        return out[:limit]

    def complete_checkpoints(self, at_most: int | None = None) -> list[CheckpointInstance]:
        """Complete checkpoints, newest first, one or more per version (hint-preferred first)."""
        found = [c for c in self.checkpoints if c.complete and (at_most is None or c.version <= at_most)]
        hint_version = (self.last_checkpoint or {}).get("version")
        kind_rank = {"classic": 0, "v2": 1, "multipart": 2}

        def rank(c: CheckpointInstance) -> tuple[int, int, int]:
            # Newest version first; within a version, the one _last_checkpoint names, then by kind.
            hinted = 0 if (c.version == hint_version and self._matches_hint(c)) else 1
            return (-c.version, hinted, kind_rank.get(c.kind, 9))

        return sorted(found, key=rank)

    def _matches_hint(self, c: CheckpointInstance) -> bool:
        hint = self.last_checkpoint or {}
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


def list_log(storage: Storage, table: str | None = None, previous: LogListing | None = None, *,
             stat_known: bool = True, tail_only: bool = True) -> LogListing:
    """List ``_delta_log``; raise a named error when there is no table or no log.

    With ``previous`` (an earlier listing of the same log), the listing is updated from it (see
    the module docstring); ``stat_known=False`` leaves the statuses of known files alone and,
    with ``tail_only`` (where listings return statuses), lists only the log's tail."""
    table = table or storage.root
    new_entries, removed = _scan(storage, table, previous, stat_known, tail_only)
    return _updated(storage, table, previous, new_entries, removed)


def with_files_written(storage: Storage, table: str, previous: LogListing,
                       statuses: list[FileStatus]) -> LogListing:
    """``previous`` with files this process has just written (``statuses``: a commit it created,
    the files of a checkpoint): what a listing would add for them, without reading the
    directory."""
    new_entries = dict(e for e in map(_entry, statuses) if e is not None)
    return _updated(storage, table, previous, new_entries, [])


def _updated(storage: Storage, table: str, previous: LogListing | None,
             new_entries: dict[str, tuple[LogFile | None, FileStatus]], removed: list[str]) -> LogListing:
    """The listing of ``previous`` with ``new_entries`` (new or changed) and without ``removed``."""
    listing = LogListing()
    parts: dict[tuple[int, int], list[tuple[int, FileStatus]]] = {}
    stray: list[FileStatus] = []
    empty: set[str] = set()
    appended: list[int] | None = None  # new commit versions, when only appended after the old ones
    if previous is not None and previous._entries:
        # Start from the previous listing's commits and checksums (the bulk of the log): only
        # what changed is applied; the other kinds are few and rebuilt below.
        merged = dict(previous._entries)
        listing.commits = dict(previous.commits)
        listing.crcs = dict(previous.crcs)
        gone = set(removed)
        empty = previous._empty - gone
        if not removed and previous._runs is not None and previous._runs[0] == len(previous.commits):
            appended = []
        for name in removed:
            lf, _ = merged.pop(name)
            if lf is not None and lf.kind == "commit":
                listing.commits.pop(lf.version, None)  # type: ignore[arg-type]
            elif lf is not None and lf.kind == "crc":
                listing.crcs.pop(lf.version, None)  # type: ignore[arg-type]
        merged.update(new_entries)
        others = {name: e for name, e in previous._others.items() if name not in gone}
    else:
        merged = new_entries
        others = {}
    commits, crcs = listing.commits, listing.crcs
    for name, entry in new_entries.items():
        lf, status = entry
        kind = lf.kind if lf is not None else None
        if kind == "commit" or kind == "crc":
            if status.size == 0:
                empty.add(name)
            elif empty:
                empty.discard(name)
            version: int = lf.version  # type: ignore[union-attr,assignment]
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
            listing.unknown.append(status)
        elif lf.version is not None and lf.version > MAX_VERSION:
            stray.append(status)
        elif lf.kind == "compacted":
            listing.compactions.append((lf, status))
        elif lf.kind == "checkpoint":
            if status.size == 0:
                # A zero-byte checkpoint is an interrupted write by a non-atomic writer; Spark
                # ignores it too.
                listing.unknown.append(status)
            elif lf.checkpoint_kind == "multipart":
                assert lf.num_parts is not None and lf.part is not None
                parts.setdefault((lf.version, lf.num_parts), []).append((lf.part, status))  # type: ignore[arg-type]
            else:
                listing.checkpoints.append(CheckpointInstance(lf.version, lf.checkpoint_kind, (status,)))  # type: ignore[arg-type]
        else:
            listing.unknown.append(status)
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
        listing.checkpoints.append(CheckpointInstance(
            version, "multipart", tuple(s for _, s in items), num_parts=num_parts))
    listing.checkpoints.sort(key=lambda c: (c.version, c.kind))
    listing.unknown.sort(key=lambda s: s.path)
    listing.compactions.sort(key=lambda c: c[1].path)
    listing._entries = merged
    listing._others = others
    listing._empty = empty
    if appended is not None and previous is not None and previous._runs is not None:
        listing._runs = _extend_runs(previous._runs, sorted(appended))
    listing.last_checkpoint = read_last_checkpoint(storage)
    if not listing.commits and not any(c.complete for c in listing.checkpoints):
        raise NotADeltaTableError(
            f"{table} is not a Delta table: _delta_log holds no commit and no checkpoint",
            table=table)
    return listing


def _extend_runs(runs: tuple[int, list[int], list[int]], appended: list[int]
                 ) -> tuple[int, list[int], list[int]] | None:
    """:meth:`LogListing._version_runs` of a log that got the commits ``appended`` (ascending),
    from the previous one without sorting again; None when they do not all come after it."""
    count, versions, starts = runs
    if appended and versions and appended[0] <= versions[-1]:
        return None
    versions, starts = versions + appended, starts + []
    previous = versions[count - 1] if count else None
    for v in appended:
        starts.append(starts[-1] if previous is not None and v == previous + 1 else v)
        previous = v
    return len(versions), versions, starts


def _entry(status: FileStatus) -> tuple[str, tuple[LogFile | None, FileStatus]] | None:
    name = status.path.rsplit("/", 1)[-1]
    if name[:1] in (".", "_"):
        # Hidden Hadoop checksum files (.x.crc), _last_checkpoint, _commits temp files.
        return None
    return name, (parse_log_file(name), status)


def _scan(storage: Storage, table: str, previous: LogListing | None, stat_known: bool,
          tail_only: bool = True) -> tuple[dict[str, tuple[LogFile | None, FileStatus]], list[str]]:
    """The entries of ``_delta_log`` that are new or changed since ``previous`` (all of them
    without it), and the names of the previous entries that are gone. Names already known are
    not parsed again; with ``stat_known`` False (local storage) they are not even stat'ed."""
    known = previous._entries if previous is not None else {}
    if not stat_known and known:
        if storage.lists_names_cheaply:
            return _scan_names(storage, table, previous)  # type: ignore[arg-type]
        tail = _scan_tail(storage, table, previous) if tail_only else None  # type: ignore[arg-type]
        if tail is not None:
            return tail
    try:
        statuses = storage.list_dir(LOG_DIR)
    except NotADirectoryError:
        _no_log(storage, table, "its _delta_log is a file, not a directory")
    if not statuses and not storage.exists(LOG_DIR):
        _no_log(storage, table, "it has no _delta_log directory")
    if not known:
        found: dict[str, tuple[LogFile | None, FileStatus]] = {}
        for status in statuses:  # the first listing of a log: every name parsed, inline (hot)
            name = status.path.rsplit("/", 1)[-1]
            if name[:1] not in (".", "_"):  # hidden checksum files, _last_checkpoint, _commits
                found[name] = (parse_log_file(name), status)
        return found, []
    changed: dict[str, tuple[LogFile | None, FileStatus]] = {}
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
        if entry[1] != status:  # size or modification time changed
            changed[name] = (entry[0], status)
    removed = list(known.keys() - seen)
    return changed, removed


def _scan_tail(storage: Storage, table: str, previous: LogListing
               ) -> tuple[dict[str, tuple[LogFile | None, FileStatus]], list[str]] | None:
    """:func:`_scan` where a listing returns statuses anyway (an object store, Hadoop): only the
    tail of the log is listed, the files of the last known commit's version and after
    (``list_dir(start_after=<its 20 digits>)``: S3 ``start-after``, the list offset of Azure and
    GCS), so that catching up on a long log costs one short listing, not the whole directory.
    Every file of that version and later sorts after the bare version number - its checkpoint
    (``.checkpoint.`` sorts before ``.json``), its ``.crc``, the commits after it.

    What this does not see until a full listing (``refresh(full=True)``, or an operation that
    lists from scratch): files below that version deleted or replaced by another writer (a
    metadata cleanup, a checkpoint rewritten at an older version). Neither changes what a version
    holds (PROTOCOL.md "Creation of New Log Entries"); the operations that decide from the whole
    directory (cleanup, vacuum, truncate) list it whole. None - list everything - when there is
    no known commit, or when the last known commit itself is gone (the log was cleaned or
    replaced under us)."""
    latest = previous.latest_commit_version
    if latest is None:
        return None
    anchor = f"{latest:020d}"
    try:
        statuses = storage.list_dir(LOG_DIR, start_after=anchor)
    except NotADirectoryError:
        _no_log(storage, table, "its _delta_log is a file, not a directory")
    latest_name = f"{anchor}.json"
    known = previous._entries
    changed: dict[str, tuple[LogFile | None, FileStatus]] = {}
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
        if entry[1] != status:  # size or modification time changed
            changed[name] = (entry[0], status)
    if latest_name not in seen:
        return None
    removed = [name for name in known if name > anchor and name not in seen]
    return changed, removed


def _scan_names(storage: Storage, table: str, previous: LogListing
                ) -> tuple[dict[str, tuple[LogFile | None, FileStatus]], list[str]]:
    """:func:`_scan` where names are cheap (:attr:`Storage.lists_names_cheaply`): names from the
    directory (set operations, no per-file work for the known ones), a stat for new names and
    again for the files that may change in place: checkpoints (a writer may replace one),
    unknown and empty files (maybe a write still in progress)."""
    prefix = f"{LOG_DIR}/"
    try:
        present = storage.list_names(LOG_DIR)
    except NotADirectoryError:
        _no_log(storage, table, "its _delta_log is a file, not a directory")
    if not present and not storage.exists(LOG_DIR):
        _no_log(storage, table, "it has no _delta_log directory")
    known = previous._entries
    removed = list(known.keys() - present)
    new = [n for n in present - known.keys() if not n.startswith((".", "_"))]
    changed: dict[str, tuple[LogFile | None, FileStatus]] = {}
    for name in sorted(new) + sorted((previous._others.keys() | previous._empty) & present):
        entry = known.get(name)
        lf = entry[0] if entry is not None else parse_log_file(name)
        if lf is None and storage.is_dir(prefix + name):
            continue  # a folder (list_dir lists files only); log file names are never folders
        try:
            status = storage.status(prefix + name)
        except FileNotFoundError:  # deleted since the directory was read
            if entry is not None:
                removed.append(name)
            continue
        if entry is None or entry[1] != status:
            changed[name] = (lf, status)
    return changed, removed


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
