"""A checkpoint that is well-formed but not the one its writer recorded is never trusted: a sidecar
of another size than its ``sidecar`` action says (rewritten with no rows, or one ``add`` fewer), a
checkpoint whose ``add`` count differs from ``_last_checkpoint``'s, a sidecar path that leads out
of ``_delta_log/_sidecars``. The log falls back to an older checkpoint plus the commits after it
(the state is the undamaged table's), or, when nothing older can rebuild the version, refuses with
``DELTA_STATE_RECOVER_ERROR``. The process-level checks (exit codes, bytes unchanged, delta-rs
reading the dropped table, S3) are in tests/integration/test_damaged_log_cli.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.errors import CheckpointUnreadableError
from delta_downgrade.log.read.checkpoint_reader import sidecar_rel_path
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR, commit_path
from delta_downgrade.operations.drop_feature import drop_feature
from tests.process_support import tree_hashes
from tests.v2_tables import v2_table


def _checkpointed_v2_table(path: Path) -> Path:
    """A ``checkpointPolicy=v2`` table whose latest version (4) is a V2 checkpoint with a sidecar."""
    builder = v2_table(path)
    checkpoint_table(builder.log.refresh(), None)
    assert len(list((path / LOG_DIR / "_sidecars").iterdir())) == 1
    return path


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _checkpointed_v2_table(tmp_path_factory.mktemp("v2") / "t")


def _copy(pristine: Path, tmp_path: Path) -> Path:
    target = tmp_path / "t"
    shutil.copytree(pristine, target, symlinks=True)
    return target


def _state(path: Path) -> dict:
    snapshot = DeltaLog(str(path)).validated_snapshot()
    state = snapshot.state()
    # what a reader sees (a checkpoint leaves out expired tombstones and removed domains, which a
    # replay of the commits keeps: not part of the comparison)
    return {"version": snapshot.version, "protocol": snapshot.protocol,
            "files": sorted((key, add.size, add.dv and add.dv.unique_id) for key, add in state.files.items()),
            "domains": sorted(d for d, m in state.domains.items() if not m.removed),
            "txns": sorted((t.appId, t.version) for t in state.txns.values())}


def _sidecar(path: Path) -> Path:
    (sidecar,) = (path / LOG_DIR / "_sidecars").iterdir()
    return sidecar


def _rewrite_rows(parquet: Path, keep: int | None) -> None:
    """The same file name and schema, ``keep`` rows (None: all but the last)."""
    table = pq.read_table(parquet)
    pq.write_table(table.slice(0, table.num_rows - 1 if keep is None else keep), parquet)


@pytest.mark.parametrize("keep", [0, None], ids=["no rows", "one add fewer"])
def test_a_rewritten_sidecar_is_set_aside_for_the_commits(pristine, tmp_path, keep):
    table = _copy(pristine, tmp_path)
    _rewrite_rows(_sidecar(table), keep)
    assert _state(table) == _state(pristine)
    # the drop writes its checkpoints from that state: nothing of the table is lost
    drop_feature(str(table), "v2Checkpoint")
    after = DeltaLog(str(table)).validated_snapshot().state()
    assert sorted(after.files) == [f[0] for f in _state(pristine)["files"]]


def test_a_rewritten_sidecar_without_older_history_is_refused(pristine, tmp_path):
    table = _copy(pristine, tmp_path)
    for version in range(4):  # history before the checkpoint cleaned up: nothing to fall back to
        (table / commit_path(version)).unlink()
    _rewrite_rows(_sidecar(table), 0)
    before = tree_hashes(table)
    with pytest.raises(CheckpointUnreadableError) as info:
        DeltaLog(str(table)).validated_snapshot()
    assert info.value.error_class == "DELTA_STATE_RECOVER_ERROR" and info.value.exit_code == 2
    assert "sidecar" in info.value.message and "No older checkpoint" in info.value.message
    with pytest.raises(CheckpointUnreadableError):
        drop_feature(str(table), "v2Checkpoint", committer=PlanRecorder())
    with pytest.raises(CheckpointUnreadableError):
        drop_feature(str(table), "v2Checkpoint")
    assert tree_hashes(table) == before


def test_a_missing_sidecar_is_set_aside_for_the_commits(pristine, tmp_path):
    table = _copy(pristine, tmp_path)
    _sidecar(table).unlink()
    assert _state(table) == _state(pristine)


def _rewrite_manifest_sidecar_path(table: Path, new_path: str) -> None:
    (manifest,) = [p for p in (table / LOG_DIR).iterdir() if ".checkpoint." in p.name]
    data = pq.read_table(manifest)
    sidecar = data.column("sidecar").combine_chunks()
    paths = [new_path if valid else None for valid in sidecar.is_valid().to_pylist()]
    fields = [sidecar.field(i) if sidecar.type.field(i).name != "path" else pa.array(paths, pa.string())
              for i in range(sidecar.type.num_fields)]
    replaced = pa.StructArray.from_arrays(fields, fields=list(sidecar.type), mask=sidecar.is_null())
    pq.write_table(data.set_column(data.column_names.index("sidecar"), "sidecar", replaced), manifest)


@pytest.mark.parametrize("escape", ["../../outside.parquet", "../outside.parquet", "sub/outside.parquet",
                                    "/elsewhere/outside.parquet", "file:///elsewhere/outside.parquet"])
def test_a_sidecar_path_outside_the_sidecar_directory_is_never_read(pristine, tmp_path, escape):
    table = _copy(pristine, tmp_path)
    sidecar = _sidecar(table)
    # a file of the right shape where the path leads (an attacker's, with no rows): never read
    for where in (tmp_path / "outside.parquet", table / LOG_DIR / "outside.parquet",
                  table / LOG_DIR / "_sidecars" / "sub" / "outside.parquet"):
        where.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pq.read_table(sidecar).slice(0, 0), where)
    _rewrite_manifest_sidecar_path(table, escape)
    assert _state(table) == _state(pristine)  # the checkpoint set aside, the commits replayed


@pytest.mark.parametrize("path", ["../../x.parquet", "..", ".", "a/b.parquet", "a\\b.parquet", "",
                                  "s3://bucket/other/x.parquet", "/x.parquet", 5, None])
def test_sidecar_paths_that_leave_the_sidecar_directory_are_refused(path):
    with pytest.raises(CheckpointUnreadableError):
        sidecar_rel_path(path)


@pytest.mark.parametrize("path, rel", [
    ("x.parquet", "_delta_log/_sidecars/x.parquet"),
    ("s3://bucket/t/_delta_log/_sidecars/x.parquet", "_delta_log/_sidecars/x.parquet"),
    ("/data/t/_delta_log/_sidecars/x.parquet", "_delta_log/_sidecars/x.parquet")])
def test_sidecar_paths_in_the_sidecar_directory_are_read_there(path, rel):
    assert sidecar_rel_path(path) == rel


def test_a_classic_checkpoint_with_fewer_adds_than_last_checkpoint_records_is_set_aside(tmp_path):
    table = tmp_path / "t"
    builder = v2_table(table, configuration={})  # classic checkpoints
    checkpoint_table(builder.log.refresh(), None)
    hint = json.loads((table / LOG_DIR / "_last_checkpoint").read_text())
    assert hint["numOfAddFiles"] > 0 and "v2Checkpoint" not in hint
    expected = _state(table)
    (part,) = [p for p in (table / LOG_DIR).iterdir() if p.name.endswith(".checkpoint.parquet")]
    data = pq.read_table(part)
    adds = [i for i, valid in enumerate(data.column("add").is_valid().to_pylist()) if valid]
    pq.write_table(data.take([i for i in range(data.num_rows) if i != adds[0]]), part)
    assert _state(table) == expected


def test_vacuum_refuses_a_table_whose_checkpoint_other_readers_cannot_use(pristine, tmp_path):
    """This package reads around the damaged sidecar, but vacuum writes no checkpoint: Spark and
    delta-rs would still fail on the table afterwards, with fewer files left to recover from."""
    from delta_downgrade.operations.vacuum import vacuum

    table = _copy(pristine, tmp_path)
    _rewrite_rows(_sidecar(table), 0)
    before = tree_hashes(table)
    with pytest.raises(CheckpointUnreadableError) as info:
        vacuum(str(table), retention_hours=0, enforce_retention_check=False)
    assert "sidecar" in info.value.message and "nothing was deleted" in info.value.message
    assert tree_hashes(table) == before


@pytest.mark.parametrize("offset", [0, 1, -1])
def test_a_checkpoint_is_checked_against_the_live_files_its_versions_crc_records(pristine, tmp_path, offset):
    table = _copy(pristine, tmp_path)
    live = len(DeltaLog(str(table)).snapshot().state().files)
    (table / LOG_DIR / f"{4:020d}.crc").write_text(json.dumps(
        {"tableSizeBytes": 1, "numFiles": live + offset, "numMetadata": 1, "numProtocol": 1}))
    log = DeltaLog(str(table))
    snapshot = log.validated_snapshot()
    problems = log.checkpoint_problems()
    if offset == 0:
        assert problems == [] and snapshot.segment.checkpoint is not None
    else:
        assert len(problems) == 1 and "the .crc file of version 4" in problems[0], problems
        assert snapshot.segment.checkpoint is None  # rebuilt from the commits
    assert _state(table) == _state(pristine)
