"""VACUUM: delete the files of a table that no retained version needs any more.

VACUUM writes nothing (see "No commit" below): it does not ask whether the storage creates files
atomically (a probe that writes on an object store), it only deletes. On an object store
the table is listed by keys (:meth:`Storage.walk_files`) and there are no directories to remove.

Specification (PROTOCOL.md "VACUUM", VACUUM Protocol Check RFC):

1. **VACUUM Protocol Check** (PROTOCOL.md "VACUUM Protocol Check", an accepted RFC): a writer that
   implements VACUUM must check the table's *write* protocol before it deletes anything; the RFC
   recommends the check for every table, and ``vacuumProtocolCheck`` (a reader-writer feature, so
   that old clients which checked only the reader protocol fail) makes it mandatory. We check it
   unconditionally, dry run included, as delta-spark's ``VacuumCommand.gc`` does
   (``protocolWrite`` → ``DELTA_UNSUPPORTED_FEATURES_FOR_WRITE``). That also refuses
   catalog-managed tables: this package cannot write their logs. The check is the ``Operation.VACUUM``
   gate of :mod:`delta_downgrade.protocol.support`, asked on the version planned (again on each replan
   after a concurrent commit).
2. **Retention** (PROTOCOL.md "Add File and Remove File": tombstones are kept at least as long as
   ``delta.deletedFileRetentionDuration``, default one week). A shorter retention is refused
   unless the caller overrides the check (delta-spark's ``retentionDurationCheck.enabled``).
   Files are deleted only if their modification time is older than ``now - retention``: a file
   that a concurrent writer has written but not yet committed is unreferenced and must survive.
3. **What stays**: every file named by the latest state (``add``), by a tombstone (``remove``)
   whose ``deletionTimestamp`` is inside the retention window, and the **deletion-vector file** of
   any such add or remove (PROTOCOL.md "Deletion Vector Descriptor Schema", resolved by
   :mod:`delta_downgrade.protocol.dv_paths`). Without the last rule, time travel to a version inside the
   window fails with "``.bin`` does not exist"; that is also why DROP FEATURE deletionVectors
   writes DV tombstones for DV-unaware VACUUMs.
4. **What is never looked at**: ``_delta_log`` and every other hidden name (starting with ``_``
   or ``.``) at any depth, except ``_change_data`` (PROTOCOL.md "Change Data Files": its files are
   deleted once older than the retention, no state references them) and partition directories
   whose column name starts with ``_`` (``_col=value``). Under UniForm-Iceberg the ``metadata``
   directory is hidden too (delta-spark's ``DeltaTableUtils.isHiddenDirectory``). Paths of the
   log that point outside the table (shallow clones, ``p`` DVs elsewhere) are ignored.

Differences from delta-spark, on purpose:

- **No commit.** delta-spark records ``VACUUM START`` / ``VACUUM END`` as empty commits (only for
  some file systems, and only as an audit trail). A VACUUM changes no table state, so we write
  nothing to the log; the returned :class:`VacuumResult` is the record.
- Directories are never deleted, even when empty (delta-spark deletes empty ones): removing a
  directory can race with a writer that just created it to write a file.
- When a file is deleted, its Hadoop checksum companion ``.<name>.crc`` (written next to data
  files by Spark on local file systems) is deleted with it, as Hadoop's ``ChecksumFileSystem``
  does; it is hidden, so it would otherwise stay forever.
- ``retention_hours`` is used to the millisecond (delta-spark rounds it to whole hours).
- If another writer commits while we list the table, we plan again on the new version before
  deleting (delta-spark plans once).
- ``_delta_index`` stays hidden (delta-spark lists and vacuums it); only ``_change_data`` is.
- **This package's own leftovers are listed although hidden** (:func:`is_package_leftover`): the
  column-mapping staging area ``_delta_downgrade_staging/`` (of older versions), the
  ``_temporary/`` work area a killed Spark write leaves inside a rewrite's output directory (a
  purge's ``dv-purge-<id>/``, a column-mapping removal's or type widening's ``rewrite-<id>/``,
  :func:`delta_downgrade.rewrite.staging.is_output_dir_name`), and this
  package's temporary files (``.<name>.<pid>.<hex>.tmp``) outside ``_delta_log``. No retained
  version references them; like any unreferenced file they go once older than the retention (a
  rewrite running now writes fresh files, which stay). A staging directory whose every file went
  is removed too (deepest first, only when empty), so a killed rewrite leaves nothing behind on
  local disk; an object store has no directories, a "directory" is gone with its last key.
  The output directory itself is not hidden: the data file a finished rewrite committed there is
  an ordinary data file (kept while referenced, deleted after its tombstone expired), and its
  ``.crc`` companion goes with it.
"""

