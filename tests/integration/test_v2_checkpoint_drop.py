"""Acceptance: history-protected drops on ``delta.checkpointPolicy=v2`` tables, without dropping
``v2Checkpoint`` first (delta-spark writes V2 checkpoints there and the drop succeeds; this
package used to refuse).

On copies of the golden v2 tables (with ``vacuumProtocolCheck`` added, then dropped) and on a table
built with deletion vectors under the v2 policy (``deletionVectors`` dropped, with the Spark purge):

* the CLI exits 0; the barrier and boundary checkpoints are V2 checkpoints with sidecars, listed
  with their sidecars as protected;
* ``verify_task`` exits 0 for the outcome (protected checkpoints and their sidecars present);
* DuckDB's delta extension and deltalake 1.6.6 read exactly the original rows, also from a copy
  whose log holds only the boundary checkpoint and the commits after it;
* the ``--dry-run`` plan lists exactly the commits and checkpoints (and their kind) that the real
  run then writes;
* truncate-history then drops ``checkpointProtection``: history before the boundary goes with the
  checkpoints' sidecars, the boundary checkpoint's sidecars stay, and the readers still agree.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import create_dv_table, delete_rows

from delta_downgrade.app import cli
from delta_downgrade.app.render.result import parse_result_lines
from delta_downgrade.app.tasks.entrypoints import verify_task
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR, SIDECAR_DIR, classify
from delta_downgrade.protocol import Protocol
from tests.drop_support import run_task
from tests.oracle import same_rows
from tests.process_support import run_cli_process

VPC = "vacuumProtocolCheck"
CP = "checkpointProtection"
V2_GOLDEN = ["v2_checkpoint_parquet_sidecars", "v2_checkpoint_json_sidecars", "v2_checkpoint_dbr_identity"]
DAY_S = 86_400

# A planned step ("commit v5: Empty Commit (0 action(s))", "checkpoint at v5 (v2)") and a step
# the run took ("committed v5: Empty Commit", "checkpoint at v5 (v2): <paths>").
_COMMIT = re.compile(r"^commit(?:ted)? v(\d+): (.+?)(?: \(\d+ action\(s\)\))?$")
_CHECKPOINT = re.compile(r"^checkpoint at v(\d+)( \(v2\))?(?::.*)?$")


def steps(lines: list[str]) -> list[tuple[str, int, str]]:
    """(``commit``, version, operation) / (``checkpoint``, version, ``v2`` or ``classic``)."""
    out = []
    for line in lines:
        line = line.strip()
        if m := _COMMIT.match(line):
            out.append(("commit", int(m[1]), m[2]))
        elif m := _CHECKPOINT.match(line):
            out.append(("checkpoint", int(m[1]), "v2" if m[2] else "classic"))
    return out


def run_main(*argv: str) -> tuple[int, list[dict[str, Any]], str]:
    """The CLI in this process (so that a drop's Spark rewrite uses the tests' session)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, parse_result_lines(out.getvalue()), err.getvalue()


def run_subprocess(*argv: str) -> tuple[int, list[dict[str, Any]], str]:
    """The CLI as a user runs it."""
    done = run_cli_process(*argv)
    return done.returncode, parse_result_lines(done.stdout), done.stderr


def read_rows(oracle, duckdb_reader, path: str) -> tuple[list[dict], list[dict]]:
    kernel, duck = oracle.scan_rows(path), duckdb_reader.duckdb_rows(path)
    assert kernel.ok, kernel.error
    assert duck.ok, duck.error
    return kernel.value, duck.value


def checkpoint_only_copy(path: str, dest: str, version: int) -> str:
    """A copy whose log holds the checkpoint(s) at ``version``, their sidecars and the commits
    after it: a reader can only get the table from that checkpoint."""
    shutil.copytree(path, dest)
    for entry in Path(dest, LOG_DIR).iterdir():
        lf = classify(entry.name) if entry.is_file() else None
        if lf is not None and lf.version is not None and lf.version <= version and \
                not (lf.kind == "checkpoint" and lf.version == version):
            entry.unlink()
    return dest


