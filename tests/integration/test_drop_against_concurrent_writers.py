"""A drop against concurrent writers.

- Two drops of the same feature at once: the loser reports ``already_absent`` (exit 0) or a
   conflict (exit 4), never exit 1, and the feature is dropped exactly once.
- The deletion-vector drop's property and tombstone commits are retried over blind appends,
   and an exit 4 names the commits of the run that landed instead of claiming nothing was written.
- Liveness: drops against a writer committing every 20–60 ms succeed.

Deterministic cases slip the other writer's commit in right before one of the drop's commits
(a storage that runs it just before ``put_if_absent``); the randomised cases race real processes.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from typing import Callable

import pyarrow as pa
import pytest

from delta_downgrade.protocol.actions import CommitInfo, parse_commit
from delta_downgrade.errors import ConcurrentWriteError, DeltaDowngradeError
from delta_downgrade.log.commit import commit, fail_on_any_conflict, rebase_unless_protocol_changed
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol import Protocol
from delta_downgrade.storage.local import LocalStorage
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import create_dv_table, delete_rows
from tests.drop_support import SCHEMA, build, rows
from tests.logging_support import drop_steps

VPC = "vacuumProtocolCheck"
VPC_PROTOCOL = Protocol(3, 7, frozenset({VPC}), frozenset({VPC}))
DV = "deletionVectors"


class SlipInStorage(LocalStorage):
    """LocalStorage that runs ``before`` once, right before the first commit whose bytes contain
    ``marker`` is put: another writer wins exactly that race."""

    def __init__(self, root: str, marker: bytes, before: Callable[[], None]) -> None:
        super().__init__(root)
        self.marker, self.before, self.fired = marker, before, False

    def put_if_absent(self, rel_path: str, data: bytes) -> None:
        if not self.fired and self.marker in data:
            self.fired = True
            self.before()
        super().put_if_absent(rel_path, data)


def blind_append(path: str) -> Callable[[], None]:
    def append() -> None:
        TableBuilder(path).append(pa.Table.from_pylist(rows(1000, 3), schema=SCHEMA))
    return append


def drop_operations(path: str, feature: str) -> list[int]:
    """Versions of the DROP FEATURE commits for ``feature``."""
    log = DeltaLog(path)
    found = []
    for version, status in sorted(log.whole_listing().commits.items()):
        actions = parse_commit(log.storage.read_bytes(status.path).decode())
        info = next((a for a in actions if isinstance(a, CommitInfo)), None)
        if info is not None and info.operation == "DROP FEATURE" \
                and info.operationParameters.get("featureName") == feature:
            found.append(version)
    return found


# --- two drops of one feature at once ------------------------------------------------------------------------------------

def test_drop_that_lands_under_a_running_drop_makes_it_already_absent(tmp_path):
    # A second drop runs to completion while the first one is writing its barriers: the first one
    # then finds the feature gone. Before the fix it failed with exit 1
    # (DELTA_INVALID_PROTOCOL_DOWNGRADE, "same -> same protocol").
    path = str(tmp_path / "t")
    build(path, VPC_PROTOCOL)
    other = {"done": False}

    def on_step(message: str) -> None:
        if message.startswith("checkpoint at") and not other["done"]:
            other["done"] = True
            assert drop_feature(path, VPC).status == "dropped"

    with drop_steps(on_step):
        outcome = drop_feature(path, VPC)
    assert other["done"]
    assert outcome.status == "already_absent"
    assert VPC not in DeltaLog(path).snapshot().protocol.features
    assert len(drop_operations(path, VPC)) == 1


def test_drop_that_wins_the_downgrade_race_makes_the_loser_already_absent(tmp_path):
    # The other drop's downgrade lands between this drop's read and its own downgrade commit:
    # the conflict is resolved as "the feature is already gone", not as an error.
    path = str(tmp_path / "t")
    build(path, VPC_PROTOCOL)

    def other_drop() -> None:
        assert drop_feature(path, VPC).status == "dropped"

    storage = SlipInStorage(path, b'"operation":"DROP FEATURE"', other_drop)
    outcome = drop_feature(path, VPC, log=DeltaLog(path, storage))
    assert storage.fired
    assert outcome.status == "already_absent"
    assert len(drop_operations(path, VPC)) == 1


def _race_worker(conn, barrier) -> None:
    import contextlib
    import io

    from delta_downgrade.app.cli import main

    while True:
        table = conn.recv()
        if table is None:
            return
        err = io.StringIO()
        barrier.wait(timeout=60)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["drop-feature", table, VPC, "--quiet"])
        conn.send((code, err.getvalue()))


@pytest.mark.slow
def test_two_processes_drop_the_same_feature_20_times(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    pipes, workers = [], []
    for _ in range(2):
        ours, theirs = ctx.Pipe()
        worker = ctx.Process(target=_race_worker, args=(theirs, barrier), daemon=True)
        worker.start()
        pipes.append(ours)
        workers.append(worker)
    try:
        codes = []
        for trial in range(20):
            path = str(tmp_path / f"t{trial}")
            build(path, VPC_PROTOCOL)
            for conn in pipes:
                conn.send(path)
            replies = [conn.recv() for conn in pipes]
            codes.append(sorted(code for code, _ in replies))
            for code, err in replies:
                assert code in (0, 4), (trial, code, err)
                assert "Traceback" not in err
            assert VPC not in DeltaLog(path).snapshot().protocol.features
            assert len(drop_operations(path, VPC)) == 1, trial
        assert all(0 in c for c in codes), codes  # someone always finishes the drop
    finally:
        for conn in pipes:
            conn.send(None)
        for worker in workers:
            worker.join(timeout=30)


# --- the drop's commits retried over blind appends ------------------------------------------------------------------------------------

def _dv_table(path: str) -> TableBuilder:
    """DVs enabled, no live DV, and a tombstone whose DV file still needs protecting."""
    builder = TableBuilder(path)
    create_dv_table(builder, SCHEMA, rows(0, 20))
    delete_rows(builder, lambda r: r["id"] < 3)
    [add] = builder.log.refresh().snapshot().state().files.values()
    builder.remove_files([add.path])
    builder.append(rows(100, 5))
    return builder


@pytest.mark.parametrize("marker", [b'"operation":"UNSET TBLPROPERTIES"',
                                    b'"operation":"Deletion Vector Tombstones"'])
def test_dv_drop_commits_are_retried_over_a_blind_append(tmp_path, marker):
    # Before the fix both commits failed on any concurrent commit: exit 4 "nothing was written",
    # the second one after UNSET TBLPROPERTIES had landed.
    path = str(tmp_path / "t")
    _dv_table(path)
    storage = SlipInStorage(path, marker, blind_append(path))
    outcome = drop_feature(path, DV, log=DeltaLog(path, storage))
    assert storage.fired
    assert outcome.status == "dropped"
    snapshot = DeltaLog(path).snapshot()
    assert DV not in snapshot.protocol.features
    assert not [f for f in snapshot.state().files.values() if f.dv is not None]


def test_real_conflict_after_a_landed_commit_names_it(tmp_path):
    # A concurrent metadata change right before the tombstones commit is a real conflict; the
    # error must say that the run's UNSET commit landed (and a rerun resumes), not "nothing was
    # written".
    path = str(tmp_path / "t")
    builder = _dv_table(path)

    def change_metadata() -> None:
        TableBuilder(path).set_properties({"comment.by.other.writer": "x"})

    storage = SlipInStorage(path, b'"operation":"Deletion Vector Tombstones"', change_metadata)
    with pytest.raises(ConcurrentWriteError) as caught:
        drop_feature(path, DV, log=DeltaLog(path, storage))
    err = caught.value
    assert err.exit_code == 4
    unset = next(v for v, s in sorted(builder.log.refresh().whole_listing().commits.items())
                 if b"UNSET TBLPROPERTIES" in builder.storage.read_bytes(s.path))
    assert "nothing was written" not in str(err).lower()
    assert f"v{unset} (UNSET TBLPROPERTIES)" in str(err)
    assert err.params["landedVersions"] == [unset]
    # The rerun resumes and finishes.
    assert drop_feature(path, DV).status == "dropped"


def _appender(table: str, stop, mode: str) -> None:
    """Another process: plain add actions through the package's commit API, every 20–60 ms."""
    builder = TableBuilder(table)
    log = DeltaLog(table)
    rng = random.Random()
    while not stop.is_set():
        adds = builder.write_files(pa.Table.from_pylist(rows(rng.randrange(10**6), 2), schema=SCHEMA))
        while not stop.is_set():
            try:
                version = log.refresh().latest_version()
                commit(log, version, adds, operation="WRITE", operation_parameters={"mode": "Append"},
                       resolve_conflict=fail_on_any_conflict, is_blind_append=True)
                break
            except ConcurrentWriteError:
                continue
            except DeltaDowngradeError:
                if mode == "tolerant":
                    continue
                raise
        time.sleep(rng.uniform(0.02, 0.06))


