"""A table's log as a whole: snapshots at any retained version, the protocol history and the
checkpoint inventory — the two views checkpoint protection reasons about."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from delta_downgrade.actions import Metadata, ProtocolAction
from delta_downgrade.errors import (
    CheckpointUnreadableError, DeltaDowngradeError, UnsupportedFeaturesError, VersionNotFoundError,
    VersionsNotContiguousError,
)
from delta_downgrade.log.checkpoint_reader import CheckpointReader
from delta_downgrade.log.listing import CheckpointInstance, LogListing, list_log
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY, LogSegment, Snapshot, read_commit_actions
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.features import get_feature
from delta_downgrade.storage import Storage, open_storage


@dataclass(frozen=True)
class ProtocolSpan:
    """Versions ``start..end`` (inclusive) share this protocol and boundary property."""

    start: int
    end: int
    protocol: Protocol
    boundary_version: int | None

    def to_dict(self) -> dict[str, Any]:
        from delta_downgrade.operations.inspect import protocol_document

        return {"start_version": self.start, "end_version": self.end,
                "protocol": protocol_document(self.protocol), "boundary_version": self.boundary_version}


class DeltaLog:
    """Entry point for reading a table. ``listing()`` is cached until ``refresh()``."""

    def __init__(self, location: str, storage: Storage | None = None) -> None:
        self.table = location
        self.storage = storage if storage is not None else open_storage(location)
        self._listing: LogListing | None = None

    def __repr__(self) -> str:
        return f"DeltaLog({self.table!r})"

    # --- listing -------------------------------------------------------------------------------

    def listing(self) -> LogListing:
        if self._listing is None:
            self._listing = list_log(self.storage, self.table)
        return self._listing

    def refresh(self) -> "DeltaLog":
        self._listing = None
        return self

    def latest_version(self) -> int:
        listing = self.listing()
        candidates = list(listing.commits) + [c.version for c in listing.checkpoints if c.complete]
        return max(candidates)

    def _starting_points(self) -> list[int]:
        """Versions a replay can start from: 0 (if its commit exists) and every complete checkpoint."""
        listing = self.listing()
        points = {c.version for c in listing.checkpoints if c.complete}
        if 0 in listing.commits:
            points.add(-1)  # "before version 0": replay from commit 0
        return sorted(points)

    def earliest_version(self) -> int:
        """The oldest version that can still be reconstructed."""
        listing = self.listing()
        latest = self.latest_version()
        # A replay from point p needs commits p+1 .. latest; the earliest usable p is at or after
        # the last gap.
        for point in self._starting_points():
            if all(v in listing.commits for v in range(point + 1, latest + 1)):
                return max(point, 0)
        self._raise_gap(latest)
        raise AssertionError("unreachable")

    def _raise_gap(self, version: int) -> None:
        listing = self.listing()
        present = sorted(v for v in listing.commits if v <= version)
        missing = [v for v in range(present[0] if present else 0, version + 1) if v not in listing.commits]
        raise VersionsNotContiguousError(
            f"the log has a gap: commit version(s) {missing[:10]} are missing before version "
            f"{version}, and no checkpoint covers them; the table cannot be reconstructed. Restore "
            f"the missing commit files from a backup", table=self.table,
            params={"missingVersions": missing[:10]})

    def segment(self, version: int | None = None) -> LogSegment:
        listing = self.listing()
        latest = self.latest_version()
        if version is None:
            version = latest
        if version > latest or version < 0:
            raise VersionNotFoundError(
                f"version {version} does not exist: the latest version is {latest}", table=self.table)
        checkpoints = listing.complete_checkpoints(at_most=version)
        for checkpoint in checkpoints:
            needed = range(checkpoint.version + 1, version + 1)
            if all(v in listing.commits for v in needed):
                return LogSegment(version, checkpoint, tuple(listing.commits[v] for v in needed))
        if all(v in listing.commits for v in range(0, version + 1)):
            return LogSegment(version, None, tuple(listing.commits[v] for v in range(0, version + 1)))
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
        raise AssertionError("unreachable")

    def snapshot(self, version: int | None = None, *, check_read: bool = True) -> Snapshot:
        """The table at ``version`` (latest by default).

        The protocol is validated; with ``check_read`` the package must also know every reader
        feature (unknown ones may change what the log means, so guessing would be wrong).
        Checkpoints that cannot be read are skipped for an older one, as Spark does.
        """
        segment = self.segment(version)
        snap = Snapshot(self.storage, self.table, segment)
        try:
            snap.protocol_action
        except CheckpointUnreadableError:
            fallback = self._fallback_segment(segment)
            if fallback is None:
                raise
            snap = Snapshot(self.storage, self.table, fallback)
        check_protocol(snap.protocol, self.table, snap.version, check_read=check_read)
        return snap

    def _fallback_segment(self, segment: LogSegment) -> LogSegment | None:
        """An older segment that skips an unreadable checkpoint, if the commits allow it."""
        if segment.checkpoint is None:
            return None
        listing = self.listing()
        for checkpoint in listing.complete_checkpoints(at_most=segment.checkpoint.version - 1):
            needed = range(checkpoint.version + 1, segment.version + 1)
            if all(v in listing.commits for v in needed):
                return LogSegment(segment.version, checkpoint, tuple(listing.commits[v] for v in needed))
        needed = range(0, segment.version + 1)
        if all(v in listing.commits for v in needed):
            return LogSegment(segment.version, None, tuple(listing.commits[v] for v in needed))
        return None

    # --- history ---------------------------------------------------------------------------------

    def checkpoint_inventory(self) -> list[CheckpointInstance]:
        return list(self.listing().checkpoints)

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
        listing = self.listing()
        for version in range(start + 1, latest + 1):
            new_protocol, new_boundary = protocol, boundary
            for action in read_commit_actions(self.storage, listing.commits[version], ("protocol", "metaData")):
                if isinstance(action, ProtocolAction):
                    new_protocol = action.protocol
                elif isinstance(action, Metadata):
                    value = action.configuration.get(BOUNDARY_PROPERTY)
                    new_boundary = int(value) if value not in (None, "") else None
            if new_protocol != protocol or new_boundary != boundary:
                spans.append(ProtocolSpan(span_start, version - 1, protocol, boundary))
                protocol, boundary, span_start = new_protocol, new_boundary, version
        spans.append(ProtocolSpan(span_start, latest, protocol, boundary))
        return spans

    def protocol_at(self, version: int) -> Protocol:
        return Snapshot(self.storage, self.table, self.segment(version)).protocol

    def crc(self, version: int) -> dict[str, Any] | None:
        """The ``.crc`` checksum file of a version, when present and readable."""
        import json

        status = self.listing().crcs.get(version)
        if status is None:
            return None
        try:
            data = json.loads(self.storage.read_bytes(status.path))
        except (ValueError, OSError):
            return None
        return data if isinstance(data, dict) else None

    def sidecars_of(self, checkpoint: CheckpointInstance) -> list[str]:
        if checkpoint.kind != "v2":
            return []
        return CheckpointReader(self.storage, checkpoint).sidecar_paths()


def check_protocol(protocol: Protocol, table: str, version: int, *, check_read: bool) -> None:
    """Refuse protocols that are invalid or that name reader features nobody knows."""
    problems = protocol.problems()
    if problems:
        raise_invalid(protocol, table, version, problems)
    if check_read:
        unknown = {f for f in protocol.reader_side_features if get_feature(f) is None}
        if unknown:
            raise UnsupportedFeaturesError(
                f"version {version} has reader feature(s) {sorted(unknown)} that delta-downgrade "
                f"does not know; it cannot tell what the log means and will not touch the table",
                features=unknown, for_write=False, table=table)


def raise_invalid(protocol: Protocol, table: str, version: int, problems: list[str]) -> None:
    from delta_downgrade.errors import InvalidProtocolError

    raise InvalidProtocolError(
        f"version {version} has an invalid or unsupported protocol {protocol}: "
        + "; ".join(problems) + ". No Delta client can read it safely; check which writer produced it",
        table=table)


__all__ = ["DeltaLog", "ProtocolSpan", "check_protocol", "DeltaDowngradeError"]
