"""The Spark checkpoint path (delta_downgrade.log.checkpoint.on_spark) writes the checkpoint the Arrow
path writes: the same files, the same actions in each file, the same ``_last_checkpoint``.

Differential, on real logs read by a real local Spark: a hand-written log with every case of
PROTOCOL.md "Action Reconciliation" (tombstones expired and not, re-added paths, ``a%20b`` and
``a b`` as one file, ``s%2Bt`` and ``s+t`` as one file, deletion vectors swapped, an add and a
remove of one path in one commit, a path added twice in one commit, txns, domains added and
removed), replayed from commits only, from a classic checkpoint and from a multi-part one; golden
tables (DVs in checkpoints, domains, a multi-part source checkpoint, V2 source checkpoints with
sidecars). Each checkpoint is also checked against what the rules say, not only against the Arrow
path, and delta-rs reads the table from the Spark checkpoint alone.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import SparkCheckpointUnsupportedError
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LAST_CHECKPOINT, LOG_DIR, multipart_checkpoint_path
from delta_downgrade.log.format.last_checkpoint import read_last_checkpoint
from delta_downgrade.log.checkpoint.on_spark import TEMP_DIR_PREFIX, spark_checkpoint_table
from delta_downgrade.log.checkpoint.spark_hash import spark_partition_of
from delta_downgrade.log.replay.spark_replay import decoded_path
from delta_downgrade.storage.local import LocalStorage

from tests.oracle import same_rows

NOW = 1_800_000_000_000
HOUR = 3_600_000
DAY = 24 * HOUR
U_DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40,
        "cardinality": 6}
I_DV = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
        "sizeInBytes": 40, "cardinality": 6}


# --- a hand-written log -----------------------------------------------------------------------------

def _add(path: str, version: int, size: int = 100, dv: dict | None = None) -> dict:
    add: dict[str, Any] = {"path": path, "partitionValues": {}, "size": size, "modificationTime": NOW - DAY + version,
                           "dataChange": True, "stats": json.dumps({"numRecords": size})}
    if dv is not None:
        add["deletionVector"] = dv
    return {"add": add}


def _remove(path: str, stamp: int | None, dv: dict | None = None) -> dict:
    remove: dict[str, Any] = {"path": path, "dataChange": True, "extendedFileMetadata": True,
                              "partitionValues": {}, "size": 100}
    if stamp is not None:
        remove["deletionTimestamp"] = stamp
    if dv is not None:
        remove["deletionVector"] = dv
    return {"remove": remove}


def _commit(root: Path, version: int, actions: list[dict]) -> None:
    lines = [{"commitInfo": {"timestamp": NOW - DAY + version, "operation": "WRITE"}}, *actions]
    (root / LOG_DIR).mkdir(parents=True, exist_ok=True)
    (root / LOG_DIR / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")


#: The hand-written log, commit by commit; a checkpoint may be taken after CHECKPOINT_AT.
COMMITS: list[list[dict]] = [
    [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                   "writerFeatures": ["deletionVectors", "domainMetadata"]}},
     {"metaData": {"id": "11111111-2222-3333-4444-555555555555", "format": {"provider": "parquet", "options": {}},
                   "schemaString": json.dumps({"type": "struct", "fields": [
                       {"name": "id", "type": "long", "nullable": True, "metadata": {}}]}),
                   "partitionColumns": [], "configuration": {"delta.enableDeletionVectors": "true"},
                   "createdTime": NOW - DAY}},
     *[_add(p, 0) for p in ("a", "x%20y", "b", "d", "p1", *[f"f{i}" for i in range(10)])]],
    [_remove("x y", NOW - HOUR), {"txn": {"appId": "app1", "version": 1, "lastUpdated": NOW - DAY}},
     {"domainMetadata": {"domain": "d1", "configuration": "{\"k\":1}", "removed": False}},
     {"domainMetadata": {"domain": "d2", "configuration": "{}", "removed": False}}],
    [_remove("b", NOW - 8 * DAY), _remove("gone", None), {"txn": {"appId": "app2", "version": 5}}],
    [_add("b", 3, size=300), _add("e", 3), _remove("f0", NOW - HOUR)],
    # one commit: an add and a remove of one path (the remove ranks first, the add wins), and
    # one path added twice (the last line is the value)
    [_add("c", 4), _remove("c", NOW - HOUR), _add("d", 4, size=1), _add("d", 4, size=2),
     {"txn": {"appId": "app1", "version": 2, "lastUpdated": NOW - HOUR}}],
    [_remove("p1", NOW - HOUR), _add("p1", 5, dv=U_DV), _remove("a", NOW - 2 * HOUR), _add("s%2Bt", 5),
     {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": True}}],
    [_remove("p1", NOW - HOUR, dv=U_DV), _add("p1", 6, dv=I_DV), _remove("s+t", None), _add("f1", 6, size=611)],
    [],
]
CHECKPOINT_AT = 3

#: (path, size) of the live files at the last version: "a" and "x%20y" (removed as "x y"), "f0",
#: "s%2Bt" (removed as "s+t") are gone; "b" was re-added, "d" twice in one commit, "f1" again.
EXPECTED_LIVE = {("b", 300), ("c", 100), ("d", 2), ("e", 100), ("f1", 611), ("p1", 100),
                 *[(f"f{i}", 100) for i in range(2, 10)]}
EXPECTED_TOMBSTONES = {("x y", NOW - HOUR, None), ("gone", None, None), ("f0", NOW - HOUR, None),
                       ("p1", NOW - HOUR, None), ("a", NOW - 2 * HOUR, None), ("p1", NOW - HOUR, "u"),
                       ("s+t", None, None)}


def _write_log(root: Path, start: str) -> None:
    """The log, with a checkpoint of version CHECKPOINT_AT when ``start`` says so ("commits",
    "classic", "multipart": 3 parts)."""
    for version, actions in enumerate(COMMITS[:CHECKPOINT_AT + 1]):
        _commit(root, version, actions)
    if start != "commits":
        result = checkpoint_table(DeltaLog(str(root)), CHECKPOINT_AT, clock=ManualClock(NOW),
                                  part_size=7 if start == "multipart" else None)
        assert result.checkpoint_kind == ("multipart" if start == "multipart" else "classic")
    for version, actions in enumerate(COMMITS[CHECKPOINT_AT + 1:], start=CHECKPOINT_AT + 1):
        _commit(root, version, actions)


# --- reading checkpoints back -------------------------------------------------------------------

def _plain(value: Any) -> Any:
    """Parquet values as JSON: a map (pyarrow gives its entries as tuples) as a sorted dict."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return {k: _plain(v) for k, v in sorted(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def file_actions(root: str, rel_path: str) -> list[str]:
    """The actions of one checkpoint file, each ``column: value`` as canonical JSON, sorted.
    Every row holds exactly one action."""
    rows = pq.read_table(os.path.join(root, rel_path)).to_pylist()
    out = []
    for row in rows:
        set_columns = [(k, v) for k, v in row.items() if v is not None]
        assert len(set_columns) == 1, f"a checkpoint row holds {len(set_columns)} actions: {row}"
        ((column, value),) = set_columns
        out.append(json.dumps([column, _plain(value)], sort_keys=True))
    return sorted(out)


