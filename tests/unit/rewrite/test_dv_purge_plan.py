"""What the DV purge rewrites (rewrite/dv_purge_plan.py): batches, groups, output directories."""

from __future__ import annotations

import json
import re

import pytest

from delta_downgrade.operations.vacuum import package_staging_root
from delta_downgrade.protocol.actions import AddFile
from delta_downgrade.rewrite.dv_purge_plan import (
    PurgeFile, PurgeGroup, group_batch, new_dir_name, plan_batches,
)
from delta_downgrade.rewrite.staging import PURGE_DIR_PREFIX

DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*", "offset": 1, "sizeInBytes": 36, "cardinality": 2}


def _file(path: str, size: int = 100, records: int = 10, pv: dict | None = None) -> PurgeFile:
    add = AddFile(path=path, partitionValues=pv or {}, size=size, stats=json.dumps({"numRecords": records}),
                  deletionVector=DV)
    return PurgeFile(add=add, dv=add.dv, spark_path="/t/" + path, out_dir=path.rpartition("/")[0],
                     num_records=records)


# --- batches ------------------------------------------------------------------------------------------

def test_batches_are_balanced_and_bounded():
    files = [_file(f"f{i}.parquet") for i in range(72)]
    batches = plan_batches(files, batch_files=64)
    assert [len(b) for b in batches] == [36, 36]
    assert [len(b) for b in plan_batches(files, batch_files=1)] == [1] * 72
    big = [_file("a.parquet", size=10), _file("b.parquet", size=500), _file("c.parquet", size=10)]
    assert [len(b) for b in plan_batches(big, batch_files=10, batch_bytes=100)] == [1, 1, 1]
    assert plan_batches([], batch_files=3) == []
    with pytest.raises(ValueError):
        plan_batches(files, batch_files=0)


# --- groups and output directories --------------------------------------------------------------------

def test_groups_share_directory_and_partition_values():
    files = [_file("p=1/a.parquet", pv={"p": "1"}), _file("p=2/b.parquet", pv={"p": "2"}),
             _file("p=1/c%20d.parquet", pv={"p": "1"}), _file("e.parquet", records=2)]
    groups = group_batch(files)
    assert [(g.out_dir, g.partition_values, [i for i, _f in g.files]) for g in groups] == [
        ("p=1", {"p": "1"}, [0, 2]), ("p=2", {"p": "2"}, [1]), ("", {}, [3])]
    assert files[2].file_name == "c d.parquet"  # decoded: unique within its directory
    assert groups[0].out_rel == f"p=1/{groups[0].dir_name}" and groups[2].out_rel == groups[2].dir_name
    # the last file's DV deletes both its rows: removed, not rewritten
    assert groups[2].rewritten == [] and groups[2].expected_rows == 0
    assert groups[0].expected_rows == 16


def test_expected_rows_unknown_without_record_counts():
    f = _file("a.parquet")
    unknown = PurgeFile(add=f.add, dv=f.dv, spark_path=f.spark_path, out_dir="", num_records=None)
    assert PurgeGroup([(0, unknown)], "", {}).expected_rows is None


def test_purge_directories_are_ones_vacuum_recognises_as_leftovers():
    name = new_dir_name()
    assert re.fullmatch(re.escape(PURGE_DIR_PREFIX) + "[0-9a-f]{16}", name)
    assert name != new_dir_name()
    assert package_staging_root(f"p=1/{name}/_temporary/0/part-0.parquet", ["p"]) == f"p=1/{name}/_temporary"
    assert package_staging_root(f"p=1/{name}/part-0.parquet", ["p"]) is None  # written: data, not staging


def test_a_dv_deleting_nothing_is_recommitted_with_its_row_ids():
    # PROTOCOL.md "Writer Requirements for Row Tracking": a recommitted add carries the baseRowId
    # and defaultRowCommitVersion of the last add of its path (and keeps tags, clustering
    # provider and unknown fields); only the DV goes.
    from delta_downgrade.deletion_vectors import inline_descriptor
    from delta_downgrade.rewrite.dv_purge import _Batch, _batch_actions
    from delta_downgrade.rewrite.dv_purge_plan import PurgeFile, group_batch

    add = AddFile(path="a.parquet", size=10, modificationTime=1, stats='{"numRecords":4}', tags={"t": "1"},
                  deletionVector=inline_descriptor([]).to_obj(), baseRowId=7, defaultRowCommitVersion=3,
                  clusteringProvider="liquid", extra={"future": 1})
    purge_file = PurgeFile(add=add, dv=add.dv, spark_path="/t/a.parquet", out_dir="", num_records=4)
    remove, readd = _batch_actions(_Batch([purge_file], group_batch([purge_file])), now=5)
    assert remove.path == readd.path == "a.parquet" and remove.deletionVector == add.deletionVector
    assert readd.deletionVector is None and readd.dataChange is False
    assert (readd.baseRowId, readd.defaultRowCommitVersion, readd.tags, readd.clusteringProvider, readd.extra) == (
        7, 3, {"t": "1"}, "liquid", {"future": 1})
