"""The actions of replaced files (rewrite/actions.py)."""

from __future__ import annotations

import json
from urllib.parse import unquote

from delta_downgrade.protocol.actions import AddFile
from delta_downgrade.rewrite.actions import log_path, remove_action, replacement_add
from delta_downgrade.rewrite.file_rewriter import Rewritten

DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*", "offset": 1, "sizeInBytes": 36, "cardinality": 2}
ADD = AddFile(path="p=1/a%20b.parquet", partitionValues={"p": "1"}, size=5, modificationTime=1, dataChange=True,
              stats='{"numRecords":3}', tags={"t": "1"}, deletionVector=DV, baseRowId=3, defaultRowCommitVersion=4,
              clusteringProvider="liquid")


def test_remove_matches_the_add_it_removes():
    remove = remove_action(ADD, 9)
    assert (remove.path, remove.deletionTimestamp, remove.dataChange, remove.extendedFileMetadata) == (
        ADD.path, 9, False, True)
    assert (remove.partitionValues, remove.size, remove.tags, remove.deletionVector, remove.baseRowId,
            remove.defaultRowCommitVersion) == ({"p": "1"}, 5, {"t": "1"}, DV, 3, 4)
    assert remove.stats is None
    assert remove_action(ADD, 9, with_stats=True).stats == '{"numRecords":3}'  # the DV purge's remove


def test_remove_lines_differ_only_by_stats():
    plain = json.loads(remove_action(ADD, 9).to_line())["remove"]
    with_stats = json.loads(remove_action(ADD, 9, with_stats=True).to_line())["remove"]
    assert "stats" not in plain
    assert with_stats == {**plain, "stats": '{"numRecords":3}'}


def test_replacement_add_keeps_rows_identity_and_encodes_the_new_path():
    new = replacement_add(ADD, Rewritten(ADD, "p=1/part-00000-x y%-c000.snappy.parquet", 7, 3, 11),
                          partition_values={"q": "1"}, stats='{"numRecords":3}')
    assert new.path == "p=1/part-00000-x%20y%25-c000.snappy.parquet"
    assert (new.size, new.modificationTime, new.dataChange, new.partitionValues) == (7, 11, False, {"q": "1"})
    assert (new.deletionVector, new.tags, new.clusteringProvider) == (DV, {"t": "1"}, "liquid")
    # A new path gets fresh row IDs and the adding version at commit time (PROTOCOL.md "Writer
    # Requirements for Row Tracking"), never the old file's.
    assert (new.baseRowId, new.defaultRowCommitVersion) == (None, None)


def test_log_path():
    # every character but letters, digits, "_.-~" and "/" is escaped (also "=", which delta-spark
    # leaves as is: both decode to the same path)
    assert log_path("p=1/a b+c%.parquet") == "p=1/a%20b%2Bc%25.parquet"
    assert unquote(log_path("p=1/a b+c%.parquet")) == "p=1/a b+c%.parquet"
    assert log_path("é/日.parquet") == "%C3%A9/%E6%97%A5.parquet"
    assert log_path("plain/part-0.parquet") == "plain/part-0.parquet"
