"""The checkpoint's parquet schema (PROTOCOL.md "Checkpoint Schema"), as delta-spark writes it.

Top-level struct columns ``txn``, ``add``, ``remove``, ``metaData``, ``protocol``,
``domainMetadata``, in that order, every field nullable (:data:`CHECKPOINT_SCHEMA`); one action per
row, the other columns of that row null. ``add.stats`` is a JSON string; neither ``stats_parsed``
nor ``partitionValues_parsed`` is part of it (readers use the ``partitionValues`` map and the JSON
stats, and typed copies parsed wrongly would be worse than none). ``remove`` has no ``stats`` and
``tags`` (its rows "are tombstones used only by VACUUM"). Fields an action keeps in ``extra`` have
no column: the schema is fixed, and a checkpoint is a cache of the log, which keeps them.
"""

from __future__ import annotations

import pyarrow as pa

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
