"""Who writes a checkpoint (log/checkpoint_engine): the Arrow path on the driver, or Spark jobs on
the active session above a file-action threshold or on request; the setting is checked before an
operation's first write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import BadSettingsError
from delta_downgrade.log.checkpoint.engine import ENGINE_VARIABLE, THRESHOLD_VARIABLE, write_checkpoint
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol import Protocol
from delta_downgrade_tools.builders import TableBuilder
from tests.oracle import same_rows

T0 = 1_700_000_000_000
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
DV_PROTOCOL = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors"}))


def _table(path: Path, *, configuration: dict[str, str] | None = None) -> TableBuilder:
    b = TableBuilder(path, clock=ManualClock(T0))
    b.create(SCHEMA, protocol=DV_PROTOCOL, rows=[{"id": i, "name": f"n{i}"} for i in range(5)],
             configuration={"delta.enableDeletionVectors": "true", **(configuration or {})})
    for start in range(5, 40, 5):
        b.append([{"id": i, "name": f"n{i}"} for i in range(start, start + 5)], files=2)
    b.remove_files([f.path for f in list(b.log.snapshot().state().files.values())[:3]])
    return b


def _writer(table: Path, paths: tuple[str, ...]) -> set[str]:
    """The parquet writer of each checkpoint file: Spark (parquet-mr) or pyarrow (parquet-cpp)."""
    return {("spark" if "parquet-mr" in pq.ParquetFile(str(table / p)).metadata.created_by else "arrow")
            for p in paths}


def test_arrow_is_used_without_a_spark_session_or_below_the_threshold(tmp_path, spark, monkeypatch):
    b = _table(tmp_path / "t")
    monkeypatch.delenv(THRESHOLD_VARIABLE, raising=False)
    result = write_checkpoint(b.log, clock=b.clock)  # a session is active, the log is tiny
    assert _writer(tmp_path / "t", result.paths) == {"arrow"}
    monkeypatch.setenv(ENGINE_VARIABLE, "arrow")
    monkeypatch.setenv(THRESHOLD_VARIABLE, "0")
    assert _writer(tmp_path / "t", write_checkpoint(b.log, clock=b.clock).paths) == {"arrow"}


def test_spark_above_the_threshold_writes_the_actions_the_arrow_path_writes(tmp_path, spark, monkeypatch):
    b = _table(tmp_path / "t")
    monkeypatch.setenv(THRESHOLD_VARIABLE, "0")
    by_spark = write_checkpoint(b.log, clock=b.clock)
    assert _writer(tmp_path / "t", by_spark.paths) == {"spark"}
    by_arrow = write_checkpoint(b.log, engine="arrow", clock=b.clock)

    def actions(result) -> dict[str, list[str]]:
        table = pa.concat_tables([pq.read_table(str(tmp_path / "t" / p)).select(
            ["add", "remove", "metaData", "protocol"]) for p in result.paths])
        return {c: sorted(str(r) for r in table.column(c).to_pylist() if r is not None) for c in table.column_names}

    assert actions(by_spark) == actions(by_arrow)


def test_a_v2_policy_falls_back_to_the_arrow_path(tmp_path, spark, monkeypatch):
    b = TableBuilder(tmp_path / "t", clock=ManualClock(T0))
    b.create(SCHEMA, protocol=Protocol(3, 7, frozenset({"v2Checkpoint"}), frozenset({"v2Checkpoint"})),
             rows=[{"id": 1, "name": "a"}], configuration={"delta.checkpointPolicy": "v2"})
    result = write_checkpoint(b.log, engine="spark", clock=b.clock)
    assert result.checkpoint_kind == "v2"


def test_a_drop_with_spark_checkpoints_reads_the_same(tmp_path, spark, oracle, monkeypatch):
    b = _table(tmp_path / "t")
    before = oracle.scan_rows(str(tmp_path / "t"))
    monkeypatch.setenv(THRESHOLD_VARIABLE, "0")
    outcome = drop_feature(str(tmp_path / "t"), "deletionVectors", clock=b.clock)
    assert outcome.status == "dropped" and "deletionVectors" not in outcome.protocol_after.features
    assert _writer(tmp_path / "t", tuple(outcome.checkpoints_written)) == {"spark"}
    after = oracle.scan_rows(str(tmp_path / "t"))
    assert len(before.unwrap()) == 30 and same_rows(after, before)  # 40 rows, 3 files of them removed


def test_a_bad_setting_is_refused_before_the_first_write(tmp_path, monkeypatch):
    b = _table(tmp_path / "t")
    names = sorted(os.listdir(tmp_path / "t" / LOG_DIR))
    monkeypatch.setenv(ENGINE_VARIABLE, "gpu")
    with pytest.raises(BadSettingsError, match="not one of auto, arrow, spark"):
        drop_feature(str(tmp_path / "t"), "deletionVectors", clock=b.clock)
    monkeypatch.setenv(ENGINE_VARIABLE, "auto")
    monkeypatch.setenv(THRESHOLD_VARIABLE, "many")
    with pytest.raises(BadSettingsError, match=THRESHOLD_VARIABLE):
        drop_feature(str(tmp_path / "t"), "deletionVectors", clock=b.clock)
    assert sorted(os.listdir(tmp_path / "t" / LOG_DIR)) == names


def test_spark_without_a_session_is_refused(tmp_path):
    _table(tmp_path / "t")
    names = sorted(os.listdir(tmp_path / "t" / LOG_DIR))
    # a fresh interpreter: no Spark session can be active there
    code = ("import sys\nfrom delta_downgrade.operations.drop_feature import drop_feature\n"
            "from delta_downgrade.errors import BadSettingsError\n"
            "try:\n    drop_feature(sys.argv[1], 'deletionVectors', checkpoint_engine='spark')\n"
            "except BadSettingsError as exc:\n    print(exc.error_class, 'no Spark session' in str(exc))\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t")], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, timeout=300)
    assert out.stdout.split() == ["DELTA_DOWNGRADE_BAD_SETTINGS", "True"], out.stderr[-2000:]
    assert sorted(os.listdir(tmp_path / "t" / LOG_DIR)) == names
    assert DeltaLog(str(tmp_path / "t")).snapshot().protocol == DV_PROTOCOL


def _file_actions(table: Path, paths) -> dict[str, list[str]]:
    """The adds and removes of a checkpoint by what identifies and describes each file."""
    data = pa.concat_tables([pq.read_table(str(table / p), columns=["add", "remove"]) for p in paths])
    out: dict[str, list[str]] = {}
    for kind, keys in (("add", ("path", "size", "modificationTime", "stats", "deletionVector")),
                       ("remove", ("path", "deletionTimestamp", "deletionVector"))):
        rows = [r for r in data.column(kind).to_pylist() if r is not None]
        out[kind] = sorted(str([r.get(k) for k in keys] + [dict(r.get("partitionValues") or [])])
                           for r in rows)
    return out


def _fresh(table: Path, version: int, scratch: Path) -> dict[str, list[str]]:
    """The checkpoint a fresh log writes for ``version`` on a copy of commits 0..version."""
    import shutil

    copy = scratch / f"fresh-{version}"
    (copy / LOG_DIR).mkdir(parents=True)
    for v in range(version + 1):
        name = f"{v:020d}.json"
        shutil.copy(table / LOG_DIR / name, copy / LOG_DIR / name)
    result = write_checkpoint(DeltaLog(str(copy)), version, engine="arrow", clock=ManualClock(T0))
    return _file_actions(copy, result.paths)


def test_carried_streamed_and_spark_checkpoints_hold_a_fresh_replays_actions(tmp_path, spark, monkeypatch):
    """The acceptance's differential check: one log, its checkpoints written by the carried
    state (a copy after an empty commit), by the streamed replay (many hash parts) and by Spark,
    each against the checkpoint a fresh one-part replay writes for that version."""
    from delta_downgrade.log.replay import arrow_replay
    from delta_downgrade.log.commit import commit

    table = tmp_path / "t"
    b = _table(table)
    log = b.log
    monkeypatch.setattr(arrow_replay, "PART_ACTIONS", 3)  # the streamed replay: several parts
    streamed = write_checkpoint(log, engine="arrow", clock=b.clock)
    assert log.snapshot().arrow_state().parts.count > 1
    version = commit(log, streamed.version, [], operation="Empty Commit", clock=b.clock)
    carried = write_checkpoint(log, version, engine="arrow", clock=b.clock)  # copied: same content
    assert (table / carried.paths[0]).read_bytes() == (table / streamed.paths[0]).read_bytes()
    monkeypatch.undo()
    version = commit(log, version, [], operation="Empty Commit", clock=b.clock)
    by_spark = write_checkpoint(log, version, engine="spark", clock=b.clock)
    assert _writer(table, by_spark.paths) == {"spark"}
    for result in (streamed, carried, by_spark):
        assert _file_actions(table, result.paths) == _fresh(table, result.version, tmp_path), result.version
