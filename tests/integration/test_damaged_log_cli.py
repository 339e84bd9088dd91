"""A damaged log through the CLI, on local disk and on S3 (moto): every command either refuses -
exit 2, the Delta error class on stderr, no traceback, not one byte of the table changed - or, when
an older checkpoint and the commits after it rebuild the table, reads and drops from that state so
that delta-rs reads every row of the undamaged table afterwards.

- a V2 sidecar rewritten as valid parquet with fewer rows, or a sidecar path leading out of
  ``_delta_log/_sidecars``: set aside (drop reads all rows) or, without older history, refused;
- a malformed commit after the checkpoint: refused by ``inspect``, the dry run and the real drop;
- a line nested 20,000 levels deep: refused by ``inspect``, ``drop-feature`` and ``vacuum``
  (before this, pyarrow crashed the process);
- dropping checkpointProtection with a damaged boundary checkpoint: a sound checkpoint is written
  and the drop completes, never a wait whose time has passed;
- (local disk only: an object store has no links or directories where objects are) a commit that
  is a link to nothing or a directory, ``_last_checkpoint`` a directory, ``_sidecars`` a file,
  ``_delta_log`` a link loop.

The unit-level checks are in tests/unit/log/test_damaged_checkpoints.py,
tests/unit/log/test_unreadable_log_entries.py and
tests/unit/operations/test_runs_validate_before_writing.py."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq
import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import DeltaDowngradeError, RetentionWaitError
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR, commit_path
from delta_downgrade.operations.drop_feature import drop_feature
from tests.object_stores import s3_endpoint, s3_server  # noqa: F401
from tests.oracle import same_rows
from tests.process_support import TRACEBACK_MARKERS, run_cli, tree_hashes
from tests.v2_tables import v2_table

V2 = "v2Checkpoint"
DEEP = 20_000


@dataclass
class Place:
    """A table where a command runs: its location, the options to reach it, and all its files."""

    location: str
    options: dict[str, str]
    files: Callable[[], dict[str, str]]

    def args(self) -> list[str]:
        return [arg for k, v in self.options.items() for arg in ("--storage-option", f"{k}={v}")]


@pytest.fixture(params=["local", "s3"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[Path], Place]:
    """Put a table built on local disk where the test runs: in place, or uploaded to moto's S3."""
    if request.param == "local":
        return lambda local: Place(str(local), {}, lambda: tree_hashes(local))
    endpoint = request.getfixturevalue("s3_endpoint")

    def put(local: Path) -> Place:
        name = f"t{len(endpoint.keys(''))}"
        location = endpoint.upload(local, name)

        def files() -> dict[str, str]:
            import hashlib

            return {k: hashlib.sha256(endpoint.read(name, k)).hexdigest() for k in endpoint.keys(name)}
        return Place(location, dict(endpoint.storage_options), files)
    return put


def _v2_table(path: Path) -> Path:
    """A ``checkpointPolicy=v2`` table with deletion vectors, a V2 checkpoint with one sidecar at
    version 4, and one commit after it (a removed domain)."""
    builder = v2_table(path)
    checkpoint_table(builder.log.refresh(), 3)
    assert len(list((path / LOG_DIR / "_sidecars").iterdir())) == 1
    return path


def _sidecar(table: Path) -> Path:
    (sidecar,) = (table / LOG_DIR / "_sidecars").iterdir()
    return sidecar


