"""Rule (d) under faults: a cleanup interrupted after any single deletion leaves a sound log, and
a rerun finishes the job.

The table: checkpointProtection with V = 10; versions 3..5 have an unsupported reader-writer
protocol (the history a fast DROP FEATURE hides behind its barrier checkpoints); checkpoints at
6, 8 (multi-part, 3 parts), 10 and 12; a ``.crc`` for every version; commits 0..11 old, 12..15
recent. The cleanup is allowed in its all-at-once form (C = 12 >= V) and deletes 12 commits,
12 ``.crc`` files and the 5 files of checkpoints 6, 8 and 10: N = 29 deletions.

Invariants checked after an interruption following the k-th deletion, for every k = 1..N:

(I1) every version the log still retains (``earliest_version()..latest``) reconstructs:
     its protocol and its full state (``v + 1`` data files) can be read;
(I2) every retained version is read through exactly the checkpoint it was read through before the
     cleanup started — no reader is ever routed around a barrier checkpoint into older commits;
(I3) rule (d), as stated in the brief: no commit file remains whose barrier — the nearest complete
     checkpoint at or after ``max(commit version, V)`` — is gone;
(I3+) and the stronger form our order gives: while any commit file remains, no checkpoint at or
     after its version has lost a file (checkpoints go only once every commit of the plan is gone);
(I4) checkpoint C and everything at or after it are untouched;
(I5) a rerun of the cleanup completes with the same final file set as an uninterrupted run.

Two controls show the checker has teeth: deleting the barrier checkpoint first breaks (I2) and
(I3); delta-spark's listing order (``N.checkpoint`` < ``N.crc`` < ``N.json``) breaks (I3+).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))   # shares the table builder of test_cleanup

from test_cleanup import (  # noqa: E402
    BASE, NOW_MS, RETENTION_30D, U_RW, build_table, log_files,
)

from delta_downgrade.clock import ManualClock  # noqa: E402
from delta_downgrade.log.delta_log import DeltaLog  # noqa: E402
from delta_downgrade.operations.cleanup import (  # noqa: E402
    ALL_AT_ONCE, cleanup_expired_logs, execute_cleanup, plan_cleanup,
)

V = 10
C = 12
LATEST = 15
SPEC = dict(checkpoints=(6, 8, 10, 12), multipart={8: 4}, boundary=V, old=C, changes={3: U_RW, 6: BASE},
            crcs=True)


class SimulatedCrash(Exception):
    """Raised from ``on_delete``: the process 'dies' right after a deletion."""


@dataclass
class Reference:
    template: Path
    segments: dict[int, int | None]              # version -> checkpoint version it is read through
    checkpoint_files: dict[int, set[str]]        # version -> files (relative to _delta_log)
    order: list[str]                             # the planned deletions, in order
    final_files: set[str]                        # after an uninterrupted run


def _rel(path: str) -> str:
    return path.split("_delta_log/", 1)[1]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Reference:
    root = tmp_path_factory.mktemp("cleanup-fault")
    template = root / "template"
    build_table(template, **SPEC)
    log = DeltaLog(str(template))
    segments = {}
    for v in range(log.latest_version() + 1):
        ck = log.segment(v).checkpoint
        segments[v] = ck.version if ck else None
    files: dict[int, set[str]] = {}
    for ck in log.whole_listing().checkpoints:
        files.setdefault(ck.version, set()).update(_rel(p) for p in ck.paths)
    plan = plan_cleanup(log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS))
    assert plan.allowed and plan.decision == ALL_AT_ONCE and plan.cutoff_checkpoint == C
    order = plan.ordered_deletions()
    assert len(order) == 12 + 12 + 1 + 3 + 1
    full = root / "uninterrupted"
    shutil.copytree(template, full)
    result = cleanup_expired_logs(DeltaLog(str(full)), clock=ManualClock(NOW_MS))
    assert result.deleted == order
    return Reference(template, segments, files, order, log_files(full))


def violations(path: Path, ref: Reference) -> list[str]:
    """The invariants (I1)-(I4) that do not hold for the table at ``path``."""
    out: list[str] = []
    log = DeltaLog(str(path))
    listing = log.whole_listing()
    present = log_files(path)
    if log.latest_version() != LATEST:
        out.append(f"latest version {log.latest_version()} != {LATEST}")
    earliest = log.earliest_version()
    for v in range(earliest, LATEST + 1):
        try:
            snapshot = log.snapshot(v, check_read=False)
            _ = snapshot.protocol
            if len(snapshot.state().files) != v + 1:
                out.append(f"I1: version {v} has the wrong state")
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            out.append(f"I1: version {v} does not reconstruct: {exc}")
            continue
        ck = snapshot.segment.checkpoint
        through = ck.version if ck else None
        if through != ref.segments[v]:
            out.append(f"I2: version {v} is read through checkpoint {through}, was {ref.segments[v]}")
    complete = {c: files <= present for c, files in ref.checkpoint_files.items()}
    for c in sorted(listing.commits):
        barrier = min((v for v in ref.checkpoint_files if v >= max(c, V)), default=None)
        if barrier is not None and not complete[barrier]:
            out.append(f"I3: commit {c} remains but its barrier checkpoint {barrier} is gone")
        lost = [v for v in ref.checkpoint_files if v >= c and not complete[v]]
        if lost:
            out.append(f"I3+: commit {c} remains but checkpoint(s) {lost} lost files")
    for c, files in ref.checkpoint_files.items():
        if c >= C and not files <= present:
            out.append(f"I4: checkpoint {c} >= C lost files")
    return out


def _copy(ref: Reference, dest: Path) -> Path:
    shutil.copytree(ref.template, dest)
    return dest


def _rerun_and_compare(path: Path, ref: Reference) -> None:
    rerun = cleanup_expired_logs(DeltaLog(str(path)), clock=ManualClock(NOW_MS))
    assert rerun.plan.allowed
    assert log_files(path) == ref.final_files                                      # (I5)
    assert violations(path, ref) == []


def test_uninterrupted_order_is_rule_d(reference):
    order = reference.order
    first_checkpoint = next(i for i, p in enumerate(order) if ".checkpoint." in p)
    assert all(p.endswith((".json", ".crc")) for p in order[:first_checkpoint])
    assert all(".checkpoint." in p for p in order[first_checkpoint:])


@pytest.mark.parametrize("k", range(1, 30))
def test_interrupted_after_kth_deletion(reference, tmp_path, k):
    assert len(reference.order) == 29
    path = _copy(reference, tmp_path / "t")
    log = DeltaLog(str(path))
    plan = plan_cleanup(log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS))
    assert plan.ordered_deletions() == reference.order
    count = 0

    def on_delete(deleted_path: str) -> None:
        nonlocal count
        count += 1
        if count == k:
            raise SimulatedCrash(deleted_path)

    with pytest.raises(SimulatedCrash):
        execute_cleanup(log, plan, on_delete=on_delete)
    gone = {f"_delta_log/{p}" for p in log_files(reference.template) - log_files(path)}
    assert gone == set(reference.order[:k])
    assert violations(path, reference) == []
    _rerun_and_compare(path, reference)


_KILL_SCRIPT = """
import os, signal, sys
from delta_downgrade.clock import ManualClock
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.cleanup import execute_cleanup, plan_cleanup

