"""Many small log files from a remote store, read concurrently.

On an object store every read is a round trip (a few to tens of milliseconds), and a log is
mostly small commit files: a 1,000-commit log read one file after the other is 1,000 round trips
in a row. The reads here run on one shared pool of :data:`REMOTE_READ_THREADS` threads (the
object-store client releases the GIL while it waits), so they overlap. A local table never comes
here: its readers use :meth:`Storage.local_file` and plain file calls, which are faster read by
the calling thread.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from delta_downgrade.storage import Storage

#: Reads in flight at once against a remote store: enough to hide the latency of small reads,
#: few enough not to be throttled (S3 takes thousands of GETs per second per prefix).
REMOTE_READ_THREADS = 24

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    """One pool for the process (created on first use): callers may themselves run on several
    threads (chunked commit parsing), and the reads of all of them share the same bound."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=REMOTE_READ_THREADS,
                                       thread_name_prefix="delta-downgrade-read")
        return _pool


def _read_or_error(storage: Storage, rel_path: str) -> bytes | OSError:
    try:
        return storage.read_bytes(rel_path)
    except OSError as exc:
        return exc


def read_files(storage: Storage, rel_paths: Sequence[str]) -> list[bytes | OSError]:
    """Each file's bytes, in the order of ``rel_paths``, or the ``OSError`` reading it raised
    (the caller raises it when that file's turn comes, so that the first failing file in log
    order is the one reported). Other exceptions propagate."""
    if len(rel_paths) <= 1:
        return [_read_or_error(storage, p) for p in rel_paths]
    pool = _shared_pool()
    futures = [pool.submit(_read_or_error, storage, p) for p in rel_paths]
    try:
        return [f.result() for f in futures]
    finally:
        for f in futures:
            f.cancel()  # when one raised: the reads not started yet are not needed any more