def _with_appender(path: str, body: Callable[[], object]) -> object:
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    writer = ctx.Process(target=_appender, args=(path, stop, "tolerant"), daemon=True)
    writer.start()
    try:
        start = DeltaLog(path).latest_version()
        deadline = time.monotonic() + 60
        while DeltaLog(path).latest_version() < start + 2:  # the writer is going
            assert time.monotonic() < deadline and writer.is_alive()
            time.sleep(0.02)
        return body()
    finally:
        stop.set()
        writer.join(timeout=30)


@pytest.mark.slow
def test_dv_drop_against_a_blind_appender_10_times(tmp_path):
    for trial in range(10):
        path = str(tmp_path / f"t{trial}")
        _dv_table(path)

        def run() -> object:
            try:
                return drop_feature(path, DV)
            except ConcurrentWriteError as exc:
                return exc

        result = _with_appender(path, run)
        if isinstance(result, ConcurrentWriteError):
            # Allowed only if it is honest about what landed.
            landed = result.params.get("landedVersions")
            assert not (landed and "nothing" in str(result).lower()), str(result)
            pytest.fail(f"trial {trial}: the drop gave up against a blind appender: {result}")
        assert result.status == "dropped", trial
        assert DV not in DeltaLog(path).snapshot().protocol.features


