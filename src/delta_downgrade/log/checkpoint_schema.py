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

_STR = pa.string()
_LONG = pa.int64()
_INT = pa.int32()
_BOOL = pa.bool_()
_MAP = pa.map_(pa.string(), pa.string())
_STR_LIST = pa.list_(pa.field("element", pa.string()))

DV_TYPE = pa.struct([
    ("storageType", _STR), ("pathOrInlineDv", _STR), ("offset", _INT),
    ("sizeInBytes", _INT), ("cardinality", _LONG), ("maxRowIndex", _LONG),
])
TXN_TYPE = pa.struct([("appId", _STR), ("version", _LONG), ("lastUpdated", _LONG)])
ADD_TYPE = pa.struct([
    ("path", _STR), ("partitionValues", _MAP), ("size", _LONG), ("modificationTime", _LONG),
    ("dataChange", _BOOL), ("tags", _MAP), ("deletionVector", DV_TYPE), ("baseRowId", _LONG),
    ("defaultRowCommitVersion", _LONG), ("clusteringProvider", _STR), ("stats", _STR),
])
REMOVE_TYPE = pa.struct([
    ("path", _STR), ("deletionTimestamp", _LONG), ("dataChange", _BOOL),
    ("extendedFileMetadata", _BOOL), ("partitionValues", _MAP), ("size", _LONG),
    ("deletionVector", DV_TYPE), ("baseRowId", _LONG), ("defaultRowCommitVersion", _LONG),
])
FORMAT_TYPE = pa.struct([("provider", _STR), ("options", _MAP)])
METADATA_TYPE = pa.struct([
    ("id", _STR), ("name", _STR), ("description", _STR), ("format", FORMAT_TYPE),
    ("schemaString", _STR), ("partitionColumns", _STR_LIST), ("configuration", _MAP),
    ("createdTime", _LONG),
])
PROTOCOL_TYPE = pa.struct([
    ("minReaderVersion", _INT), ("minWriterVersion", _INT),
    ("readerFeatures", _STR_LIST), ("writerFeatures", _STR_LIST),
])
DOMAIN_TYPE = pa.struct([("domain", _STR), ("configuration", _STR), ("removed", _BOOL)])

#: The checkpoint's parquet schema (delta-spark's column and field order).
CHECKPOINT_SCHEMA = pa.schema([
    ("txn", TXN_TYPE), ("add", ADD_TYPE), ("remove", REMOVE_TYPE), ("metaData", METADATA_TYPE),
    ("protocol", PROTOCOL_TYPE), ("domainMetadata", DOMAIN_TYPE),
])
