"""When metadata cleanup plans the classic-named copy of a UUID-named checkpoint
(operations/cleanup.plan_compat_checkpoint, PROTOCOL.md "Handling Backward compatibility while
moving to UUID-named v2 Checkpoints"): pure planning on synthetic listings, no file is read.

The copy is planned when the cleanup deletes history of a table with ``v2Checkpoint``, at the
version of the checkpoint the latest version is read from, when that one is UUID-named and no
classic-named checkpoint is there already; never where Checkpoint Protection rule (b) or this
package's checkpoint gate forbid a checkpoint; and it changes nothing the plan deletes.
"""

from __future__ import annotations

from typing import Iterable

from delta_downgrade.app.render.cleanup import plan_document
from delta_downgrade.log.delta_log import ProtocolSpan
from delta_downgrade.log.format.file_names import (classic_checkpoint_path, commit_path, multipart_checkpoint_path,
                                                   v2_checkpoint_path)
from delta_downgrade.log.read.listing import CheckpointInstance, LogListing, listing_of
from delta_downgrade.operations.cleanup import (ALL_AT_ONCE, NO_CHECKPOINT, NOTHING_TO_DELETE, SKIPPED_UNSUPPORTED,
                                                SUPPORTED_RANGE, UNPROTECTED, CleanupInputs, build_plan)
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.table_config import DAY_MS, HOUR_MS
from delta_downgrade.storage import FileStatus

T0 = 1_704_067_200_000        # 2024-01-01T00:00:00Z
OLD = T0 + HOUR_MS
RECENT = T0 + 32 * DAY_MS
NOW = T0 + 33 * DAY_MS + HOUR_MS
CUTOFF = T0 + 3 * DAY_MS

V2_PROTOCOL = Protocol(3, 7, frozenset({"v2Checkpoint"}),
                       frozenset({"v2Checkpoint", "appendOnly", "invariants", "checkpointProtection"}))
CLASSIC_PROTOCOL = Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "checkpointProtection"}))
#: A reader feature this package does not know: no checkpoint of such a version may be written.
UNKNOWN = Protocol(3, 7, frozenset({"v2Checkpoint", "unknownReaderFeature"}),
                   V2_PROTOCOL.writer_features | {"unknownReaderFeature"})


def fs(path: str, mtime: int = OLD) -> FileStatus:
    return FileStatus(path, 100, mtime)


def v2(version: int) -> CheckpointInstance:
    return CheckpointInstance(version, "v2", (fs(v2_checkpoint_path(version, f"u{version}", "json"), NOW),))


def classic(version: int) -> CheckpointInstance:
    return CheckpointInstance(version, "classic", (fs(classic_checkpoint_path(version), NOW),))


def multipart(version: int, present: int, parts: int = 2) -> CheckpointInstance:
    files = tuple(fs(multipart_checkpoint_path(version, i, parts), NOW) for i in range(1, present + 1))
    return CheckpointInstance(version, "multipart", files, parts)


def listing(checkpoints: Iterable[CheckpointInstance], versions: int = 16, old: int = 9) -> LogListing:
    """Commits 0..versions-1, those before ``old`` expired (so the cutoff checkpoint is the newest
    checkpoint at or before ``old``)."""
    files = [fs(commit_path(v), OLD if v < old else RECENT) for v in range(versions)]
    return listing_of([*files, *(f for checkpoint in checkpoints for f in checkpoint.files)])


def inputs(lst: LogListing, newest: CheckpointInstance | None, *, protocol: Protocol | None = V2_PROTOCOL,
           feature: bool = True, boundary: int | None = None) -> CleanupInputs:
    return CleanupInputs(listing=lst, latest_version=max(lst.commits), checkpoint_protection=boundary is not None,
                         boundary=boundary or 0, newest_checkpoint=newest, newest_checkpoint_protocol=protocol,
                         v2_checkpoint_feature=feature)


def plan_of(inp: CleanupInputs, **kw):
    return build_plan(inp, cutoff_ms=CUTOFF, now_ms=NOW, **kw)


def test_copy_of_the_uuid_named_checkpoint_at_the_cutoff():
    ck = v2(8)
    plan = plan_of(inputs(listing([v2(4), ck]), ck))
    assert plan.decision == UNPROTECTED and plan.cutoff_checkpoint == 8
    assert plan.compat_source == ck
    assert plan.compat_checkpoint == classic_checkpoint_path(8)
    assert "Backward compatibility" in plan.compat_reason
    # The copy is at the cutoff checkpoint's version: nothing the plan deletes is at or after it.
    assert max(int(p.rsplit("/", 1)[1][:20]) for p in plan.ordered_deletions()) < 8
    doc = plan_document(plan)
    assert doc["compat_checkpoint"] == classic_checkpoint_path(8) and doc["compat_reason"] == plan.compat_reason


def test_copy_at_the_newest_checkpoint_when_it_is_newer_than_the_cutoff():
    # delta-spark's choice: the checkpoint of the snapshot the cleanup runs for (the newest).
    newest = v2(12)
    plan = plan_of(inputs(listing([v2(4), v2(8), newest]), newest))
    assert plan.cutoff_checkpoint == 8
    assert plan.compat_checkpoint == classic_checkpoint_path(12)