def assert_same_checkpoint(arrow_root: str, arrow: Any, spark_root: str, spark: Any) -> None:
    """Same files, same actions file by file, same counts and ``_last_checkpoint`` fields."""
    assert spark.paths == arrow.paths
    assert (spark.version, spark.num_actions, spark.num_add_files, spark.parts, spark.part_rows) == \
        (arrow.version, arrow.num_actions, arrow.num_add_files, arrow.parts, arrow.part_rows)
    for path in arrow.paths:
        assert file_actions(spark_root, path) == file_actions(arrow_root, path), path
    mine = read_last_checkpoint(LocalStorage(spark_root))
    theirs = read_last_checkpoint(LocalStorage(arrow_root))
    assert mine is not None and theirs is not None
    ignored = ("sizeInBytes", "checksum")  # the parquet layouts differ, not the actions
    assert {k: v for k, v in mine.items() if k not in ignored} == {k: v for k, v in theirs.items() if k not in ignored}
    assert mine["sizeInBytes"] == spark.size_in_bytes == sum(
        os.path.getsize(os.path.join(spark_root, p)) for p in spark.paths)


def _copy(src: str | Path, dest: Path) -> str:
    shutil.copytree(src, dest)
    return str(dest)


def _no_temp_dirs(root: str) -> bool:
    return not [n for n in os.listdir(os.path.join(root, LOG_DIR)) if n.startswith(TEMP_DIR_PREFIX)]


