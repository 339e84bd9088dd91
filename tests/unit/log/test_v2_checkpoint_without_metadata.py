"""A UUID-named checkpoint is a V2 spec checkpoint, which holds exactly one ``checkpointMetadata``
action (PROTOCOL.md "V2 Spec Checkpoints"). One without it, or with two, is not the file its
writer wrote: readers set it aside for the commits before it, or refuse the table when no older
state is left, and nothing on disk changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_downgrade.errors import CheckpointUnreadableError
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR, commit_path
from tests.process_support import tree_hashes
from tests.v2_tables import v2_table


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("v2") / "t"
    builder = v2_table(path)
    checkpoint_table(builder.log.refresh(), None)
    return path


def _copy(pristine: Path, tmp_path: Path) -> Path:
    target = tmp_path / "t"
    shutil.copytree(pristine, target, symlinks=True)
    return target


def _manifest(table: Path) -> Path:
    (manifest,) = [p for p in (table / LOG_DIR).iterdir() if ".checkpoint." in p.name and not p.name.startswith(".")]
    return manifest


def _metadata_rows(table: Path, copies: int) -> None:
    """The manifest rewritten with ``copies`` checkpointMetadata rows instead of its one."""
    manifest = _manifest(table)
    data = pq.read_table(manifest)
    is_metadata = pc.is_valid(data.column("checkpointMetadata"))
    others = data.filter(pc.invert(is_metadata))
    metadata = data.filter(is_metadata)
    assert metadata.num_rows == 1
    pq.write_table(pa.concat_tables([others] + [metadata] * copies), manifest)


def _state(path: Path) -> tuple:
    snapshot = DeltaLog(str(path)).validated_snapshot()
    return snapshot.version, snapshot.protocol, sorted(snapshot.state().files)


@pytest.mark.parametrize("copies", [0, 2], ids=["none", "two"])
def test_a_v2_checkpoint_without_exactly_one_checkpoint_metadata_is_set_aside(pristine, tmp_path, copies):
    table = _copy(pristine, tmp_path)
    _metadata_rows(table, copies)
    snapshot = DeltaLog(str(table)).validated_snapshot()
    assert snapshot.segment.checkpoint is None  # the commits, not the damaged checkpoint
    assert _state(table) == _state(pristine)
    assert DeltaLog(str(pristine)).validated_snapshot().segment.checkpoint is not None


def test_a_v2_checkpoint_without_checkpoint_metadata_and_no_older_history_is_refused(pristine, tmp_path):
    table = _copy(pristine, tmp_path)
    checkpoint_version = DeltaLog(str(table)).validated_snapshot().segment.checkpoint.version
    for version in range(checkpoint_version + 1):
        (table / commit_path(version)).unlink(missing_ok=True)
    _metadata_rows(table, 0)
    before = tree_hashes(table)
    with pytest.raises(CheckpointUnreadableError) as info:
        DeltaLog(str(table)).validated_snapshot()
    assert info.value.error_class == "DELTA_STATE_RECOVER_ERROR" and info.value.exit_code == 2
    assert "checkpointMetadata" in info.value.message
    assert tree_hashes(table) == before


def test_a_json_v2_checkpoint_without_checkpoint_metadata_is_set_aside(golden_table):
    table = Path(golden_table("v2_checkpoint_json_sidecars"))
    manifest = _manifest(table)
    lines = [line for line in manifest.read_text().splitlines() if line.strip()]
    kept = [line for line in lines if "checkpointMetadata" not in json.loads(line)]
    assert len(kept) == len(lines) - 1
    expected = _state(table)
    assert DeltaLog(str(table)).validated_snapshot().segment.checkpoint is not None
    manifest.write_text("\n".join(kept) + "\n")
    assert DeltaLog(str(table)).validated_snapshot().segment.checkpoint is None
    assert _state(table) == expected
