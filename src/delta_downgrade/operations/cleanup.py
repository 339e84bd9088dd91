"""Metadata cleanup (log truncation): PROTOCOL.md "Metadata Cleanup" under Checkpoint Protection.

Planning is pure (:func:`build_plan` on a :class:`CleanupInputs`); :func:`plan_cleanup` only
gathers the inputs from the log, and :func:`execute_cleanup` only deletes what a plan lists, in
the order of rule (d).

A cleanup only deletes: it writes no commit, no checkpoint and no ``_last_checkpoint`` (rule (d)
is an order of deletions), so it does not ask whether the storage creates files atomically
(:func:`~delta_downgrade.log.commit.require_atomic_commits`, a probe that writes on an object
store). TRUNCATE HISTORY, which commits, is a drop (``operations/truncate.py``) and asks.

Procedure (PROTOCOL.md "Metadata Cleanup", Checkpoint Protection RFC)
---------------------------------------------------------------------
1. ``cutoff = truncate(now - retention, granularity)`` in UTC; granularity ``day`` (midnight,
   ``delta.logRetentionDuration``), ``hour``, or ``minute`` (TRUNCATE HISTORY,
   ``delta.dropFeatureTruncateHistory.retentionDuration``).
2. A commit has *expired* when its modification time, made monotonic the way Spark does it (a
   later version whose mtime is not after its predecessor's counts as predecessor + 1 ms), is
   ``<= cutoff``. Only commit files carry time: a checkpoint may be written long after its
   version (barrier checkpoints, manual checkpoints, rewrites), so its mtime does not date the
   version. (Spark also looks at checkpoint and ``.crc`` mtimes.)
3. The *cutoff checkpoint* ``C`` is the newest complete checkpoint whose preceding commit (the
   newest commit ``< C``; for ``C = 0``, commit 0 itself) has expired, and whose every instance at
   ``C`` can be read (so the fallback of readers never needs an older, deleted checkpoint). No
   such ``C``: nothing to do. This is Spark's arithmetic: its groups run from one checkpoint to the
   next and a group goes when its last file expired, so everything strictly before the newest
   checkpoint whose preceding file expired is deleted.
   A checkpoint ``C > 0`` with no commit before it left qualifies at once: an earlier cleanup
   deleted those commits, and cleanups delete only expired history, so what remains below ``C``
   (``.crc`` files, checkpoints of an interrupted run) is no younger. This is what lets a rerun
   finish an interrupted cleanup with the same result (Spark judges such leftovers by their own
   mtimes instead).
4. Candidates: commits, checkpoints (every part, complete or not) and ``.crc`` files of versions
   ``< C``; compacted files ``<x>.<y>.compacted.json`` with ``y < C`` (PROTOCOL.md says
   ``x <= C``; one that reaches into kept versions is left alone: it is optional for readers and
   harmless); ``_staged_commits`` with version ``<= C``; files of ``_sidecars`` that no remaining
   checkpoint references (UUID-named, or classic following the V2 spec) and that are older than
   one day. Unknown files are never deleted,
   except this package's own temporary files (``.<name>.<pid>.<hex>.tmp``, see
   :data:`delta_downgrade.storage.TEMP_NAME_RE`) older than :data:`STALE_TEMP_MIN_AGE_MS`: they are
   not part of the log (PROTOCOL.md "Delta Log Entries" names no such file), only what a crashed
   or failed write left behind. They go whatever the checkpoint-protection gate decides.

Backward compatibility of UUID-named checkpoints
-----------------------------------------------
PROTOCOL.md "Handling Backward compatibility while moving to UUID-named v2 Checkpoints": writers
should create classic-named checkpoints with the content of the UUID-named ones often enough that
older clients, which do not recognise UUID-named checkpoints, can still read the protocol and
fail gracefully. A cleanup that deletes history is when they would lose the last thing they can
read (commit 0, or a checkpoint they can name). So when a plan deletes commits or checkpoints of a
table with ``v2Checkpoint`` in its protocol, and the checkpoint the latest version is read from is
UUID-named with no classic or multi-part checkpoint at its version, the plan also writes its
classic-named copy (:mod:`delta_downgrade.log.checkpoint.classic_compat`) - delta-spark's
``createSinglePartCheckpointForBackwardCompat``, at the same version. That version is at or after
the cutoff checkpoint, so this cleanup deletes nothing there, and the copy references the same
sidecars as the kept UUID-named checkpoint. The copy is written before the first deletion, so no
moment exists where the history is gone and no classic checkpoint is; a rerun after a crash finds
the copy and does not write it again. The copy is a checkpoint write: it is planned only when rule
(b) allows a checkpoint at its version and this package supports that version's protocol for
checkpoints (:func:`plan_compat_checkpoint`); otherwise the cleanup goes on without it (the
protocol says "should").

Checkpoint Protection (RFC) — the rules as this module applies them
-------------------------------------------------------------------
The rules are decided by :mod:`delta_downgrade.protocol.checkpoint_protection` (``rule_a``,
``rule_c``, ``rule_d``); this module gathers their inputs and turns their decisions into a plan.
They apply only when ``checkpointProtection`` is in the latest protocol. ``V`` is
``delta.requireCheckpointProtectionBeforeVersion`` of the latest metadata (0 when unset).

* ``V <= 0``: no protection; plain cleanup.
* **(a) + (c), all-at-once form** — ``C >= V``: the plan deletes every version ``< V`` in this one
  operation, so it may delete everything before ``C``, checkpoints ``< V`` included.
* **(a)** — ``C < V``: no checkpoint is deleted at all (every candidate checkpoint is ``< C < V``),
  and neither is a sidecar that a kept v2 checkpoint references.
* **(c)** — ``C < V``: commits (and ``.crc`` / compacted / staged files) ``< C`` are deleted only if
  this package supports, for reading *and* writing, the protocol of every version from the first
  commit deleted up to and including ``C``, as found by replaying the commits themselves
  (:meth:`DeltaLog.protocol_history`), not from ``.crc`` files. A version whose protocol cannot be
  established (not reconstructable any more) counts as unsupported. Otherwise the whole cleanup is
  skipped (``allowed=False``) — skipping is not an error. When no commit is deleted (only
  leftovers of versions whose commits are already gone), there is no range to check.
  ``partial_when_supported=False`` turns this exception off (Spark's
  ``allowMetadataCleanupWhenAllProtocolsSupported=false``): with ``C < V`` nothing is deleted.
* Not copied from Spark: its "a checkpoint already exists at end+1" shortcut (``MetadataCleanup``'s
  gate). It deletes checkpoints ``< V`` without removing all history ``< V``, which rule (a)
  forbids.
* **(d)** — deletion order (:meth:`CleanupPlan.ordered_deletions`): every commit (with its staged
  copy and ``.crc``) ascending, then the checkpoint files ascending, then compacted files and
  sidecars. Until the last commit is gone no checkpoint is touched, so an interrupted run never
  leaves a commit whose barrier checkpoint (the nearest checkpoint at or after
  ``max(commit, V)``) is gone, every retained version is read through the same checkpoint as
  before, and checkpoint ``C`` and everything after it are never touched. A v2 checkpoint goes
  before its sidecars, so no remaining checkpoint ever misses one.

Beyond the RFC: cleanup is a write, so a table whose latest protocol this package cannot read and
write is refused with ``DELTA_UNSUPPORTED_FEATURES_FOR_WRITE`` (the ``Operation.CLEANUP`` gate of
:mod:`delta_downgrade.protocol.support`; also for a dry run, like VACUUM DRY RUN).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Callable, Iterable, Mapping, Sequence

from msgspec import Struct, field
from msgspec.structs import replace
from delta_downgrade.clock import SYSTEM_CLOCK, Clock, to_utc_iso
from delta_downgrade.errors import BadInputError, ConcurrentWriteError, DeltaDowngradeError, naming_table
from delta_downgrade.log.read.checkpoint_reader import CheckpointReader
from delta_downgrade.log.delta_log import DeltaLog, ProtocolSpan, Refresh
from delta_downgrade.log.checkpoint.classic_compat import write_classic_copy
from delta_downgrade.log.checkpoint.classic_writer import V2_CHECKPOINT_FEATURE
from delta_downgrade.log.format.file_names import SIDECAR_DIR, STAGED_COMMITS_DIR, classic_checkpoint_path, classify
from delta_downgrade.log.read.listing import CheckpointInstance, LogListing
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from delta_downgrade.protocol import checkpoint_protection as rules
from delta_downgrade.protocol.checkpoint_protection import first_unsupported_version
from delta_downgrade.protocol.support import Operation, ensure_supported, unsupported_features
from delta_downgrade.storage import FileStatus, is_package_temp
from delta_downgrade.protocol.table_config import DAY_MS, HOUR_MS, MINUTE_MS, TableConfig

__all__ = [
    "CleanupInputs", "CleanupPlan", "CleanupResult", "build_plan", "cleanup_expired_logs",
    "cutoff_timestamp_ms", "earliest_truncation_time_ms", "execute_cleanup", "first_unsupported_version",
    "history_truncated_before", "monotonic_commit_times", "plan_cleanup", "plan_compat_checkpoint",
    "select_cutoff_checkpoint",
]

GRANULARITY_MS: Mapping[str, int] = {"day": DAY_MS, "hour": HOUR_MS, "minute": MINUTE_MS}
#: PROTOCOL.md "Metadata Cleanup" step 5: unreferenced sidecars go once older than a day (a
#: checkpoint being written right now may reference a sidecar it has just written).
SIDECAR_MIN_AGE_MS = DAY_MS
#: A temporary file of this package lives for the seconds of one write (write, fsync, link or
#: rename); one older than this belongs to a write that crashed or failed. Judged by age, not by
#: its pid, which may be reused or live on another host.
STALE_TEMP_MIN_AGE_MS = HOUR_MS
#: Where this package writes log files (and so where its temporary files can be).
LOG_DIRS = ("_delta_log", SIDECAR_DIR, STAGED_COMMITS_DIR)

# Machine-readable decisions (CleanupPlan.decision).
NO_CHECKPOINT = "no-cutoff-checkpoint"
NOTHING_TO_DELETE = "nothing-to-delete"
UNPROTECTED = "no-checkpoint-protection"
ALL_AT_ONCE = "all-before-boundary-at-once"
SUPPORTED_RANGE = "supported-range-checkpoints-kept"
SKIPPED_UNSUPPORTED = "skipped-unsupported-protocol"
SKIPPED_PARTIAL = "skipped-partial-cleanup"


# --- time ----------------------------------------------------------------------------------------

def _granularity_ms(granularity: str) -> int:
    try:
        return GRANULARITY_MS[granularity.strip().lower()]
    except (KeyError, AttributeError):
        raise BadInputError(f"granularity must be one of {sorted(GRANULARITY_MS)}, got {granularity!r}") \
            from None


def cutoff_timestamp_ms(now_ms: int, retention_ms: int, granularity: str = "day") -> int:
    """``truncate(now - retention, granularity)`` in UTC (epoch milliseconds are UTC)."""
    if retention_ms < 0:
        raise BadInputError(f"retention must not be negative, got {retention_ms} ms")
    unit = _granularity_ms(granularity)
    return ((now_ms - retention_ms) // unit) * unit


def _ceil_to(epoch_ms: int, unit: int) -> int:
    return -(-epoch_ms // unit) * unit


def monotonic_commit_times(commits: Mapping[int, FileStatus]) -> dict[int, int]:
    """Commit mtimes, adjusted as Spark does: in version order, a commit whose mtime is not after
    its predecessor's counts as predecessor + 1 ms (clock skew must not make a newer commit expire
    before an older one)."""
    out: dict[int, int] = {}
    previous: int | None = None
    for version in sorted(commits):
        mtime = commits[version].modification_time_ms
        if previous is not None and mtime <= previous:
            mtime = previous + 1
        out[version] = previous = mtime
    return out


# --- inputs (gathered by plan_cleanup, or built by hand in tests) ----------------------------------

class CleanupInputs(Struct, frozen=True):
    """Everything the planner looks at, read from the log at one moment.

    ``sidecar_refs`` maps a checkpoint that may have sidecars (by its paths) to the sidecar paths
    it references, or to None when it could not be read: every UUID-named checkpoint, and the
    classic ones, which may follow the V2 spec too (PROTOCOL.md "Classic checkpoint"); a classic
    checkpoint missing from it counts as V1 spec (no sidecars). ``unreadable_checkpoints`` are versions with an instance that
    cannot be read; they never become the cutoff checkpoint.
    """

    listing: LogListing
    latest_version: int
    checkpoint_protection: bool = False
    boundary: int = 0
    staged_commits: tuple[tuple[int, FileStatus], ...] = ()
    sidecars: tuple[FileStatus, ...] = ()
    sidecar_refs: Mapping[tuple[str, ...], frozenset[str] | None] = field(default_factory=dict)
    unreadable_checkpoints: frozenset[int] = frozenset()
    temps: tuple[FileStatus, ...] = ()   # this package's temporary files in the log directories
    #: The checkpoint the latest version is read from, and the protocol at its version (the
    #: backward-compatibility copy of a UUID-named checkpoint, :func:`plan_compat_checkpoint`).
    newest_checkpoint: CheckpointInstance | None = None
    newest_checkpoint_protocol: Protocol | None = None
    #: ``v2Checkpoint`` is in the latest protocol.
    v2_checkpoint_feature: bool = False


# --- the plan ------------------------------------------------------------------------------------

_COMMIT_RANK = {"commit": 0, "staged_commit": 1, "crc": 2}


class CleanupPlan(Struct, frozen=True):
    """What a cleanup deletes and why. ``allowed=False``: the checkpoint-protection gate said no,
    nothing is deleted (``delete_*`` are empty). Paths are table-root relative."""

    cutoff_ms: int
    cutoff_checkpoint: int | None
    delete_commits: tuple[str, ...]
    delete_checkpoints: tuple[str, ...]
    delete_other: tuple[str, ...]
    allowed: bool
    reason: str
    truncates_before: int | None
    # Context, for reports and for execute_cleanup's staleness check.
    decision: str = ""
    checkpoint_protection: bool = False
    boundary_version: int | None = None
    latest_version: int | None = None
    kept_checkpoints: tuple[int, ...] = ()
    retention_ms: int | None = None
    granularity: str = "day"
    #: Stale temporary files of this package; not log files, so deleted whatever ``allowed`` says
    #: and not counted in :attr:`num_deletions` / :meth:`ordered_deletions`.
    delete_temps: tuple[str, ...] = ()
    #: The UUID-named checkpoint whose classic-named copy is written before the first deletion
    #: (module docstring, "Backward compatibility of UUID-named checkpoints"), or None; and why.
    compat_source: CheckpointInstance | None = None
    compat_reason: str = ""

    @property
    def compat_checkpoint(self) -> str | None:
        """The path of the classic-named copy the plan writes, or None."""
        if self.compat_source is None:
            return None
        return classic_checkpoint_path(self.compat_source.version)

    @property
    def num_deletions(self) -> int:
        return len(self.delete_commits) + len(self.delete_checkpoints) + len(self.delete_other)

    def ordered_deletions(self) -> list[str]:
        """Rule (d): delete commits before their checkpoints.

        1. commits ascending; at each version the commit, then its staged copy, then its ``.crc``;
        2. checkpoint files, ascending by version (all parts of one checkpoint together);
        3. compacted files, then sidecars — after the v2 checkpoints that referenced them.

        A run stopped after any single deletion leaves every checkpoint in place as long as one
        commit of the plan remains, so no remaining commit loses the checkpoint that hides it.
        """
        commitlike: list[tuple[int, int, str]] = []
        rest: list[tuple[int, int, str]] = []
        for path in (*self.delete_commits, *self.delete_other):
            lf = classify(path)
            if lf.kind in _COMMIT_RANK and lf.version is not None:
                commitlike.append((lf.version, _COMMIT_RANK[lf.kind], path))
            elif lf.kind == "compacted":
                rest.append((0, lf.end_version or 0, path))
            else:
                rest.append((1, 0, path))
        checkpoints = sorted(((classify(p).version or 0, p) for p in self.delete_checkpoints))
        commits = sorted(commitlike)
        order = rules.rule_d([*(("commit", v) for v, rank, _ in commits if rank == 0),
                              *(("checkpoint", v) for v, _ in checkpoints)])
        if not order.allowed:  # the sort above makes this impossible; never delete out of order
            raise AssertionError(order.reason)
        return [p for *_, p in commits] + [p for _, p in checkpoints] + [p for *_, p in sorted(rest)]


class CleanupResult(Struct):
    deleted: list[str]
    plan: CleanupPlan
    written: list[str] = field(default_factory=list)  # the classic-named copy, when written


# --- pure planning ---------------------------------------------------------------------------------

def _reference_time(version: int, times: Mapping[int, int], ordered: Sequence[int]) -> int | None:
    """When the history before checkpoint ``version`` counts as old: the (adjusted) time of the
    newest commit before it. For version 0, commit 0 itself. None when no commit before it is left:
    an earlier cleanup deleted them, and cleanups only delete expired history, so whatever remains
    below (``.crc`` files, checkpoints of an interrupted run) is no younger than what it deleted.
    ``ordered`` is ``sorted(times)``."""
    i = bisect_left(ordered, version)
    if i > 0:
        return times[ordered[i - 1]]
    if version == 0 and 0 in times:
        return times[0]
    return None


def select_cutoff_checkpoint(listing: LogListing, cutoff_ms: int, *,
                             exclude: Iterable[int] = ()) -> int | None:
    """Step 3: the newest complete checkpoint whose preceding commit has expired (or that has no
    commit before it any more)."""
    times = monotonic_commit_times(listing.commits)
    ordered = sorted(times)
    skip = set(exclude)
    for version in sorted(set(listing.checkpoint_versions) - skip, reverse=True):
        reference = _reference_time(version, times, ordered)
        if reference is None or reference <= cutoff_ms:
            return version
    return None


class _Candidates(Struct, frozen=True):
    commits: list[tuple[int, str]]
    checkpoints: list[CheckpointInstance]
    crcs: list[tuple[int, str]]
    compactions: list[tuple[int, int, str]]
    staged: list[tuple[int, str]]


def _candidates(inputs: CleanupInputs, c: int) -> _Candidates:
    listing = inputs.listing
    return _Candidates(
        commits=sorted((v, s.path) for v, s in listing.commits.items() if v < c),
        checkpoints=[ck for ck in listing.checkpoints if ck.version < c],
        crcs=sorted((v, s.path) for v, s in listing.crcs.items() if v < c),
        compactions=sorted((lf.version or 0, lf.end_version or 0, s.path) for lf, s in listing.compactions
                           if lf.end_version is not None and lf.end_version < c),
        staged=sorted((v, s.path) for v, s in inputs.staged_commits if v <= c),
    )


def _sidecars_to_delete(inputs: CleanupInputs, kept: Sequence[CheckpointInstance], now_ms: int) -> list[str]:
    """PROTOCOL.md step 4–5: sidecars no kept v2 checkpoint references, older than a day. When the
    references of a kept v2 checkpoint are unknown, no sidecar is deleted."""
    if not inputs.sidecars:
        return []
    referenced: set[str] = set()
    for ck in kept:
        if ck.kind == "multipart" or (ck.kind == "classic" and ck.paths not in inputs.sidecar_refs):
            continue  # V1 spec: no sidecars
        refs = inputs.sidecar_refs.get(ck.paths)
        if refs is None:
            return []
        referenced |= refs
    return sorted(s.path for s in inputs.sidecars
                  if s.path not in referenced and s.modification_time_ms <= now_ms - SIDECAR_MIN_AGE_MS)


def stale_temps(inputs: CleanupInputs, now_ms: int) -> list[str]:
    """This package's temporary files older than :data:`STALE_TEMP_MIN_AGE_MS`."""
    return sorted(t.path for t in inputs.temps
                  if is_package_temp(t.path) and t.modification_time_ms <= now_ms - STALE_TEMP_MIN_AGE_MS)