from __future__ import annotations

import math
import posixpath
from typing import TYPE_CHECKING, Iterable, Mapping

from msgspec import Struct, field
from delta_downgrade.protocol.actions import AddFile, RemoveFile
from delta_downgrade.clock import SYSTEM_CLOCK, Clock, check_duration_ms
from delta_downgrade.protocol.dv_paths import dv_relative_path, table_relative_path
from delta_downgrade.errors import (  # noqa: F401 - re-exported: VACUUM's own errors
    BadInputError, CheckpointUnreadableError, CorruptLogError, VacuumNegativeRetentionError,
    VacuumRetentionTooShortError, naming_table,
)
from delta_downgrade.protocol.support import Operation, ensure_supported
from delta_downgrade.rewrite.staging import STAGING_DIR, is_output_dir_name
from delta_downgrade.storage import FileStatus, is_package_temp
from delta_downgrade.protocol.table_config import DELETED_FILE_RETENTION, HOUR_MS, TableConfig

if TYPE_CHECKING:  # the log modules load pyarrow; vacuum() imports DeltaLog when it runs
    from delta_downgrade.log.delta_log import DeltaLog
    from delta_downgrade.log.replay.reconcile import TableState
    from delta_downgrade.log.snapshot import Snapshot

LOG_DIR = "_delta_log"
CHANGE_DATA_DIR = "_change_data"
ICEBERG_METADATA_DIR = "metadata"
UNIVERSAL_FORMATS = "delta.universalFormat.enabledFormats"
REPLAN_ATTEMPTS = 3
#: The Hadoop output committer's work area inside an output directory (FileOutputCommitter:
#: ``<output>/_temporary/<attempt>/...``); what a killed Spark write leaves.
SPARK_TEMPORARY_DIR = "_temporary"


class VacuumResult(Struct):
    """What a VACUUM found and did. Paths are table-relative, ``/``-separated, decoded."""

    table: str
    version: int
    dry_run: bool
    retention_ms: int
    configured_retention_ms: int
    delete_before_ms: int
    files_to_delete: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    checksum_companions: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    #: Staging directories of this package whose every file is to be deleted (removed when empty).
    staging_dirs: list[str] = field(default_factory=list)
    removed_dirs: list[str] = field(default_factory=list)
    bytes_to_delete: int = 0
    referenced_count: int = 0
    kept_count: int = 0
    recent_unreferenced_count: int = 0

    @property
    def ok(self) -> bool:
        return not self.failed


# --- 2. retention -------------------------------------------------------------------------------

def _hours_display(ms: int) -> str:
    """Whole hours, rounded up, as delta-spark's message shows them (``168 hours``)."""
    return f"{-(-ms // HOUR_MS)} hours"


def resolve_retention_ms(config: TableConfig, retention_hours: float | None, *,
                         enforce_retention_check: bool) -> int:
    """The retention to use: ``retention_hours`` or ``delta.deletedFileRetentionDuration``.

    A negative retention is always refused; one shorter than the table's is refused unless
    ``enforce_retention_check`` is false (delta-spark ``checkRetentionPeriodSafety``).
    """
    configured = config.deleted_file_retention_ms
    if retention_hours is None:
        return configured
    if not math.isfinite(retention_hours) or retention_hours < 0:
        raise VacuumNegativeRetentionError(
            f"retention for VACUUM must be a finite number of hours >= 0, got {retention_hours!r}")
    # The shared bound of every duration (clock.MAX_DURATION_MS): 1e308 hours is finite, but its
    # milliseconds are not, and the cutoff ``now - retention`` would overflow.
    ms = retention_hours * HOUR_MS
    retention = check_duration_ms(round(ms) if math.isfinite(ms) else ms, what="--retention-hours",
                                  text=retention_hours)
    if enforce_retention_check and retention < configured:
        raise VacuumRetentionTooShortError(
            f"Are you sure you would like to vacuum files with such a low retention period "
            f"({retention_hours:g} hours)? If writers are currently writing to this table, "
            f"VACUUM may delete files they are about to commit and corrupt the table. If you are "
            f"certain that no operation (insert/upsert/delete/optimize) is running on the table, "
            f"rerun with --override-retention-check; otherwise use a value not less than "
            f"\"{_hours_display(configured)}\" ({DELETED_FILE_RETENTION})",
            params={"retentionHours": retention_hours,
                    "configuredRetention": _hours_display(configured)})
    return retention


