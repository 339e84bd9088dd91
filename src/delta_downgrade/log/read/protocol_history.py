"""The ``protocol`` and ``metaData`` actions of many commits, read in one pass (the protocol
history of :meth:`~delta_downgrade.log.delta_log.DeltaLog.protocol_history`).

The history needs the protocol and the boundary property of every retained version, so every commit
must be read: two checkpoints with the same protocol may have others between them (a fast DROP
FEATURE leaves protocols that are not monotonic in version, Checkpoint Protection RFC). What can be
saved is everything but the read: a file of a local table is read with plain file calls; files are
read concurrently where a read is mostly waiting (a remote one; a local one from the disk, found by
timing the first batches: from the page cache threads only pass the GIL around), a bounded number
of commits ahead of the one being parsed; each is parsed by
:func:`~delta_downgrade.log.read.segment.read_commit_actions` projected on the two keys - one scan
of the bytes for ``"protocol"``/``"metaData"``, the JSON parse only of the lines that hold one. The
result and the errors are those of reading the commits one by one with it, in order: the first
commit (by version) that cannot be parsed or holds two protocol or two metaData actions raises,
commits after it are never looked at.
"""

from __future__ import annotations

import os
import time
from collections import deque
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from delta_downgrade.log.read.concurrent_reads import read_files
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.read.segment import LoadedFile, read_commit_actions
from delta_downgrade.protocol.actions import AnyAction
from delta_downgrade.storage import FileStatus, Storage
from delta_downgrade.storage.local import open_dir

if TYPE_CHECKING:
    from concurrent.futures import Future

#: The actions the history looks at.
KEYS = ("protocol", "metaData")

#: Commits read by one task of the pool: enough to make a task's overhead small next to its
#: reads, few enough that the first commits are parsed while the next ones are read.
BATCH = 256

#: Batches fetched ahead on a remote storage, while the one before is parsed (each batch is
#: itself fetched concurrently, :data:`concurrent_reads.REMOTE_READ_THREADS` files at a time).
REMOTE_BATCHES_AHEAD = 2

#: Threads reading the batches of a local table once its reads are found to wait on the disk
#: (os.read releases the GIL). From the disk each read waits, and the waits overlap (10,000
#: commits evicted from the cache, 2-core machine: 1 thread 2.4-3.0 s, 2 threads 1.2 s, 4
#: threads 0.69-0.71 s). Out of the page cache a read is a few microseconds and the threads cost
#: more than they save: every open, read and close hands the GIL back and forth between them
#: and the parsing thread (100,000 cached commits: 1 thread 0.95 s, 4 threads 1.3-1.7 s).
LOCAL_READ_THREADS = 4

#: Mean seconds per file above which a batch read by the calling thread is taken to have waited
#: on the disk, and the rest of a local history is read by :data:`LOCAL_READ_THREADS` threads: a
#: commit out of the page cache is read (open, read, close) in 3-5 us on the 2-core machine, 10-20
#: us when it is busy; from the disk in 90-300 us.
COLD_READ_SECONDS = 30e-6


@contextmanager
def _file_reader(storage: Storage) -> Iterator[tuple[Callable[[FileStatus], bytes], bool]]:
    """``read(status) -> bytes``, and whether the table is local, for as long as the block runs.

    A local table is read with plain file calls: no ``Path`` per file (its construction costs as
    much as the read); each file opened relative to a descriptor of ``_delta_log`` held for the
    block (:func:`~delta_downgrade.storage.local.open_dir`: the kernel does not walk the table's
    path for each of 100,000 commits; the error of a failed open still names the file's full
    path); one ``read`` of the size the listing saw, then one that must find the end (a file
    that grew is read to its end: the content is what counts, as a plain read would give it)."""
    local_file = storage.local_file
    log_dir = local_file(LOG_DIR)
    if log_dir is None:
        yield (lambda status: storage.read_bytes(status.path)), False
        return
    below_log = f"{LOG_DIR}/"
    dir_fd = open_dir(log_dir, os.open)

    def read(status: FileStatus) -> bytes:
        rel = status.path
        if dir_fd is not None and rel.startswith(below_log):
            try:
                fd = os.open(rel[len(below_log):], os.O_RDONLY, dir_fd=dir_fd)
            except OSError as exc:
                exc.filename = local_file(rel)
                raise
        else:
            path = local_file(rel)
            if path is None:  # not reached: the log directory is local (checked above), so is each file in it
                return storage.read_bytes(rel)
            fd = os.open(path, os.O_RDONLY)
        try:
            data = os.read(fd, max(status.size, 0) + 1)
            if status.size > 0 and len(data) == status.size:
                # asked for one byte more than the listing saw and got the size it saw: the end
                # (a commit never changes once written, PROTOCOL.md "Creation of New Log
                # Entries"); one read call per commit instead of two
                return data
            rest = []
            while more := os.read(fd, 1 << 16):
                rest.append(more)
            return data + b"".join(rest) if rest else data
        finally:
            os.close(fd)

    try:
        yield read, True
    finally:
        # after every read: the pool of a cold read is shut down (and waited for) inside the block
        if dir_fd is not None:
            os.close(dir_fd)