def plan_compat_checkpoint(inputs: CleanupInputs, cutoff_checkpoint: int, *, deletes_history: bool,
                           boundary: int | None) -> tuple[CheckpointInstance | None, str]:
    """The UUID-named checkpoint whose classic-named copy a cleanup writes before it deletes
    (module docstring, "Backward compatibility of UUID-named checkpoints"), or None; with why.

    delta-spark's ``createSinglePartCheckpointForBackwardCompat``: only when the cleanup deletes
    history (``deletes_history``: commits or checkpoints), the table has ``v2Checkpoint``, the
    checkpoint the latest version is read from is UUID-named and no classic or multi-part
    checkpoint is complete at its version. Beyond it: the version is not before the cutoff
    checkpoint (nothing this cleanup deletes), and a checkpoint may be written there - rule (b)
    and this package's checkpoint gate on that version's protocol."""
    newest = inputs.newest_checkpoint
    if not deletes_history:
        return None, "no classic copy: the cleanup deletes no commit and no checkpoint"
    if not inputs.v2_checkpoint_feature:
        return None, "no classic copy: v2Checkpoint is not in the protocol"
    if newest is None or newest.kind != "v2":
        return None, "no classic copy: the newest checkpoint is not UUID-named"
    if newest.version < cutoff_checkpoint:
        return None, (f"no classic copy: the newest readable checkpoint {newest.version} is before the "
                      f"cutoff checkpoint {cutoff_checkpoint}")
    if any(ck.version == newest.version and ck.kind != "v2" and ck.complete for ck in inputs.listing.checkpoints):
        return None, f"no classic copy: a classic-named checkpoint exists at version {newest.version}"
    protocol = inputs.newest_checkpoint_protocol
    if protocol is None:
        return None, f"no classic copy: the protocol at version {newest.version} is not known"
    allowed = rules.rule_b(newest.version, protocol, boundary=boundary)
    if not allowed.allowed:
        return None, f"no classic copy: {allowed.reason}"
    missing = unsupported_features(protocol, Operation.CHECKPOINT)
    if missing:
        return None, (f"no classic copy: this package does not write checkpoints of a protocol with "
                      f"{', '.join(sorted(missing))} (version {newest.version})")
    return newest, (f"classic-named copy of the UUID-named checkpoint {newest.version} written before the "
                    f"first deletion (PROTOCOL.md 'Handling Backward compatibility while moving to "
                    f"UUID-named v2 Checkpoints')")


