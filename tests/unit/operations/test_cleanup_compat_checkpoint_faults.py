"""Metadata cleanup of a table with UUID-named checkpoints writes the classic-named copy first,
and an interruption anywhere leaves the table readable and a rerun finishing the job
(operations/cleanup.py, "Backward compatibility of UUID-named checkpoints"; Checkpoint Protection
rule (d)). Real files on the local file system, the package's own table builder; no Spark.

The table: ``delta.checkpointPolicy=v2`` with deletion vectors, a tombstone, a transaction and
domains (tests/v2_tables.py), V2 checkpoints with sidecars at version 2 and at the latest version,
every commit older than the retention: the cleanup deletes the commits and the checkpoint before
the latest one, and writes the classic-named copy of the latest before any of that.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import classic_checkpoint_path
from delta_downgrade.operations.cleanup import cleanup_expired_logs, execute_cleanup, plan_cleanup
from delta_downgrade.protocol.table_config import DAY_MS
from tests.v2_tables import T0, v2_table

RETENTION = 30 * DAY_MS
NOW = T0 + 40 * DAY_MS


class Crash(Exception):
    """The process dies here."""


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("compat") / "t"
    b = v2_table(path)
    checkpoint_table(b.log, 2, clock=b.clock, part_size=2)
    checkpoint_table(b.log, clock=b.clock, part_size=2)
    for v in range(b.version + 1):
        b.age_commit(v, T0 + v)
    return path


def _copy(template: Path, dest: Path) -> str:
    shutil.copytree(template, dest)
    return str(dest)


def _files(path: str) -> set[str]:
    root = Path(path, "_delta_log")
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _state(path: str) -> dict[str, Any]:
    state = DeltaLog(path).snapshot().state()
    return {"files": sorted(json.dumps(a.to_obj() | {"dataChange": False}, sort_keys=True)
                            for a in state.files.values()),
            "version": state.version, "metadata": state.metadata.to_obj(),
            "txns": sorted((t.appId, t.version) for t in state.txns.values()),
            "domains": sorted((d.domain, d.configuration) for d in state.live_domains.values())}


def _cleanup(path: str):
    return cleanup_expired_logs(DeltaLog(path), retention_ms=RETENTION, clock=ManualClock(NOW))


@pytest.fixture(scope="module")
def uninterrupted(template, tmp_path_factory) -> tuple[set[str], Any]:
    path = _copy(template, tmp_path_factory.mktemp("whole") / "t")
    result = _cleanup(path)
    return _files(path), result


def test_the_copy_is_written_before_the_first_deletion(template, tmp_path, uninterrupted):
    path = _copy(template, tmp_path / "t")
    latest = DeltaLog(path).latest_version()
    log = DeltaLog(path)
    plan = plan_cleanup(log, retention_ms=RETENTION, clock=ManualClock(NOW))
    assert plan.cutoff_checkpoint == latest and plan.delete_checkpoints and plan.delete_commits
    assert plan.compat_checkpoint == classic_checkpoint_path(latest)
    events: list[str] = []
    write, delete = log.storage.write_atomic, log.storage.delete
    log.storage.write_atomic = lambda p, data: (events.append(f"write {p}"), write(p, data))[1]  # type: ignore[method-assign]  # a fault injected here
    log.storage.delete = lambda p: (events.append(f"delete {p}"), delete(p))[1]  # type: ignore[method-assign]  # a fault injected here
    result = execute_cleanup(log, plan)
    assert events[0] == f"write {classic_checkpoint_path(latest)}"
    assert all(e.startswith("delete ") for e in events[1:]) and len(events) == 1 + plan.num_deletions
    assert result.written == [classic_checkpoint_path(latest)]
    assert _files(path) == uninterrupted[0]
    assert uninterrupted[1].written == result.written
    # A second cleanup has nothing to do and writes nothing.
    again = _cleanup(path)
    assert again.written == [] and again.deleted == [] and again.plan.compat_source is None


def test_interrupted_after_any_deletion_the_table_reads_and_a_rerun_finishes(template, tmp_path, uninterrupted):
    expected = _state(str(template))
    n = uninterrupted[1].plan.num_deletions
    for k in range(n):
        path = _copy(template, tmp_path / f"t{k}")
        log = DeltaLog(path)
        done = [0]
        delete = log.storage.delete

        def dying_delete(p: str, _delete=delete, _done=done, _k=k) -> bool:
            if _done[0] == _k:
                raise Crash(p)
            _done[0] += 1
            return _delete(p)

        log.storage.delete = dying_delete  # type: ignore[method-assign]  # a fault injected here
        with pytest.raises(Crash):
            execute_cleanup(log, plan_cleanup(log, retention_ms=RETENTION, clock=ManualClock(NOW)))
        # The copy is there from the start; the table reads the same.
        assert classic_checkpoint_path(DeltaLog(path).latest_version()).split("/", 1)[1] in _files(path)
        assert _state(path) == expected, k
        rerun = _cleanup(path)
        assert rerun.written == [], k  # the copy is not written twice
        assert _files(path) == uninterrupted[0], k
        assert _state(path) == expected


def test_interrupted_while_writing_the_copy_nothing_is_deleted(template, tmp_path, uninterrupted):
    path = _copy(template, tmp_path / "t")
    before = _files(path)
    log = DeltaLog(path)

    def dying_write(p: str, data: bytes) -> None:
        raise Crash(p)

    log.storage.write_atomic = dying_write  # type: ignore[method-assign]  # a fault injected here
    with pytest.raises(Crash):
        execute_cleanup(log, plan_cleanup(log, retention_ms=RETENTION, clock=ManualClock(NOW)))
    assert _files(path) == before
    rerun = _cleanup(path)
    assert rerun.written == uninterrupted[1].written
    assert _files(path) == uninterrupted[0]