# --- tests --------------------------------------------------------------------------------------

@pytest.mark.parametrize("start", ["commits", "classic", "multipart"])
def test_same_actions_as_the_arrow_path(spark, tmp_path, start):
    base = tmp_path / "base"
    _write_log(base, start)
    arrow_root, spark_root = _copy(base, tmp_path / "arrow"), _copy(base, tmp_path / "spark")
    clock = ManualClock(NOW)
    arrow = checkpoint_table(DeltaLog(arrow_root), clock=clock)
    result = spark_checkpoint_table(spark, DeltaLog(spark_root), clock=clock)
    assert_same_checkpoint(arrow_root, arrow, spark_root, result)
    assert _no_temp_dirs(spark_root)

    # and what the rules say, independently of the Arrow path
    rows = [json.loads(r) for r in file_actions(spark_root, result.paths[0])]
    adds = [v for k, v in rows if k == "add"]
    removes = [v for k, v in rows if k == "remove"]
    assert {(a["path"], a["size"]) for a in adds} == EXPECTED_LIVE
    assert {(r["path"], r["deletionTimestamp"], (r["deletionVector"] or {}).get("storageType"))
            for r in removes} == EXPECTED_TOMBSTONES
    assert not any(a["dataChange"] for a in adds) and not any(r["dataChange"] for r in removes)
    assert [a["deletionVector"]["storageType"] for a in adds if a["path"] == "p1"] == ["i"]
    assert sorted((t["appId"], t["version"]) for k, t in rows if k == "txn") == [("app1", 2), ("app2", 5)]
    assert [d["domain"] for k, d in rows if k == "domainMetadata"] == ["d2"]
    assert result.version == len(COMMITS) - 1 and result.num_add_files == len(EXPECTED_LIVE)