def build_plan(inputs: CleanupInputs, *, cutoff_ms: int, now_ms: int,
               spans: Sequence[ProtocolSpan] | None = None, cutoff_checkpoint: int | None = None,
               partial_when_supported: bool = True, retention_ms: int | None = None,
               granularity: str = "day") -> CleanupPlan:
    """The cleanup plan, from the inputs alone (no I/O).

    ``cutoff_checkpoint`` defaults to :func:`select_cutoff_checkpoint`. ``spans`` (the protocol
    history) is only consulted for rule (c) when ``C < V``.
    """
    listing = inputs.listing
    protected = inputs.checkpoint_protection
    boundary = inputs.boundary if protected else None  # V; None: no checkpointProtection
    c = cutoff_checkpoint
    if c is None:
        c = select_cutoff_checkpoint(listing, cutoff_ms, exclude=inputs.unreadable_checkpoints)

    def plan(*, allowed: bool, reason: str, decision: str, commits: Sequence[str] = (),
             checkpoints: Sequence[str] = (), other: Sequence[str] = (),
             kept: Sequence[int] = ()) -> CleanupPlan:
        compat, compat_reason = (None, "")
        if allowed and c is not None:
            compat, compat_reason = plan_compat_checkpoint(
                inputs, c, deletes_history=bool(commits or checkpoints), boundary=boundary)
        return CleanupPlan(
            cutoff_ms=cutoff_ms, cutoff_checkpoint=c, delete_commits=tuple(commits),
            delete_checkpoints=tuple(checkpoints), delete_other=tuple(other), allowed=allowed,
            reason=reason, truncates_before=c if allowed and c is not None else None,
            decision=decision, checkpoint_protection=protected,
            boundary_version=boundary,
            latest_version=inputs.latest_version, kept_checkpoints=tuple(sorted(set(kept))),
            retention_ms=retention_ms, granularity=granularity,
            delete_temps=tuple(stale_temps(inputs, now_ms)),
            compat_source=compat, compat_reason=compat_reason)

    all_checkpoint_versions = sorted({ck.version for ck in listing.checkpoints if ck.complete})
    if c is None:
        return plan(allowed=True, decision=NO_CHECKPOINT, kept=all_checkpoint_versions,
                    reason=f"no complete checkpoint whose preceding commit is older than the cutoff "
                           f"{to_utc_iso(cutoff_ms)}: nothing to clean up (PROTOCOL.md Metadata "
                           f"Cleanup step 2)")

    cand = _candidates(inputs, c)
    # Rule (a): unless this cleanup removes every version < V (C >= V), no checkpoint < V goes —
    # and every candidate checkpoint is < C.
    checkpoint_rule = rules.rule_a([ck.version for ck in cand.checkpoints], boundary=boundary,
                                   truncates_before=c)
    keep_checkpoints = not checkpoint_rule.allowed
    kept_instances = [ck for ck in listing.checkpoints if ck.version >= c or keep_checkpoints]
    deleted_instances = [] if keep_checkpoints else cand.checkpoints
    sidecars = _sidecars_to_delete(inputs, kept_instances, now_ms)

    commit_paths = [p for _, p in cand.commits]
    checkpoint_paths = [p for ck in sorted(deleted_instances, key=lambda k: (k.version, k.kind)) for p in ck.paths]
    other = ([p for _, p in cand.crcs] + [p for _, p in cand.staged] + [p for *_, p in cand.compactions]
             + sidecars)
    kept_versions = sorted({ck.version for ck in kept_instances if ck.complete})
    if not (commit_paths or checkpoint_paths or other):
        return plan(allowed=True, decision=NOTHING_TO_DELETE, kept=kept_versions,
                    reason=f"nothing older than the cutoff checkpoint {c} is left to delete")

    # Rule (c) decides whether the commits go. No commit deleted (only .crc, compacted, staged
    # files of versions whose commits an earlier cleanup deleted, sidecars no checkpoint
    # references): that is not history anybody can read, so there is no range to check.
    history_rule = rules.rule_c(spans, boundary=boundary, truncates_before=c,
                                first_deleted=cand.commits[0][0] if cand.commits else None,
                                allow_supported_range=partial_when_supported)
    clause = history_rule.clause
    if clause in (rules.NO_BOUNDARY, rules.ALL_AT_ONCE):
        return plan(allowed=True, decision=UNPROTECTED if clause == rules.NO_BOUNDARY else ALL_AT_ONCE,
                    commits=commit_paths, checkpoints=checkpoint_paths, other=other,
                    kept=kept_versions, reason=history_rule.reason)
    if not history_rule.allowed:
        return plan(allowed=False, kept=all_checkpoint_versions, reason=history_rule.reason,
                    decision=SKIPPED_UNSUPPORTED if clause == rules.UNSUPPORTED_VERSION else SKIPPED_PARTIAL)
    reason = f"{checkpoint_rule.reason}; {history_rule.reason}"
    if clause == rules.NO_RANGE and not other:
        return plan(allowed=True, decision=NOTHING_TO_DELETE, kept=kept_versions,
                    reason=f"{checkpoint_rule.reason}; nothing else is left to delete")
    return plan(allowed=True, decision=SUPPORTED_RANGE, commits=commit_paths, other=other,
                kept=kept_versions, reason=reason)


