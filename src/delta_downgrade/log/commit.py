"""Atomic commits with conflict detection (PROTOCOL.md "Delta Log Entries", "Writer Requirements").

A commit is version N+1 written with put-if-absent: if another writer got there first, nothing
of ours is on disk, we read what won, and the operation's conflict policy decides — retry on top
of the winner (with possibly rebased actions) or fail with a conflict error (exit 4).
"""

from __future__ import annotations

import random
import time
import uuid
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from msgspec import Struct
from delta_downgrade import ENGINE_INFO
from delta_downgrade.protocol.actions import (
    AddFile, AnyAction, CommitInfo, DomainMetadata, Metadata, ProtocolAction, RemoveFile,
    serialize_commit,
)
from delta_downgrade.clock import SYSTEM_CLOCK, Clock
from delta_downgrade.errors import (
    CommitFileExistsError, ConcurrentWriteError, CorruptLogError, StorageNotAtomicError,
)
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.format.file_names import commit_path
from delta_downgrade.log.row_ids import (
    PRESERVED_TAG, ROW_TRACKING_DOMAIN, assign_fresh_row_ids, needs_fresh_row_ids, row_tracking_of,
)
from delta_downgrade.log.read.segment import LoadedFile, read_commit_actions
from delta_downgrade.log.snapshot import required_in_commit_timestamp
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.features import writable_under
from delta_downgrade.protocol.support import Operation, ensure_supported
from delta_downgrade.storage import FileStatus
from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.protocol.table_config import TableConfig

if TYPE_CHECKING:  # pragma: no cover
    from delta_downgrade.log.snapshot import Snapshot


class WinningCommit(Struct, frozen=True):
    """A commit another writer landed after our read version."""

    version: int
    actions: tuple[AnyAction, ...]

    @property
    def commit_info(self) -> CommitInfo | None:
        return next((a for a in self.actions if isinstance(a, CommitInfo)), None)

    @property
    def operation(self) -> str:
        info = self.commit_info
        return (info.operation if info and info.operation else "unknown operation")

    @property
    def changes_files(self) -> bool:
        return any(isinstance(a, (AddFile, RemoveFile)) for a in self.actions)

    @property
    def changes_metadata(self) -> bool:
        return any(isinstance(a, Metadata) for a in self.actions)

    @property
    def changes_protocol(self) -> bool:
        return any(isinstance(a, ProtocolAction) for a in self.actions)

    def describe(self) -> str:
        return f"version {self.version} ({self.operation})"


# A resolver gets the winners and the refreshed log; it returns the actions to retry with, or
# raises. Operations pick one: fail on any winner, rebase an empty commit, revalidate a drop, …
ConflictResolver = Callable[[list[WinningCommit], DeltaLog], Sequence[AnyAction]]


def fail_on_any_conflict(winners: list[WinningCommit], log: DeltaLog) -> Sequence[AnyAction]:
    raise ConcurrentWriteError(
        "a concurrent writer committed " + ", ".join(w.describe() for w in winners)
        + " after this operation read the table; this commit was not written. Rerun the operation",
        table=log.table, params={"winningVersions": [w.version for w in winners]})


def rebase_unless_protocol_changed(actions: Sequence[AnyAction]) -> ConflictResolver:
    """For commits that do not depend on the state they read (empty barrier commits): retry on top
    of any winner that left the protocol alone."""
    def resolve(winners: list[WinningCommit], log: DeltaLog) -> Sequence[AnyAction]:
        changed = [w for w in winners if w.changes_protocol or w.changes_metadata]
        if changed:
            fail_on_any_conflict(changed, log)
        return actions
    return resolve