def _read_batch(read: Callable[[FileStatus], bytes], statuses: Sequence[FileStatus]) -> list[bytes | OSError]:
    """Each file's bytes, or the error reading it raised (raised again when its turn comes, so
    that an earlier commit's error wins)."""
    out: list[bytes | OSError] = []
    for status in statuses:
        try:
            out.append(read(status))
        except OSError as exc:
            out.append(exc)
    return out


def projected_commit_actions(storage: Storage, statuses: Sequence[FileStatus], keys: tuple[str, ...] = KEYS,
                             *, threads: int | None = None) -> Iterator[tuple[FileStatus, list[AnyAction]]]:
    """``(status, read_commit_actions(storage, status, keys))`` for each commit of ``statuses``
    that holds such an action, in their order; every commit is read and checked (a commit that
    cannot be parsed raises, in its turn, what read_commit_actions raises). With ``threads`` > 1
    batches of files are read ahead by that many threads, at most two batches per thread at a
    time. By default a local table is read by the calling thread; on a remote storage each batch
    is fetched concurrently (:func:`concurrent_reads.read_files`, its files in flight together)
    and :data:`REMOTE_BATCHES_AHEAD` batches are fetched while the one before is parsed; a local
    table is read by the calling thread, batch by batch, until a batch's reads are found to wait
    on the disk (:data:`COLD_READ_SECONDS`), and its remaining batches then by
    :data:`LOCAL_READ_THREADS` threads."""
    if not statuses:
        return
    with _file_reader(storage) as (read, local):
        yield from _projected(storage, statuses, keys, threads, read, local)


def _projected(storage: Storage, statuses: Sequence[FileStatus], keys: tuple[str, ...], threads: int | None,
               read: Callable[[FileStatus], bytes], local: bool) -> Iterator[tuple[FileStatus, list[AnyAction]]]:
    root = getattr(storage, "root", None)
    batches = [statuses[i:i + BATCH] for i in range(0, len(statuses), BATCH)]

    def read_batch(batch: Sequence[FileStatus]) -> list[bytes | OSError]:
        if local:
            return _read_batch(read, batch)
        return read_files(storage, [s.path for s in batch])

    if local and threads is None and len(batches) > 1:
        # read by this thread while the reads come from the page cache; the batches left once
        # one of them waited on the disk are read by the pool
        inline = 0
        for batch in batches:
            started = time.perf_counter()
            contents = _read_batch(read, batch)
            cold = time.perf_counter() - started > COLD_READ_SECONDS * len(batch)
            yield from _parsed([batch], iter([contents]), root, keys)
            inline += 1
            if cold:
                break
        batches = batches[inline:]
        threads = LOCAL_READ_THREADS
    elif threads is None:
        threads = 1 if local else REMOTE_BATCHES_AHEAD
    threads = max(1, threads)
    if not batches:
        return
    if local and (threads == 1 or len(batches) == 1):
        # one file at a time, read and checked in the same loop (a read error raises in turn)
        for batch in batches:
            for status in batch:
                actions = read_commit_actions(LoadedFile(root, read(status)), status, keys)
                if actions:
                    yield status, actions
        return
    if threads == 1 or len(batches) == 1:
        yield from _parsed(batches, map(read_batch, batches), root, keys)
        return
    from concurrent.futures import ThreadPoolExecutor  # not for a local table (start-up time)

    with ThreadPoolExecutor(max_workers=min(threads, len(batches))) as pool:
        pending: deque[Future[list[bytes | OSError]]] = deque()
        ahead = 2 * threads

        def results() -> Iterator[list[bytes | OSError]]:
            submitted = 0
            while submitted < len(batches) or pending:
                while submitted < len(batches) and len(pending) < ahead:
                    pending.append(pool.submit(read_batch, batches[submitted]))
                    submitted += 1
                yield pending.popleft().result()

        try:
            yield from _parsed(batches, results(), root, keys)
        finally:
            for future in pending:  # an error (or a caller that stopped) leaves reads not needed
                future.cancel()


def _parsed(batches: Sequence[Sequence[FileStatus]], loaded: Iterator[list[bytes | OSError]],
            root: str | None, keys: tuple[str, ...]) -> Iterator[tuple[FileStatus, list[AnyAction]]]:
    for batch, contents in zip(batches, loaded):
        for status, data in zip(batch, contents):
            if isinstance(data, OSError):
                raise data
            actions = read_commit_actions(LoadedFile(root, data), status, keys)
            if actions:
                yield status, actions
