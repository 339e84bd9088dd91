"""Checkpoints whose ``add`` rows carry ``stats_parsed`` and no JSON ``stats``
(``delta.checkpoint.writeStatsAsJson=false`` + ``writeStatsAsStruct=true``, PROTOCOL.md
"Checkpoints"): no statistics are lost on read.

The checkpoint is one of ours rewritten with pyarrow: ``add.stats`` dropped, ``add.stats_parsed``
added as a struct typed from the table's columns (the values from the original JSON). Our two
replays (Python snapshot state, Arrow replay) must give back the original statistics, a
re-checkpoint must write them as JSON, and delta-rs must read the same rows from it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.log.replay.arrow_replay import replay_segment
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import classic_checkpoint_path, commit_path
from delta_downgrade.storage.local import LocalStorage
from delta_downgrade_tools.builders import TableBuilder
from tests.oracle import same_rows

UTC = dt.timezone.utc
SCHEMA = pa.schema([
    ("id", pa.int64()), ("name", pa.string()), ("day", pa.date32()),
    ("ts", pa.timestamp("us", tz="UTC")), ("amount", pa.decimal128(10, 2)),
    ("score", pa.float64()), ("flag", pa.bool_()),
])
# Types of the stats_parsed leaves: the column's type for bounds, long for null counts.
_BOUNDS = pa.struct([f for f in SCHEMA if not pa.types.is_boolean(f.type)])
_COUNTS = pa.struct([(f.name, pa.int64()) for f in SCHEMA])
STATS_PARSED_TYPE = pa.struct([("numRecords", pa.int64()), ("minValues", _BOUNDS),
                               ("maxValues", _BOUNDS), ("nullCount", _COUNTS)])


def _rows(start: int, n: int) -> list[dict[str, Any]]:
    return [{"id": start + i, "name": f'n"{start + i}\\x' if i else None,
             "day": dt.date(2020, 1, 1) + dt.timedelta(days=start + i),
             "ts": dt.datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=UTC) + dt.timedelta(hours=start + i),
             "amount": decimal.Decimal(f"{start + i}.25"), "score": (start + i) / 4,
             "flag": bool(i % 2)} for i in range(n)]


def _build(path: Path) -> int:
    builder = TableBuilder(path)
    builder.create(SCHEMA, rows=_rows(0, 3))
    builder.append(_rows(10, 4))
    builder.append(_rows(20, 2), files=2)
    version = builder.version
    builder.checkpoint()
    return version


def _bound(value: Any, typ: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_timestamp(typ):
        return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    if pa.types.is_date(typ):
        return dt.date.fromisoformat(value)
    if pa.types.is_decimal(typ):
        return decimal.Decimal(str(value))
    return value


def _parsed(stats: str | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    obj = json.loads(stats)
    out: dict[str, Any] = {"numRecords": obj["numRecords"], "nullCount": obj.get("nullCount")}
    for key in ("minValues", "maxValues"):
        values = obj.get(key) or {}
        out[key] = {f.name: _bound(values.get(f.name), f.type) for f in _BOUNDS}
    return out


def _strip_json_stats(path: Path, version: int, *, int96: bool) -> dict[str, dict[str, Any]]:
    """Rewrite the classic checkpoint at ``version``: ``add.stats`` replaced by
    ``add.stats_parsed``. Returns the original JSON stats by file path."""
    file = path / classic_checkpoint_path(version)
    table = pq.read_table(file)
    add = table.column("add").combine_chunks()
    rows = add.to_pylist()
    originals = {r["path"]: json.loads(r["stats"]) for r in rows if r is not None}
    fields = [f for f in add.type if f.name != "stats"]
    children = [add.field(f.name) for f in fields]
    parsed = pa.array([None if r is None else _parsed(r["stats"]) for r in rows], STATS_PARSED_TYPE)
    new_add = pa.StructArray.from_arrays(children + [parsed],
                                         fields=fields + [pa.field("stats_parsed", STATS_PARSED_TYPE)],
                                         mask=add.is_null())
    table = table.set_column(table.column_names.index("add"), "add", new_add)
    pq.write_table(table, file, use_deprecated_int96_timestamps=int96)
    schema = pq.ParquetFile(file).schema
    physical = {schema.column(i).path: schema.column(i).physical_type for i in range(len(schema))}
    assert physical["add.stats_parsed.minValues.ts"] == ("INT96" if int96 else "INT64")
    assert "add.stats" not in physical
    return originals


def _same_stats(actual: str | None, original: dict[str, Any]) -> None:
    assert actual is not None
    got = json.loads(actual)
    assert got["numRecords"] == original["numRecords"]
    assert got["nullCount"] == original["nullCount"]
    for key in ("minValues", "maxValues"):
        # decimals: the JSON number, whatever its spelling (1.25 or 1.250)
        assert {k: (float(v) if k == "amount" else v) for k, v in got[key].items()} == original[key]


@pytest.mark.parametrize("int96", [False, True], ids=["int64_ts", "int96_ts"])
def test_stats_parsed_only_checkpoint_keeps_stats(tmp_path: Path, oracle, int96: bool) -> None:
    path = tmp_path / "t"
    version = _build(path)
    expected_rows = oracle.scan_rows(str(path)).unwrap()
    originals = _strip_json_stats(path, version, int96=int96)
    assert len(originals) == 4

    # the Python replay (snapshot state) and the Arrow replay both give the stats back
    log = DeltaLog(str(path), LocalStorage(str(path)))
    snapshot = log.snapshot()
    assert snapshot.segment.checkpoint is not None
    files = snapshot.state().files.values()
    assert {f.path for f in files} == set(originals)
    for f in files:
        _same_stats(f.stats, originals[f.path])
    arrow = replay_segment(log.storage, log.table, log.segment()).adds.combine_chunks()
    for p, s in zip(arrow.field("path").to_pylist(), arrow.field("stats").to_pylist()):
        _same_stats(s, originals[p])

    # a re-checkpoint writes them as JSON
    checkpoint_table(DeltaLog(str(path), LocalStorage(str(path))))
    written = pq.read_table(path / classic_checkpoint_path(version)).column("add").to_pylist()
    written = {r["path"]: r["stats"] for r in written if r is not None}
    assert set(written) == set(originals)
    for p, s in written.items():
        _same_stats(s, originals[p])

    # delta-rs reads the same rows from our checkpoint alone
    for v in range(version):
        os.remove(path / commit_path(v))
    assert same_rows(oracle.scan_rows(str(path)), expected_rows)


def test_rows_with_json_stats_are_kept_as_they_are(tmp_path: Path) -> None:
    """Both present: the JSON is what the replay keeps (the struct is only a copy of it)."""
    path = tmp_path / "t"
    version = _build(path)
    file = path / classic_checkpoint_path(version)
    table = pq.read_table(file)
    add = table.column("add").combine_chunks()
    originals = {r["path"]: r["stats"] for r in add.to_pylist() if r is not None}
    # a stats_parsed that disagrees with the JSON: it must not be used where the JSON is there
    wrong = pa.array([None if r is None else {"numRecords": 999, "minValues": None, "maxValues": None,
                                              "nullCount": None} for r in add.to_pylist()], STATS_PARSED_TYPE)
    new_add = pa.StructArray.from_arrays([add.field(f.name) for f in add.type] + [wrong],
                                         fields=list(add.type) + [pa.field("stats_parsed", STATS_PARSED_TYPE)],
                                         mask=add.is_null())
    pq.write_table(table.set_column(table.column_names.index("add"), "add", new_add), file)
    log = DeltaLog(str(path), LocalStorage(str(path)))
    assert {f.path: f.stats for f in log.snapshot().state().files.values()} == originals
    arrow = replay_segment(log.storage, log.table, log.segment()).adds.combine_chunks()
    assert dict(zip(arrow.field("path").to_pylist(), arrow.field("stats").to_pylist())) == originals
    shutil.rmtree(path)


def test_databricks_sidecars_without_json_stats(golden_table, oracle) -> None:
    """A real Databricks V2 checkpoint (sidecars with ``stats`` and ``stats_parsed``, INT96
    timestamp bounds): with ``add.stats`` dropped from its sidecars, our replays give back exactly
    the JSON Databricks wrote, and delta-rs reads the same rows."""
    path = Path(golden_table("v2_checkpoint_dbr_identity"))
    expected_rows = oracle.scan_rows(str(path)).unwrap()
    originals: dict[str, dict[str, Any]] = {}
    sidecars = sorted((path / "_delta_log" / "_sidecars").glob("*.parquet"))
    assert sidecars
    for file in sidecars:
        table = pq.read_table(file)
        add = table.column("add").combine_chunks()
        originals.update({r["path"]: json.loads(r["stats"]) for r in add.to_pylist() if r is not None})
        fields = [f for f in add.type if f.name != "stats"]
        new_add = pa.StructArray.from_arrays([add.field(f.name) for f in fields], fields=fields,
                                             mask=add.is_null())
        table = table.set_column(table.column_names.index("add"), "add", new_add)
        pq.write_table(table, file, use_deprecated_int96_timestamps=True)
        assert pq.ParquetFile(file).schema_arrow.field("add").type.get_field_index("stats") < 0
    # the manifests name the sidecars with their size, which readers use to find the footer
    for manifest in (path / "_delta_log").glob("*.checkpoint.*.json"):
        lines = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
        for action in lines:
            if "sidecar" in action:
                action["sidecar"]["sizeInBytes"] = os.path.getsize(
                    path / "_delta_log" / "_sidecars" / action["sidecar"]["path"])
        manifest.write_text("".join(json.dumps(a) + "\n" for a in lines))
    log = DeltaLog(str(path), LocalStorage(str(path)))
    # the files of the checkpoint (a later commit adds more, with JSON stats of its own)
    files = [f for f in log.snapshot().state().files.values() if f.path in originals]
    assert len(files) >= 5
    for f in files:
        assert json.loads(f.stats) == originals[f.path]
    arrow = replay_segment(log.storage, log.table, log.segment()).adds.combine_chunks()
    arrow_stats = dict(zip(arrow.field("path").to_pylist(), arrow.field("stats").to_pylist()))
    assert {f.path for f in files} <= set(arrow_stats)
    for f in files:
        assert json.loads(arrow_stats[f.path]) == originals[f.path]
    assert same_rows(oracle.scan_rows(str(path)), expected_rows)


# --- writing: delta.checkpoint.writeStatsAsStruct -------------------------------------------------

PART_SCHEMA = pa.schema([*SCHEMA, ("p", pa.int32())])


def _struct_table(path: Path, *, as_json: bool, partitioned: bool, v2: bool) -> int:
    from delta_downgrade.protocol import Protocol

    config = {"delta.checkpoint.writeStatsAsStruct": "true"}
    if not as_json:
        config["delta.checkpoint.writeStatsAsJson"] = "false"
    protocol = Protocol(1, 2)
    if v2:
        protocol = Protocol(3, 7, frozenset({"v2Checkpoint"}), frozenset({"v2Checkpoint"}))
        config["delta.checkpointPolicy"] = "v2"
    builder = TableBuilder(path)
    schema = PART_SCHEMA if partitioned else SCHEMA

    def rows(start: int, n: int) -> list[dict[str, Any]]:
        return [{**r, "p": (start + i) % 2} if partitioned else r for i, r in enumerate(_rows(start, n))]

    builder.create(schema, rows=rows(0, 3), partition_columns=["p"] if partitioned else (),
                   protocol=protocol, configuration=config)
    builder.append(rows(10, 4))
    builder.append(rows(20, 2), files=2)
    return builder.version


def _checkpoint_add_files(path: Path) -> list[Path]:
    log_dir = path / "_delta_log"
    sidecars = sorted((log_dir / "_sidecars").glob("*.parquet")) if (log_dir / "_sidecars").exists() else []
    return sidecars or sorted(log_dir.glob("*.checkpoint*.parquet"))


@pytest.mark.parametrize("as_json,partitioned,v2", [
    (False, True, False), (True, False, False), (False, False, True), (True, True, True),
], ids=["classic-nojson-partitioned", "classic-json", "v2-nojson", "v2-json-partitioned"])
def test_struct_stats_checkpoint(tmp_path: Path, oracle, duckdb_reader, as_json: bool, partitioned: bool,
                                 v2: bool) -> None:
    path = tmp_path / "t"
    version = _struct_table(path, as_json=as_json, partitioned=partitioned, v2=v2)
    expected_rows = oracle.scan_rows(str(path)).unwrap()
    log = DeltaLog(str(path), LocalStorage(str(path)))
    originals = {f.path: json.loads(f.stats) for f in log.snapshot().state().files.values()}
    partition_values = {f.path: f.partitionValues for f in log.snapshot().state().files.values()}
    result = checkpoint_table(log)
    assert (result.checkpoint_kind == "v2") is v2

    files = _checkpoint_add_files(path)
    assert files
    written: dict[str, dict[str, Any]] = {}
    for file in files:
        add_type = pq.ParquetFile(file).schema_arrow.field("add").type
        assert (add_type.get_field_index("stats") >= 0) is as_json
        parsed_type = add_type.field("stats_parsed").type
        assert [f.name for f in parsed_type] == ["numRecords", "minValues", "maxValues", "nullCount"]
        assert parsed_type.field("minValues").type == _BOUNDS  # typed from the table schema
        assert (add_type.get_field_index("partitionValues_parsed") >= 0) is partitioned
        for row in pq.read_table(file).column("add").to_pylist():
            if row is not None:
                written[row["path"]] = row
    assert set(written) == set(originals)
    for p, row in written.items():
        assert row["stats_parsed"] == _parsed(json.dumps(originals[p])) | {}, p
        if partitioned:
            assert row["partitionValues_parsed"] == {"p": int(partition_values[p]["p"])}
        if as_json:
            assert json.loads(row["stats"]) == originals[p]

    # our reader gives the stats back from the checkpoint alone
    for v in range(version):
        os.remove(path / commit_path(v))
    log = DeltaLog(str(path), LocalStorage(str(path)))
    for f in log.snapshot().state().files.values():
        _same_stats(f.stats, originals[f.path])
    # outside readers read the same rows from it
    assert same_rows(oracle.scan_rows(str(path)), expected_rows)
    assert same_rows(duckdb_reader.duckdb_rows(str(path)), expected_rows)


def test_default_checkpoint_has_no_struct_stats(tmp_path: Path) -> None:
    path = tmp_path / "t"
    version = _build(path)
    add_type = pq.ParquetFile(path / classic_checkpoint_path(version)).schema_arrow.field("add").type
    assert add_type.get_field_index("stats_parsed") < 0 and add_type.get_field_index("stats") >= 0


def test_struct_stats_under_column_mapping(golden_table, oracle) -> None:
    """Column mapping (name mode, partitioned): the structs are keyed by the physical names, as
    the JSON stats and partitionValues are, and typed by the columns' types."""
    path = Path(golden_table("cm_name_partitioned"))
    builder = TableBuilder(path)
    builder.set_properties({"delta.checkpoint.writeStatsAsStruct": "true",
                            "delta.checkpoint.writeStatsAsJson": "false"})
    expected_rows = oracle.scan_rows(str(path)).unwrap()
    log = DeltaLog(str(path), LocalStorage(str(path)))
    snapshot = log.snapshot()
    fields = {f["name"]: f for f in json.loads(snapshot.metadata.schemaString)["fields"]}
    physical = {n: f["metadata"]["delta.columnMapping.physicalName"] for n, f in fields.items()}
    originals = {f.path: f for f in snapshot.state().files.values()}
    version = snapshot.version
    checkpoint_table(log)
    file = path / classic_checkpoint_path(version)
    add_type = pq.ParquetFile(file).schema_arrow.field("add").type
    assert add_type.get_field_index("stats") < 0
    partitions = snapshot.metadata.partitionColumns
    assert partitions
    pv_type = add_type.field("partitionValues_parsed").type
    assert [f.name for f in pv_type] == [physical[c] for c in partitions]
    counts = add_type.field("stats_parsed").type.field("nullCount").type
    assert {f.name for f in counts} <= {physical[n] for n in fields if n not in partitions}
    for row in pq.read_table(file).column("add").to_pylist():
        if row is None:
            continue
        original = originals[row["path"]]
        assert row["stats_parsed"]["numRecords"] == json.loads(original.stats)["numRecords"]
        for c in partitions:
            raw = original.partitionValues[physical[c]]
            value = row["partitionValues_parsed"][physical[c]]
            assert (value is None) is (raw is None)
    for v in range(version):
        os.remove(path / commit_path(v))
    log = DeltaLog(str(path), LocalStorage(str(path)))
    for f in log.snapshot().state().files.values():
        assert json.loads(f.stats) == json.loads(originals[f.path].stats)  # every bound, as written
    assert same_rows(oracle.scan_rows(str(path)), expected_rows)


def test_struct_stats_multi_part_checkpoint(tmp_path: Path, oracle) -> None:
    """A multi-part checkpoint: every part has the typed ``add`` column; the stats come back."""
    path = tmp_path / "t"
    version = _struct_table(path, as_json=False, partitioned=True, v2=False)
    expected_rows = oracle.scan_rows(str(path)).unwrap()
    log = DeltaLog(str(path), LocalStorage(str(path)))
    originals = {f.path: json.loads(f.stats) for f in log.snapshot().state().files.values()}
    result = checkpoint_table(log, part_size=2)
    assert result.parts is not None and result.parts > 1
    for part in result.paths:
        add_type = pq.ParquetFile(path / part).schema_arrow.field("add").type
        assert add_type.get_field_index("stats_parsed") >= 0 and add_type.get_field_index("stats") < 0
    for v in range(version):
        os.remove(path / commit_path(v))
    log = DeltaLog(str(path), LocalStorage(str(path)))
    files = log.snapshot().state().files.values()
    assert {f.path for f in files} == set(originals)
    for f in files:
        _same_stats(f.stats, originals[f.path])
    assert same_rows(oracle.scan_rows(str(path)), expected_rows)