def rebase_unless_files_touched(replaced: set[str], actions: Sequence[AnyAction], *, allow_new_files: bool,
                   operation: str) -> Callable[[list[WinningCommit], DeltaLog], Sequence[AnyAction]]:
    """A conflict policy for a commit that replaces the files ``replaced`` (decoded paths): retry
    the same ``actions`` on top of winners that left the metadata, the protocol and those files
    alone (and, unless ``allow_new_files``, added no file); otherwise fail (exit 4) with nothing
    of ours committed."""

    def resolve(winners: list[WinningCommit], log: DeltaLog) -> Sequence[AnyAction]:
        for w in winners:
            touched = any(isinstance(a, (AddFile, RemoveFile)) and a.decoded_path in replaced
                          for a in w.actions)
            added = any(isinstance(a, AddFile) for a in w.actions)
            if w.changes_metadata or w.changes_protocol or touched or (added and not allow_new_files):
                raise ConcurrentWriteError(
                    f"{operation}: the concurrent commit {w.describe()} changed the table while its "
                    f"files were being rewritten; this commit was not written (its new files are "
                    f"orphans that VACUUM removes). Rerun the drop", table=log.table,
                    params={"winningVersions": [x.version for x in winners]})
        return actions

    return resolve


def _carries_deletion_vector(action: AnyAction) -> bool:
    return isinstance(action, (AddFile, RemoveFile)) and action.dv is not None


def rebase_over_blind_appends(actions: Sequence[AnyAction], *, operation: str,
                              allow_deletion_vectors: bool = False,
                              touched: set[str] | None = None) -> ConflictResolver:
    """For a commit that depends only on the table's metadata and protocol (a property change)
    or on a few named files: retry the same ``actions`` on top of winners that only added or
    removed data files, as delta-spark's conflict checker lets a metadata-only transaction
    through blind appends. A winner conflicts when it changed the metadata or the protocol, when
    one of its file actions carries a deletion vector (unless ``allow_deletion_vectors``), or
    when it added or removed a path in ``touched`` (decoded paths)."""
    touched = touched or set()

    def resolve(winners: list[WinningCommit], log: DeltaLog) -> Sequence[AnyAction]:
        for w in winners:
            dv = not allow_deletion_vectors and any(_carries_deletion_vector(a) for a in w.actions)
            hit = any(isinstance(a, (AddFile, RemoveFile)) and a.decoded_path in touched
                      for a in w.actions)
            if w.changes_metadata or w.changes_protocol or dv or hit:
                why = ("changed the metadata or the protocol" if w.changes_metadata or w.changes_protocol
                       else "wrote deletion vectors" if dv else "touched the same files")
                raise ConcurrentWriteError(
                    f"{operation}: the concurrent commit {w.describe()} {why} after this operation "
                    f"read the table; this commit was not written. Rerun the operation",
                    table=log.table, params={"winningVersions": [x.version for x in winners]})
        return actions

    return resolve


def read_winning_commits(log: DeltaLog, after_version: int) -> list[WinningCommit]:
    """The commits after ``after_version``, read by name until the first missing version: a lost
    race costs the winners' files only, never a listing or a replay of the log.

    Called after creating ``after_version + 1`` failed because it exists: that first winner must
    be read. When it cannot be (a link to nothing, a directory, a file gone again), the version
    is taken and its content unknown - :class:`CorruptLogError` (exit 2), never an empty list of
    winners, which would let the commit go on past a version nobody validated."""
    out: list[WinningCommit] = []
    version = after_version + 1
    root = getattr(log.storage, "root", None)
    while True:
        path = commit_path(version)
        try:
            data = log.storage.read_bytes(path)
        except FileNotFoundError:
            if out:
                return out
            data = None
            why: str = "it is not there to read (a link to nothing, or deleted again)"
        except OSError as exc:
            data = None
            why = f"it cannot be read: {exc.strerror or exc}"
        if data is None:
            raise CorruptLogError(
                f"creating {path} failed because it exists, but {why}. The version is taken and "
                f"what it holds is unknown, so nothing can be committed after it; restore the "
                f"file from a backup or remove the entry", table=root, params={"path": path})
        status = FileStatus(path, len(data), 0)
        out.append(WinningCommit(version, tuple(read_commit_actions(LoadedFile(root, data), status))))
        version += 1


