"""What ``_delta_log`` holds: commits, checkpoints, checksums, and the files we do not know.

The listing is the ground truth; ``_last_checkpoint`` is only a hint. It is used to prefer one of
several checkpoints at the same version, and ignored when it is missing, empty, not JSON, or
points to a checkpoint that is not there (PROTOCOL.md, "Last Checkpoint File").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from delta_downgrade.errors import NotADeltaTableError, TableNotFoundError
from delta_downgrade.log.files import LOG_DIR, LogFile, parse_log_file
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

    @property
    def latest_commit_version(self) -> int | None:
        return max(self.commits) if self.commits else None

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


def list_log(storage: Storage, table: str | None = None) -> LogListing:
    """List ``_delta_log``; raise a named error when there is no table or no log."""
    table = table or storage.root
    if not storage.exists(""):
        raise TableNotFoundError(f"path does not exist: {table}", table=table)
    entries = storage.list_dir(LOG_DIR)
    if not entries and not storage.exists(LOG_DIR):
        raise NotADeltaTableError(
            f"{table} is not a Delta table: it has no _delta_log directory", table=table)
    listing = LogListing()
    parts: dict[tuple[int, int], list[tuple[int, FileStatus]]] = {}
    for status in entries:
        name = status.path.rsplit("/", 1)[-1]
        if name.startswith(".") or name.startswith("_"):
            # Hidden Hadoop checksum files (.x.crc), _last_checkpoint, _commits temp files.
            continue
        lf = parse_log_file(name)
        if lf is None:
            listing.unknown.append(status)
        elif lf.kind == "commit":
            listing.commits[lf.version] = status
        elif lf.kind == "crc":
            listing.crcs[lf.version] = status
        elif lf.kind == "compacted":
            listing.compactions.append((lf, status))
        elif lf.kind == "checkpoint":
            if status.size == 0:
                # A zero-byte checkpoint is an interrupted write by a non-atomic writer; Spark
                # ignores it too.
                listing.unknown.append(status)
            elif lf.checkpoint_kind == "multipart":
                assert lf.num_parts is not None and lf.part is not None
                parts.setdefault((lf.version, lf.num_parts), []).append((lf.part, status))
            else:
                listing.checkpoints.append(CheckpointInstance(lf.version, lf.checkpoint_kind, (status,)))
        else:
            listing.unknown.append(status)
    for (version, num_parts), items in parts.items():
        items.sort(key=lambda t: t[0])
        listing.checkpoints.append(CheckpointInstance(
            version, "multipart", tuple(s for _, s in items), num_parts=num_parts))
    listing.checkpoints.sort(key=lambda c: (c.version, c.kind))
    listing.last_checkpoint = read_last_checkpoint(storage)
    if not listing.commits and not any(c.complete for c in listing.checkpoints):
        raise NotADeltaTableError(
            f"{table} is not a Delta table: _delta_log holds no commit and no checkpoint",
            table=table)
    return listing