# --- 3. what the log still needs ----------------------------------------------------------------

def tombstone_is_retained(remove: RemoveFile, delete_before_ms: int) -> bool:
    """A tombstone protects its files while ``deletionTimestamp >= now - retention``; a missing
    timestamp counts as 0, i.e. expired (delta-spark ``RemoveFile.delTimestamp``)."""
    return (remove.deletionTimestamp or 0) >= delete_before_ms


def action_paths(action: AddFile | RemoveFile, table_root: str) -> list[str]:
    """The table-relative files an add/remove needs: its data file and its DV file, when each
    lies inside the table."""
    out: list[str] = []
    data = table_relative_path(table_root, action.path)
    if data is not None:
        out.append(data)
    dv = action.dv
    if dv is not None:
        try:
            relative = dv_relative_path(dv, table_root)
        except ValueError as exc:
            # We cannot tell which file this DV lives in, so we cannot tell what is safe to delete.
            raise CorruptLogError(
                f"VACUUM refused: the deletion vector of {action.KEY} {action.path!r} cannot be "
                f"resolved to a file ({exc}); nothing was deleted", table=table_root) from exc
        if relative is not None:
            out.append(relative)
    return out


def retained_paths(state: TableState, table_root: str, delete_before_ms: int) -> set[str]:
    """Every table-relative path the log still needs (module docstring, "What stays")."""
    keep: set[str] = set()
    for add in state.files.values():
        keep.update(action_paths(add, table_root))
    for remove in state.tombstones.values():
        if tombstone_is_retained(remove, delete_before_ms):
            keep.update(action_paths(remove, table_root))
    return keep


# --- 4. what may be deleted at all --------------------------------------------------------------

def is_hidden_name(name: str, partition_columns: Iterable[str], *, iceberg_metadata_hidden: bool) -> bool:
    """delta-spark ``DeltaTableUtils.isHiddenDirectory``, except that ``_delta_index`` stays
    hidden (to be safe): names starting with ``_`` or ``.`` are hidden, except ``_change_data``
    and partition directories ``<column>=…``."""
    if iceberg_metadata_hidden and name == ICEBERG_METADATA_DIR:
        return True
    if not name.startswith(("_", ".")):
        return False
    if name == CHANGE_DATA_DIR:
        return False
    return not any(name.startswith(f"{column}=") for column in partition_columns)


def is_candidate(rel_path: str, partition_columns: Iterable[str], *, iceberg_metadata_hidden: bool) -> bool:
    """True when no component of ``rel_path`` is hidden (``_delta_log`` included)."""
    columns = tuple(partition_columns)
    return not any(is_hidden_name(part, columns, iceberg_metadata_hidden=iceberg_metadata_hidden)
                   for part in rel_path.split("/"))


def package_staging_root(rel_path: str, partition_columns: Iterable[str], *,
                         iceberg_metadata_hidden: bool = False) -> str | None:
    """The staging directory of this package that ``rel_path`` lies in, or None: the run's
    directory ``_delta_downgrade_staging/<id>`` (column-mapping removal of older versions), or
    ``<dir>/<output dir>/_temporary`` (the Spark work area of a rewrite's output directory,
    ``dv-purge-<id>`` or ``rewrite-<id>``: :func:`is_output_dir_name`) when ``<dir>`` is an
    ordinary (listed) directory of the table. Only the ``_temporary`` right below such a
    directory: any other hidden name in it (``_SUCCESS``, ``.part-….crc``) stays hidden."""
    parts = rel_path.split("/")
    if parts[0] == STAGING_DIR and len(parts) > 2:
        return "/".join(parts[:2])
    columns = tuple(partition_columns)
    for i, part in enumerate(parts[:-1]):
        if part == SPARK_TEMPORARY_DIR and i > 0 and is_output_dir_name(parts[i - 1]):
            return "/".join(parts[:i + 1])
        if is_hidden_name(part, columns, iceberg_metadata_hidden=iceberg_metadata_hidden):
            return None
    return None


