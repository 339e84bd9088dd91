"""Text and JSON of ``cleanup`` and ``vacuum``, and the drop summary, for synthetic outcomes."""

from __future__ import annotations

import json

from delta_downgrade.app.render import cleanup, drop, vacuum
from delta_downgrade.operations.cleanup import CleanupPlan, CleanupResult
from delta_downgrade.drop.plan import DropStep
from delta_downgrade.drop.run import STATUS_DROPPED, STATUS_PLANNED, DropOutcome
from delta_downgrade.operations.vacuum import VacuumResult
from delta_downgrade.protocol import Protocol

DAY = 86_400_000
C0, C1, C2, C4 = (f"_delta_log/{v:020d}.json" for v in (0, 1, 2, 4))
CP3 = "_delta_log/00000000000000000003.checkpoint.parquet"


def _plan(**kw) -> CleanupPlan:
    fields = dict(cutoff_ms=10 * DAY, cutoff_checkpoint=5, delete_commits=(C0, C1, C2, C4),
                  delete_checkpoints=(CP3,), delete_other=("_delta_log/00000000000000000001.crc",),
                  allowed=True, reason="rule (a): ok", truncates_before=5, decision="all-before-boundary-at-once",
                  checkpoint_protection=True, boundary_version=4, latest_version=9, kept_checkpoints=(5, 8),
                  retention_ms=2 * DAY, granularity="day", delete_temps=("_delta_log/.x.1.ab.tmp",))
    fields.update(kw)
    return CleanupPlan(**fields)


def test_cleanup_text_dry_run():
    assert cleanup.render_text("/t", CleanupResult([], _plan()), dry_run=True).splitlines() == [
        "cleanup of /t (dry run)",
        "  cutoff:             1970-01-11T00:00:00Z (retention 2 days, granularity day)",
        "  cutoff checkpoint:  5 (kept, with its commit and every later version)",
        "  protection:         checkpointProtection, boundary V = 4",
        "  decision:           allowed (all-before-boundary-at-once)",
        "  reason:             rule (a): ok",
        "  delete commits:     4 (versions 0..2, 4)",
        "  delete checkpoints: 1 files (versions 3)",
        "  delete other:       1 files (.crc, compacted, staged, sidecars)",
        "  kept checkpoints:   5, 8",
        "  delete temp files:  1 (stale temporary files of delta-downgrade)",
        "    _delta_log/.x.1.ab.tmp",
        "  history after:      versions 5..9",
        "  would delete:       7 files",
    ]


def test_cleanup_text_skipped_and_executed():
    plan = _plan(allowed=False, decision="skipped-partial-cleanup", delete_commits=(), delete_checkpoints=(),
                 delete_other=(), truncates_before=None, checkpoint_protection=False, kept_checkpoints=(),
                 retention_ms=90 * 60_000, cutoff_checkpoint=None, delete_temps=())
    text = cleanup.render_text("/t", CleanupResult([], plan), dry_run=True).splitlines()
    assert text[1].endswith("(retention 90 minutes, granularity day)")
    assert text[2] == "  cutoff checkpoint:  none"
    assert text[3] == "  protection:         none (checkpointProtection is not in the protocol)"
    assert text[4] == "  decision:           SKIPPED (skipped-partial-cleanup)"
    assert text[6] == "  delete commits:     0 (versions none)"
    assert text[9] == "  kept checkpoints:   none"
    assert text[-1] == "  would delete:       0 files"
    done = cleanup.render_text("/t", CleanupResult([C0, C1], _plan()), dry_run=False).splitlines()
    assert done[0] == "cleanup of /t" and done[-1] == "  deleted:            2 files"


def test_cleanup_json():
    doc = json.loads(cleanup.render_json("/t", CleanupResult([C0], _plan()), dry_run=False))
    assert list(doc) == ["table", "dry_run", "deleted", "written", "plan"]
    assert doc["table"] == "/t" and doc["dry_run"] is False and doc["deleted"] == [C0]
    assert list(doc["plan"]) == ["cutoff_ms", "cutoff", "retention_ms", "granularity", "cutoff_checkpoint",
                                 "allowed", "decision", "reason", "checkpoint_protection", "boundary_version",
                                 "latest_version", "truncates_before", "kept_checkpoints", "delete_commits",
                                 "delete_checkpoints", "delete_other", "ordered_deletions", "delete_temps",
                                 "compat_checkpoint", "compat_reason"]
    assert doc["plan"]["cutoff"] == "1970-01-11T00:00:00Z"
    # rule (d): every commit (with its .crc) before any checkpoint
    assert doc["plan"]["ordered_deletions"] == [C0, C1, "_delta_log/00000000000000000001.crc", C2, C4, CP3]


