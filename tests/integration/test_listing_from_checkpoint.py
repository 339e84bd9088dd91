"""The first listing of a long log starts at the checkpoint ``_last_checkpoint`` names
(PROTOCOL.md "Last Checkpoint File"; delta-spark / kernel ``listFrom(checkpointVersion)``), and
every answer that needs older files is the answer of a whole listing.

A real table of 300 commits (a protocol upgrade at 120, a checkpoint at 100 and at 250, a file
in ``_delta_log`` the package does not know, below 250), on local disk and on S3 (moto). The
storages are real ones that record the ``start_after`` of each ``_delta_log`` listing and the
names it returned. Every answer is compared with the one of a log that lists the whole directory
(``refresh(Refresh.WHOLE_LOG)`` before its first listing: the old behaviour)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.format.file_names import LOG_DIR, LAST_CHECKPOINT, classic_checkpoint_path
from delta_downgrade.operations.cleanup import (
    earliest_truncation_time_ms, history_truncated_before, plan_cleanup,
)
from delta_downgrade.operations.inspect import inspect_table
from delta_downgrade.protocol import Protocol
from delta_downgrade.storage import DirEntries
from delta_downgrade.storage.local import LocalStorage
from delta_downgrade.storage.object_store import ObjectStoreStorage
from delta_downgrade_tools.builders import TableBuilder

T0 = 1_700_000_000_000
COMMITS = 300
HINTED = 250
STRAY = f"{LOG_DIR}/{10:020d}.json.bak"   # not a log file name: an unknown file, before the hint
DAY_MS = 86_400_000


def _a_month_later() -> ManualClock:
    """A clock for which every file written now (its modification time) is a month old."""
    return ManualClock(int(time.time() * 1000) + 30 * DAY_MS)


def _names_from_hint() -> list[str]:
    """What a listing from the hint returns: commits 249 (before the hint: start_after is the
    version before it) .. 299, the checkpoint at 250, and _last_checkpoint."""
    names = [f"{v:020d}.json" for v in range(HINTED - 1, COMMITS)]
    return sorted(names + [f"{HINTED:020d}.checkpoint.parquet", "_last_checkpoint"])


def _recording(cls: type) -> type:
    class Recording(cls):  # type: ignore[misc,valid-type]
        """The real storage, recording each listing of ``_delta_log``: its ``start_after`` and
        the names it returned."""

        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            self.log_listings: list[str | None] = []
            self.names_returned: list[list[str]] = []

        def list_entries(self, rel_dir: str, *, start_after: str | None = None) -> DirEntries:
            # every listing of a directory (list_dir too) is one list_entries
            found = super().list_entries(rel_dir, start_after=start_after)
            if rel_dir == LOG_DIR:
                self.log_listings.append(start_after)
                self.names_returned.append([s.path.rsplit("/", 1)[-1] for s in found.files])
            return found

    return Recording


RecordingLocal = _recording(LocalStorage)
RecordingObjectStore = _recording(ObjectStoreStorage)


@pytest.fixture(scope="module")
def long_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: 300 commits, checkpoints at 100 and 250, a protocol upgrade at 120."""
    path = tmp_path_factory.mktemp("long") / "t"
    clock = ManualClock(T0)
    b = TableBuilder(path, clock)
    b.create(pa.schema([("id", pa.int64())]), rows=[{"id": 0}])
    for v in range(1, COMMITS):
        clock.advance(seconds=1)
        if v == 120:
            b.set_protocol(Protocol(1, 3))
        elif v % 50 == 7:
            b.append([{"id": v}])
        else:
            b.empty_commit()
        if v in (100, HINTED):
            b.checkpoint(v)
    (path / STRAY).write_text("not a log file")
    assert json.loads((path / LAST_CHECKPOINT).read_text())["version"] == HINTED
    return path


