"""Row tracking as a reader computes it from the files themselves (PROTOCOL.md "Reader
Requirements for Row Tracking"), independently of the rewrites under test, and tables that carry
materialized row-tracking columns.

- :func:`stable_values`: every live row's stable row ID and row commit version, keyed by a data
  column: each live file read with pyarrow, its deletion vector applied, and per row the
  materialized value where the column is present and not null, else ``baseRowId`` + the row's
  physical index / ``defaultRowCommitVersion``.
- :func:`assert_fresh_ids_valid`: the fresh row IDs of the live files (``baseRowId`` ..
  ``baseRowId + numRecords - 1``) are unique and at most the ``delta.rowTracking`` high-water mark;
  stable row IDs are unique among live rows.
- :func:`write_copied_file`: a data file holding copied rows with materialized values (what an
  UPDATE or MERGE of delta-spark leaves), and the ``add`` that commits it.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from delta_downgrade.deletion_vectors import DvFileReader, row_index_list
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.protocol.actions import AddFile, DomainMetadata
from delta_downgrade_tools.builders import file_stats

ROW_ID_KEY = "delta.rowTracking.materializedRowIdColumnName"
ROW_COMMIT_VERSION_KEY = "delta.rowTracking.materializedRowCommitVersionColumnName"
PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"


def _file_column(schema: dict[str, Any], configuration: Mapping[str, str], name: str) -> str:
    """The name the files use for top-level column ``name`` (its physical name under column
    mapping)."""
    mode = (configuration.get("delta.columnMapping.mode") or "none").lower()
    for f in schema["fields"]:
        if f["name"] == name:
            if mode in ("name", "id"):
                return (f.get("metadata") or {}).get(PHYSICAL_NAME_KEY, name)
            return name
    raise KeyError(name)


def stable_values(path: str, key: str, *, materialized_names: tuple[str, str] | None = None
                  ) -> dict[Any, tuple[int | None, int | None]]:
    """{value of column ``key``: (stable row ID, stable row commit version)} of every live row.
    ``materialized_names``: the two column names to read (default: the table's configuration;
    pass them when the configuration no longer names them)."""
    log = DeltaLog(path)
    snapshot = log.snapshot(check_read=False)
    conf = snapshot.metadata.configuration
    rid_name, rcv_name = materialized_names or (conf.get(ROW_ID_KEY), conf.get(ROW_COMMIT_VERSION_KEY))
    key_column = _file_column(snapshot.schema, conf, key)
    reader = DvFileReader(log.storage)
    out: dict[Any, tuple[int | None, int | None]] = {}
    for add in snapshot.state().files.values():
        table = pq.read_table(os.path.join(path, add.decoded_path))
        deleted = set(row_index_list(reader.read(add.dv, data_file=add.path))) if add.dv is not None else set()
        keys = table.column(key_column).to_pylist()
        n = table.num_rows
        rids = table.column(rid_name).to_pylist() if rid_name and rid_name in table.column_names else [None] * n
        rcvs = table.column(rcv_name).to_pylist() if rcv_name and rcv_name in table.column_names else [None] * n
        for i in range(n):
            if i in deleted:
                continue
            rid = rids[i] if rids[i] is not None else (add.baseRowId + i if add.baseRowId is not None else None)
            rcv = rcvs[i] if rcvs[i] is not None else add.defaultRowCommitVersion
            assert keys[i] not in out, f"key {keys[i]!r} is not unique"
            out[keys[i]] = (rid, rcv)
    return out


def high_water_mark(path: str) -> int | None:
    state = DeltaLog(path).snapshot(check_read=False).state()
    domain: DomainMetadata | None = state.live_domains.get("delta.rowTracking")
    return json.loads(domain.configuration)["rowIdHighWaterMark"] if domain is not None else None


def assert_fresh_ids_valid(path: str) -> None:
    """Fresh row IDs unique across live files and at most the high-water mark; every live file
    has both defaults."""
    state = DeltaLog(path).snapshot(check_read=False).state()
    mark = high_water_mark(path)
    ranges = []
    for add in state.files.values():
        assert add.baseRowId is not None and add.defaultRowCommitVersion is not None, add.path
        rows = json.loads(add.stats)["numRecords"]
        ranges.append((add.baseRowId, add.baseRowId + rows - 1, add.path))
    ranges.sort()
    for (_, end, a), (start, _, b) in zip(ranges, ranges[1:]):
        assert end < start, f"fresh row IDs of {a} and {b} overlap"
    assert mark is not None and all(end <= mark for _, end, _ in ranges), (mark, ranges)


def assert_stable_ids_unique(values: Mapping[Any, tuple[int | None, int | None]]) -> None:
    ids = [rid for rid, _ in values.values()]
    assert None not in ids and len(ids) == len(set(ids))


def write_copied_file(table_path: str, data: pa.Table, row_ids: Sequence[int | None],
                      commit_versions: Sequence[int | None], names: tuple[str, str],
                      *, directory: str = "") -> AddFile:
    """A data file with ``data`` plus the materialized columns ``names`` holding ``row_ids`` /
    ``commit_versions`` (null: not preserved), and its add (no row IDs: the commit assigns them;
    statistics of the data columns only)."""
    full = data.append_column(names[0], pa.array(row_ids, pa.int64())).append_column(
        names[1], pa.array(commit_versions, pa.int64()))
    name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    rel = f"{directory}/{name}" if directory else name
    local = os.path.join(table_path, rel)
    os.makedirs(os.path.dirname(local), exist_ok=True)
    pq.write_table(full, local, compression="snappy")
    st = os.stat(local)
    return AddFile(path=rel, size=st.st_size, modificationTime=int(st.st_mtime * 1000), dataChange=True,
                   stats=file_stats(data))