# --- liveness against a busy writer ------------------------------------------------------------------------------------

class LosingStorage(LocalStorage):
    """Makes the commit whose bytes contain ``marker`` lose ``losses`` races in a row (another
    writer appends right before each attempt), and counts, from the first attempt on, listings of
    the log and reads of commits at or below the version that attempt was based on."""

    def __init__(self, root: str, marker: bytes, losses: int) -> None:
        super().__init__(root)
        self.marker, self.losses = marker, losses
        self.base: int | None = None
        self.listings = 0
        self.old_reads: list[str] = []
        self.at_success: tuple[int, list[str]] | None = None

    def list_entries(self, rel_dir: str, *, start_after: str | None = None):  # type: ignore[no-untyped-def]
        # every listing of a directory (list_dir too) is one list_entries
        if self.base is not None:
            self.listings += 1
        return super().list_entries(rel_dir, start_after=start_after)

    def read_bytes(self, rel_path: str) -> bytes:
        name = rel_path.rsplit("/", 1)[-1]
        if self.base is not None and rel_path.startswith("_delta_log/") and name.endswith(".json") \
                and name[:20].isdigit() and int(name[:20]) <= self.base:
            self.old_reads.append(name)
        return super().read_bytes(rel_path)

    def put_if_absent(self, rel_path: str, data: bytes) -> None:
        if self.marker in data:
            if self.base is None:
                self.base = int(rel_path.rsplit("/", 1)[-1][:20]) - 1
            if self.losses:
                self.losses -= 1
                blind_append(self.root)()
        super().put_if_absent(rel_path, data)
        if self.marker in data:  # it landed: what the retries cost
            self.at_success = (self.listings, list(self.old_reads))


def _long_history(path: str, commits: int) -> None:
    build(path, VPC_PROTOCOL, appends=0)
    storage = LocalStorage(path)
    for version in range(1, commits + 1):  # plain history, no checkpoint: empty commits by name
        storage.put_if_absent(f"_delta_log/{version:020d}.json",
                              b'{"commitInfo":{"timestamp":1,"operation":"WRITE"}}\n')


def test_commit_retries_neither_list_nor_replay_the_log(tmp_path):
    # Before the fix every retry listed _delta_log and replayed the snapshot of its read version
    # from the start: against a busy writer each retry took long enough to lose again.
    path = str(tmp_path / "t")
    _long_history(path, 200)
    storage = LosingStorage(path, b'"operation":"TEST"', losses=5)
    log = DeltaLog(path, storage)
    version = commit(log, 200, [], operation="TEST", resolve_conflict=rebase_unless_protocol_changed([]))
    assert version == 206 and storage.losses == 0
    assert storage.at_success == (0, [])


def test_drop_downgrade_retries_neither_list_nor_replay_the_log(tmp_path):
    # The downgrade commit of a drop, losing to blind appends: its revalidation looks at the
    # winners, not at a fresh replay of the table.
    path = str(tmp_path / "t")
    _long_history(path, 200)
    storage = LosingStorage(path, b'"operation":"DROP FEATURE"', losses=5)
    outcome = drop_feature(path, VPC, log=DeltaLog(path, storage))
    assert outcome.status == "dropped" and storage.losses == 0
    assert storage.at_success == (0, [])


@pytest.mark.slow
def test_drops_succeed_against_a_writer_every_20_to_60_ms(tmp_path):
    # The log has history without checkpoints, as a busy table does; every retry used to list
    # and replay all of it, long enough for the writer to win again, 10 times in a row.
    results = []
    for trial in range(10):
        path = str(tmp_path / f"t{trial}")
        _long_history(path, 400)
        results.append(_with_appender(path, lambda: drop_feature(path, VPC).status))
        assert VPC not in DeltaLog(path).snapshot().protocol.features
    assert results == ["dropped"] * 10

