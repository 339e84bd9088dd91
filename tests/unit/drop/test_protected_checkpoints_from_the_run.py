"""A fast drop reports the barrier checkpoints and the boundary one from what it wrote: it does
not read its own checkpoints back for their sidecars, and the report is the one a fresh read of
the log gives (classic checkpoints, and V2 ones under ``delta.checkpointPolicy=v2``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_downgrade.drop.run import protected_checkpoint_paths
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.read.checkpoint_reader import CheckpointReader
from delta_downgrade.operations.drop_feature import drop_feature

T0 = 1_700_000_000_000
SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                   "metadata": {}}]})


def _table(root: Path, v2: bool) -> str:
    (root / LOG_DIR).mkdir(parents=True)
    features = ["deletionVectors"] + (["v2Checkpoint"] if v2 else [])
    config = {"delta.enableDeletionVectors": "true", **({"delta.checkpointPolicy": "v2"} if v2 else {})}
    lines = [{"commitInfo": {"timestamp": T0, "operation": "WRITE"}},
             {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features,
                           "writerFeatures": features}},
             {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                           "partitionColumns": [], "configuration": config, "createdTime": T0}},
             *({"add": {"path": f"f{i}.parquet", "partitionValues": {}, "size": 10, "modificationTime": T0,
                        "dataChange": True}} for i in range(3))]
    (root / LOG_DIR / f"{0:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return str(root)


@pytest.mark.parametrize("v2", [False, True], ids=["classic", "v2"])
def test_the_protected_checkpoints_are_reported_without_reading_them_back(tmp_path, monkeypatch, v2):
    path = _table(tmp_path / "t", v2)
    reads: list[str] = []
    sidecar_paths = CheckpointReader.sidecar_paths

    def counted(self: CheckpointReader) -> list[str]:
        reads.append(self.checkpoint.paths[0])
        return sidecar_paths(self)

    monkeypatch.setattr(CheckpointReader, "sidecar_paths", counted)
    outcome = drop_feature(path, "deletionVectors")
    assert outcome.status == "dropped" and reads == []
    monkeypatch.undo()
    fresh = protected_checkpoint_paths(DeltaLog(path), outcome.boundary_version)
    assert outcome.protected_checkpoints == fresh
    assert len([p for p in fresh if "/_sidecars/" not in p]) == 4
    assert all((tmp_path / "t" / p).is_file() for p in fresh)