# --- gathering inputs (I/O) ----------------------------------------------------------------------

def _latest_protection(log: DeltaLog) -> tuple[bool, int]:
    """(checkpointProtection?, V) of the latest version, after the cleanup gate: metadata cleanup
    is a write (:class:`~delta_downgrade.protocol.support.Operation`)."""
    snapshot = log.snapshot(check_read=False)  # (refuses an invalid protocol)
    protocol = snapshot.protocol
    ensure_supported(protocol, Operation.CLEANUP)
    protected = CHECKPOINT_PROTECTION in protocol.features
    boundary = snapshot.boundary_version if protected else None
    return protected, max(0, boundary or 0)


def _checkpoint_readable(log: DeltaLog, listing: LogListing, version: int) -> bool:
    """Every complete instance at ``version`` yields a protocol and metadata and is the checkpoint
    its writer recorded (:func:`~delta_downgrade.log.read.checkpoint_integrity.verify_checkpoint`:
    sidecar sizes, action counts): a reader that prefers any of them will not fall back to an
    older checkpoint we are about to delete. An instance this log wrote itself (a drop's own
    checkpoints, asked about as the drop ends) is not read back: it holds the rows its writer put
    there, published whole (:meth:`~delta_downgrade.log.delta_log.DeltaLog.wrote_checkpoint`)."""
    from delta_downgrade.log.read.checkpoint_integrity import verify_checkpoint

    hint = listing.last_checkpoint
    for ck in listing.checkpoints_from(version):
        if ck.version != version or not ck.complete or log.wrote_checkpoint(ck):
            continue
        try:
            found = CheckpointReader(log.storage, ck).actions(["protocol", "metaData"])
            verify_checkpoint(log.storage, ck, hint, hinted=hint is not None and hint.get("version") == version
                              and listing.is_hinted(ck))
        except (DeltaDowngradeError, OSError, ValueError):
            return False
        if not found.get("protocol") or not found.get("metaData"):
            return False
    return True


