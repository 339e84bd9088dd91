"""The rows of a table's latest version with their stable row IDs and row commit versions, read
from the data files themselves (PROTOCOL.md "Row Tracking", "Reader Requirements"), so that a
test can hold a rewrite to the promise that row IDs survive it.

For each live ``add``: read the parquet file with pyarrow, drop the rows its deletion vector
deletes (the package's DV reader), and take

- stable row ID = the materialised row-ID column where the file has it and the value is not
  null, else ``baseRowId`` + the row's physical index in the file;
- stable row commit version = the materialised row-commit-version column likewise, else
  ``defaultRowCommitVersion``;

then name the columns by their logical names through the schema's physical names (column
mapping ``name`` mode) or parquet field ids (``id`` mode), at every level (structs, arrays,
maps), and add partition values. Rows come back as the readers of tests/oracle.py return them (dates as ISO
strings, structs as dicts), so they compare with ``same_rows``.

Arrow does the per-row work (index arithmetic, coalesce, DV filter); Python loops over files.

:func:`fresh_row_id_violations` checks the other half of the protocol, what the log says about
fresh row IDs: a file a rewrite adds gets a fresh ``baseRowId`` and its own commit's
``defaultRowCommitVersion``. :func:`assert_fresh_ids_valid` checks the latest version alone: fresh
row IDs unique and at most the ``delta.rowTracking`` high-water mark. :func:`write_copied_file`
writes what an UPDATE or MERGE of delta-spark leaves: copied rows with materialized values.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import uuid
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_downgrade.deletion_vectors import DvFileReader
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.protocol.actions import AddFile, DomainMetadata
from delta_downgrade_tools.builders import file_stats
from delta_downgrade.protocol.schema import (
    COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY, delta_type_to_arrow,
)

ROW_ID = "_row_id"
ROW_COMMIT_VERSION = "_row_commit_version"
ROW_ID_COLUMN_KEY = "delta.rowTracking.materializedRowIdColumnName"
ROW_COMMIT_VERSION_COLUMN_KEY = "delta.rowTracking.materializedRowCommitVersionColumnName"
ROW_ID_KEY, ROW_COMMIT_VERSION_KEY = ROW_ID_COLUMN_KEY, ROW_COMMIT_VERSION_COLUMN_KEY
_FIELD_ID = b"PARQUET:field_id"


@dataclass(frozen=True)
class TrackedRows:
    """The latest version's rows (logical names) with ``_row_id`` and ``_row_commit_version``
    added; both are None for rows of files without ``baseRowId`` / ``defaultRowCommitVersion``
    and no materialised value (a table that does not track rows)."""

    version: int
    rows: list[dict[str, Any]]

    def data_rows(self) -> list[dict[str, Any]]:
        """The rows without the row-tracking fields, as a reader returns them."""
        return [{k: v for k, v in r.items() if k not in (ROW_ID, ROW_COMMIT_VERSION)} for r in self.rows]

    def tracking_by(self, key: str) -> dict[Any, tuple[Any, Any]]:
        """``{row[key]: (row ID, row commit version)}`` (``key`` must be unique)."""
        out = {r[key]: (r[ROW_ID], r[ROW_COMMIT_VERSION]) for r in self.rows}
        assert len(out) == len(self.rows), f"{key} is not unique"
        return out

    @property
    def tracks_rows(self) -> bool:
        return bool(self.rows) and all(r[ROW_ID] is not None and r[ROW_COMMIT_VERSION] is not None
                                       for r in self.rows)


def jsonable(value: Any) -> Any:
    """A value as tests/oracle.py's readers return it."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc)
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return "hex:" + bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return sorted(([jsonable(k), jsonable(v)] for k, v in value),
                      key=lambda p: json.dumps(p, sort_keys=True, default=str))
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def _logical(array: pa.Array, delta_type: Any, mode: str) -> pa.Array:
    """``array`` (a physical column) with its nested struct fields under their logical names and
    its primitive values as the Delta type says (a ``timestamp`` stored without the UTC flag,
    INT96 or isAdjustedToUTC=false, is a UTC timestamp: PROTOCOL.md "Primitive Types")."""
    if isinstance(delta_type, str):
        target = delta_type_to_arrow(delta_type)
        return array if array.type == target else array.cast(target)
    kind = delta_type.get("type")
    if kind == "array":
        values = _logical(array.values, delta_type["elementType"], mode)
        return pa.ListArray.from_arrays(array.offsets, values, mask=pc.is_null(array))
    if kind == "map":
        keys = _logical(array.keys, delta_type["keyType"], mode)
        items = _logical(array.items, delta_type["valueType"], mode)
        return pa.MapArray.from_arrays(array.offsets, keys, items, mask=pc.is_null(array))
    children, fields = [], []
    for f in delta_type["fields"]:
        child = _find(array.type, f, mode)
        if child is None:
            values = pa.nulls(len(array), delta_type_to_arrow(f["type"]))
        else:
            values = _logical(pc.struct_field(array, [child]), f["type"], mode)
        children.append(values)
        fields.append(pa.field(f["name"], values.type))
    return pa.StructArray.from_arrays(children, fields=fields, mask=pc.is_null(array))