@pytest.fixture
def table(long_table: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "t"
    shutil.copytree(long_table, copy)
    return copy


def _whole(location: str, **kw) -> DeltaLog:  # type: ignore[no-untyped-def]
    """A log whose first listing is the whole directory (the behaviour before the hint)."""
    return DeltaLog(location, **kw).refresh(Refresh.WHOLE_LOG)


def _state(log: DeltaLog, version: int | None = None) -> tuple:
    snap = log.snapshot(version)
    state = snap.state()
    return (snap.version, snap.segment.checkpoint.version if snap.segment.checkpoint else None,
            snap.protocol, snap.metadata, sorted(p for p, _ in state.files))


def _answers(log: DeltaLog) -> dict:
    """What needs the whole log, asked in an order that starts from the latest snapshot."""
    latest = _state(log)
    return {
        "latest": latest,
        "latest_version": log.latest_version(),
        "earliest": log.earliest_version(),
        "v10": _state(log, 10),
        "history": [(s.start, s.end, s.protocol) for s in log.protocol_history()],
        "inventory": [(c.version, c.kind, c.paths) for c in log.checkpoint_inventory()],
        "unknown": [s.path for s in log.whole_listing().unknown],
        "commits": sorted(log.whole_listing().commits),
    }


def _plan_fields(plan) -> tuple:  # type: ignore[no-untyped-def]
    return (plan.allowed, plan.cutoff_checkpoint, plan.delete_commits, plan.delete_checkpoints,
            plan.delete_other, plan.truncates_before, plan.kept_checkpoints)


def test_first_listing_starts_at_the_hinted_checkpoint(table: Path) -> None:
    storage = RecordingLocal(table)
    log = DeltaLog(str(table), storage)
    snap = log.snapshot()
    assert storage.log_listings == [f"{HINTED - 1:020d}"]
    assert sorted(storage.names_returned[0]) == _names_from_hint()
    listing = log.listing()
    assert listing.listed_from == HINTED and listing.is_partial
    assert snap.version == COMMITS - 1 and snap.segment.checkpoint.version == HINTED
    assert _state(log) == _state(_whole(str(table)))


def test_whole_log_answers_equal_a_whole_listing(table: Path) -> None:
    storage = RecordingLocal(table)
    hinted = DeltaLog(str(table), storage)
    got = _answers(hinted)
    expected = _answers(_whole(str(table)))
    assert got == expected
    assert got["earliest"] == 0 and got["v10"][1] is None          # from commit 0
    assert [s[:2] for s in got["history"]] == [(0, 119), (120, COMMITS - 1)]
    assert got["unknown"] == [STRAY]
    assert [c[0] for c in got["inventory"]] == [100, HINTED]
    # one listing from the hint, then one of the whole directory that completed it
    assert storage.log_listings == [f"{HINTED - 1:020d}", None]
    assert not hinted.listing().is_partial


def test_snapshot_before_the_hint_lists_the_whole_log(table: Path) -> None:
    log = DeltaLog(str(table))
    assert log.snapshot().version == COMMITS - 1 and log.listing().is_partial
    assert _state(log, 10) == _state(_whole(str(table)), 10)
    assert _state(log, 150)[1] == 100       # from the older checkpoint, found by the whole listing
    assert not log.listing().is_partial


def test_inspect_cleanup_and_truncate_answers_equal_a_whole_listing(table: Path) -> None:
    report = inspect_table(str(table))
    assert report.earliest_version == 0 and report.unknown_log_files == [STRAY]
    assert [c.checkpoint.version for c in report.checkpoints] == [100, HINTED]
    assert [(s.start, s.end) for s in report.protocol_history] == [(0, 119), (120, COMMITS - 1)]

    clock = _a_month_later()
    hinted = DeltaLog(str(table))
    hinted.snapshot()
    assert hinted.listing().is_partial
    plan = plan_cleanup(hinted, retention_ms=DAY_MS, clock=clock)
    expected = plan_cleanup(_whole(str(table)), retention_ms=DAY_MS, clock=clock)
    assert _plan_fields(plan) == _plan_fields(expected)
    assert plan.cutoff_checkpoint == HINTED and len(plan.delete_commits) == HINTED
    assert classic_checkpoint_path(100) in plan.delete_checkpoints

    # truncate-history's questions about what lies before a boundary
    for boundary in (50, 200, HINTED, 280):
        fresh = DeltaLog(str(table))
        fresh.snapshot()
        assert history_truncated_before(fresh, boundary) == history_truncated_before(_whole(str(table)), boundary)
        fresh = DeltaLog(str(table))
        fresh.snapshot()
        assert earliest_truncation_time_ms(fresh, boundary, DAY_MS, "minute") == \
            earliest_truncation_time_ms(_whole(str(table)), boundary, DAY_MS, "minute")


def test_refresh_keeps_a_partial_listing_partial_and_whole_log_makes_it_whole(table: Path) -> None:
    storage = RecordingLocal(table)
    log = DeltaLog(str(table), storage)
    log.snapshot()
    writer = TableBuilder(table, ManualClock(T0 + DAY_MS))
    new = writer.append(pa.table({"id": pa.array([1000], pa.int64())}))
    assert log.refresh().snapshot().version == new
    assert log.listing().is_partial            # names only from the hint on (local refresh)
    assert _state(log) == _state(_whole(str(table)))
    log.refresh(Refresh.WHOLE_LOG)
    assert not log.listing().is_partial
    assert sorted(log.whole_listing().commits) == list(range(new + 1))


def test_stale_hint_lists_the_whole_log(table: Path) -> None:
    # the checkpoint the hint names was deleted (a stale _last_checkpoint)
    (table / classic_checkpoint_path(HINTED)).unlink()
    storage = RecordingLocal(table)
    log = DeltaLog(str(table), storage)
    assert _state(log)[1] == 100
    assert storage.log_listings == [f"{HINTED - 1:020d}", None]  # tried from the hint, then whole
    assert not log.listing().is_partial
    assert _answers(log) == _answers(_whole(str(table)))


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"version": "250"}', b'{"version": -1}'])
def test_unreadable_hint_lists_the_whole_log(table: Path, content: bytes) -> None:
    (table / LAST_CHECKPOINT).write_bytes(content)
    storage = RecordingLocal(table)
    log = DeltaLog(str(table), storage)
    assert _state(log)[1] == HINTED          # the listing finds the checkpoint all the same
    assert storage.log_listings == [None]
    assert not log.listing().is_partial