def is_package_leftover(rel_path: str, partition_columns: Iterable[str], *,
                        iceberg_metadata_hidden: bool = False) -> bool:
    """Hidden, but this package's own: inside a staging directory (:func:`package_staging_root`),
    or a temporary file of this package (``storage.TEMP_NAME_RE``) in a listed directory — never
    anything in ``_delta_log`` or another hidden directory (``cleanup`` handles the log's)."""
    columns = tuple(partition_columns)
    if package_staging_root(rel_path, columns, iceberg_metadata_hidden=iceberg_metadata_hidden):
        return True
    directory = posixpath.dirname(rel_path)
    return is_package_temp(rel_path) and (
        not directory or is_candidate(directory, columns, iceberg_metadata_hidden=iceberg_metadata_hidden))


def iceberg_enabled(configuration: dict[str, str]) -> bool:
    formats = configuration.get(UNIVERSAL_FORMATS, "")
    return "iceberg" in {f.strip().lower() for f in formats.split(",")}


def checksum_companion(rel_path: str) -> str:
    """``dir/name`` → ``dir/.name.crc`` (Hadoop's local checksum file)."""
    directory, name = posixpath.split(rel_path)
    return posixpath.join(directory, f".{name}.crc") if directory else f".{name}.crc"


# --- the operation ------------------------------------------------------------------------------

def _open(log: DeltaLog | str, storage_options: Mapping[str, str] | None = None) -> DeltaLog:
    from delta_downgrade.log.delta_log import DeltaLog

    return log if isinstance(log, DeltaLog) else DeltaLog(log, storage_options=storage_options)


def plan_vacuum(log: DeltaLog, snapshot: Snapshot, *, retention_ms: int, configured_ms: int,
                dry_run: bool, now_ms: int) -> VacuumResult:
    """List the table and decide; deletes nothing."""
    table_root = log.storage.root
    delete_before = now_ms - retention_ms
    state = snapshot.state()
    keep = retained_paths(state, table_root, delete_before)
    metadata = state.metadata
    hide_iceberg = iceberg_enabled(dict(metadata.configuration))
    result = VacuumResult(log.table, snapshot.version, dry_run, retention_ms, configured_ms,
                          delete_before, referenced_count=len(keep))
    columns = tuple(metadata.partitionColumns)
    candidates: list[FileStatus] = []
    # Hadoop's checksum companions (``.name.crc``) seen in the same walk: whether a deleted file
    # has one is answered from the listing, not by a request per file (a HEAD each on an object
    # store, where such files only exist when a Hadoop local file system wrote the table).
    companions: set[str] = set()
    for status in log.storage.walk_files(""):
        if is_candidate(status.path, columns, iceberg_metadata_hidden=hide_iceberg) \
                or is_package_leftover(status.path, columns, iceberg_metadata_hidden=hide_iceberg):
            candidates.append(status)
        elif status.path.endswith(".crc") and posixpath.basename(status.path).startswith("."):
            companions.add(status.path)
    staging_kept: set[str] = set()
    staging_seen: set[str] = set()
    for status in sorted(candidates, key=lambda s: s.path):
        root = package_staging_root(status.path, columns, iceberg_metadata_hidden=hide_iceberg)
        if root is not None:
            staging_seen.add(root)
        if status.path in keep:
            result.kept_count += 1
        elif status.modification_time_ms >= delete_before:
            result.kept_count += 1
            result.recent_unreferenced_count += 1
        else:
            result.files_to_delete.append(status.path)
            result.bytes_to_delete += status.size
            continue
        if root is not None:
            staging_kept.add(root)
    result.staging_dirs = sorted(staging_seen - staging_kept)
    if companions:
        for path in result.files_to_delete:
            companion = checksum_companion(path)
            if companion in companions:
                result.checksum_companions.append(companion)
    return result


def execute_plan(log: DeltaLog, result: VacuumResult) -> None:
    """Delete the planned files (each one on its own: a failure does not stop the others)."""
    for path in result.files_to_delete:
        try:
            if log.storage.delete(path):
                result.deleted.append(path)
        except OSError as exc:
            result.failed[path] = f"{type(exc).__name__}: {exc}"
    for companion in result.checksum_companions:
        try:
            log.storage.delete(companion)
        except OSError as exc:
            result.failed[companion] = f"{type(exc).__name__}: {exc}"
    _remove_staging_dirs(log, result)