def test_no_copy_when_the_newest_checkpoint_is_before_the_cutoff():
    # Defensive: the checkpoint the latest version is read from cannot be older than a readable
    # cutoff; if it were, a copy there would be deleted by the next cleanup at once.
    plan = plan_of(inputs(listing([v2(4), v2(8)]), v2(4)))
    assert plan.cutoff_checkpoint == 8 and plan.compat_source is None
    assert "before the cutoff" in plan.compat_reason


def test_no_copy_when_a_classic_named_checkpoint_is_there():
    # A rerun after a crash between the copy and the deletions finds it: nothing is written twice.
    ck = v2(8)
    plan = plan_of(inputs(listing([v2(4), ck, classic(8)]), ck))
    assert plan.num_deletions > 0 and plan.compat_source is None
    assert "classic-named checkpoint exists" in plan.compat_reason
    # A complete multi-part checkpoint serves older clients as well; an incomplete one does not.
    plan = plan_of(inputs(listing([v2(4), ck, multipart(8, 2)]), ck))
    assert plan.compat_source is None
    plan = plan_of(inputs(listing([v2(4), ck, multipart(8, 1)]), ck))
    assert plan.compat_source == ck


def test_no_copy_without_the_v2_checkpoint_feature_or_a_uuid_named_newest():
    ck = v2(8)
    assert plan_of(inputs(listing([v2(4), ck]), ck, feature=False)).compat_source is None
    newest = classic(8)
    plan = plan_of(inputs(listing([v2(4), newest]), newest))
    assert plan.num_deletions > 0 and plan.compat_source is None
    assert "not UUID-named" in plan.compat_reason
    assert plan_of(inputs(listing([]), None)).compat_source is None


def test_no_copy_when_no_history_is_deleted():
    ck = v2(0)
    plan = plan_of(inputs(listing([ck]), ck))
    assert plan.decision == NOTHING_TO_DELETE and plan.compat_source is None
    # No cutoff checkpoint at all (every commit young): nothing happens.
    ck = v2(8)
    plan = plan_of(inputs(listing([ck], old=0), ck))
    assert plan.decision == NO_CHECKPOINT and plan.compat_source is None


def test_no_copy_when_the_cleanup_is_skipped():
    ck = v2(8)
    spans = [ProtocolSpan(0, 15, UNKNOWN, None)]
    plan = plan_of(inputs(listing([v2(4), ck]), ck, boundary=12), spans=spans)
    assert plan.decision == SKIPPED_UNSUPPORTED and not plan.allowed
    assert plan.compat_source is None and plan.compat_checkpoint is None


def test_rule_b_and_the_checkpoint_gate_decide_the_copy():
    ck = v2(8)
    spans = [ProtocolSpan(0, 15, V2_PROTOCOL, None)]
    # C = 8 < V = 12, every version supported: a partial cleanup (commits only), with the copy.
    plan = plan_of(inputs(listing([v2(4), ck]), ck, boundary=12), spans=spans)
    assert plan.decision == SUPPORTED_RANGE and plan.delete_commits and not plan.delete_checkpoints
    assert plan.compat_source == ck
    # Rule (b): no checkpoint of a version before V whose protocol this package does not support;
    # the cleanup still runs, without the copy (the protocol says "should").
    plan = plan_of(inputs(listing([v2(4), ck]), ck, boundary=12, protocol=UNKNOWN), spans=spans)
    assert plan.allowed and plan.delete_commits
    assert plan.compat_source is None and "rule (b)" in plan.compat_reason
    # At or after V rule (b) allows any checkpoint, but this package writes none of a protocol
    # it does not support.
    plan = plan_of(inputs(listing([v2(4), ck]), ck, boundary=6, protocol=UNKNOWN))
    assert plan.decision == ALL_AT_ONCE and plan.delete_checkpoints
    assert plan.compat_source is None and "unknownReaderFeature" in plan.compat_reason
    # The protocol at the copy's version could not be established: no copy.
    plan = plan_of(inputs(listing([v2(4), ck]), ck, protocol=None))
    assert plan.num_deletions > 0 and plan.compat_source is None


def test_the_copy_changes_nothing_the_plan_deletes():
    ck = v2(8)
    lst = listing([v2(4), ck])
    with_copy = plan_of(inputs(lst, ck))
    without = plan_of(inputs(lst, ck, feature=False))
    assert with_copy.compat_source is not None and without.compat_source is None
    assert with_copy.ordered_deletions() == without.ordered_deletions()
    assert with_copy.kept_checkpoints == without.kept_checkpoints == (8,)
    # A table whose every checkpoint is classic never gets a copy.
    plain = plan_of(inputs(listing([classic(4), classic(8)]), classic(8), protocol=CLASSIC_PROTOCOL, feature=False))
    assert plain.compat_source is None and plain.num_deletions == with_copy.num_deletions
