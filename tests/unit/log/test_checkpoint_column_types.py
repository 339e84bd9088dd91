"""A checkpoint whose action columns have the wrong types (``add.size`` a string, say) is
damaged, however well-formed its parquet: PROTOCOL.md "Checkpoint Schema" gives each field a type
(the actions' sections: ``size`` a long, ``path`` a string, ``dataChange`` a boolean), and a
reader that trusts it cannot read the table. Such a checkpoint is set aside like any other
damaged one: the state comes from the commits, and metadata cleanup never takes it as the
cutoff - deleting the commits before it would leave the table readable only from that file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import BadInputError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.operations.cleanup import cleanup_expired_logs

TABLE = "domain_metadata_user_domains"  # commits 0..4, a classic checkpoint at 3
DAY_MS = 86_400_000


def _retype(table: Path, action: str, field: str, to: pa.DataType) -> None:
    checkpoint = table / LOG_DIR / "00000000000000000003.checkpoint.parquet"
    data = pq.read_table(checkpoint)
    column = data.column(action).combine_chunks()
    names = [f.name for f in column.type]
    children = [column.field(i) for i in range(len(names))]
    i = names.index(field)
    if pa.types.is_string(children[i].type) and pa.types.is_integer(to):  # a number in place of the text
        children[i] = pc.cast(pc.utf8_length(children[i]), to)
    else:
        children[i] = pc.cast(children[i], to)
    retyped = pa.StructArray.from_arrays(children, names=names, mask=column.is_null())
    pq.write_table(data.set_column(data.schema.get_field_index(action), action, retyped), checkpoint)


def _old_copy(golden_root: Path, tmp_path: Path) -> Path:
    table = tmp_path / "t"
    shutil.copytree(golden_root / TABLE, table)
    for name in os.listdir(table / LOG_DIR):
        path = table / LOG_DIR / name
        os.chmod(path, 0o644)
        os.utime(path, (1_600_000_000, 1_600_000_000))  # long expired
    os.chmod(table / LOG_DIR, 0o755)
    return table


def _live_paths(table: Path) -> list[str]:
    adds = DeltaLog(str(table)).snapshot().arrow_state().adds
    return sorted(pc.struct_field(adds, "path").to_pylist())


def _commits(table: Path) -> list[str]:
    return sorted(p.name for p in (table / LOG_DIR).glob("*.json"))


@pytest.mark.parametrize("action,field,to", [
    ("add", "size", pa.string()),
    ("add", "path", pa.int64()),
    ("add", "dataChange", pa.string()),
])
def test_a_checkpoint_of_wrong_file_column_types_is_set_aside(golden_root, tmp_path, action, field, to):
    table = _old_copy(golden_root, tmp_path)
    expected_files = _live_paths(table)
    assert expected_files
    _retype(table, action, field, to)
    before = _commits(table)
    cleanup_expired_logs(DeltaLog(str(table)), retention_ms=DAY_MS, clock=ManualClock(1_700_000_000_000))
    assert _commits(table) == before  # commits 0..2 kept: the checkpoint at 3 cannot replace them
    assert _live_paths(table) == expected_files  # read from the commits


@pytest.mark.parametrize("action,field,to", [
    ("metaData", "schemaString", pa.int64()),
    ("protocol", "minReaderVersion", pa.string()),
])
def test_a_checkpoint_of_wrong_protocol_or_metadata_types_is_refused_or_set_aside(
        golden_root, tmp_path, action, field, to):
    """The protocol and metadata are read first, from the newest checkpoint: a malformed one there
    is refused (exit 2) - either way, nothing is deleted."""
    table = _old_copy(golden_root, tmp_path)
    _retype(table, action, field, to)
    before = _commits(table)
    try:
        cleanup_expired_logs(DeltaLog(str(table)), retention_ms=DAY_MS, clock=ManualClock(1_700_000_000_000))
    except BadInputError as exc:
        assert exc.error_class == "DELTA_STATE_RECOVER_ERROR"
    assert _commits(table) == before


def test_cleanup_still_cuts_at_a_sound_checkpoint(golden_root, tmp_path):
    table = _old_copy(golden_root, tmp_path)
    cleanup_expired_logs(DeltaLog(str(table)), retention_ms=DAY_MS, clock=ManualClock(1_700_000_000_000))
    assert _commits(table) == ["00000000000000000003.json", "00000000000000000004.json"]