def _find(struct_or_schema: Any, delta_field: dict[str, Any], mode: str) -> int | None:
    """The index of the physical field that holds ``delta_field``."""
    meta = delta_field.get("metadata") or {}
    fields = list(struct_or_schema)
    for index, f in enumerate(fields):
        if mode == "id":
            if f.metadata and f.metadata.get(_FIELD_ID) == str(meta.get(COLUMN_MAPPING_ID_KEY)).encode():
                return index
        elif mode == "name":
            if f.name == meta.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY, delta_field["name"]):
                return index
        elif f.name == delta_field["name"]:
            return index
    return None


def _partition_column(value: str | None, delta_type: str, n: int) -> pa.Array:
    """A partition value (PROTOCOL.md "Partition Value Serialization") as a column of ``n`` rows;
    a ``timestamp`` is written without a zone and means UTC."""
    target = delta_type_to_arrow(delta_type)
    strings = pa.array([value] * n, pa.string())
    if pa.types.is_timestamp(target):
        return strings.cast(pa.timestamp("us")).cast(target)
    return strings.cast(target)


def tracked_rows(path: str) -> TrackedRows:
    """Every live row of the latest version with its stable row ID and commit version."""
    log = DeltaLog(path)
    snapshot = log.snapshot(check_read=False)
    conf = snapshot.metadata.configuration
    mode = conf.get("delta.columnMapping.mode", "none").lower()
    schema = snapshot.schema
    partition_columns = list(snapshot.metadata.partitionColumns)
    id_column, version_column = conf.get(ROW_ID_COLUMN_KEY), conf.get(ROW_COMMIT_VERSION_COLUMN_KEY)
    reader = DvFileReader(snapshot.storage)
    out: list[dict[str, Any]] = []
    for add in sorted(snapshot.state().files.values(), key=lambda a: a.path):
        data = pq.read_table(snapshot.storage.uri(add.decoded_path))
        n = data.num_rows
        index = pa.array(range(n), pa.int64())

        def stable(materialised: str | None, fresh: pa.Array | None) -> pa.Array:
            if materialised and materialised in data.column_names:
                column = data.column(materialised).combine_chunks().cast(pa.int64())
                return column if fresh is None else pc.coalesce(column, fresh)
            return fresh if fresh is not None else pa.nulls(n, pa.int64())

        row_ids = stable(id_column, pc.add(index, add.baseRowId) if add.baseRowId is not None else None)
        commit_versions = stable(version_column,
                                 pa.array([add.defaultRowCommitVersion] * n, pa.int64())
                                 if add.defaultRowCommitVersion is not None else None)
        columns: dict[str, pa.Array] = {}
        for f in schema["fields"]:
            if f["name"] in partition_columns:
                physical = (f.get("metadata") or {}).get(COLUMN_MAPPING_PHYSICAL_NAME_KEY, f["name"])
                value = (add.partitionValues or {}).get(physical, (add.partitionValues or {}).get(f["name"]))
                columns[f["name"]] = _partition_column(value, f["type"], n)
                continue
            found = _find(data.schema, f, mode)
            if found is None:
                columns[f["name"]] = pa.nulls(n, delta_type_to_arrow(f["type"]))
            else:
                columns[f["name"]] = _logical(data.column(found).combine_chunks(), f["type"], mode)
        columns[ROW_ID] = row_ids
        columns[ROW_COMMIT_VERSION] = commit_versions
        table = pa.table(columns)
        if add.dv is not None:
            deleted = reader.read(add.dv, data_file=add.path).cast(pa.int64())
            table = table.filter(pc.invert(pc.is_in(index, value_set=deleted)))
        out.extend(jsonable(r) for r in table.to_pylist())
    return TrackedRows(snapshot.version, out)


