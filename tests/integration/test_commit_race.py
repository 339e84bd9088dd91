"""Two processes race to commit the same version, 200 times; put-if-absent decides every race.

Two long-lived worker processes (``spawn``, so nothing is shared but the table directory) get
"round v" over their pipes, prepare their commit (a fresh one-row parquet file with a path unique
to the worker and round), meet at a shared barrier and then both call ``commit(log,
read_version=v, ...)`` with ``fail_on_any_conflict``. Each reports back the exact bytes it handed
to ``put_if_absent`` (recorded by a pass-through storage subclass: the real ``LocalStorage``
decides) and either the version it wrote or the error it got.

After every round: exactly one winner, the loser got a conflict error with exit code 4, the commit
file of v+1 holds the winner's bytes byte for byte, and the log is contiguous with no stray
temporary file. After all rounds: 200 new versions, each readable by this package and by
delta-rs, and the live files (and rows) are exactly the winners'.
"""

from __future__ import annotations

import multiprocessing
import os
import traceback
from pathlib import Path

import pyarrow as pa

from delta_downgrade.protocol.actions import AddFile, CommitInfo, parse_commit
from delta_downgrade.errors import EXIT_CONFLICT, ConcurrentWriteError, DeltaDowngradeError
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.commit import commit, fail_on_any_conflict
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import commit_path
from delta_downgrade.storage.local import LocalStorage
from delta_downgrade_tools.builders import TableBuilder

from tests.oracle import same_rows

ROUNDS = 200
WORKERS = ("a", "b")
CHECKPOINT_AFTER_ROUND = 100  # commits after a checkpoint must race the same way
REPLY_TIMEOUT_S = 60
SCHEMA = pa.schema([("writer", pa.string()), ("round", pa.int64())])


