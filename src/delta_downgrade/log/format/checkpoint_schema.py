"""The checkpoint's parquet schemas (PROTOCOL.md "Checkpoint Schema"), as delta-spark writes them.

Top-level struct columns ``txn``, ``add``, ``remove``, ``metaData``, ``protocol``,
``domainMetadata``, in that order, every field nullable (:data:`CHECKPOINT_SCHEMA`); one action per
row, the other columns of that row null. ``add.stats`` is a JSON string; ``stats_parsed`` and
``partitionValues_parsed`` are added to ``add`` only for tables with
``delta.checkpoint.writeStatsAsStruct=true`` (:func:`with_add_type`). ``remove`` has no ``stats`` and
``tags`` (its rows "are tombstones used only by VACUUM"). Fields an action keeps in ``extra`` have
no column: the schema is fixed, and a checkpoint is a cache of the log, which keeps them.

A V2 spec checkpoint (PROTOCOL.md "V2 Spec") written as a UUID-named parquet file has two more
columns, ``checkpointMetadata`` and ``sidecar`` (:data:`V2_CHECKPOINT_SCHEMA`); its sidecar files
hold only ``add`` and ``remove`` (:data:`SIDECAR_SCHEMA`, PROTOCOL.md "Sidecar Files").
"""

from __future__ import annotations

import pyarrow as pa

#: The field of ``add`` holding the typed statistics (PROTOCOL.md "Checkpoint Schema").
STATS_PARSED = "stats_parsed"

STRING = pa.string()
LONG = pa.int64()
INT = pa.int32()
BOOL = pa.bool_()
STRING_MAP = pa.map_(pa.string(), pa.string())
STRING_LIST = pa.list_(pa.field("element", pa.string()))

DV_TYPE = pa.struct([
    ("storageType", STRING), ("pathOrInlineDv", STRING), ("offset", INT),
    ("sizeInBytes", INT), ("cardinality", LONG), ("maxRowIndex", LONG),
])
TXN_TYPE = pa.struct([("appId", STRING), ("version", LONG), ("lastUpdated", LONG)])
ADD_TYPE = pa.struct([
    ("path", STRING), ("partitionValues", STRING_MAP), ("size", LONG), ("modificationTime", LONG),
    ("dataChange", BOOL), ("tags", STRING_MAP), ("deletionVector", DV_TYPE), ("baseRowId", LONG),
    ("defaultRowCommitVersion", LONG), ("clusteringProvider", STRING), ("stats", STRING),
])
REMOVE_TYPE = pa.struct([
    ("path", STRING), ("deletionTimestamp", LONG), ("dataChange", BOOL),
    ("extendedFileMetadata", BOOL), ("partitionValues", STRING_MAP), ("size", LONG),
    ("deletionVector", DV_TYPE), ("baseRowId", LONG), ("defaultRowCommitVersion", LONG),
])
FORMAT_TYPE = pa.struct([("provider", STRING), ("options", STRING_MAP)])
METADATA_TYPE = pa.struct([
    ("id", STRING), ("name", STRING), ("description", STRING), ("format", FORMAT_TYPE),
    ("schemaString", STRING), ("partitionColumns", STRING_LIST), ("configuration", STRING_MAP),
    ("createdTime", LONG),
])
PROTOCOL_TYPE = pa.struct([
    ("minReaderVersion", INT), ("minWriterVersion", INT),
    ("readerFeatures", STRING_LIST), ("writerFeatures", STRING_LIST),
])
DOMAIN_TYPE = pa.struct([("domain", STRING), ("configuration", STRING), ("removed", BOOL)])

#: The checkpoint's parquet schema (delta-spark's column and field order).
CHECKPOINT_SCHEMA = pa.schema([
    ("txn", TXN_TYPE), ("add", ADD_TYPE), ("remove", REMOVE_TYPE), ("metaData", METADATA_TYPE),
    ("protocol", PROTOCOL_TYPE), ("domainMetadata", DOMAIN_TYPE),
])
CHECKPOINT_METADATA_TYPE = pa.struct([("version", LONG), ("tags", STRING_MAP)])
SIDECAR_TYPE = pa.struct([
    ("path", STRING), ("sizeInBytes", LONG), ("modificationTime", LONG), ("tags", STRING_MAP),
])

#: The top-level parquet file of a V2 checkpoint: the checkpoint schema, then
#: ``checkpointMetadata`` and ``sidecar`` (delta-spark's column order). Its ``add`` and ``remove``
#: columns stay null when the file actions are in sidecars.
V2_CHECKPOINT_SCHEMA = pa.schema([*CHECKPOINT_SCHEMA, ("checkpointMetadata", CHECKPOINT_METADATA_TYPE),
                                  ("sidecar", SIDECAR_TYPE)])
#: A sidecar file: "can have only add file and remove file entries" (PROTOCOL.md "Sidecar Files").
SIDECAR_SCHEMA = pa.schema([("add", ADD_TYPE), ("remove", REMOVE_TYPE)])


def with_add_type(schema: pa.Schema, add_type: pa.DataType) -> pa.Schema:
    """``schema`` with its ``add`` column of ``add_type``: :data:`ADD_TYPE` with ``stats_parsed``
    and ``partitionValues_parsed`` when the table sets ``delta.checkpoint.writeStatsAsStruct``
    (PROTOCOL.md "Checkpoint Schema"; :mod:`~delta_downgrade.log.format.stats_struct`)."""
    if add_type == ADD_TYPE:
        return schema
    return schema.set(schema.get_field_index("add"), pa.field("add", add_type))