def _remove_staging_dirs(log: DeltaLog, result: VacuumResult) -> None:
    """Remove the empty directories of staging areas whose every file was old enough to delete:
    nothing is writing there (a rewrite running now would have fresh files in it). Only where the
    storage can list directories (local files); elsewhere empty directories do not exist or cost
    nothing."""
    storage = log.storage
    if not storage.has_directories:
        return  # an object store: a "directory" is gone with its last key
    parents: set[str] = set()
    for root in result.staging_dirs:
        for d in [*storage.walk_dirs(root), FileStatus(root, 0, 0)]:
            if storage.remove_empty_dir(d.path):
                result.removed_dirs.append(d.path)
        parents.add(posixpath.dirname(root))
    for parent in sorted(parents, key=len, reverse=True):
        # ``_delta_downgrade_staging`` itself, or the output directory (``dv-purge-<id>``,
        # ``rewrite-<id>``) left empty; never a directory with anything in it.
        if parent and (parent == STAGING_DIR or is_output_dir_name(posixpath.basename(parent))):
            if storage.remove_empty_dir(parent):
                result.removed_dirs.append(parent)


def _refuse_damaged_checkpoints(log: DeltaLog) -> None:
    """Refuse (exit 2) a log whose checkpoint other readers cannot use, even though this package
    reads around it (an older checkpoint and the commits): vacuum writes no checkpoint, so it
    would leave the table as unreadable to them as it found it, with fewer files to recover from."""
    problems = log.checkpoint_problems()
    if problems:
        raise CheckpointUnreadableError(
            f"{problems[0]}. This package reads the table from an older checkpoint and the commits "
            f"after it, but Spark and delta-rs fail on it. Restore the damaged file from a backup, or "
            f"let a writer write a new checkpoint (drop-feature writes several), then rerun vacuum "
            f"(nothing was deleted)", table=log.table,
            params={"problems": problems[:10]})


@naming_table("log")
def vacuum(log: DeltaLog | str, *, retention_hours: float | None = None, dry_run: bool = False,
           clock: Clock = SYSTEM_CLOCK, enforce_retention_check: bool = True,
           storage_options: Mapping[str, str] | None = None) -> VacuumResult:
    """VACUUM the table at the latest version (module docstring for the rules).

    Raises :class:`UnsupportedFeaturesError` (``DELTA_UNSUPPORTED_FEATURES_FOR_WRITE``) first,
    dry run or not, when the write protocol has a feature this package cannot write; then
    :class:`VacuumRetentionTooShortError` / :class:`VacuumNegativeRetentionError`. No commit is
    written. When the table gets a new version while we list it, the plan is made again on that
    version (up to ``REPLAN_ATTEMPTS`` times), so a concurrent commit that re-adds an old file
    does not lose it; delta-spark plans once. Files that vanished before we deleted them are neither in ``deleted`` nor in
    ``failed``; files that could not be deleted are in ``failed``.
    """
    log = _open(log, storage_options).refresh()
    # every action the plan replays read and checked before anything is deleted
    snapshot = log.validated_snapshot(check_read=False, replay="python")
    _refuse_damaged_checkpoints(log)
    ensure_supported(snapshot.protocol, Operation.VACUUM,
                     version=snapshot.version)
    config = TableConfig(snapshot.metadata.configuration)
    retention_ms = resolve_retention_ms(config, retention_hours,
                                        enforce_retention_check=enforce_retention_check)
    now_ms = clock.now_ms()
    result = plan_vacuum(log, snapshot, retention_ms=retention_ms,
                         configured_ms=config.deleted_file_retention_ms, dry_run=dry_run,
                         now_ms=now_ms)
    for _ in range(REPLAN_ATTEMPTS):
        if log.refresh().latest_version() == result.version:
            break
        # Another writer committed while we listed: plan again on its version (which may, e.g.,
        # re-add a file whose tombstone had expired), with the same clock and retention.
        snapshot = log.validated_snapshot(check_read=False, replay="python")
        ensure_supported(snapshot.protocol, Operation.VACUUM,
                         version=snapshot.version)
        result = plan_vacuum(log, snapshot, retention_ms=retention_ms,
                             configured_ms=config.deleted_file_retention_ms, dry_run=dry_run,
                             now_ms=now_ms)
    if not dry_run:
        execute_plan(log, result)
    return result


__all__ = [
    "VacuumResult", "VacuumRetentionTooShortError", "VacuumNegativeRetentionError", "vacuum",
    "plan_vacuum", "execute_plan", "resolve_retention_ms",
    "retained_paths", "is_candidate",
]
