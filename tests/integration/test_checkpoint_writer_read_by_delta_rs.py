"""delta-rs (in a subprocess) reads the checkpoints the checkpoint writer writes: the state from the
checkpoint alone, multi-part parts, and a scan equal after the log is replaced by our checkpoint."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.log.checkpoint.classic_writer import (
    CheckpointContent,
    write_checkpoint,
)
from delta_downgrade.log.format.file_names import LAST_CHECKPOINT, commit_path, parse_log_file
from delta_downgrade.protocol.actions import (
    AddFile,
    ProtocolAction,
    RemoveFile,
    Txn,
)
from delta_downgrade.storage.local import LocalStorage
from tests.checkpoint_support import (
    checkpoint_metadata,
    checkpoint_only_copy,
    replay_to_content,
)

# --- helpers -------------------------------------------------------------------------------------


# --- delta-rs reads tables whose only history is our checkpoint ----------------------------------

_DATA_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _schema_string(partitioned: bool) -> str:
    fields = [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
              {"name": "name", "type": "string", "nullable": True, "metadata": {}}]
    if partitioned:
        fields.append({"name": "part", "type": "string", "nullable": True, "metadata": {}})
    return json.dumps({"type": "struct", "fields": fields})


def _write_data_file(root: Path, ids: list[int], part: str | None, partitioned: bool,
                     name: str) -> tuple[AddFile, list[dict]]:
    rows = [{"id": i, "name": f"n{i}"} for i in ids]
    if partitioned:
        directory = f"part={part if part is not None else '__HIVE_DEFAULT_PARTITION__'}/"
        values: dict[str, str | None] = {"part": part}
    else:
        directory, values = "", {}
    rel = f"{directory}{name}.parquet"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=_DATA_SCHEMA), root / rel)
    stats = {"numRecords": len(ids), "minValues": {"id": min(ids), "name": f"n{min(ids)}"},
             "maxValues": {"id": max(ids), "name": f"n{max(ids)}"},
             "nullCount": {"id": 0, "name": 0}}
    add = AddFile(path=rel, partitionValues=values, size=(root / rel).stat().st_size,
                  modificationTime=int(time.time() * 1000), dataChange=True,
                  stats=json.dumps(stats, separators=(",", ":")))
    expected = [dict(r, part=part) if partitioned else r for r in rows]
    return add, expected


def _commit(root: Path, version: int, actions: list) -> None:
    storage = LocalStorage(root)
    lines = [a.to_line() for a in actions]
    lines.append(json.dumps({"commitInfo": {"timestamp": int(time.time() * 1000),
                                            "operation": "WRITE"}}))
    storage.put_if_absent(commit_path(version), ("\n".join(lines) + "\n").encode())


def _build_table(root: Path, partitioned: bool) -> tuple[CheckpointContent, dict[str, list]]:
    """Commits 0..2 (adds, a txn, a remove); returns the state at 2 and the rows per live file."""
    root.mkdir(parents=True, exist_ok=True)
    parts = ["a", "b", None, "a", "b"]
    files = {}
    for i in range(5):
        add, rows = _write_data_file(root, list(range(10 * i, 10 * i + 3)), parts[i], partitioned,
                                     f"f{i}")
        files[f"f{i}"] = (add, rows)
    protocol = ProtocolAction(1, 2)
    metadata = checkpoint_metadata(schemaString=_schema_string(partitioned),
                         partitionColumns=["part"] if partitioned else [])
    _commit(root, 0, [protocol, metadata, files["f0"][0], files["f1"][0]])
    txn = Txn("stream-1", 3, int(time.time() * 1000))
    _commit(root, 1, [txn, files["f2"][0], files["f3"][0]])
    f1 = files["f1"][0]
    remove = RemoveFile(path=f1.path, deletionTimestamp=int(time.time() * 1000), dataChange=True,
                        extendedFileMetadata=True, partitionValues=f1.partitionValues,
                        size=f1.size)
    _commit(root, 2, [remove, files["f4"][0]])
    live = {k: v for k, v in files.items() if k != "f1"}
    state = CheckpointContent(protocol, metadata, adds=[v[0] for v in live.values()],
                              removes=[remove], txns=[txn])
    return state, {k: v[1] for k, v in live.items()}


def _drop_log_except_checkpoint(root: Path, keep_from_version: int) -> None:
    """Delete every commit (and crc) up to ``keep_from_version - 1``: only the checkpoint can
    explain that state now."""
    for p in (root / "_delta_log").iterdir():
        lf = parse_log_file(p.name)
        if lf is not None and lf.kind in ("commit", "crc") and lf.version < keep_from_version:
            p.unlink()


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
@pytest.mark.parametrize("part_size", [None, 2], ids=["classic", "multipart"])
def test_delta_rs_reads_state_from_our_checkpoint_only(tmp_path, oracle, partitioned, part_size):
    root = tmp_path / "t"
    state, rows_by_file = _build_table(root, partitioned)
    result = write_checkpoint(LocalStorage(root), 2, state, part_size=part_size)
    assert (result.parts is None) == (part_size is None)
    _drop_log_except_checkpoint(root, 3)
    assert not (root / commit_path(0)).exists()

    # one more commit after the checkpoint: delta-rs must replay it on top of the checkpoint
    add5, rows5 = _write_data_file(root, [100, 101], "b", partitioned, "f5")
    _commit(root, 3, [add5])
    expected_rows = [r for rows in rows_by_file.values() for r in rows] + rows5
    expected_files = sorted(str(root / a.path) for a in [*state.adds, add5])

    assert oracle.version(str(root)).unwrap() == 3
    assert sorted(oracle.files(str(root)).unwrap()) == expected_files
    got = oracle.pyarrow_rows(str(root)).unwrap()
    assert sorted(got, key=lambda r: r["id"]) == sorted(expected_rows, key=lambda r: r["id"])
    assert sorted(oracle.scan_rows(str(root)).unwrap(), key=lambda r: r["id"]) == \
        sorted(expected_rows, key=lambda r: r["id"])

    # and the state at the checkpoint version itself
    assert sorted(oracle.files(str(root), version=2).unwrap()) == sorted(
        str(root / a.path) for a in state.adds)


def test_delta_rs_reads_our_checkpoint_without_last_checkpoint(tmp_path, oracle):
    root = tmp_path / "t"
    state, rows_by_file = _build_table(root, partitioned=False)
    write_checkpoint(LocalStorage(root), 2, state, update_last_checkpoint=False)
    _drop_log_except_checkpoint(root, 3)
    assert not (root / LAST_CHECKPOINT).exists()
    rows = oracle.pyarrow_rows(str(root)).unwrap()
    expected = sorted(r["id"] for rs in rows_by_file.values() for r in rs)
    assert sorted(r["id"] for r in rows) == expected


# --- golden tables: replay the JSON log, checkpoint, drop the log, compare data -----------------


@pytest.mark.parametrize("name", ["dv_basic_no_checkpoint", "dv_partitioned_checkpoint",
                                  "dv_cm_name_checkpoint", "row_tracking_dv",
                                  "domain_metadata_user_domains", "cm_name_partitioned"])
@pytest.mark.parametrize("part_size", [None, 2], ids=["classic", "multipart"])
def test_delta_rs_scan_equal_after_replacing_log_by_our_checkpoint(golden_table, tmp_path, oracle,
                                                                    name, part_size):
    """Deletion vectors (descriptors in add), partition values, column mapping, row tracking and
    domain metadata all survive: delta-rs's DataFusion scan of a table whose log is only our
    checkpoint equals its scan of the original log."""
    src = golden_table(name)
    before = oracle.scan_rows(src)
    if not before.ok:
        pytest.skip(f"delta-rs cannot scan the original {name}: {before.error}")
    _, state = replay_to_content(Path(src))
    result = checkpoint_only_copy(src, tmp_path / "copy", part_size)
    if part_size is not None and len(state.adds) + len(state.removes) > 2 and \
            "v2Checkpoint" not in (state.protocol.writerFeatures or ()):
        assert result.parts is not None
    after = oracle.scan_rows(str(tmp_path / "copy"))
    assert after.ok, after.error
    canon = lambda rows: sorted(json.dumps(r, sort_keys=True) for r in rows)  # noqa: E731
    assert canon(after.value) == canon(before.value)
    assert oracle.protocol(str(tmp_path / "copy")).unwrap() == oracle.protocol(src).unwrap()
    assert len(oracle.files(str(tmp_path / "copy")).unwrap()) == len(state.adds)


def test_delta_rs_reads_multipart_checkpoint_with_empty_parts(tmp_path, oracle):
    root = tmp_path / "t"
    state, rows_by_file = _build_table(root, partitioned=True)
    result = write_checkpoint(LocalStorage(root), 2, state, part_size=1)
    assert result.parts == 5 and 0 in result.part_rows, result.part_rows
    _drop_log_except_checkpoint(root, 3)
    rows = oracle.pyarrow_rows(str(root)).unwrap()
    expected = [r for rs in rows_by_file.values() for r in rs]
    assert sorted(rows, key=lambda r: r["id"]) == sorted(expected, key=lambda r: r["id"])