def assert_drop_with_v2_checkpoints(path: str, feature: str, run: Any, oracle, duckdb_reader,
                                    rows_before: tuple[list[dict], list[dict]], tmp_path: Path) -> dict[str, Any]:
    """Dry run, real run, the checks of the module docstring; returns the real run's RESULT."""
    # --dry-run: exit 0, nothing written, a plan.
    listing_before = sorted(os.listdir(Path(path, LOG_DIR)))
    code, results, err = run(path, feature, "--dry-run")
    assert code == 0, err
    assert sorted(os.listdir(Path(path, LOG_DIR))) == listing_before
    planned = steps(results[0]["plan"])
    assert planned, results[0]

    code, results, err = run(path, feature)
    assert code == 0, err
    result = results[0]
    assert result["status"] == "dropped"
    taken = steps(err.splitlines())
    # The plan lists exactly the commits and checkpoints (and their kind) the run wrote.
    assert taken == planned, (planned, taken)
    assert [v for kind, v, _ in taken if kind == "commit"] == result["commits"]

    log = DeltaLog(path)
    snapshot = log.snapshot()
    boundary = result["boundary_version"]
    assert feature not in snapshot.protocol.features and CP in snapshot.protocol.features
    assert boundary == snapshot.boundary_version == snapshot.version
    assert snapshot.metadata.configuration.get("delta.checkpointPolicy") == "v2"
    # Barriers and boundary: four V2 checkpoints, each with sidecars, protected with them.
    written = [c for c in log.checkpoint_inventory() if c.version in {v for k, v, _ in taken if k == "checkpoint"}]
    assert len(written) == 4 and all(c.kind == "v2" for c in written)
    protected: list[str] = []
    for c in written:
        sidecars = log.sidecars_of(c)
        assert sidecars and all(Path(path, s).is_file() for s in sidecars)
        protected += [*c.paths, *sidecars]
    assert sorted(result["protected_checkpoints"]) == sorted(protected)
    assert sorted(result["checkpoints_written"]) == sorted(protected)

    # verify_task, with the outcome's expectations.
    code, verified, verify_err = run_task(verify_task, [
        f"--table={path}", f"--expect_absent_feature={feature}", f"--expect_boundary_version={boundary}",
        f"--expect_protected_checkpoints={','.join(result['protected_checkpoints'])}"])
    assert code == 0, (verify_err, verified)
    assert verified[0]["status"] == "verified"

    # The outside readers: the same rows, also through the boundary checkpoint alone.
    assert all(same_rows(after, before) for after, before in zip(read_rows(oracle, duckdb_reader, path),
                                                                  rows_before))
    only = checkpoint_only_copy(path, str(tmp_path / f"{Path(path).name}-checkpoint-only"), boundary)
    assert DeltaLog(only).snapshot().segment.checkpoint.kind == "v2"
    assert all(same_rows(after, before) for after, before in zip(read_rows(oracle, duckdb_reader, only),
                                                                  rows_before))
    return result


def age_history(path: str, through: int, seconds: float) -> None:
    """Set the mtime of the commits ``<= through`` and of every sidecar ``seconds`` back."""
    when = time.time() - seconds
    for entry in Path(path, LOG_DIR).iterdir():
        lf = classify(entry.name) if entry.is_file() else None
        if lf is not None and lf.kind == "commit" and lf.version is not None and lf.version <= through:
            os.utime(entry, (when, when))
    sidecar_dir = Path(path, SIDECAR_DIR)
    for entry in sidecar_dir.iterdir() if sidecar_dir.is_dir() else ():
        os.utime(entry, (when, when))


def sidecar_files(path: str) -> set[str]:
    return {rel for p in Path(path, SIDECAR_DIR).iterdir()
            if classify(rel := f"{SIDECAR_DIR}/{p.name}").kind == "sidecar"}


def assert_truncate_history(path: str, run: Any, oracle, duckdb_reader,
                            rows_before: tuple[list[dict], list[dict]]) -> None:
    """truncate-history once the retention has passed: history before the boundary goes, with
    exactly the sidecars no remaining checkpoint references."""
    log = DeltaLog(path)
    boundary = log.snapshot().boundary_version
    before_refs = {c.paths: set(log.sidecars_of(c)) for c in log.checkpoint_inventory()}
    age_history(path, boundary, 2 * DAY_S)
    sidecars_before = sidecar_files(path)
    code, results, err = run(path, "--dry-run")
    assert code == 0, err
    [planned] = [line for line in results[0]["plan"] if line.startswith("truncate history before")]
    code, results, err = run(path)
    assert code == 0, err
    assert results[0]["status"] == "dropped"
    log = DeltaLog(path)
    snapshot = log.snapshot()
    assert CP not in snapshot.protocol.features
    assert min(log.whole_listing().commits) >= boundary
    kept = log.checkpoint_inventory()
    assert kept and min(c.version for c in kept) >= boundary
    referenced = {s for c in kept for s in log.sidecars_of(c)}
    on_disk = sidecar_files(path)
    assert referenced <= on_disk  # every remaining checkpoint is complete
    gone = {s for paths, refs in before_refs.items() for s in refs} - referenced
    assert gone and not (gone & on_disk)  # the sidecars of the deleted checkpoints went
    assert f", {len(sidecars_before - on_disk)} sidecar(s)," in planned  # as the dry run said
    assert all(same_rows(after, before) for after, before in zip(read_rows(oracle, duckdb_reader, path),
                                                                  rows_before))