def _refused(place: Place, *command: str, error_class: str = "DELTA_STATE_RECOVER_ERROR",
             needle: str | None = None) -> None:
    before = place.files()
    done = run_cli(*command, *place.args(), timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 2, f"{command}: exit {done.returncode}\n{output[-3000:]}"
    assert f"[{error_class}]" in done.stderr, output[-3000:]
    assert needle is None or needle in done.stderr, output[-3000:]
    assert not any(marker in output for marker in TRACEBACK_MARKERS), output[-3000:]
    assert place.files() == before, f"{command} changed the table"


def _ok(place: Place, *command: str) -> str:
    done = run_cli(*command, *place.args(), timeout=300)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{(done.stdout + done.stderr)[-3000:]}"
    return done.stderr


# --- sidecars ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("keep", [0, None], ids=["no rows", "one add fewer"])
def test_a_rewritten_sidecar_never_costs_a_row(tmp_path, place, oracle, keep):
    pristine = _v2_table(tmp_path / "pristine")
    expected = oracle.scan_rows(str(pristine))
    assert expected.ok, expected.error
    table = tmp_path / "t"
    shutil.copytree(pristine, table)
    data = pq.read_table(_sidecar(table))
    pq.write_table(data.slice(0, 0 if keep == 0 else data.num_rows - 1), _sidecar(table))
    where = place(table)
    assert "sidecar" in _ok(where, "inspect", where.location)  # the warning names what is wrong
    _ok(where, "drop-feature", where.location, V2)
    after = oracle.scan_rows(where.location, storage_options=where.options or None)
    assert after.ok, after.error
    assert same_rows(after, expected)


def test_a_rewritten_sidecar_without_older_history_is_refused(tmp_path, place):
    table = _v2_table(tmp_path / "t")
    for version in range(4):
        (table / commit_path(version)).unlink()
    pq.write_table(pq.read_table(_sidecar(table)).slice(0, 0), _sidecar(table))
    where = place(table)
    for command in (["inspect", where.location], ["drop-feature", where.location, V2, "--dry-run"],
                    ["drop-feature", where.location, V2], ["vacuum", where.location]):
        _refused(where, *command, needle="sidecar")


# --- malformed and deeply nested commits after the checkpoint -----------------------------------------

MALFORMED = {
    "truncated": '{"add": {"path": "x.parquet", "partitionValues": {}, "si',
    "size-a-word": json.dumps({"add": {"path": "x.parquet", "partitionValues": {}, "size": "big",
                                       "modificationTime": 1, "dataChange": True}}),
    "in-commit-timestamp-a-word": json.dumps({"commitInfo": {"inCommitTimestamp": "yesterday"}}),
    "nested-20000-deep": '{"commitInfo": {"x": %s}}' % ("[" * DEEP + "]" * DEEP),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_a_malformed_commit_after_the_checkpoint_is_refused_before_any_write(tmp_path, place, kind):
    table = _v2_table(tmp_path / "t")
    latest = DeltaLog(str(table)).snapshot().version
    (table / commit_path(latest + 1)).write_text(json.dumps({"commitInfo": {"timestamp": 1}}) + "\n"
                                                 + MALFORMED[kind] + "\n")
    where = place(table)
    commands = [["inspect", where.location], ["drop-feature", where.location, V2, "--dry-run"],
                ["drop-feature", where.location, V2]]
    if kind.startswith("nested"):
        commands.append(["vacuum", where.location])
    for command in commands:
        _refused(where, *command, needle=commit_path(latest + 1))


# --- checkpointProtection with a damaged boundary checkpoint -----------------------------------------

def test_truncating_history_with_a_damaged_boundary_checkpoint_never_waits_forever(tmp_path, place):
    from tests.drop_support import RW_T, registered_test_features
    from tests.integration.test_drop_truncate import CP, rw_table

    clock = ManualClock()
    with registered_test_features():
        local = tmp_path / "t"
        rw_table(str(local), clock)
        boundary = drop_feature(str(local), RW_T, clock=clock).boundary_version
        (checkpoint,) = (local / LOG_DIR).glob(f"{boundary:020d}.checkpoint*.parquet")
        checkpoint.write_bytes(checkpoint.read_bytes()[: checkpoint.stat().st_size // 2])
        where = place(local)
        outcomes = []
        for _ in range(3):
            clock.advance(hours=48)
            try:
                outcomes.append(drop_feature(where.location, CP, truncate_history=True, clock=clock,
                                             storage_options=where.options or None).status)
                break
            except RetentionWaitError as exc:
                # a wait only after a sound checkpoint past the damaged one was written (its
                # retention is measured from its commit's time)
                assert exc.retry_after is not None, exc
                versions = [c.version for c in DeltaLog(where.location, storage_options=where.options or None)
                            .checkpoint_inventory() if c.complete]
                assert max(versions) > boundary, (versions, exc)
                outcomes.append("waiting")
            except DeltaDowngradeError as exc:
                assert exc.exit_code == 2, exc
                outcomes.append("refused")
                break
        assert outcomes in (["waiting", "dropped"], ["refused"]), outcomes
        if outcomes[-1] == "dropped":
            snapshot = DeltaLog(where.location, storage_options=where.options or None).validated_snapshot()
            assert CP not in snapshot.protocol.features and RW_T not in snapshot.protocol.features


# --- entries that are not readable files (local disk) --------------------------------------------------

def _dangling_next_commit(table: Path) -> None:
    latest = DeltaLog(str(table)).snapshot().version
    os.symlink(table / "gone.json", table / commit_path(latest + 1))


def _directory_next_commit(table: Path) -> None:
    latest = DeltaLog(str(table)).snapshot().version
    (table / commit_path(latest + 1)).mkdir()


def _last_checkpoint_directory(table: Path) -> None:
    (table / LOG_DIR / "_last_checkpoint").unlink()
    (table / LOG_DIR / "_last_checkpoint").mkdir()


def _sidecars_file(table: Path) -> None:
    shutil.rmtree(table / LOG_DIR / "_sidecars")
    (table / LOG_DIR / "_sidecars").write_text("")


def _delta_log_link_loop(table: Path) -> None:
    shutil.rmtree(table / LOG_DIR)
    os.symlink(table / LOG_DIR, table / LOG_DIR)


@pytest.mark.parametrize("damage", [_dangling_next_commit, _directory_next_commit, _last_checkpoint_directory,
                                    _sidecars_file, _delta_log_link_loop], ids=lambda f: f.__name__.strip("_"))
def test_an_entry_that_is_not_a_readable_file_is_refused_by_every_command(tmp_path, damage):
    table = _v2_table(tmp_path / "t")
    damage(table)
    where = Place(str(table), {}, lambda: tree_hashes(table))
    for command in (["inspect", str(table)], ["drop-feature", str(table), V2, "--dry-run"],
                    ["drop-feature", str(table), V2], ["vacuum", str(table)]):
        _refused(where, *command)
