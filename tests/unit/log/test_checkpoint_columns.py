"""The Arrow columns of a checkpoint (delta_downgrade.log.format.checkpoint_columns): each action object
becomes one row of its column of the checkpoint schema, with ``dataChange`` false."""

from __future__ import annotations

import pyarrow as pa

from delta_downgrade.log.format.checkpoint_columns import (action_batch, add_array, domain_array, map_array,
                                                    metadata_array, protocol_array, remove_array, txn_array)
from delta_downgrade.log.format.checkpoint_schema import (ADD_TYPE, CHECKPOINT_SCHEMA, METADATA_TYPE, PROTOCOL_TYPE,
                                                   REMOVE_TYPE)
from delta_downgrade.protocol.actions import (AddFile, DeletionVectorDescriptor, DomainMetadata, Metadata,
                                              ProtocolAction, RemoveFile, Txn)

DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36,
      "cardinality": 2}
DV_ROW = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36,
          "cardinality": 2, "maxRowIndex": None}


def test_map_array_keeps_nulls_empties_and_key_order():
    values = [None, {}, {"b": "2", "a": None}, {"k": "v"}]
    assert map_array(values).to_pylist() == [None, [], [("b", "2"), ("a", None)], [("k", "v")]]
    assert map_array([{}, {}]).to_pylist() == [[], []]
    assert map_array([None]).to_pylist() == [None]


def test_add_rows():
    adds = [
        AddFile(path="a%20b.parquet", partitionValues={"p": "1"}, size=10, modificationTime=5, dataChange=True,
                stats='{"numRecords":3}', tags={"t": "x"}, deletionVector=DV, baseRowId=7,
                defaultRowCommitVersion=2, clusteringProvider="liquid"),
        AddFile(path="c.parquet", deletionVector=DeletionVectorDescriptor.from_obj(DV)),
        AddFile(path="d.parquet", deletionVector={"storageType": None}),  # no storageType: no DV
    ]
    array = add_array(adds)
    assert array.type == ADD_TYPE
    rows = array.to_pylist()
    assert rows[0] == {"path": "a%20b.parquet", "partitionValues": [("p", "1")], "size": 10,
                       "modificationTime": 5, "dataChange": False, "tags": [("t", "x")],
                       "deletionVector": DV_ROW, "baseRowId": 7, "defaultRowCommitVersion": 2,
                       "clusteringProvider": "liquid", "stats": '{"numRecords":3}'}
    assert rows[1]["deletionVector"] == DV_ROW and rows[1]["partitionValues"] == []
    assert rows[1]["tags"] is None and rows[1]["dataChange"] is False
    assert rows[2]["deletionVector"] is None


def test_remove_rows():
    removes = [RemoveFile(path="a.parquet", deletionTimestamp=9, dataChange=True, extendedFileMetadata=True,
                          partitionValues={}, size=3, stats="{}", tags={"t": "x"}, deletionVector=DV),
               RemoveFile(path="b.parquet")]
    array = remove_array(removes)
    assert array.type == REMOVE_TYPE
    assert array.to_pylist() == [
        {"path": "a.parquet", "deletionTimestamp": 9, "dataChange": False, "extendedFileMetadata": True,
         "partitionValues": [], "size": 3, "deletionVector": DV_ROW, "baseRowId": None,
         "defaultRowCommitVersion": None},  # no stats, no tags: not in the checkpoint schema
        {"path": "b.parquet", "deletionTimestamp": None, "dataChange": False, "extendedFileMetadata": None,
         "partitionValues": None, "size": None, "deletionVector": None, "baseRowId": None,
         "defaultRowCommitVersion": None},
    ]


def test_txn_domain_metadata_and_protocol_rows():
    assert txn_array([Txn("app", 3, 99), Txn("other", 1)]).to_pylist() == [
        {"appId": "app", "version": 3, "lastUpdated": 99}, {"appId": "other", "version": 1, "lastUpdated": None}]
    assert domain_array([DomainMetadata("d", "{}", False)]).to_pylist() == [
        {"domain": "d", "configuration": "{}", "removed": False}]
    md = Metadata(id="i", schemaString="{}", partitionColumns=["p"], configuration={"k": "v"},
                  format={"provider": "parquet", "options": {"o": "1"}}, createdTime=5)
    (row,) = metadata_array(md).to_pylist()
    assert metadata_array(md).type == METADATA_TYPE
    assert row == {"id": "i", "name": None, "description": None,
                   "format": {"provider": "parquet", "options": [("o", "1")]}, "schemaString": "{}",
                   "partitionColumns": ["p"], "configuration": [("k", "v")], "createdTime": 5}
    (p,) = protocol_array(ProtocolAction(3, 7, ["deletionVectors"], ["deletionVectors"])).to_pylist()
    assert protocol_array(ProtocolAction(1, 2)).type == PROTOCOL_TYPE
    assert p == {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                 "writerFeatures": ["deletionVectors"]}


def test_action_batch_has_one_column_set():
    batch = action_batch("add", add_array([AddFile(path="a.parquet")]))
    assert batch.schema == CHECKPOINT_SCHEMA
    assert batch.num_rows == 1
    for name in CHECKPOINT_SCHEMA.names:
        column = batch.column(name)
        assert column.null_count == (0 if name == "add" else 1), name
    assert isinstance(batch, pa.RecordBatch)