def damaged_checkpoints_from(log: DeltaLog, boundary: int) -> list[int]:
    """The versions ``>= boundary`` whose checkpoints are damaged (:func:`_checkpoint_readable`),
    up to the first sound one."""
    listing = log.whole_listing()
    out = []
    for version in listing.checkpoint_versions:
        if version < boundary:
            continue
        if _checkpoint_readable(log, listing, version):
            break
        out.append(version)
    return out


def _gather_inputs(log: DeltaLog, protected: bool, boundary: int) -> CleanupInputs:
    listing = log.whole_listing()  # rules (a)-(d) need every commit and checkpoint
    staged = []
    for status in log.storage.list_dir(STAGED_COMMITS_DIR):
        lf = classify(status.path)
        if lf.kind == "staged_commit" and lf.version is not None:
            staged.append((lf.version, status))
    sidecars = tuple(s for s in log.storage.list_dir(SIDECAR_DIR) if classify(s.path).kind == "sidecar")
    refs: dict[tuple[str, ...], frozenset[str] | None] = {}
    if sidecars:
        for ck in listing.checkpoints:
            if ck.kind == "multipart":  # V1 only: no sidecars (DeltaLog.sidecars_of)
                continue
            try:
                refs[ck.paths] = frozenset(log.sidecars_of(ck))
            except (DeltaDowngradeError, OSError, ValueError):
                refs[ck.paths] = None
    temps = tuple(s for d in LOG_DIRS for s in log.storage.list_dir(d) if is_package_temp(s.path))
    newest, newest_protocol, v2_feature = _newest_checkpoint(log)
    return CleanupInputs(listing=listing, latest_version=log.latest_version(),
                         checkpoint_protection=protected, boundary=boundary,
                         staged_commits=tuple(sorted(staged, key=lambda t: (t[0], t[1].path))),
                         sidecars=sidecars, sidecar_refs=refs, temps=temps,
                         newest_checkpoint=newest, newest_checkpoint_protocol=newest_protocol,
                         v2_checkpoint_feature=v2_feature)