# --- the golden v2 tables ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", V2_GOLDEN)
def test_drop_on_golden_v2_policy_table(name, golden_table, oracle, duckdb_reader, tmp_path):
    path = golden_table(name)
    rows_before = read_rows(oracle, duckdb_reader, path)
    builder = TableBuilder(path)
    snapshot = builder.log.snapshot()
    assert snapshot.metadata.configuration["delta.checkpointPolicy"] == "v2"
    builder.set_protocol(snapshot.protocol.with_feature(VPC))

    def drop(table: str, *args: str) -> tuple[int, list[dict[str, Any]], str]:
        return run_subprocess("drop-feature", table, VPC, *args)

    assert_drop_with_v2_checkpoints(path, VPC, lambda t, f, *a: drop(t, *a), oracle, duckdb_reader,
                                    rows_before, tmp_path)
    assert_truncate_history(path, lambda t, *a: run_subprocess("truncate-history", t, *a), oracle,
                            duckdb_reader, rows_before)


# --- a table with deletion vectors under the v2 policy -------------------------------------------------

def test_drop_deletion_vectors_under_v2_policy(tmp_path, spark, oracle, duckdb_reader):
    path = str(tmp_path / "dv")
    b = TableBuilder(path)
    schema = pa.schema([("id", pa.int64()), ("part", pa.string())])
    protocol = Protocol(3, 7, frozenset({"deletionVectors", "v2Checkpoint"}),
                        frozenset({"deletionVectors", "v2Checkpoint"}))
    create_dv_table(b, schema, [{"id": i, "part": "xy"[i % 2]} for i in range(40)], partition_columns=["part"],
                    files=3, protocol=protocol, configuration={"delta.checkpointPolicy": "v2"})
    delete_rows(b, lambda r: r["id"] % 7 == 0)
    b.checkpoint()  # a V2 checkpoint with deletion vectors in its sidecars, as the table had before
    delete_rows(b, lambda r: r["id"] % 5 == 0, inline=True)
    assert DeltaLog(path).snapshot().segment.checkpoint.kind == "v2"
    rows_before = read_rows(oracle, duckdb_reader, path)
    assert len(rows_before[0]) == 40 - len({i for i in range(40) if i % 7 == 0 or i % 5 == 0})

    assert_drop_with_v2_checkpoints(path, "deletionVectors",
                                    lambda t, f, *a: run_main("drop-feature", t, f, *a),
                                    oracle, duckdb_reader, rows_before, tmp_path)
    state = DeltaLog(path).snapshot().state()
    assert not any(f.dv is not None for f in state.files.values())
    assert_truncate_history(path, lambda t, *a: run_main("truncate-history", t, *a), oracle, duckdb_reader,
                            rows_before)


def test_dropping_v2_checkpoint_itself_ends_with_classic_checkpoints(golden_table, oracle, duckdb_reader):
    # Its pre-downgrade sets the policy to classic first: the barriers after that commit and the
    # boundary checkpoint are classic (PROTOCOL.md: classic checkpoints are always allowed).
    path = golden_table("v2_checkpoint_parquet_sidecars")
    rows_before = read_rows(oracle, duckdb_reader, path)
    code, results, err = run_subprocess("drop-feature", path, "v2Checkpoint", "--dry-run")
    assert code == 0, err
    planned = steps(results[0]["plan"])
    code, results, err = run_subprocess("drop-feature", path, "v2Checkpoint")
    assert code == 0, err
    taken = steps(err.splitlines())
    assert taken == planned
    kinds = [kind for step, _, kind in taken if step == "checkpoint"]
    assert kinds == ["classic"] * 4
    log = DeltaLog(path)
    assert "v2Checkpoint" not in log.snapshot().protocol.features
    assert all(c.kind == "classic" for c in log.checkpoint_inventory() if c.version > 2)
    assert all(same_rows(a, b) for a, b in zip(read_rows(oracle, duckdb_reader, path), rows_before))


def test_verify_fails_when_a_protected_sidecar_is_missing(golden_table):
    # A V2 checkpoint without one of its sidecars cannot be read: verify_task must say so.
    path = golden_table("v2_checkpoint_json_sidecars")
    builder = TableBuilder(path)
    builder.set_protocol(builder.log.snapshot().protocol.with_feature(VPC))
    code, results, err = run_main("drop-feature", path, VPC)
    assert code == 0, err
    protected = results[0]["protected_checkpoints"]
    sidecar = next(p for p in protected if p.startswith(SIDECAR_DIR))
    args = [f"--table={path}", f"--expect_protected_checkpoints={','.join(protected)}"]
    assert run_task(verify_task, args)[0] == 0
    os.unlink(Path(path, sidecar))
    code, verified, _ = run_task(verify_task, args)
    assert code == 1
    assert verified[0]["failed_checks"] == ["protected_checkpoints_exist"]
    assert sidecar in next(c["detail"] for c in verified[0]["checks"] if c["check"] == "protected_checkpoints_exist")
