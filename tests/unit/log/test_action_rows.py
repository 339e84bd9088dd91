"""Action objects from Arrow rows (delta_downgrade.log.format.action_rows) equal the Python parser's."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from delta_downgrade.log.format.action_rows import (checkpoint_file_actions, is_exact_checkpoint_type, json_file_actions,
                                             rows_lacking)
from delta_downgrade.log.read.checkpoint_reader import CheckpointReader, read_checkpoint_columns
from delta_downgrade.log.format.checkpoint_schema import ADD_TYPE, REMOVE_TYPE
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.protocol.actions import AddFile, RemoveFile, parse_action


def test_exact_checkpoint_types():
    assert is_exact_checkpoint_type(ADD_TYPE, AddFile) and is_exact_checkpoint_type(REMOVE_TYPE, RemoveFile)
    assert not is_exact_checkpoint_type(ADD_TYPE, RemoveFile)  # clusteringProvider, modificationTime
    assert not is_exact_checkpoint_type(pa.struct([("path", pa.string()), ("future", pa.int64())]), AddFile)
    assert not is_exact_checkpoint_type(pa.struct([("path", pa.string()), ("size", pa.string())]), AddFile)
    assert not is_exact_checkpoint_type(pa.struct([("path", pa.string()), ("size", pa.uint64())]), AddFile)
    assert not is_exact_checkpoint_type(pa.struct([("path", pa.string()),
                                                   ("partitionValues", pa.map_(pa.string(), pa.int32()))]), AddFile)
    assert is_exact_checkpoint_type(pa.struct([("path", pa.large_string()), ("size", pa.int32()),
                                               ("deletionVector", pa.struct([("storageType", pa.string()),
                                                                             ("future", pa.float64())]))]), AddFile)
    assert not is_exact_checkpoint_type(pa.string(), AddFile)


def test_rows_lacking_a_dv_field():
    dv = pa.array([None, {"storageType": "u", "pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 1},
                   {"storageType": None, "pathOrInlineDv": None, "sizeInBytes": None, "cardinality": None},
                   {"storageType": "u", "pathOrInlineDv": None, "sizeInBytes": 1, "cardinality": 1}])
    rows = pa.StructArray.from_arrays([pa.array(["a", "b", "c", "d"]), dv], ["path", "deletionVector"])
    lacking = rows_lacking(rows, "deletionVector", ("pathOrInlineDv", "sizeInBytes", "cardinality"))
    assert lacking is not None and lacking.to_pylist() == [False, False, False, True]
    assert rows_lacking(rows.filter(pa.array([True, True, True, False])), "deletionVector",
                        ("pathOrInlineDv",)) is None
    assert rows_lacking(rows, "tags", ("x",)) is None


@pytest.mark.parametrize("name", ["dv_partitioned_checkpoint", "multipart_checkpoint", "classic_checkpoint",
                                  "v2_checkpoint_parquet_sidecars", "dv_cm_name_checkpoint"])
def test_checkpoint_rows_give_the_checkpoint_readers_actions(name, golden_root):
    log = DeltaLog(str(golden_root / name))
    checkpoint = log.whole_listing().checkpoints[-1]
    expected = CheckpointReader(log.storage, checkpoint).actions(["add", "remove"])
    got: dict[str, list[object]] = {"add": [], "remove": []}
    files = [s.path for s in checkpoint.files if s.path.endswith(".parquet")]
    files += log.sidecars_of(checkpoint)
    for path in files:
        table = read_checkpoint_columns(str(Path(log.storage.uri(path))), ["add", "remove"], path)
        for kind, cls in (("add", AddFile), ("remove", RemoveFile)):
            if kind not in table.column_names:
                continue
            column = table.column(kind).combine_chunks()
            rows = column.filter(column.is_valid())
            assert is_exact_checkpoint_type(rows.type, cls), (name, rows.type)
            got[kind] += checkpoint_file_actions(rows, cls)
    assert got["add"] == expected.get("add", []) and got["remove"] == expected.get("remove", [])
    assert got["add"], name


def test_json_rows_give_the_parsers_actions():
    lines = [
        {"add": {"path": "p=1/a", "partitionValues": {"p": "1"}, "size": 3, "modificationTime": 4,
                 "dataChange": False, "stats": "{}", "tags": {"k": "v"}, "baseRowId": 7,
                 "defaultRowCommitVersion": 2, "clusteringProvider": "liquid"}},
        {"add": {"path": "b", "partitionValues": {"p": None}, "size": 5, "modificationTime": 6, "dataChange": True}},
    ]
    typed = pa.array([
        {"path": "p=1/a", "partitionValues": [("p", "1")], "size": 3, "modificationTime": 4, "dataChange": False,
         "tags": [("k", "v")], "deletionVector": None, "baseRowId": 7, "defaultRowCommitVersion": 2,
         "clusteringProvider": "liquid", "stats": "{}"},
        {"path": "b", "partitionValues": [("p", None)], "size": 5, "modificationTime": 6, "dataChange": False,
         "tags": None, "deletionVector": None, "baseRowId": None, "defaultRowCommitVersion": None,
         "clusteringProvider": None, "stats": None},
    ], ADD_TYPE)
    got = json_file_actions(typed, AddFile, pa.array([False, True]))
    assert got == [parse_action(json.loads(json.dumps(line))) for line in lines]
    assert json_file_actions(typed, AddFile, None)[1].dataChange is True  # no row has the field

    removes = [{"remove": {"path": "a", "deletionTimestamp": 9, "dataChange": True, "stats": "{}"}},
               {"remove": {"path": "b", "extendedFileMetadata": True, "partitionValues": {}, "size": 1,
                           "dataChange": False}}]
    typed = pa.array([
        {"path": "a", "deletionTimestamp": 9, "dataChange": False},
        {"path": "b", "extendedFileMetadata": True, "partitionValues": [], "size": 1, "dataChange": False},
    ], REMOVE_TYPE)
    got = json_file_actions(typed, RemoveFile, pa.array([True, False]), pa.array(["{}", None]))
    assert got == [parse_action(r) for r in removes]