path, k, now, retention = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
log = DeltaLog(path)
plan = plan_cleanup(log, retention_ms=retention, clock=ManualClock(now))
count = 0

def on_delete(deleted):
    global count
    count += 1
    if count == k:
        os.kill(os.getpid(), signal.SIGKILL)

execute_cleanup(log, plan, on_delete=on_delete)
print("not killed")
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("k", [7, 26], ids=["among-commits", "inside-multipart-checkpoint"])
def test_killed_process(reference, tmp_path, k):
    """The same, with the process really killed: no finally block, no cleanup handler runs."""
    path = _copy(reference, tmp_path / "t")
    proc = subprocess.run([sys.executable, "-c", _KILL_SCRIPT, str(path), str(k), str(NOW_MS),
                           str(RETENTION_30D)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "not killed" not in proc.stdout
    gone = {f"_delta_log/{p}" for p in log_files(reference.template) - log_files(path)}
    assert gone == set(reference.order[:k])
    assert violations(path, reference) == []
    _rerun_and_compare(path, reference)


# --- controls: the checker catches the orders rule (d) rules out -------------------------------------

def test_control_barrier_deleted_first(reference, tmp_path):
    """Deleting the barrier checkpoint 10 while the commits before it remain routes readers of
    version 10 and 11 around it, into older history (checkpoint 8 + commits 9..)."""
    path = _copy(reference, tmp_path / "t")
    DeltaLog(str(path)).storage.delete("_delta_log/00000000000000000010.checkpoint.parquet")
    found = violations(path, reference)
    assert any(v.startswith("I2: version 10 ") for v in found)
    assert any(v.startswith("I3: commit 0 ") for v in found)


def test_control_spark_listing_order(reference, tmp_path):
    """delta-spark deletes in listing order, where ``6.checkpoint`` sorts before ``6.json``: killed
    right after that checkpoint, commits 6 and 7 remain without the checkpoint that made them
    readable."""
    path = _copy(reference, tmp_path / "t")
    storage = DeltaLog(str(path)).storage
    spark_order = sorted(reference.order, key=lambda p: _rel(p))
    for p in spark_order[:spark_order.index("_delta_log/00000000000000000006.checkpoint.parquet") + 1]:
        storage.delete(p)
    found = violations(path, reference)
    assert any(v.startswith("I3+: commit 6 ") for v in found)