def test_multipart_hint_with_a_missing_part_lists_the_whole_log(golden_table) -> None:  # type: ignore[no-untyped-def]
    path = Path(golden_table("multipart_checkpoint"))
    hint = json.loads((path / LAST_CHECKPOINT).read_text())
    assert hint["version"] == 1 and hint["parts"] == 2
    storage = RecordingLocal(path)
    whole_parts = DeltaLog(str(path), storage)
    assert whole_parts.snapshot().segment.checkpoint.kind == "multipart"
    assert whole_parts.listing().listed_from == 1      # both parts there: the hint is used
    expected = _state(_whole(str(path)))

    (path / LOG_DIR / "00000000000000000001.checkpoint.0000000002.0000000002.parquet").unlink()
    storage = RecordingLocal(path)
    log = DeltaLog(str(path), storage)
    got = _state(log)
    assert storage.log_listings == [f"{0:020d}", None]
    assert not log.listing().is_partial
    assert got[1] is None                               # replayed from commit 0
    assert (got[0], got[2], got[3], got[4]) == (expected[0], expected[2], expected[3], expected[4])


def test_on_s3_the_first_listing_asks_from_the_hint(s3_endpoint, long_table: Path) -> None:  # type: ignore[no-untyped-def]
    location = s3_endpoint.upload(long_table, "t")
    storage = RecordingObjectStore.from_location(location, s3_endpoint.storage_options)
    log = DeltaLog(location, storage)
    local = DeltaLog(str(long_table))
    assert _state(log) == _state(local)
    assert storage.log_listings == [f"{HINTED - 1:020d}"]
    assert sorted(storage.names_returned[0]) == _names_from_hint()
    assert log.listing().is_partial

    expected = _answers(_whole(str(long_table)))
    got = _answers(log)
    assert got == expected
    assert storage.log_listings == [f"{HINTED - 1:020d}", None]

    clock = _a_month_later()
    fresh = DeltaLog(location, RecordingObjectStore.from_location(location, s3_endpoint.storage_options))
    fresh.snapshot()
    assert _plan_fields(plan_cleanup(fresh, retention_ms=DAY_MS, clock=clock)) == \
        _plan_fields(plan_cleanup(_whole(str(long_table)), retention_ms=DAY_MS, clock=clock))