def _newest_checkpoint(log: DeltaLog) -> tuple[CheckpointInstance | None, Protocol | None, bool]:
    """The checkpoint the latest version is read from, the protocol at its version (only read
    when it is UUID-named on a table with ``v2Checkpoint``: the backward-compatibility copy needs
    it), and whether ``v2Checkpoint`` is in the latest protocol."""
    latest = log.snapshot(check_read=False)
    v2_feature = V2_CHECKPOINT_FEATURE in latest.protocol.features
    newest = latest.segment.checkpoint
    if newest is None or newest.kind != "v2" or not v2_feature:
        return newest, None, v2_feature
    if newest.version == latest.version:
        return newest, latest.protocol, v2_feature
    try:
        protocol: Protocol | None = log.snapshot(newest.version, check_read=False).protocol
    except DeltaDowngradeError:
        protocol = None  # unknown: no copy is planned
    return newest, protocol, v2_feature


def plan_cleanup(log: DeltaLog, *, retention_ms: int, granularity: str = "day",
                 clock: Clock = SYSTEM_CLOCK, partial_when_supported: bool = True) -> CleanupPlan:
    """Plan the metadata cleanup of ``log`` as of ``clock``: nothing is deleted.

    Raises :class:`UnsupportedFeaturesError` (for write) when the latest protocol has features this
    package cannot write. ``partial_when_supported=False`` disables rule (c)'s supported-range
    exception (see the module docstring).
    """
    granularity = granularity.strip().lower() if isinstance(granularity, str) else granularity
    _granularity_ms(granularity)
    log.refresh()
    protected, boundary = _latest_protection(log)
    now = clock.now_ms()
    cutoff = cutoff_timestamp_ms(now, retention_ms, granularity)
    inputs = _gather_inputs(log, protected, boundary)

    # The cutoff checkpoint must be readable; otherwise fall back to an older one.
    unreadable: set[int] = set()
    while True:
        c = select_cutoff_checkpoint(inputs.listing, cutoff, exclude=unreadable)
        if c is None or _checkpoint_readable(log, inputs.listing, c):
            break
        unreadable.add(c)
    inputs = replace(inputs, unreadable_checkpoints=frozenset(unreadable))

    spans: Sequence[ProtocolSpan] | None = None
    if protected and boundary > 0 and c is not None and c < boundary and partial_when_supported:
        # Rule (c) needs the protocol of every version in the range; read from the commits.
        try:
            spans = log.protocol_history()
        except DeltaDowngradeError:
            spans = None  # unknown protocols count as unsupported
    return build_plan(inputs, cutoff_ms=cutoff, now_ms=now, spans=spans, cutoff_checkpoint=c,
                      partial_when_supported=partial_when_supported, retention_ms=retention_ms,
                      granularity=granularity)


