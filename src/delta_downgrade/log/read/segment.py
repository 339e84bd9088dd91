"""A log segment (what must be read to build a version) and the reading of its files that every
replay shares: commits parsed and checked line by line, protocol and metadata completed from the
checkpoint."""

from __future__ import annotations

import functools
from typing import Iterator, Protocol, Sequence

from msgspec import Struct
from delta_downgrade.errors import CorruptLogError, DuplicateActionsError
from delta_downgrade.log.read.concurrent_reads import read_files
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.protocol.actions import (AnyAction, Metadata, ProtocolAction,
                                              parse_commit, parse_log_line)
from delta_downgrade.protocol.json_nesting import check_nesting
from delta_downgrade.storage import FileStatus, Storage


class LogSegment(Struct, frozen=True):
    """What must be read to build version ``version``: a checkpoint (or none) and the commits after it."""

    version: int
    checkpoint: CheckpointInstance | None
    commits: tuple[FileStatus, ...]  # ascending, checkpoint.version + 1 .. version

    @property
    def start_version(self) -> int:
        return self.checkpoint.version + 1 if self.checkpoint else 0


def _might_hold(line: str, keys: tuple[str, ...]) -> bool:
    return any(f'"{k}"' in line for k in keys)


@functools.cache
def _needles(keys: tuple[str, ...]) -> tuple[bytes, ...]:
    """The bytes of each key as a JSON object key: ``"protocol"``, quotes included."""
    return tuple(f'"{key}"'.encode() for key in keys)


def _holds_none_of(data: bytes, keys: tuple[str, ...]) -> bool:
    """Whether the UTF-8 file ``data`` names none of ``keys``, found in its bytes without decoding
    them (an ASCII needle is found in the UTF-8 bytes exactly where it is in the text): no line
    of it could be parsed for them. False also when ``data`` is not ASCII and not UTF-8 either,
    so that its decoding raises the caller's error."""
    for needle in _needles(keys):
        # find, not ``in``: CPython's ``needle in data`` first takes the needle for a byte value,
        # and formats the TypeError it then drops (a third of the test on a small commit)
        if data.find(needle) >= 0:
            return False
    if data.isascii():  # UTF-8 as it is (the usual commit), known without decoding it
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class CommitSource(Protocol):
    """What a commit is read from: the table's :class:`Storage`, or a :class:`LoadedFile` whose
    bytes were fetched ahead."""

    def read_bytes(self, rel_path: str) -> bytes: ...


def commit_parse_error(storage: CommitSource, path: str, exc: Exception) -> CorruptLogError:
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


def read_commit_actions(storage: CommitSource, status: FileStatus, keys: tuple[str, ...] | None = None) -> list[AnyAction]:
    """Parse one commit; with ``keys``, only the lines that can hold those actions.

    Raises :class:`CorruptLogError` naming the file and line for a line that is not a JSON
    object or holds a malformed action, and :class:`DuplicateActionsError` for a commit with two
    protocol or two metaData actions (checked whenever those are read)."""
    try:
        data = storage.read_bytes(status.path)
        if keys is not None and _holds_none_of(data, keys):  # one scan of the bytes, no decoding
            return []
        text = data.decode("utf-8")
        if keys is None:
            out = parse_commit(text)
        else:
            out = []
            check_nesting(text)  # before any line reaches the parser
            for number, line in enumerate(text.split("\n"), 1):  # not splitlines(): U+2028 may sit inside a JSON string
                if line.strip() and _might_hold(line, keys):
                    action = parse_log_line(line, number)
                    if action is not None and getattr(action, "KEY", None) in keys:
                        out.append(action)
    except (ValueError, UnicodeDecodeError) as exc:
        raise commit_parse_error(storage, status.path, exc) from exc
    check_single_protocol_and_metadata(out, status.path, getattr(storage, "root", None))
    return out


class LoadedFile:
    """A storage whose one file is already read: what :func:`read_commit_actions` reads from
    when the bytes were fetched ahead, so that the parse, the checks and the errors (which name
    ``root``) are exactly its own."""

    __slots__ = ("root", "_data")

    def __init__(self, root: str | None, data: bytes) -> None:
        self.root = root
        self._data = data

    def read_bytes(self, rel_path: str) -> bytes:
        return self._data


#: Commits fetched at once by :func:`iter_commit_actions` on a remote store: the first window
#: is small (a caller looking for the newest protocol often stops after a commit or two), and
#: each next one twice as large, up to the last.
READ_AHEAD_WINDOWS = (4, 8, 16, 32, 64)


def iter_commit_actions(storage: Storage, statuses: Sequence[FileStatus], keys: tuple[str, ...] | None = None
                        ) -> Iterator[tuple[FileStatus, list[AnyAction]]]:
    """``(status, read_commit_actions(storage, status, keys))`` for each of ``statuses`` in their
    order, lazily (a caller may stop early). A local table is read file by file; on a remote one
    the next commits are fetched concurrently (:func:`concurrent_reads.read_files`) in growing
    windows, so that a long run of commits is not one round trip after another. A read error is
    raised when its commit's turn comes."""
    if not statuses or storage.local_file(statuses[0].path) is not None:
        for status in statuses:
            yield status, read_commit_actions(storage, status, keys)
        return
    root = getattr(storage, "root", None)
    pos, step = 0, 0
    while pos < len(statuses):
        window = statuses[pos:pos + READ_AHEAD_WINDOWS[min(step, len(READ_AHEAD_WINDOWS) - 1)]]
        for status, data in zip(window, read_files(storage, [s.path for s in window])):
            if isinstance(data, OSError):
                raise data
            yield status, read_commit_actions(LoadedFile(root, data), status, keys)
        pos += len(window)
        step += 1


def with_checkpoint_fallback(storage: Storage, table: str, segment: LogSegment,
                             protocol: ProtocolAction | None, metadata: Metadata | None
                             ) -> tuple[ProtocolAction, Metadata]:
    """Complete what the segment's commits did not set from its checkpoint (a projected read), or
    raise: a version without a protocol or metaData action cannot be reconstructed."""
    if (protocol is None or metadata is None) and segment.checkpoint is not None:
        from delta_downgrade.log.read.checkpoint_reader import CheckpointReader  # pyarrow: only when needed

        found = CheckpointReader(storage, segment.checkpoint).actions(["protocol", "metaData"])
        # A checkpoint holds the table's one protocol and one metaData (PROTOCOL.md "Checkpoints")
        check_single_protocol_and_metadata(
            [*found.get("protocol", []), *found.get("metaData", [])],
            f"checkpoint {segment.checkpoint.paths[0]}" + (
                f" ({len(segment.checkpoint.paths)} parts)" if len(segment.checkpoint.paths) > 1 else ""),
            table)
        # the reader returns the actions of each key asked: the last of each, narrowed to its type
        if protocol is None:
            protocol = next((a for a in reversed(found.get("protocol", [])) if isinstance(a, ProtocolAction)), None)
        if metadata is None:
            metadata = next((a for a in reversed(found.get("metaData", [])) if isinstance(a, Metadata)), None)
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