def _ict_of(log: DeltaLog, version: int, *, required: bool = False) -> int | None:
    """The in-commit timestamp of ``version``, read from its commit file by name; ``required``
    (in-commit timestamps were enabled at ``version``): a commit file there without one is
    refused (:func:`required_in_commit_timestamp`) rather than taken as "no previous timestamp"."""
    if version < 0:
        return None
    path = commit_path(version)
    try:
        data = log.storage.read_bytes(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CorruptLogError(f"cannot read {path}: {exc.strerror or exc}; restore the file from a "
                              f"backup (nothing was written)", table=log.table) from exc
    info = next((a for a in read_commit_actions(LoadedFile(log.table, data), FileStatus(path, len(data), 0),
                                                 ("commitInfo",)) if isinstance(a, CommitInfo)), None)
    if required:
        return required_in_commit_timestamp(log.table, version, info)
    return info.inCommitTimestamp if info is not None else None


# Backoff after a lost race (full jitter): a retry sleeps a random time up to
# min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1)), so that writers that keep colliding
# spread out instead of colliding again in lockstep.
BACKOFF_BASE_S = 0.005
BACKOFF_CAP_S = 0.2


def _backoff(attempt: int) -> None:
    time.sleep(random.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1))))


def require_atomic_commits(log: DeltaLog) -> None:
    """Refuse (:class:`StorageNotAtomicError`, exit 2) a storage whose put-if-absent is not
    atomic: two writers could both "create" the same version and one commit would be lost
    (PROTOCOL.md "Delta Log Entries": a version is written once, by mutual exclusion). On an
    object store the answer comes from probing the endpoint once (a conditional create that must
    fail the second time), so an endpoint that ignores the condition is refused instead of raced.
    A writing operation calls this before its first write - a drop must not leave half its steps
    behind - and :func:`commit` again before each commit; read-only work and dry runs never do
    (the probe writes to the store)."""
    if not log.storage.atomic_put_if_absent:
        # an object store says what its probe found (the endpoint ignored or rejected If-None-Match)
        reason = getattr(log.storage, "not_atomic_reason", None)
        raise StorageNotAtomicError(
            "this storage cannot create a file only if it is absent"
            + (f" ({reason})" if reason else "")
            + ", so two writers could overwrite each other's commits; use a storage with atomic "
            "create or a commit coordinator. Nothing was written", table=log.table)


class CommitAttempt(Struct, frozen=True):
    """One attempt of a commit: the version it tries to create and the actions of that file, its
    own ``commitInfo`` first (in-commit timestamps require it)."""

    version: int
    actions: tuple[AnyAction, ...]


class AttemptBase(Struct):
    """What the next attempt goes on top of: the version read, and the table's protocol, metadata
    and previous in-commit timestamp there. Read once (:meth:`read`), then carried forward over
    each lost race's winners from their own actions (:meth:`advance`): a retry never lists or
    replays the log."""

    read_version: int
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    previous_ict: int | None = None
    # The snapshot first read (None before the first commit of a table).
    snapshot: "Snapshot | None" = None
    # The delta.rowTracking domain (its high-water mark): read only when an attempt must assign
    # row IDs, at the version that attempt goes on top of, then carried forward from the winners.
    row_domain: DomainMetadata | None = None
    row_domain_version: int | None = None

    @classmethod
    def read(cls, log: DeltaLog, read_version: int, pending: Sequence[AnyAction]) -> "AttemptBase":
        base = cls(read_version)
        if read_version >= 0:
            base.snapshot = log.refresh(Refresh.NEW_COMMITS).snapshot(read_version, check_read=False)
            base.protocol, base.metadata = base.snapshot.protocol, base.snapshot.metadata
            if _ict_enabled_after(base.metadata, pending):  # only then is the previous commit's ICT needed
                enabled_there = TableConfig(base.metadata.configuration).in_commit_timestamps_enabled
                base.previous_ict = _ict_of(log, read_version, required=enabled_there)
        return base

    def row_tracking_domain(self, log: DeltaLog) -> DomainMetadata | None:
        if self.row_domain_version != self.read_version:
            self.row_domain = _row_tracking_domain(log, self.snapshot, self.read_version)
            self.row_domain_version = self.read_version
        return self.row_domain

    def advance(self, winners: Sequence[WinningCommit]) -> None:
        """Move past ``winners`` (the commits that took the versions after :attr:`read_version`)."""
        for w in winners:
            for a in w.actions:
                if isinstance(a, ProtocolAction):
                    self.protocol = a.protocol
                elif isinstance(a, Metadata):
                    self.metadata = a
                elif isinstance(a, CommitInfo):
                    self.previous_ict = a.inCommitTimestamp
                elif isinstance(a, DomainMetadata) and a.domain == ROW_TRACKING_DOMAIN:
                    self.row_domain = a if not a.removed else None
        new_read_version = winners[-1].version if winners else self.read_version + 1
        if self.row_domain_version == self.read_version:
            self.row_domain_version = new_read_version  # carried forward through every winner
        self.read_version = new_read_version