# --- execution (I/O) -----------------------------------------------------------------------------

def _check_still_current(log: DeltaLog, plan: CleanupPlan) -> None:
    """The gate's decision depends on the latest protocol and boundary; a concurrent DROP FEATURE
    may have raised V since planning. Refuse a stale plan rather than break rule (a)."""
    log.refresh()
    protected, boundary = _latest_protection(log)
    planned_boundary = plan.boundary_version if plan.checkpoint_protection else None
    now_boundary = boundary if protected else None
    if protected != plan.checkpoint_protection or (protected and (planned_boundary or 0) != now_boundary):
        raise ConcurrentWriteError(
            f"the table's checkpoint protection changed since the cleanup was planned (boundary "
            f"{planned_boundary} -> {now_boundary}); nothing was deleted. Plan the cleanup again",
            table=log.table)


def execute_cleanup(log: DeltaLog, plan: CleanupPlan, *,
                    on_delete: Callable[[str], None] | None = None) -> CleanupResult:
    """Delete the plan's files in the order of rule (d). ``on_delete(path)`` is called after each
    file is deleted. A plan the gate refused deletes nothing. Files already gone (another cleaner)
    are skipped; rerunning after an interruption is safe."""
    deleted: list[str] = []
    written: list[str] = []
    ordered = plan.ordered_deletions()
    if plan.allowed and ordered:
        _check_still_current(log, plan)
        try:
            compat = _write_compat_checkpoint(log, plan)
            if compat is not None:
                written.append(compat)
            for path in ordered:
                if log.storage.delete(path):
                    deleted.append(path)
                    if on_delete is not None:
                        on_delete(path)
        finally:
            log.refresh(Refresh.WHOLE_LOG)  # the deleted files are below the tail an update lists
    # Not log files: the gate has no say about them (module docstring, step 4).
    for path in plan.delete_temps:
        if log.storage.delete(path):
            deleted.append(path)
            if on_delete is not None:
                on_delete(path)
    return CleanupResult(deleted, plan, written)


