"""Metadata cleanup of a log with V2 checkpoints and sidecars (operations/cleanup.py; PROTOCOL.md
"Metadata Cleanup" steps 4-5, Checkpoint Protection rule (d)).

The table: ``delta.checkpointPolicy=v2``, checkpointProtection with V = 10, versions 0..15 (one
data file each), V2 checkpoints written by this package at 6, 8, 10 and 12 with 4 file actions
per sidecar (2, 3, 3 and 4 sidecars); commits 0..11 and every sidecar are old, the clock is at day
33: the cleanup is the all-at-once form (C = 12 >= V).

* a sidecar is deleted only when no retained checkpoint references it: exactly the sidecars of
  the checkpoints 6, 8 and 10 go, those of 12 stay;
* rule (d): commits first, then the checkpoints, then their sidecars;
* interrupted after any single deletion, every remaining checkpoint still has all its sidecars,
  the table reads the same, and a rerun finishes with the same files;
* a classic-named checkpoint that follows the V2 spec (PROTOCOL.md "Classic checkpoint") keeps
  its sidecars too.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.format.file_names import LAST_CHECKPOINT, SIDECAR_DIR, classic_checkpoint_path, classify
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY
from delta_downgrade.operations.cleanup import ALL_AT_ONCE, execute_cleanup, plan_cleanup
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.table_config import DAY_MS, HOUR_MS
from delta_downgrade_tools.builders import TableBuilder

T0 = 1_704_067_200_000            # 2024-01-01T00:00:00Z
OLD_MS = T0 + HOUR_MS
RECENT_MS = T0 + 32 * DAY_MS + HOUR_MS
NOW_MS = T0 + 33 * DAY_MS + HOUR_MS
RETENTION_30D = 30 * DAY_MS
V, C, LATEST = 10, 12, 15
CHECKPOINTS = (6, 8, 10, 12)
PER_SIDECAR = 4
SCHEMA = pa.schema([("id", pa.int64())])
PROTOCOL = Protocol(3, 7, frozenset({"v2Checkpoint"}),
                    frozenset({"v2Checkpoint", "appendOnly", "invariants", "checkpointProtection"}))


def build(path: Path) -> TableBuilder:
    b = TableBuilder(path, ManualClock(T0))
    b.create(SCHEMA, protocol=PROTOCOL, rows=[{"id": 0}],
             configuration={"delta.checkpointPolicy": "v2", BOUNDARY_PROPERTY: str(V)})
    for v in range(1, LATEST + 1):
        b.append([{"id": v}])
    for v in CHECKPOINTS:
        result = checkpoint_table(b.log, v, clock=b.clock, part_size=PER_SIDECAR)
        assert result.checkpoint_kind == "v2"
        assert len(result.sidecars) == math.ceil((v + 1) / PER_SIDECAR)
    for v in range(LATEST + 1):
        b.age_commit(v, OLD_MS if v < C else RECENT_MS)
    for entry in Path(path, SIDECAR_DIR).iterdir():
        b.storage.set_modification_time(f"{SIDECAR_DIR}/{entry.name}", OLD_MS)
    b.log.refresh(Refresh.FROM_SCRATCH)
    return b


def sidecars_by_version(log: DeltaLog) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for c in log.checkpoint_inventory():
        out.setdefault(c.version, set()).update(log.sidecars_of(c))
    return out


def files(path: Path) -> set[str]:
    root = Path(path, "_delta_log")
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def assert_sound(path: Path) -> None:
    """Every remaining checkpoint has all its sidecars, and the latest version reads in full."""
    log = DeltaLog(str(path))
    for c in log.checkpoint_inventory():
        for sidecar in log.sidecars_of(c):
            assert Path(path, sidecar).is_file(), f"checkpoint {c.version} lost {sidecar}"
    assert len(log.snapshot().state().files) == LATEST + 1


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("v2-cleanup") / "template"
    build(path)
    return path


def test_sidecars_go_after_their_checkpoints_and_only_when_unreferenced(template, tmp_path):
    path = tmp_path / "t"
    shutil.copytree(template, path)
    log = DeltaLog(str(path))
    refs = sidecars_by_version(log)
    plan = plan_cleanup(log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS))
    assert plan.decision == ALL_AT_ONCE and plan.cutoff_checkpoint == C
    order = plan.ordered_deletions()
    deleted_sidecars = [p for p in order if p.startswith(SIDECAR_DIR)]
    assert set(deleted_sidecars) == refs[6] | refs[8] | refs[10]
    assert not set(order) & refs[12]
    kinds = [classify(p).kind for p in order]
    # rule (d): every commit, then every checkpoint, then the sidecars
    assert kinds == sorted(kinds, key=["commit", "crc", "checkpoint", "sidecar"].index)
    assert kinds.count("checkpoint") == 3 and kinds.count("commit") == C

    seen: list[str] = []
    execute_cleanup(log, plan, on_delete=seen.append)
    assert seen == order
    assert_sound(path)
    assert all(Path(path, s).is_file() for s in refs[12])


class _Crash(Exception):
    """Raised from ``on_delete``: the cleanup 'dies' right after a deletion."""


def test_interrupted_after_any_deletion_every_remaining_checkpoint_is_complete(template, tmp_path):
    reference = tmp_path / "reference"
    shutil.copytree(template, reference)
    log = DeltaLog(str(reference))
    order = plan_cleanup(log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS)).ordered_deletions()
    execute_cleanup(log, plan_cleanup(log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS)))
    final = files(reference)
    assert len(order) == C + 3 + sum(math.ceil((v + 1) / PER_SIDECAR) for v in (6, 8, 10))
    for k in range(1, len(order) + 1):
        path = tmp_path / f"k{k}"
        shutil.copytree(template, path)
        count = 0

        def crash(_: str) -> None:
            nonlocal count
            count += 1
            if count == k:
                raise _Crash(k)

        log = DeltaLog(str(path))
        with pytest.raises(_Crash):
            execute_cleanup(log, plan_cleanup(log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS)),
                            on_delete=crash)
        assert_sound(path)
        rerun = DeltaLog(str(path))
        execute_cleanup(rerun, plan_cleanup(rerun, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS)))
        assert files(path) == final, k
        shutil.rmtree(path)


def test_a_classic_named_v2_spec_checkpoint_keeps_its_sidecars(template, tmp_path):
    # The checkpoint at C = 12 becomes a classic-named one with the same V2 spec content
    # (PROTOCOL.md "Classic checkpoint": it "could follow V2 spec"). Cleanup must read its
    # sidecar references like a UUID-named checkpoint's, or it deletes (old) sidecars it needs.
    path = tmp_path / "t"
    shutil.copytree(template, path)
    log = DeltaLog(str(path))
    [uuid_named] = [c for c in log.checkpoint_inventory() if c.version == C]
    refs = set(log.sidecars_of(uuid_named))
    os.replace(Path(path, uuid_named.paths[0]), Path(path, classic_checkpoint_path(C)))
    os.unlink(Path(path, LAST_CHECKPOINT))
    log = DeltaLog(str(path))
    [classic] = [c for c in log.checkpoint_inventory() if c.version == C]
    assert classic.kind == "classic" and set(log.sidecars_of(classic)) == refs
    assert log.snapshot().segment.checkpoint == classic  # our reader takes it, sidecars and all
    assert_sound(path)

    plan = plan_cleanup(log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS))
    assert plan.cutoff_checkpoint == C
    assert not set(plan.ordered_deletions()) & refs
    execute_cleanup(log, plan)
    assert_sound(path)
    assert all(Path(path, s).is_file() for s in refs)
