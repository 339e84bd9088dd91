"""Storage write failures as typed errors: disk full and not writable, from an ``OSError`` (local
files) or a JVM message (Hadoop FileSystem, a Spark write), so that every writer reports them the
same way (one line, its Delta error class and exit code, no traceback)."""

from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from typing import Iterator

from delta_downgrade.errors import DeltaDowngradeError, StorageFullError, StorageNotWritableError

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_NOT_WRITABLE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
# The same conditions as a JVM (Hadoop FileSystem, a Spark write) reports them.
_JAVA_FULL = ("No space left on device", "Disk quota exceeded", "DSQuotaExceededException",
              "NSQuotaExceededException")
_JAVA_NOT_WRITABLE = ("Read-only file system", "Permission denied", "AccessControlException",
                      "AccessDeniedException")


def typed_write_error(exc: BaseException, what: str, table: str | None) -> DeltaDowngradeError | None:
    """The typed error for a write that failed with ``exc`` (an ``OSError`` by errno, or a JVM
    error by its message), or None when it is not a storage condition we name.

    ``what`` says what was being written, e.g. ``writing _delta_log/00000000000000000003.json``.
    """
    if isinstance(exc, DeltaDowngradeError):
        return None
    code = exc.errno if isinstance(exc, OSError) else None
    text = str(exc)
    if code in _FULL_ERRNOS or (code is None and any(m in text for m in _JAVA_FULL)):
        reason = os.strerror(code) if code else "no space left on the storage"
        return StorageFullError(
            f"{what} failed: {reason}. That file was not written (its temporary file was removed); "
            f"every step before it is complete and recorded in the log. Free some space and rerun: "
            f"the rerun resumes from there", table=table,
            params={"errno": errno.errorcode.get(code, "") if code else "", "step": what})
    if code in _NOT_WRITABLE_ERRNOS or (code is None and any(m in text for m in _JAVA_NOT_WRITABLE)):
        reason = os.strerror(code) if code else "the storage refused the write"
        return StorageNotWritableError(
            f"{what} failed: {reason}. The table's storage is read-only or not writable by this "
            f"user; this step wrote nothing. Run where the table is writable (or fix its "
            f"permissions) and rerun", table=table,
            params={"errno": errno.errorcode.get(code, "") if code else "", "step": what})
    return None


@contextmanager
def typed_write_errors(what: str, table: str | None) -> Iterator[None]:
    """Turn a storage failure inside the block into :class:`StorageFullError` /
    :class:`StorageNotWritableError` (one line for the user, no traceback); other errors pass
    unchanged."""
    try:
        yield
    except Exception as exc:
        typed = typed_write_error(exc, what, table)
        if typed is None:
            raise
        raise typed from exc
