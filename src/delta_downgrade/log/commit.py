"""Atomic commits with conflict detection (PROTOCOL.md "Delta Log Entries", "Writer Requirements").

A commit is version N+1 written with put-if-absent: if another writer got there first, nothing
of ours is on disk, we read what won, and the operation's conflict policy decides — retry on top
of the winner (with possibly rebased actions) or fail with a conflict error (exit 4).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from delta_downgrade import ENGINE_INFO
from delta_downgrade.actions import (
    Action, AddCDCFile, AddFile, AnyAction, CommitInfo, Metadata, ProtocolAction, RemoveFile,
    serialize_commit,
)
from delta_downgrade.clock import SYSTEM_CLOCK, Clock
from delta_downgrade.errors import (
    CommitFileExistsError, ConcurrentWriteError, StorageNotAtomicError, UnsupportedFeaturesError,
)
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.files import commit_path
from delta_downgrade.log.snapshot import read_commit_actions
from delta_downgrade.table_config import TableConfig


@dataclass(frozen=True)
class WinningCommit:
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
    def changes_data(self) -> bool:
        return any(isinstance(a, (AddFile, RemoveFile, AddCDCFile)) and getattr(a, "dataChange", True)
                   for a in self.actions)

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
        + " after this operation read the table; nothing was written. Rerun the operation",
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
                    f"files were being rewritten; nothing was committed (the new files are orphans "
                    f"that VACUUM removes). Rerun the drop", table=log.table,
                    params={"winningVersions": [x.version for x in winners]})
        return actions

    return resolve


def read_winning_commits(log: DeltaLog, after_version: int) -> list[WinningCommit]:
    log.refresh()
    listing = log.listing()
    out = []
    version = after_version + 1
    while version in listing.commits:
        out.append(WinningCommit(version, tuple(read_commit_actions(log.storage, listing.commits[version]))))
        version += 1
    return out


def _previous_ict(log: DeltaLog, version: int) -> int | None:
    if version < 0:
        return None
    status = log.listing().commits.get(version)
    if status is None:
        return None
    for action in read_commit_actions(log.storage, status, ("commitInfo",)):
        if isinstance(action, CommitInfo):
            return action.inCommitTimestamp
    return None


def commit(
    log: DeltaLog,
    read_version: int,
    actions: Sequence[AnyAction],
    *,
    operation: str,
    operation_parameters: dict[str, Any] | None = None,
    clock: Clock = SYSTEM_CLOCK,
    resolve_conflict: ConflictResolver = fail_on_any_conflict,
    max_attempts: int = 10,
    is_blind_append: bool = False,
) -> int:
    """Write ``actions`` as the version after ``read_version``; return the version written.

    The commit's own ``commitInfo`` comes first (in-commit timestamps require it), followed by
    ``actions`` (any commitInfo among them is dropped). On a lost race the resolver decides.
    """
    if not log.storage.atomic_put_if_absent:
        raise StorageNotAtomicError(
            "this storage cannot create a file only if it is absent, so two writers could overwrite "
            "each other's commits; use a storage with atomic create or a commit coordinator",
            table=log.table)
    pending = [a for a in actions if not isinstance(a, CommitInfo)]
    txn_id = str(uuid.uuid4())
    version = read_version + 1
    for attempt in range(1, max_attempts + 1):
        snapshot = log.snapshot(read_version, check_read=False) if read_version >= 0 else None
        _check_writable(log, snapshot, pending)
        info = _commit_info(log, snapshot, pending, version, read_version, operation,
                            operation_parameters or {}, clock, is_blind_append, txn_id)
        try:
            log.storage.put_if_absent(commit_path(version), serialize_commit([info, *pending]))
        except CommitFileExistsError:
            winners = read_winning_commits(log, version - 1)
            if attempt == max_attempts:
                raise ConcurrentWriteError(
                    f"gave up after {max_attempts} attempts: other writers keep committing", table=log.table)
            pending = [a for a in resolve_conflict(winners, log) if not isinstance(a, CommitInfo)]
            read_version = winners[-1].version if winners else version
            version = read_version + 1
            continue
        log.refresh()
        return version
    raise AssertionError("unreachable")


def _check_writable(log: DeltaLog, snapshot: Any, pending: Sequence[AnyAction]) -> None:
    """Refuse to write a table whose protocol (before or after this commit) has features this
    package cannot write (PROTOCOL.md: writers must support every writer feature)."""
    protocols = []
    if snapshot is not None:
        protocols.append(snapshot.protocol)
    protocols += [a.protocol for a in pending if isinstance(a, ProtocolAction)]
    for protocol in protocols:
        unsupported = protocol.unsupported_for_write()
        if unsupported:
            raise UnsupportedFeaturesError(
                f"the table's protocol {protocol} has writer feature(s) {sorted(unsupported)} that "
                f"delta-downgrade cannot write; nothing was written", features=unsupported,
                for_write=True, table=log.table)


def _commit_info(log: DeltaLog, snapshot: Any, pending: Sequence[AnyAction], version: int,
                 read_version: int, operation: str, parameters: dict[str, Any], clock: Clock,
                 is_blind_append: bool, txn_id: str) -> CommitInfo:
    now = clock.now_ms()
    new_metadata = next((a for a in reversed(pending) if isinstance(a, Metadata)), None)
    config = (new_metadata or (snapshot.metadata if snapshot is not None else None))
    ict = None
    # ICT must be on when the table (after this commit) has it enabled, and strictly increasing.
    if config is not None and TableConfig(config.configuration).in_commit_timestamps_enabled:
        previous = _previous_ict(log, version - 1)
        ict = max(now, (previous or 0) + 1)
    extra: dict[str, Any] = {"isBlindAppend": is_blind_append, "txnId": txn_id}
    if read_version >= 0:
        extra["readVersion"] = read_version
    return CommitInfo(timestamp=now, operation=operation,
                      operationParameters={k: _param(v) for k, v in parameters.items()},
                      inCommitTimestamp=ict, engineInfo=ENGINE_INFO, extra=extra)


def _param(value: Any) -> Any:
    # Delta stores operationParameters as strings (JSON-encoded for non-strings).
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value)


def with_data_change(action: Action, data_change: bool) -> Action:
    return replace(action, dataChange=data_change)  # type: ignore[call-arg]