def build_attempt(log: DeltaLog, base: AttemptBase, pending: Sequence[AnyAction], *, operation: str,
                  operation_parameters: Mapping[str, object], clock: Clock, is_blind_append: bool, txn_id: str,
                  row_tracking_preserved: bool) -> CommitAttempt:
    """The file an attempt writes on top of ``base``: checked against the writer features
    (before and after ``pending``), fresh row IDs for the adds that need them, its commitInfo."""
    _check_writable(log, base.protocol, base.metadata, pending)
    version = base.read_version + 1
    tracking = row_tracking_of(base.protocol, base.metadata, pending)
    to_write = list(pending)
    if tracking.assigns and needs_fresh_row_ids(pending):
        to_write = assign_fresh_row_ids(pending, version=version, domain=base.row_tracking_domain(log))
    tags = {PRESERVED_TAG: "true" if row_tracking_preserved else "false"} if tracking.enabled else None
    info = _commit_info(base.metadata, pending, base.read_version, operation, operation_parameters,
                        clock, is_blind_append, txn_id, base.previous_ict, tags)
    return CommitAttempt(version, (info, *to_write))


def write_attempt(log: DeltaLog, attempt: CommitAttempt) -> None:
    """Create the attempt's commit file if absent; :class:`CommitFileExistsError` when another
    writer took the version (nothing of ours is on disk then)."""
    log.storage.put_if_absent(commit_path(attempt.version), serialize_commit(list(attempt.actions)))


def commit(
    log: DeltaLog,
    read_version: int,
    actions: Sequence[AnyAction],
    *,
    operation: str,
    operation_parameters: Mapping[str, object] | None = None,
    clock: Clock = SYSTEM_CLOCK,
    resolve_conflict: ConflictResolver = fail_on_any_conflict,
    max_attempts: int = 10,
    is_blind_append: bool = False,
    row_tracking_preserved: bool = True,
) -> int:
    """Write ``actions`` as the version after ``read_version``; return the version written.

    The commit's own ``commitInfo`` comes first (in-commit timestamps require it), followed by
    ``actions`` (any commitInfo among them is dropped). On a lost race the resolver decides.
    Each attempt is built (:func:`build_attempt`) and then written (:func:`write_attempt`).

    When the table (as this commit leaves it) supports row tracking and it is not suspended, the
    ``add`` actions without row IDs get fresh ones at every attempt (:mod:`~delta_downgrade.log.
    row_ids`), above the high-water mark of the version the attempt goes on top of. When row
    tracking is enabled the ``commitInfo`` carries the tag ``delta.rowTracking.preserved`` =
    ``row_tracking_preserved`` (PROTOCOL.md "Writer Requirements for Row Tracking": true when
    every stable row ID and row commit version of the rows the commit copies was preserved, and
    when it copies none).
    """
    require_atomic_commits(log)
    pending = [a for a in actions if not isinstance(a, CommitInfo)]
    txn_id = str(uuid.uuid4())
    base = AttemptBase.read(log, read_version, pending)
    for attempt_number in range(1, max_attempts + 1):
        attempt = build_attempt(log, base, pending, operation=operation,
                                operation_parameters=operation_parameters or {}, clock=clock,
                                is_blind_append=is_blind_append, txn_id=txn_id,
                                row_tracking_preserved=row_tracking_preserved)
        try:
            write_attempt(log, attempt)
        except CommitFileExistsError:
            # Back off first, then read every winner up to now and retry at once: the window in
            # which another writer can take the next version again is as short as possible.
            if attempt_number < max_attempts:
                _backoff(attempt_number)
            winners = read_winning_commits(log, attempt.version - 1)
            if attempt_number == max_attempts:
                raise ConcurrentWriteError(
                    f"gave up after {max_attempts} attempts: other writers keep committing; this "
                    f"commit was not written", table=log.table,
                    params={"winningVersions": [w.version for w in winners]}) from None
            pending = [a for a in resolve_conflict(winners, log) if not isinstance(a, CommitInfo)]
            base.advance(winners)
            continue
        log.note_written([commit_path(attempt.version)])
        return attempt.version
    raise AssertionError("unreachable")


