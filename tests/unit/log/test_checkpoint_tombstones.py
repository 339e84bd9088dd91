"""A checkpoint is already reconciled: its removes are tombstones only. Even an invalid checkpoint
holding add(p) and remove(p) for the same logical file must keep the add, in both replays —
dropping it would lose the file's rows for every reader of a checkpoint we write next."""

from __future__ import annotations

import pyarrow as pa

from delta_downgrade.protocol.actions import RemoveFile
from delta_downgrade.clock import ManualClock
from delta_downgrade.log.replay.arrow_replay import replay_snapshot
from delta_downgrade.log.checkpoint.classic_writer import CheckpointContent, write_checkpoint
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade_tools.builders import TableBuilder


def test_same_key_add_and_remove_in_a_checkpoint_keep_the_add(tmp_path):
    clock = ManualClock()
    builder = TableBuilder(str(tmp_path), clock=clock)
    builder.create(pa.schema([("id", pa.int64())]), rows=[{"id": 1}, {"id": 2}])
    state = DeltaLog(str(tmp_path)).snapshot().state()
    (add,) = state.files.values()
    write_checkpoint(builder.storage, 0, CheckpointContent(
        protocol=state.protocol_action, metadata=state.metadata, adds=[add],
        removes=[RemoveFile(path=add.path, deletionTimestamp=clock.now_ms(), dataChange=False)]))
    snapshot = DeltaLog(str(tmp_path)).snapshot()
    assert snapshot.segment.checkpoint is not None and snapshot.segment.commits == ()
    assert [f.path for f in snapshot.state().files.values()] == [add.path]
    assert [r["path"] for r in replay_snapshot(snapshot).adds.to_pylist()] == [add.path]
