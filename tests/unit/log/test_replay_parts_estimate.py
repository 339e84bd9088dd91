"""How many parts a replay is cut in (``planned_parts``): from the files' bytes, and, when the bytes
say the log is larger than one part, from the rows the checkpoint's parquet footers state.

A checkpoint of adds with statistics holds three times more bytes per action than the bytes
estimate assumes: without the footers, a table of 100k files with a checkpoint was replayed in
spilled parts, as a table of 300k would be."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.replay import arrow_replay
from delta_downgrade.log.replay.arrow_checkpoint import checkpoint_rows
from delta_downgrade.log.replay.state_parts import MemoryParts, SpilledParts

T0 = 1_700_000_000_000
ADDS = 60
SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}


def _stats() -> str:
    # random bytes in the min/max values: statistics that do not compress, as real ones barely do
    return json.dumps({"numRecords": 10, "minValues": {"id": secrets.token_hex(150)},
                       "maxValues": {"id": secrets.token_hex(150)}, "nullCount": {"id": 0}})


def _table(root: Path) -> DeltaLog:
    """Commit 0: protocol, metadata and ADDS adds with ~700 bytes of statistics each; its
    checkpoint; commit 1: one more add."""
    (root / LOG_DIR).mkdir(parents=True)
    lines = [{"commitInfo": {"timestamp": T0}},
             {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
             {"metaData": {"id": "m", "format": {"provider": "parquet", "options": {}},
                           "schemaString": json.dumps(SCHEMA), "partitionColumns": [], "configuration": {},
                           "createdTime": T0}}]
    lines += [{"add": {"path": f"f{i}.parquet", "partitionValues": {}, "size": 10, "modificationTime": T0,
                       "dataChange": True, "stats": _stats()}} for i in range(ADDS)]
    (root / LOG_DIR / f"{0:020d}.json").write_text("\n".join(map(json.dumps, lines)) + "\n")
    checkpoint_table(DeltaLog(str(root)), clock=ManualClock(T0))
    (root / LOG_DIR / f"{1:020d}.json").write_text(json.dumps(
        {"add": {"path": "g.parquet", "partitionValues": {}, "size": 10, "modificationTime": T0,
                 "dataChange": True}}) + "\n")
    return DeltaLog(str(root))


def test_a_checkpoint_larger_in_bytes_than_in_rows_is_counted_by_its_footer(tmp_path):
    log = _table(tmp_path / "t")
    segment = log.segment()
    checkpoint = segment.checkpoint
    assert checkpoint is not None and checkpoint_rows(log.storage, checkpoint) == ADDS + 2  # + protocol, metadata
    by_bytes = checkpoint.size_bytes // arrow_replay.PARQUET_BYTES_PER_ACTION
    assert by_bytes > 2 * ADDS, "the bytes overstate the actions (what this test is about)"
    # one part of 100 actions holds the 60 adds: the footer says so, the bytes alone would not
    assert arrow_replay.planned_parts(log.storage, segment, 100) == 1
    assert arrow_replay.estimated_file_actions(log.storage, segment, count_above=10 ** 9) >= by_bytes
    # a part smaller than the rows: cut in parts by the rows
    assert arrow_replay.planned_parts(log.storage, segment, 20) == 4  # ceil((62 + 0) / 20)
    state = arrow_replay.replay_segment(log.storage, log.table, segment, part_actions=100)
    assert isinstance(state.parts, MemoryParts) and state.num_adds == ADDS + 1
    spilled = arrow_replay.replay_segment(log.storage, log.table, segment, part_actions=20)
    assert isinstance(spilled.parts, SpilledParts) and spilled.num_adds == ADDS + 1


def test_a_checkpoint_whose_footer_cannot_be_read_is_estimated_by_its_bytes(tmp_path):
    log = _table(tmp_path / "t")
    segment = log.segment()
    checkpoint = segment.checkpoint
    assert checkpoint is not None
    path = tmp_path / "t" / checkpoint.files[0].path
    data = path.read_bytes()
    path.write_bytes(data[:-8] + b"XXXXXXXX")  # the footer's length and magic
    assert checkpoint_rows(log.storage, checkpoint) is None
    by_bytes = checkpoint.size_bytes // arrow_replay.PARQUET_BYTES_PER_ACTION
    assert arrow_replay.planned_parts(log.storage, segment, 100) == -(-by_bytes // 100)