@dataclass(frozen=True)
class FreshRowIds:
    """What the log of the latest version says about fresh row IDs (PROTOCOL.md "Row Tracking",
    "Writer Requirements"): whether writers must assign them, the high-water mark, and each live
    file's ``baseRowId``, ``defaultRowCommitVersion`` and physical row count."""

    version: int
    assigned: bool               # rowTracking supported and not suspended
    high_water_mark: int | None
    files: dict[str, tuple[int | None, int | None, int]]


def fresh_row_ids(path: str) -> FreshRowIds:
    log = DeltaLog(path)
    snapshot = log.snapshot(check_read=False)
    state = snapshot.state()
    conf = snapshot.metadata.configuration
    assigned = ("rowTracking" in snapshot.protocol.features
                and conf.get("delta.rowTrackingSuspended", "false").lower() != "true")
    domain = state.live_domains.get("delta.rowTracking")
    mark = json.loads(domain.configuration).get("rowIdHighWaterMark") if domain is not None else None
    files = {a.path: (a.baseRowId, a.defaultRowCommitVersion,
                      pq.read_metadata(snapshot.storage.uri(a.decoded_path)).num_rows)
             for a in state.files.values()}
    return FreshRowIds(snapshot.version, assigned, mark, files)


def fresh_row_id_violations(before: FreshRowIds, after: FreshRowIds) -> list[str]:
    """What the commits from ``before`` to ``after`` did against PROTOCOL.md "Row Tracking"
    ("Writer Requirements"): a file they added (a path not live before) must get a fresh
    ``baseRowId`` above the earlier high-water mark and the ``defaultRowCommitVersion`` of the
    commit that added it; fresh row IDs of live files never overlap; the high-water mark covers
    the highest one."""
    if not after.assigned:
        return []
    out: list[str] = []
    for file, (base, version, rows) in sorted(after.files.items()):
        if file in before.files:
            continue
        if base is None or version is None:
            out.append(f"new file {file} has no baseRowId/defaultRowCommitVersion")
            continue
        if before.high_water_mark is not None and base <= before.high_water_mark:
            out.append(f"new file {file}: baseRowId {base} is not above the earlier high-water mark "
                       f"{before.high_water_mark}")
        if not before.version < version <= after.version:
            out.append(f"new file {file}: defaultRowCommitVersion {version} is not the version of a "
                       f"commit after {before.version}")
    ranges = sorted((b, b + n - 1, f) for f, (b, _v, n) in after.files.items() if b is not None and n)
    for (lo1, hi1, f1), (lo2, _hi2, f2) in zip(ranges, ranges[1:]):
        if lo2 <= hi1:
            out.append(f"fresh row IDs of {f1} [{lo1}, {hi1}] and {f2} (from {lo2}) overlap")
    if ranges and (after.high_water_mark is None or after.high_water_mark < max(hi for _lo, hi, _f in ranges)):
        out.append(f"rowIdHighWaterMark {after.high_water_mark} is below the highest fresh row ID "
                   f"{max(hi for _lo, hi, _f in ranges)}")
    return out


def stable_values(path: str, key: str) -> dict[Any, tuple[int | None, int | None]]:
    """{value of column ``key``: (stable row ID, stable row commit version)} of every live row."""
    return tracked_rows(path).tracking_by(key)


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
