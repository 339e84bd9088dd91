"""A classic single-file checkpoint written with pyarrow from the builder's own state, for the
benchmark tables whose many checkpoints delta-rs writes too slowly (it lists the whole log for
each one: ~1 s per checkpoint at 10k commits, growing with the log).

Not this package's checkpoint writer, on purpose: the benchmark tables must not depend on the code
under measure. The layout is PROTOCOL.md "Checkpoint Schema" / "Checkpoint Format": one row per
action, a column per action type (txn, add, remove, metaData, protocol), the other columns null;
the add and remove structs with the fields delta-spark writes for a partitioned table (stats as
JSON, partitionValues as a string map, the deletionVector struct, always null here).
"""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq

_MAP = pa.map_(pa.string(), pa.string())
_DV = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()), ("offset", pa.int32()),
                 ("sizeInBytes", pa.int32()), ("cardinality", pa.int64())])
TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
ADD = pa.struct([("path", pa.string()), ("partitionValues", _MAP), ("size", pa.int64()),
                 ("modificationTime", pa.int64()), ("dataChange", pa.bool_()), ("stats", pa.string()),
                 ("tags", _MAP), ("deletionVector", _DV)])
REMOVE = pa.struct([("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_()),
                    ("extendedFileMetadata", pa.bool_()), ("partitionValues", _MAP), ("size", pa.int64()),
                    ("deletionVector", _DV)])
METADATA = pa.struct([("id", pa.string()), ("name", pa.string()), ("description", pa.string()),
                      ("format", pa.struct([("provider", pa.string()), ("options", _MAP)])),
                      ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string())),
                      ("configuration", _MAP), ("createdTime", pa.int64())])
PROTOCOL = pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32()),
                      ("readerFeatures", pa.list_(pa.string())), ("writerFeatures", pa.list_(pa.string()))])
SCHEMA = pa.schema([("txn", TXN), ("add", ADD), ("remove", REMOVE), ("metaData", METADATA), ("protocol", PROTOCOL)])


def _rows(column: str, values: pa.Array) -> pa.Table:
    """A block of rows that hold ``values`` in ``column`` and null in every other column."""
    return pa.table([values if f.name == column else pa.nulls(len(values), f.type) for f in SCHEMA],
                    schema=SCHEMA)


def _partition_maps(parts: list[int], column: str) -> pa.Array:
    return pa.array([[(column, str(p))] for p in parts], _MAP)


def write_checkpoint(log_dir: str, version: int, protocol: dict, metadata: dict, partition_column: str,
                     adds: tuple[list, list, list, list, list], removes: tuple[list, list, list, list]) -> int:
    """Write ``%020d.checkpoint.parquet`` of ``version`` and point ``_last_checkpoint`` at it.
    ``adds``: columns (path, partition value, size, modificationTime, stats JSON); ``removes``:
    (path, deletionTimestamp, partition value, size). Returns the number of rows."""
    a_path, a_part, a_size, a_mtime, a_stats = adds
    n = len(a_path)
    add = pa.StructArray.from_arrays(
        [pa.array(a_path, pa.string()), _partition_maps(a_part, partition_column), pa.array(a_size, pa.int64()),
         pa.array(a_mtime, pa.int64()), pa.array([False] * n, pa.bool_()), pa.array(a_stats, pa.string()),
         pa.nulls(n, _MAP), pa.nulls(n, _DV)], fields=list(ADD))
    r_path, r_ts, r_part, r_size = removes
    m = len(r_path)
    # dataChange false on both adds and tombstones, as delta-spark writes them in a checkpoint (a
    # checkpoint reconciles the log: its rows change no data of their own).
    remove = pa.StructArray.from_arrays(
        [pa.array(r_path, pa.string()), pa.array(r_ts, pa.int64()), pa.array([False] * m, pa.bool_()),
         pa.array([True] * m, pa.bool_()), _partition_maps(r_part, partition_column), pa.array(r_size, pa.int64()),
         pa.nulls(m, _DV)], fields=list(REMOVE))
    meta = dict(metadata, format={"provider": metadata["format"]["provider"],
                                  "options": list(metadata["format"]["options"].items())},
                configuration=list(metadata["configuration"].items()))
    table = pa.concat_tables([
        _rows("protocol", pa.array([protocol], PROTOCOL)),
        _rows("metaData", pa.array([meta], METADATA)),
        _rows("add", add),
        _rows("remove", remove),
    ])
    pq.write_table(table, os.path.join(log_dir, "%020d.checkpoint.parquet" % version))
    with open(os.path.join(log_dir, "_last_checkpoint"), "w") as fh:
        json.dump({"version": version, "size": table.num_rows, "numOfAddFiles": n}, fh)
    return table.num_rows
