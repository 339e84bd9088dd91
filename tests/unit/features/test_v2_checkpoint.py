"""features/v2_checkpoint.py: what of a table's history uses v2 checkpoints."""

from __future__ import annotations

import pytest

from delta_downgrade.features import REMOVABLE
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.protocol.actions import CheckpointMetadata, Metadata, Sidecar


def _checkpoint(kind: str) -> CheckpointInstance:
    return CheckpointInstance(version=3, kind=kind, files=())


@pytest.mark.parametrize("kind, uses", [("v2", True), ("classic", False), ("multipart", False)])
def test_the_earliest_checkpoint_uses_it_when_it_is_a_v2_checkpoint(kind, uses):
    assert REMOVABLE["v2Checkpoint"].checkpoint_uses_feature(_checkpoint(kind)) is uses
    assert REMOVABLE["v2Checkpoint"].checkpoint_uses_feature(None) is False


@pytest.mark.parametrize("name", sorted(set(REMOVABLE) - {"v2Checkpoint"}))
def test_no_other_feature_is_used_by_a_checkpoint_kind(name):
    assert REMOVABLE[name].checkpoint_uses_feature(_checkpoint("v2")) is False


def test_actions_that_use_it():
    feature = REMOVABLE["v2Checkpoint"]
    assert feature.action_uses_feature(CheckpointMetadata(version=3))
    assert feature.action_uses_feature(Sidecar(path="a.parquet", sizeInBytes=1, modificationTime=1))
    v2 = Metadata(id="t", schemaString="{}", configuration={"delta.checkpointPolicy": "V2"})
    assert feature.action_uses_feature(v2)
    assert not feature.action_uses_feature(v2.with_configuration({"delta.checkpointPolicy": "classic"}))