def _write_compat_checkpoint(log: DeltaLog, plan: CleanupPlan) -> str | None:
    """Write the plan's classic-named copy of a UUID-named checkpoint, before any deletion
    (module docstring); None when the plan has none or a classic checkpoint is there by now
    (a rerun after a crash, another writer)."""
    source, path = plan.compat_source, plan.compat_checkpoint
    if source is None or path is None or log.storage.exists(path):
        return None
    written = write_classic_copy(log.storage, source)
    log.note_written([written])
    return written


@naming_table("log")
def cleanup_expired_logs(log: DeltaLog, *, retention_ms: int | None = None, granularity: str = "day",
                         clock: Clock = SYSTEM_CLOCK, dry_run: bool = False,
                         partial_when_supported: bool = True) -> CleanupResult:
    """Plan and (unless ``dry_run``) execute the cleanup. ``retention_ms`` defaults to the table's
    ``delta.logRetentionDuration``."""
    log.refresh(Refresh.WHOLE_LOG)  # what is old decides: not only the log's tail (object stores)
    if retention_ms is None:
        metadata = log.snapshot(check_read=False).metadata
        retention_ms = TableConfig(metadata.configuration).log_retention_ms
    plan = plan_cleanup(log, retention_ms=retention_ms, granularity=granularity, clock=clock,
                        partial_when_supported=partial_when_supported)
    if dry_run:
        return CleanupResult([], plan)
    return execute_cleanup(log, plan)


# --- history questions for DROP FEATURE (Checkpoint Protection RFC) -----------------------------------

def _earliest_reliable_checkpoint(listing: LogListing, latest: int) -> int | None:
    """The earliest complete checkpoint from which the latest version can be rebuilt (every
    commit after it is present)."""
    first_needed = listing.contiguous_start(latest)  # commits first_needed .. latest all exist
    for version in listing.checkpoint_versions:
        if version <= latest and version + 1 >= first_needed:
            return version
    return None


def history_truncated_before(log: DeltaLog, boundary: int) -> bool:
    """Whether the history before the Checkpoint Protection RFC's boundary is truncated:
    ``boundary <= 0``, or the earliest reliable checkpoint is at or after ``boundary`` and no
    commit file of a version in ``[0, boundary - 1]`` exists. Uses the log's current listing
    (``refresh()`` it first if it may be stale)."""
    if boundary <= 0:
        return True
    listing = log.whole_listing()  # the commits before the boundary, if any
    reliable = _earliest_reliable_checkpoint(listing, log.latest_version())
    if reliable is None or reliable < boundary:
        return False
    return not any(v < boundary for v in listing.commits)


def earliest_truncation_time_ms(log: DeltaLog, boundary: int, retention_ms: int,
                                granularity: str) -> int | None:
    """The earliest clock time at which :func:`plan_cleanup` removes every version ``< boundary``
    in one operation (rule (c), all-at-once form), given the checkpoints that exist now.

    That needs a cutoff checkpoint ``C >= boundary``: the first checkpoint at or after the boundary
    becomes eligible once ``truncate(now - retention) >= t`` (``t`` its reference time), i.e. at
    ``ceil(t) + retention``. 0 when nothing below the boundary is left (no waiting needed); else None
    when no complete checkpoint ``>= boundary`` exists.
    """
    unit = _granularity_ms(granularity)
    listing = log.listing()
    if listing.listed_from is None or listing.listed_from >= boundary \
            or not any(v < boundary for v in listing.listed_commits):
        listing = log.whole_listing()  # what lies below the boundary, and the commit times
    # On a listing from _last_checkpoint's checkpoint (below the boundary), something below the
    # boundary is listed, and every checkpoint at or after it is; the commit times are those of
    # the listed commits, from that checkpoint's version on: an older commit whose modification
    # time is later (clock skew) would move the time later, never earlier - truncate-history
    # itself decides from the whole log (plan_cleanup) and waits when it is too early.
    commits = listing.listed_commits
    below = (any(v < boundary for v in commits)
             or (listing.listed_from is None and (any(v < boundary for v in listing.crcs)
                                                  or any(ck.version < boundary for ck in listing.checkpoints))))
    if not below:
        return 0
    # a damaged checkpoint is never a cutoff (plan_cleanup skips it): the first sound one counts,
    # and the ones after it are not read
    cutoff = next((v for v in sorted({c.version for c in listing.checkpoints_from(boundary) if c.complete})
                   if _checkpoint_readable(log, listing, v)), None)
    if cutoff is None:
        return None
    times = monotonic_commit_times(commits)
    reference = _reference_time(cutoff, times, sorted(times))
    if reference is None:
        return 0   # only leftovers of an earlier cleanup are below: they may go now
    return _ceil_to(reference, unit) + retention_ms
