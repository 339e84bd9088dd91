"""What a fast drop reads of checkpoints: the table's checkpoint's file actions once (one replay;
the barrier checkpoints and the boundary one are written from that state carried over the drop's
commits, which change no file), and never its own barrier checkpoints back. Counted in-process on
the parquet reads (``checkpoint_reader.parquet_source``) of a drop of a checkpointed log."""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from typing import Any, Iterator

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.read import checkpoint_integrity, checkpoint_reader
from delta_downgrade.log.replay import arrow_checkpoint, arrow_replay
from delta_downgrade.operations.drop_feature import drop_feature

T0 = 1_700_000_000_000
CHECKPOINT = 20


def _table(path: str) -> None:
    log_dir = os.path.join(path, "_delta_log")
    os.makedirs(log_dir)
    first = [{"commitInfo": {"timestamp": T0, "operation": "CREATE TABLE"}},
             {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                           "writerFeatures": ["deletionVectors"]}},
             {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                           "schemaString": json.dumps({"type": "struct", "fields": [
                               {"name": "id", "type": "long", "nullable": True, "metadata": {}}]}),
                           "partitionColumns": [], "configuration": {"delta.enableDeletionVectors": "true"},
                           "createdTime": T0}}]
    for v in range(30):
        lines = first if v == 0 else [{"commitInfo": {"timestamp": T0 + v, "operation": "WRITE"}}]
        lines = [*lines, {"add": {"path": f"f{v}.parquet", "partitionValues": {}, "size": 10, "modificationTime": T0,
                                  "dataChange": True}}]
        if v % 7 == 6:  # a rewrite now and then: the replay has repeated paths to reconcile
            lines.append({"remove": {"path": f"f{v - 3}.parquet", "deletionTimestamp": T0 + v, "dataChange": True}})
        with open(os.path.join(log_dir, f"{v:020d}.json"), "w") as fh:
            fh.write("\n".join(json.dumps(a) for a in lines) + "\n")
    checkpoint_table(DeltaLog(path), CHECKPOINT, clock=ManualClock(T0 + 100))


def test_a_fast_drop_replays_once_and_reads_no_barrier_checkpoint_back(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    _table(path)
    opened: Counter[str] = Counter()
    file_actions: Counter[str] = Counter()
    replays: list[int] = []
    source = checkpoint_reader.parquet_source

    @contextlib.contextmanager
    def counted(storage: Any, rel_path: str) -> Iterator[Any]:
        opened[rel_path.rsplit("/", 1)[-1]] += 1
        with source(storage, rel_path) as data:
            yield data

    for module in (checkpoint_reader, arrow_checkpoint, checkpoint_integrity):
        monkeypatch.setattr(module, "parquet_source", counted)
    read_parquet = arrow_checkpoint._read_parquet
    monkeypatch.setattr(arrow_checkpoint, "_read_parquet", lambda storage, rel, columns: (
        file_actions.update([rel.rsplit("/", 1)[-1]]) if "add" in columns else None) or read_parquet(storage, rel, columns))
    replay = arrow_replay.replay_segment
    monkeypatch.setattr(arrow_replay, "replay_segment", lambda *a, **kw: replays.append(1) or replay(*a, **kw))

    outcome = drop_feature(path, "deletionVectors")
    assert outcome.status == "dropped" and len(outcome.checkpoints_written) == 4
    source_checkpoint = f"{CHECKPOINT:020d}.checkpoint.parquet"
    assert replays == [1]
    assert file_actions == Counter({source_checkpoint: 1})
    barriers = [p.rsplit("/", 1)[-1] for p in outcome.checkpoints_written[:3]]
    assert not any(opened[name] for name in barriers), opened