@pytest.mark.parametrize("part_size", [4, 1])
def test_multi_part_rows_in_their_hash_partition(spark, tmp_path, part_size):
    """n = ceil(file actions / part size) parts; every row in the part Spark's hash of its path
    gives (protocol, metadata, txns, domains in the part of a null key). With one file action per
    part some parts are empty: they exist, as parquet files of the schema."""
    base = tmp_path / "base"
    _write_log(base, "classic")
    arrow_root, spark_root = _copy(base, tmp_path / "arrow"), _copy(base, tmp_path / "spark")
    clock = ManualClock(NOW)
    arrow = checkpoint_table(DeltaLog(arrow_root), clock=clock, part_size=part_size)
    result = spark_checkpoint_table(spark, DeltaLog(spark_root), clock=clock, part_size=part_size)
    n = -(-(len(EXPECTED_LIVE) + len(EXPECTED_TOMBSTONES)) // part_size)
    if part_size == 1:
        assert 0 in result.part_rows  # the empty-part case is exercised
    assert result.parts == n and len(result.paths) == n
    assert_same_checkpoint(arrow_root, arrow, spark_root, result)
    for part, path in enumerate(result.paths):
        assert path == multipart_checkpoint_path(result.version, part + 1, n)
        for row in (json.loads(r) for r in file_actions(spark_root, path)):
            column, value = row
            key = value["path"] if column in ("add", "remove") else None
            assert spark_partition_of(key, n) == part, (column, value)


def test_the_last_line_wins_however_spark_splits_a_commit(spark, tmp_path):
    """A commit larger than Spark's split size is read by several tasks: the place of a line
    (split start, then row within the split) still orders the lines of the file."""
    root = tmp_path / "t"
    _commit(root, 0, COMMITS[0][:2])
    big = [_add(f"file-{i:04d}", 1, size=i) for i in range(400)]
    big += [_add("file-0000", 1, size=7777), _add("file-0399", 1, size=8888)]  # re-added at the end
    _commit(root, 1, big)
    arrow_root, spark_root = _copy(root, tmp_path / "arrow"), _copy(root, tmp_path / "spark")
    old = {k: spark.conf.get(k) for k in ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")}
    spark.conf.set("spark.sql.files.maxPartitionBytes", "4096")
    spark.conf.set("spark.sql.files.openCostInBytes", "0")
    try:
        result = spark_checkpoint_table(spark, DeltaLog(spark_root), clock=ManualClock(NOW))
    finally:
        for k, v in old.items():
            spark.conf.set(k, v)
    assert os.path.getsize(root / LOG_DIR / f"{1:020d}.json") > 10 * 4096
    arrow = checkpoint_table(DeltaLog(arrow_root), clock=ManualClock(NOW))
    assert_same_checkpoint(arrow_root, arrow, spark_root, result)
    sizes = {v["path"]: v["size"] for k, v in map(json.loads, file_actions(spark_root, result.paths[0])) if k == "add"}
    assert (sizes["file-0000"], sizes["file-0399"], sizes["file-0001"]) == (7777, 8888, 1)


@pytest.mark.parametrize("name", ["dv_partitioned_checkpoint", "dv_cdf_shared_dv_file_dbr", "multipart_checkpoint",
                                  "domain_metadata_user_domains", "history_truncated_no_replay"])
def test_golden_tables_same_actions(spark, golden_table, oracle, tmp_path, name):
    arrow_root = golden_table(name)
    spark_root = golden_table(name)
    clock = ManualClock(NOW)
    arrow = checkpoint_table(DeltaLog(arrow_root), clock=clock)
    result = spark_checkpoint_table(spark, DeltaLog(spark_root), clock=clock)
    assert_same_checkpoint(arrow_root, arrow, spark_root, result)
    _reads_the_same_from_the_checkpoint_alone(oracle, spark_root, result.version, tmp_path)


@pytest.mark.parametrize("name", ["v2_checkpoint_json_sidecars", "v2_checkpoint_parquet_sidecars"])
def test_v2_source_checkpoint_with_sidecars(spark, golden_table, name):
    """A V2 checkpoint (JSON or parquet top-level file, parquet sidecars) as the segment's
    checkpoint: its file actions come from the sidecars. The table is switched to the classic
    policy first (the Spark path does not write V2 checkpoints)."""
    roots = []
    for _ in range(2):
        root = golden_table(name)
        from delta_downgrade_tools.builders import TableBuilder

        TableBuilder(root).set_properties({"delta.checkpointPolicy": "classic"})
        assert DeltaLog(root).segment().checkpoint.kind == "v2"
        roots.append(root)
    clock = ManualClock(NOW)
    arrow = checkpoint_table(DeltaLog(roots[0]), clock=clock)
    result = spark_checkpoint_table(spark, DeltaLog(roots[1]), clock=clock)
    assert result.checkpoint_kind == "classic" and result.num_add_files > 0
    assert_same_checkpoint(roots[0], arrow, roots[1], result)


def test_builder_table_with_dvs_reads_the_same(spark, oracle, tmp_path):
    """A table written by the package's builders (real parquet and DV files): after the Spark
    checkpoint, delta-rs reads the same rows, also from the checkpoint alone."""
    from delta_downgrade_tools.builders import TableBuilder
    from delta_downgrade_tools.dv_builder import create_dv_table, delete_rows

    root = tmp_path / "dv"
    builder = TableBuilder(root, clock=ManualClock(NOW - HOUR))
    schema = pa.schema([("id", pa.int64()), ("part", pa.string())])
    create_dv_table(builder, schema, [{"id": i, "part": f"p {i % 3}"} for i in range(30)],
                    partition_columns=["part"], files=2)
    builder.append([{"id": 100 + i, "part": "p%1"} for i in range(5)])
    delete_rows(builder, lambda r: r["id"] % 4 == 0)
    delete_rows(builder, lambda r: r["id"] % 5 == 0)
    first = sorted(builder.log.refresh().snapshot().state().files.values(), key=lambda a: a.path)[0]
    builder.remove_files([first.path])
    before = oracle.scan_rows(str(root))
    result = spark_checkpoint_table(spark, DeltaLog(str(root)), clock=ManualClock(NOW))
    assert result.num_add_files == len(DeltaLog(str(root)).snapshot().state().files)
    assert same_rows(oracle.scan_rows(str(root)), before)
    _reads_the_same_from_the_checkpoint_alone(oracle, str(root), result.version, tmp_path, before)


def _reads_the_same_from_the_checkpoint_alone(oracle, root: str, version: int, tmp_path: Path,
                                              expected: Any = None) -> None:
    """On a copy without the commits (and older checkpoints) up to ``version``, delta-rs reads
    the same rows: only the new checkpoint can explain the table."""
    expected = oracle.scan_rows(root) if expected is None else expected
    alone = Path(_copy(root, tmp_path / f"alone-{os.path.basename(root)}"))
    for name in os.listdir(alone / LOG_DIR):
        digits = name.split(".", 1)[0]
        ours = name.startswith(f"{version:020d}.checkpoint.")
        if digits.isdigit() and int(digits) <= version and not ours:
            os.remove(alone / LOG_DIR / name)  # commits, checksums, older checkpoints
    assert same_rows(oracle.scan_rows(str(alone)), expected)


def test_a_failed_move_leaves_no_checkpoint(spark, tmp_path, monkeypatch):
    """Part 2 of 3 cannot be put under its name: part 1 (moved already) is deleted again, the
    temporary directory is gone, ``_last_checkpoint`` is unchanged; a rerun finishes."""
    root = tmp_path / "t"
    _write_log(root, "classic")
    log_dir = root / LOG_DIR
    before_pointer = (root / LAST_CHECKPOINT).read_bytes()
    version = len(COMMITS) - 1
    part_two = multipart_checkpoint_path(version, 2, 3).split("/", 1)[1]
    rename = os.replace

    def file_system_refuses_part_two(src, dst, *args, **kwargs):
        # The file system refuses that one rename (a directory there once did; a listing now
        # refuses such a log before anything is written, so the refusal is injected here).
        if os.fspath(dst).endswith(part_two):
            raise IsADirectoryError(21, "Is a directory", os.fspath(dst))
        return rename(src, dst, *args, **kwargs)

    names = set(os.listdir(log_dir))
    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", file_system_refuses_part_two)
        with pytest.raises(OSError):
            spark_checkpoint_table(spark, DeltaLog(str(root)), clock=ManualClock(NOW), part_size=7)
    assert set(os.listdir(log_dir)) == names
    assert (root / LAST_CHECKPOINT).read_bytes() == before_pointer
    result = spark_checkpoint_table(spark, DeltaLog(str(root)), clock=ManualClock(NOW), part_size=7)
    assert result.parts == 3 and read_last_checkpoint(LocalStorage(str(root)))["version"] == version
    assert _no_temp_dirs(str(root))


@pytest.mark.parametrize("configuration", [{"delta.checkpoint.writeStatsAsStruct": "true"}])
def test_refused_before_any_write(spark, tmp_path, configuration):
    root = tmp_path / "t"
    _write_log(root, "commits")
    from delta_downgrade_tools.builders import TableBuilder

    TableBuilder(root).set_properties(configuration)
    names = sorted(os.listdir(root / LOG_DIR))
    with pytest.raises(SparkCheckpointUnsupportedError, match="writeStatsAsStruct"):
        spark_checkpoint_table(spark, DeltaLog(str(root)), clock=ManualClock(NOW))
    assert sorted(os.listdir(root / LOG_DIR)) == names


def test_v2_policy_refused_before_any_write(spark, golden_table):
    root = golden_table("v2_checkpoint_parquet_sidecars")
    names = sorted(os.listdir(Path(root) / LOG_DIR))
    with pytest.raises(SparkCheckpointUnsupportedError, match="V2 checkpoint") as info:
        spark_checkpoint_table(spark, DeltaLog(root), clock=ManualClock(NOW))
    assert info.value.exit_code == 2
    assert sorted(os.listdir(Path(root) / LOG_DIR)) == names


def test_decoded_path_is_unquote(spark):
    values = ["a%20b", "a b", "a+b", "a%2Bb", "%E4%BD%A0-%C3%A9", "100%25", "x%2Fy%3A1", "plain", "a%", "%zz",
              "part=2024-01-01%2000%3A00%3A00/f.parquet"]
    from pyspark.sql import functions as F

    got = spark.createDataFrame([(v,) for v in values], "p string").select(decoded_path(F.col("p")).alias("d")).collect()
    assert [r.d for r in got] == [unquote(v) for v in values]


def test_source_checkpoint_with_stats_only_in_stats_parsed_is_refused(spark, golden_table):
    """A checkpoint written under writeStatsAsStruct=true + writeStatsAsJson=false keeps the
    statistics in ``add.stats_parsed`` only; the table then turns writeStatsAsStruct off. The Spark
    path reads no ``stats_parsed``: it refuses (the Arrow path turns them back into JSON) and
    writes nothing. Without the JSON switched off, the same table is checkpointed."""
    from delta_downgrade_tools.builders import TableBuilder

    for as_json, refused in (("false", True), ("true", False)):
        root = golden_table("cm_name_partitioned")
        builder = TableBuilder(root)
        builder.set_properties({"delta.checkpoint.writeStatsAsStruct": "true",
                                "delta.checkpoint.writeStatsAsJson": as_json})
        checkpoint_table(DeltaLog(root))
        builder.set_properties({"delta.checkpoint.writeStatsAsStruct": "false"})
        names = sorted(os.listdir(Path(root) / LOG_DIR))
        pointer = (Path(root) / LAST_CHECKPOINT).read_bytes()
        if refused:
            with pytest.raises(SparkCheckpointUnsupportedError, match="stats_parsed"):
                spark_checkpoint_table(spark, DeltaLog(root), clock=ManualClock(NOW))
            assert sorted(os.listdir(Path(root) / LOG_DIR)) == names
            assert (Path(root) / LAST_CHECKPOINT).read_bytes() == pointer
        else:
            result = spark_checkpoint_table(spark, DeltaLog(root), clock=ManualClock(NOW))
            assert result.num_add_files > 0 and _no_temp_dirs(root)


def test_a_commit_line_that_is_no_json_is_a_corrupt_log(spark, tmp_path):
    """FAILFAST: a damaged line fails the job (PERMISSIVE would make it a row of nulls, and a
    lost remove would bring a file back); the error is the one the Arrow path raises, nothing is
    written."""
    from delta_downgrade.errors import CorruptLogError

    root = tmp_path / "t"
    _write_log(root, "commits")
    last = root / LOG_DIR / f"{len(COMMITS) - 1:020d}.json"
    last.write_text(last.read_text() + '{"remove": {"path": "b", "deletionTimestamp": 1\n')
    names = sorted(os.listdir(root / LOG_DIR))
    with pytest.raises(CorruptLogError):
        checkpoint_table(DeltaLog(str(root)), clock=ManualClock(NOW))
    with pytest.raises(CorruptLogError, match="not a Delta action"):
        spark_checkpoint_table(spark, DeltaLog(str(root)), clock=ManualClock(NOW))
    assert sorted(os.listdir(root / LOG_DIR)) == names