def _row_tracking_domain(log: DeltaLog, snapshot: "Snapshot | None", read_version: int) -> DomainMetadata | None:
    """The live ``delta.rowTracking`` domain at ``read_version`` (None before the first commit),
    read without the file list (``Snapshot.domain``)."""
    if read_version < 0:
        return None
    if snapshot is None or snapshot.version != read_version:
        # a version after the winners of a lost race: list again, the cached listing predates them
        snapshot = log.refresh().snapshot(read_version, check_read=False)
    domain: DomainMetadata | None = snapshot.domain(ROW_TRACKING_DOMAIN)
    return domain


def _check_writable(log: DeltaLog, protocol: Protocol | None, metadata: Metadata | None,
                    pending: Sequence[AnyAction]) -> None:
    """Refuse to write a table whose protocol (before or after this commit) has features this
    package cannot write (PROTOCOL.md: writers must support every writer feature)."""
    protocols = [protocol] if protocol is not None else []
    protocols += [a.protocol for a in pending if isinstance(a, ProtocolAction)]
    # A feature whose log this package writes only under some configuration (a coordinated-commits
    # table without a coordinator) is judged by the configuration the commit leaves.
    new_metadata = next((a for a in reversed(pending) if isinstance(a, Metadata)), None) or metadata
    inert = writable_under(new_metadata.configuration) if new_metadata is not None else frozenset()
    for p in protocols:
        ensure_supported(p, Operation.WRITE, ignore=inert)


def _ict_enabled_after(metadata: Metadata | None, pending: Sequence[AnyAction]) -> bool:
    """Whether in-commit timestamps are on once ``pending`` (which may change the metadata) is
    committed on top of ``metadata``."""
    new_metadata = next((a for a in reversed(pending) if isinstance(a, Metadata)), None)
    config = new_metadata or metadata
    return config is not None and TableConfig(config.configuration).in_commit_timestamps_enabled


def _commit_info(metadata: Metadata | None, pending: Sequence[AnyAction], read_version: int,
                 operation: str, parameters: Mapping[str, object], clock: Clock, is_blind_append: bool,
                 txn_id: str, previous_ict: int | None, tags: dict[str, str] | None = None) -> CommitInfo:
    now = clock.now_ms()
    ict = None
    # PROTOCOL.md "In-Commit Timestamps": when enabled (after this commit), commitInfo carries
    # inCommitTimestamp, strictly greater than the previous commit's.
    if _ict_enabled_after(metadata, pending):
        ict = max(now, (previous_ict or 0) + 1)
    extra: JsonObject = {"isBlindAppend": is_blind_append, "txnId": txn_id}
    if read_version >= 0:
        extra["readVersion"] = read_version
    return CommitInfo(timestamp=now, operation=operation,
                      operationParameters={k: _param(v) for k, v in parameters.items()},
                      inCommitTimestamp=ict, engineInfo=ENGINE_INFO, tags=tags, extra=extra)


def _param(value: object) -> str:
    # Delta stores operationParameters as strings (JSON-encoded for non-strings).
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value)