class RecordingStorage(LocalStorage):
    """LocalStorage that remembers what the last ``put_if_absent`` was asked to write."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.last_put: tuple[str, bytes] | None = None

    def put_if_absent(self, rel_path: str, data: bytes) -> None:
        self.last_put = (rel_path, data)
        super().put_if_absent(rel_path, data)


def _worker(name: str, table: str, conn, barrier) -> None:
    """Commit one file per round when told to; reply with what happened."""
    storage = RecordingStorage(table)
    log = DeltaLog(table, storage)
    builder = TableBuilder(table)
    while True:
        message = conn.recv()
        if message is None:
            conn.close()
            return
        read_version = message
        reply = {"writer": name, "read_version": read_version}
        try:
            [add] = builder.write_files(pa.Table.from_pylist([{"writer": name, "round": read_version}],
                                                               schema=SCHEMA))
            reply["path"] = add.path
            log.refresh()
            log.listing()  # list before the barrier, so both sides start from version read_version
            storage.last_put = None
            barrier.wait(timeout=REPLY_TIMEOUT_S)
            try:
                version = commit(log, read_version, [add], operation="WRITE",
                                 operation_parameters={"mode": "Append"},
                                 resolve_conflict=fail_on_any_conflict, is_blind_append=True)
                reply.update(outcome="won", version=version)
            except DeltaDowngradeError as exc:
                reply.update(outcome="lost", error_type=type(exc).__name__,
                             is_conflict=isinstance(exc, ConcurrentWriteError),
                             exit_code=exc.exit_code, message=str(exc))
            reply["put"] = storage.last_put
        except BaseException:  # noqa: BLE001 - report anything else to the test, do not hang it
            reply.update(outcome="crashed", traceback=traceback.format_exc())
        conn.send(reply)


def _log_names(table: str) -> list[str]:
    return sorted(os.listdir(Path(table, "_delta_log")))


def test_two_processes_race_for_each_version(tmp_path, oracle):
    table = str(tmp_path / "race")
    builder = TableBuilder(table)
    base = builder.create(SCHEMA, rows=[{"writer": "setup", "round": -1}])
    assert base == 0
    initial_files = {f.path for f in DeltaLog(table).snapshot().state().files.values()}

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(WORKERS))
    workers = []
    for name in WORKERS:
        parent_end, child_end = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(name, table, child_end, barrier), daemon=True)
        proc.start()
        child_end.close()
        workers.append((name, proc, parent_end))

    winners: dict[int, dict] = {}   # version -> winner's reply
    wins = {name: 0 for name in WORKERS}
    try:
        for round_no in range(ROUNDS):
            read_version = base + round_no
            target = read_version + 1
            for _, _, conn in workers:
                conn.send(read_version)
            replies = []
            for name, proc, conn in workers:
                assert conn.poll(REPLY_TIMEOUT_S), f"worker {name} did not answer round {read_version}"
                replies.append(conn.recv())
            for reply in replies:
                assert reply["outcome"] != "crashed", reply["traceback"]

            won = [r for r in replies if r["outcome"] == "won"]
            lost = [r for r in replies if r["outcome"] == "lost"]
            assert len(won) == 1 and len(lost) == 1, (read_version, replies)
            winner, loser = won[0], lost[0]
            assert winner["version"] == target
            # The loser lost through put-if-absent on the same version and was told so (exit 4).
            assert loser["is_conflict"], loser
            assert loser["exit_code"] == EXIT_CONFLICT
            assert loser["put"] is not None and loser["put"][0] == commit_path(target), loser
            assert winner["put"][0] == commit_path(target)

            # The commit on disk is the winner's, byte for byte, and only one version was added.
            on_disk = Path(table, commit_path(target)).read_bytes()
            assert on_disk == winner["put"][1]
            assert on_disk != loser["put"][1]
            actions = parse_commit(on_disk)
            assert [a.path for a in actions if isinstance(a, AddFile)] == [winner["path"]]
            info = next(a for a in actions if isinstance(a, CommitInfo))
            assert info.extra.get("readVersion") == read_version
            names = _log_names(table)
            assert sorted(DeltaLog(table).whole_listing().commits) == list(range(0, target + 1))
            assert not [n for n in names if n.endswith(".tmp")], names  # no temp file left over

            winners[target] = winner
            wins[winner["writer"]] += 1
            if round_no + 1 == CHECKPOINT_AFTER_ROUND:
                assert checkpoint_table(DeltaLog(table)).version == target
    finally:
        for _, _, conn in workers:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for _, proc, _ in workers:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=10)

    # The log: versions 0..200, contiguous, each a commit file, each readable.
    log = DeltaLog(table)
    listing = log.whole_listing()
    assert sorted(listing.commits) == list(range(0, ROUNDS + 1))
    assert log.latest_version() == ROUNDS
    assert sorted(winners) == list(range(1, ROUNDS + 1))
    for version in range(0, ROUNDS + 1):
        files = {f.path for f in log.snapshot(version).state().files.values()}
        expected = initial_files | {winners[v]["path"] for v in range(1, version + 1)}
        assert files == expected, f"live files at version {version}"

    # delta-rs agrees: exactly the setup row plus one row per round, each from that round's winner.
    rows = oracle.scan_rows(table).unwrap()
    expected_rows = [{"writer": "setup", "round": -1}] + [
        {"writer": winners[v]["writer"], "round": v - 1} for v in range(1, ROUNDS + 1)]
    assert same_rows(rows, expected_rows)
    assert len(oracle.files(table).unwrap()) == ROUNDS + 1

    # Both writers were real contenders (informational, not a correctness condition).
    print(f"wins per writer: {wins}")


# --- the same race against an S3 endpoint ----------------------------------------------------------

S3_ROUNDS = 50


def _recording_object_store(location: str, options: dict[str, str]):
    """ObjectStoreStorage (the real one: the endpoint's conditional create decides) that
    remembers what the last ``put_if_absent`` was asked to write."""
    from delta_downgrade.storage.object_store import ObjectStoreStorage

    class RecordingObjectStore(ObjectStoreStorage):
        last_put: tuple[str, bytes] | None = None

        def put_if_absent(self, rel_path: str, data: bytes) -> None:
            self.last_put = (rel_path, data)
            super().put_if_absent(rel_path, data)

    return RecordingObjectStore.from_location(location, options)


def _store_worker(name: str, location: str, options: dict[str, str], conn, barrier) -> None:
    """:func:`_worker` on an object store: one new file action per round (a path unique to the
    worker and round; the race is about the commit, no data file is written)."""
    storage = _recording_object_store(location, options)
    log = DeltaLog(location, storage)
    while True:
        message = conn.recv()
        if message is None:
            conn.close()
            return
        read_version = message
        path = f"writer={name}/round-{read_version}.parquet"
        reply = {"writer": name, "read_version": read_version, "path": path}
        try:
            add = AddFile(path=path, partitionValues={}, size=1, modificationTime=1_700_000_000_000,
                          dataChange=True)
            log.refresh()
            log.listing()  # list before the barrier, so both sides start from version read_version
            storage.last_put = None
            barrier.wait(timeout=REPLY_TIMEOUT_S)
            try:
                version = commit(log, read_version, [add], operation="WRITE",
                                 operation_parameters={"mode": "Append"},
                                 resolve_conflict=fail_on_any_conflict, is_blind_append=True)
                reply.update(outcome="won", version=version)
            except DeltaDowngradeError as exc:
                reply.update(outcome="lost", error_type=type(exc).__name__,
                             is_conflict=isinstance(exc, ConcurrentWriteError),
                             exit_code=exc.exit_code, message=str(exc))
            reply["put"] = storage.last_put
        except BaseException:  # noqa: BLE001 - report anything else to the test, do not hang it
            reply.update(outcome="crashed", traceback=traceback.format_exc())
        conn.send(reply)


def test_two_processes_race_for_each_version_on_s3(tmp_path, s3_endpoint):
    """50 two-process commit races against the S3 endpoint (moto honours
    ``If-None-Match: *``): exactly one winner per round, the loser told of the conflict (exit 4,
    ``fail_on_any_conflict`` lets no retry through), and every winning commit in the bucket
    byte for byte as its writer sent it - nothing lost, no version overwritten. The commits are
    read back through obstore directly (the test's own client, not the storage under test)."""
    local = str(tmp_path / "race")
    assert TableBuilder(local).create(SCHEMA, rows=[{"writer": "setup", "round": -1}]) == 0
    location = s3_endpoint.upload(local, "race")
    options = dict(s3_endpoint.storage_options)
    initial_files = {f.path for f in DeltaLog(local).snapshot().state().files.values()}

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(WORKERS))
    workers = []
    for name in WORKERS:
        parent_end, child_end = ctx.Pipe()
        proc = ctx.Process(target=_store_worker, args=(name, location, options, child_end, barrier),
                           daemon=True)
        proc.start()
        child_end.close()
        workers.append((name, proc, parent_end))

    winners: dict[int, dict] = {}
    wins = {name: 0 for name in WORKERS}
    try:
        for read_version in range(S3_ROUNDS):
            target = read_version + 1
            for _, _, conn in workers:
                conn.send(read_version)
            replies = []
            for name, proc, conn in workers:
                assert conn.poll(REPLY_TIMEOUT_S), f"worker {name} did not answer round {read_version}"
                replies.append(conn.recv())
            for reply in replies:
                assert reply["outcome"] != "crashed", reply["traceback"]
            won = [r for r in replies if r["outcome"] == "won"]
            lost = [r for r in replies if r["outcome"] == "lost"]
            assert len(won) == 1 and len(lost) == 1, (read_version, replies)
            winner, loser = won[0], lost[0]
            assert winner["version"] == target
            assert loser["is_conflict"] and loser["exit_code"] == EXIT_CONFLICT, loser
            assert loser["put"] is not None and loser["put"][0] == commit_path(target), loser
            assert winner["put"][0] == commit_path(target)
            in_bucket = s3_endpoint.read("race", commit_path(target))
            assert in_bucket == winner["put"][1]
            assert in_bucket != loser["put"][1]
            winners[target] = winner
            wins[winner["writer"]] += 1
    finally:
        for _, _, conn in workers:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for _, proc, _ in workers:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=10)

    # Nothing lost, nothing overwritten: every commit in the bucket is its winner's, the log is
    # versions 0..50 with no temporary object, and the table holds exactly the winners' files.
    keys = s3_endpoint.keys("race")
    commits = sorted(k for k in keys if k.startswith("_delta_log/") and k.endswith(".json"))
    assert commits == [commit_path(v) for v in range(S3_ROUNDS + 1)]
    assert not [k for k in keys if k.endswith(".tmp")], keys
    for version, winner in winners.items():
        assert s3_endpoint.read("race", commit_path(version)) == winner["put"][1]
        actions = parse_commit(winner["put"][1])
        assert [a.path for a in actions if isinstance(a, AddFile)] == [winner["path"]]
    log = DeltaLog(location, storage_options=options)
    assert log.latest_version() == S3_ROUNDS
    files = {f.path for f in log.snapshot().state().files.values()}
    assert files == initial_files | {w["path"] for w in winners.values()}
    print(f"wins per writer on S3: {wins}")