def _vacuum(dry_run: bool) -> VacuumResult:
    return VacuumResult("/t", 3, dry_run, 2 * 3_600_000, 168 * 3_600_000, 5 * DAY,
                        files_to_delete=["a.parquet", "p=1/b.parquet"], deleted=["a.parquet"],
                        failed={"p=1/b.parquet": "PermissionError: no"}, bytes_to_delete=30,
                        referenced_count=4, kept_count=6, recent_unreferenced_count=1)


def test_vacuum_text():
    assert vacuum.render_text(_vacuum(True)).splitlines() == [
        "VACUUM DRY RUN /t at version 3: retention 2 hours (table: 168 hours), unreferenced files older "
        "than 1970-01-06T00:00:00Z",
        "would delete 2 file(s), 30 bytes; kept 6 (1 unreferenced but too recent)",
        "  a.parquet",
        "  p=1/b.parquet",
        "  FAILED p=1/b.parquet: PermissionError: no",
    ]
    assert vacuum.render_text(_vacuum(False)).splitlines()[1:3] == [
        "deleted 1 file(s), 30 bytes; kept 6 (1 unreferenced but too recent)", "  a.parquet"]


def test_vacuum_json():
    doc = json.loads(vacuum.render_json(_vacuum(False)))
    assert list(doc) == ["table", "operation", "version", "dry_run", "retention_ms", "configured_retention_ms",
                         "delete_before_ms", "delete_before", "files_to_delete", "deleted", "checksum_companions",
                         "failed", "staging_dirs", "removed_dirs", "bytes_to_delete", "referenced_count",
                         "kept_count", "recent_unreferenced_count"]
    assert doc["operation"] == "VACUUM" and doc["delete_before"] == "1970-01-06T00:00:00Z"
    assert doc["failed"] == {"p=1/b.parquet": "PermissionError: no"}


def test_drop_summary():
    before = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors"}))
    after = Protocol(1, 7, None, frozenset({"checkpointProtection"}))
    dropped = DropOutcome("/t", "deletionVectors", STATUS_DROPPED, before, after, 7, ["a", "b"], [3], [],
                          truncate_after="2030-01-01T00:00:00Z", plan=["committed v3"])
    assert drop.render_summary(dropped).splitlines() == [
        "deletionVectors: dropped on /t",
        "  protocol (3,7,R=[deletionVectors],W=[deletionVectors]) -> (1,7,W=[checkpointProtection])",
        "  checkpoint protection boundary: version 7",
        "  protected checkpoints: 2 file(s)",
        "  run truncate-history after 2030-01-01T00:00:00Z to drop checkpointProtection",
    ]
    # A plan's steps are told once, as they are planned (the drop's log records): the summary
    # counts them and never lists them a second time.
    planned = DropOutcome("/t", "deletionVectors", STATUS_PLANNED, before, before, None, [], [], [],
                          plan=["commit v1: x", "checkpoint at v1"],
                          planned=[DropStep("commit", 1, "x"), DropStep("checkpoint", 1, "classic")])
    text = drop.render_summary(planned)
    assert text.splitlines()[2:] == ["  planned: 1 commit(s), 1 checkpoint(s)"]
    assert "commit v1" not in text and "would" not in text


def test_drop_summary_says_where_the_run_left_its_plan():
    before = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors"}))
    deviation = "step 2 differs from the plan: planned v4 DROP FEATURE, wrote v5 DROP FEATURE (...)"
    dropped = DropOutcome("/t", "deletionVectors", STATUS_DROPPED, before, before, None, [], [3, 5], [],
                          written=[DropStep("commit", 3, "x"), DropStep("commit", 5, "DROP FEATURE")],
                          deviation=deviation)
    assert drop.render_summary(dropped).splitlines()[2:] == [
        "  written: 2 commit(s), 0 checkpoint(s)", f"  {deviation}"]
