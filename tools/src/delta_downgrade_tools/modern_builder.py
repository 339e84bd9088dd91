"""A table as a current Databricks runtime writes it: every reader feature an older client
refuses, at once, with real parquet files and a real log written through delta_downgrade's own
commit path.

What the table holds (each a real commit, in the order a user's workload would make them):

- protocol (3,7): reader features ``deletionVectors``, ``columnMapping``, ``v2Checkpoint``;
  writer features those plus ``rowTracking``, ``domainMetadata``, ``clustering``,
  ``inCommitTimestamp`` and the legacy ``appendOnly``, ``invariants`` that Databricks lists
  (PROTOCOL.md "Table Features");
- column mapping in ``name`` mode (PROTOCOL.md "Column Mapping"): every field, nested ones too,
  has an id and a physical name ``col-<uuid>``; data files name their columns by physical name
  and carry the ids as parquet field ids; statistics are keyed by physical names; one column is
  renamed after creation (a later ``metaData`` with the new logical name, same physical name);
- row tracking enabled (PROTOCOL.md "Row Tracking"): every ``add`` has ``baseRowId`` and
  ``defaultRowCommitVersion``, the ``delta.rowTracking`` domain keeps ``rowIdHighWaterMark``,
  and the files an OPTIMIZE and an UPDATE write hold the materialised row-ID and
  row-commit-version columns (non-null where the stable value differs from the fresh one);
- clustering (PROTOCOL.md "Clustered Table"): the ``delta.clustering`` domain names the
  clustering column by its physical name parts, the OPTIMIZE output has ``clusteringProvider``
  ``liquid``, and every file has statistics for the clustering column;
- deletion vectors (PROTOCOL.md "Deletion Vectors"): persisted DV files, one of them shared by
  two data files, a DV merged with a later one, and one inline DV;
- in-commit timestamps enabled after creation (PROTOCOL.md "In-Commit Timestamps"), with
  ``delta.inCommitTimestampEnablementVersion`` / ``...EnablementTimestamp``; every commitInfo
  from then on carries a strictly increasing ``inCommitTimestamp`` (the package's commit writes it);
- ``delta.checkpointPolicy=v2`` and a checkpoint written by the package's own
  ``checkpoint_table`` (a V2 checkpoint with sidecars under that policy), followed by one more
  commit, so that a reader replays a checkpoint and a tail.

The builder keeps what the table must read as: the logical rows of the latest version and every
row's stable row ID and row commit version, computed from the operations it performed (not read
back from the files), so tests can hold readers and rewrites against it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from dataclasses import dataclass, field

from typing import Any, Callable, Iterable, Mapping, Sequence

from msgspec.structs import replace
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_downgrade.clock import SYSTEM_CLOCK, Clock
from delta_downgrade.log.commit import commit
from delta_downgrade.log.format.file_names import commit_path
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import (
    AddFile, AnyAction, DomainMetadata, Metadata, ProtocolAction, RemoveFile,
)
from delta_downgrade.protocol.schema import (
    COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY, delta_type_to_arrow,
)
from delta_downgrade_tools.builders import TableBuilder, _stat_value
from delta_downgrade_tools.dv_builder import deletion_vector_actions

READER_FEATURES = ("deletionVectors", "columnMapping", "v2Checkpoint")
WRITER_FEATURES = READER_FEATURES + ("appendOnly", "invariants", "rowTracking", "domainMetadata",
                                     "clustering", "inCommitTimestamp")
MODERN_PROTOCOL = Protocol(3, 7, frozenset(READER_FEATURES), frozenset(WRITER_FEATURES))

ROW_TRACKING_DOMAIN = "delta.rowTracking"
CLUSTERING_DOMAIN = "delta.clustering"
ROW_ID_COLUMN_KEY = "delta.rowTracking.materializedRowIdColumnName"
ROW_COMMIT_VERSION_COLUMN_KEY = "delta.rowTracking.materializedRowCommitVersionColumnName"
ICT_ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
ICT_ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"
CLUSTERING_PROVIDER = "liquid"
# pyarrow writes this field metadata as the parquet field id (column mapping ids, PROTOCOL.md
# "Column Mapping": "id" mode resolves columns by it; Databricks writes it in "name" mode too).
PARQUET_FIELD_ID = b"PARQUET:field_id"


@dataclass
class Column:
    """One field of the table: logical name, Delta type (a primitive name) or struct children,
    column-mapping id and physical name."""

    name: str
    type: str | None
    id: int
    physical: str
    children: list["Column"] = field(default_factory=list)

    def delta_field(self) -> dict[str, Any]:
        kind: Any = self.type
        if self.children:
            kind = {"type": "struct", "fields": [c.delta_field() for c in self.children]}
        return {"name": self.name, "type": kind, "nullable": True,
                "metadata": {COLUMN_MAPPING_ID_KEY: self.id, COLUMN_MAPPING_PHYSICAL_NAME_KEY: self.physical}}

    def arrow_field(self) -> pa.Field:
        kind = (pa.struct([c.arrow_field() for c in self.children]) if self.children
                else delta_type_to_arrow(self.type))
        return pa.field(self.physical, kind, nullable=True, metadata={PARQUET_FIELD_ID: str(self.id).encode()})

    def physical_value(self, value: Any) -> Any:
        if self.children and value is not None:
            return {c.physical: c.physical_value(value.get(c.name)) for c in self.children}
        return value

    def renamed(self, old: str, new: str) -> "Column":
        return Column(new if self.name == old else self.name, self.type, self.id, self.physical,
                      [c.renamed(old, new) for c in self.children])


@dataclass(frozen=True)
class RowTracking:
    """A row's stable row ID and stable row commit version (PROTOCOL.md "Row Tracking")."""

    row_id: int
    commit_version: int


@dataclass
class DataFile:
    """A live data file as the builder wrote it: the ids of its rows in physical order, and the
    row indexes its deletion vector marks deleted."""

    path: str
    ids: list[int]
    deleted: set[int] = field(default_factory=set)


def default_columns() -> list[Column]:
    """id (the clustering column), name (renamed to customer by the default build), amount, day
    and a struct address{city, zip}: column-mapping ids 1..7, physical names ``col-<uuid>``."""
    def col(name: str, kind: str | None, cid: int, children: Sequence[Column] = ()) -> Column:
        return Column(name, kind, cid, f"col-{uuid.uuid4()}", list(children))

    return [col("id", "long", 1), col("name", "string", 2), col("amount", "double", 3),
            col("day", "date", 4),
            col("address", None, 5, [col("city", "string", 6), col("zip", "string", 7)])]


def default_row(i: int) -> dict[str, Any]:
    """Row ``i`` of the default build, with a few nulls (top-level and nested) for the stats."""
    return {
        "id": i,
        "name": f"customer-{i}",
        "amount": None if i % 5 == 4 else round(i * 1.5, 2),
        "day": dt.date(2024, 1, 1) + dt.timedelta(days=i),
        "address": None if i % 7 == 3 else {"city": f"city-{i % 3}", "zip": None if i % 11 == 5 else f"{10000 + i}"},
    }


def _renamed_key(row: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``row`` with key ``old`` renamed to ``new``, in the same position."""
    return {(new if k == old else k): v for k, v in row.items()}


def _compact(obj: Any) -> str:
    """JSON without blanks, as Spark writes a domain's configuration."""
    return json.dumps(obj, separators=(",", ":"))


class _FixedClock:
    def __init__(self, now_ms: int) -> None:
        self._now = now_ms

    def now_ms(self) -> int:
        return self._now


class ModernTableBuilder:
    """The table, step by step; each step is one commit (see the module doc). It keeps the
    expected rows (:attr:`rows`, logical names of the latest schema) and row tracking
    (:attr:`tracking`) of the latest version, keyed by the ``id`` column."""

    def __init__(self, path: str | os.PathLike[str], *, clock: Clock = SYSTEM_CLOCK,
                 columns: Sequence[Column] | None = None) -> None:
        self.table = TableBuilder(path, clock=clock)
        self.path = self.table.path
        self.columns = list(columns) if columns is not None else default_columns()
        self.rows: dict[int, dict[str, Any]] = {}
        self.tracking: dict[int, RowTracking] = {}
        self.files: dict[str, DataFile] = {}
        self.high_water_mark = -1
        self.row_id_column = f"_row-id-col-{uuid.uuid4()}"
        self.row_commit_version_column = f"_row-commit-version-col-{uuid.uuid4()}"
        self.versions: dict[str, int] = {}
        self.renames: list[tuple[str, str]] = []
        self.clustering_column = "id"

    # --- what the table says ------------------------------------------------------------------

    @property
    def version(self) -> int:
        return self.table.version

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def schema_json(self) -> dict[str, Any]:
        return {"type": "struct", "fields": [c.delta_field() for c in self.columns]}

    def max_column_id(self) -> int:
        def ids(cols: Iterable[Column]) -> Iterable[int]:
            for c in cols:
                yield c.id
                yield from ids(c.children)
        return max(ids(self.columns))

    def expected_rows(self) -> list[dict[str, Any]]:
        """The rows a reader must return for the latest version, in id order."""
        return [dict(r) for _, r in sorted(self.rows.items())]

    def _metadata(self) -> Metadata:
        return self.table.log.refresh().snapshot(check_read=False).metadata

    # --- steps --------------------------------------------------------------------------------

    def create(self, ids_per_file: Sequence[Sequence[int]], *, clustering_column: str = "id",
               row: Callable[[int], dict[str, Any]] = default_row,
               configuration: Mapping[str, str] | None = None) -> int:
        """Version 0, a CREATE TABLE … CLUSTER BY … AS SELECT: protocol, metaData, the clustering
        and row-tracking domains and the first files."""
        self.clustering_column = clustering_column
        clustering = self.column(clustering_column)
        conf = {
            "delta.columnMapping.mode": "name",
            "delta.columnMapping.maxColumnId": str(self.max_column_id()),
            "delta.enableDeletionVectors": "true",
            "delta.enableRowTracking": "true",
            ROW_ID_COLUMN_KEY: self.row_id_column,
            ROW_COMMIT_VERSION_COLUMN_KEY: self.row_commit_version_column,
            "delta.checkpointPolicy": "v2",
            **dict(configuration or {}),
        }
        metadata = Metadata(id=str(uuid.uuid4()), schemaString=json.dumps(self.schema_json(), separators=(",", ":")),
                            partitionColumns=[], configuration=conf, createdTime=self.table.clock.now_ms())
        version = 0
        adds = [self._new_file([row(i) for i in ids], version) for ids in ids_per_file]
        # PROTOCOL.md "Clustered Table": the physical name parts of each clustering column.
        domains = [DomainMetadata(CLUSTERING_DOMAIN, _compact({"clusteringColumns": [[clustering.physical]]})),
                   self._high_water_mark_domain()]
        self.table.commit([ProtocolAction.of(MODERN_PROTOCOL), metadata, *domains, *adds],
                          "CREATE TABLE AS SELECT",
                          {"isManaged": "false", "partitionBy": [], "clusterBy": [clustering_column]})
        self.versions["create"] = version
        return version

    def rename_column(self, old: str, new: str) -> int:
        """ALTER TABLE RENAME COLUMN: a new logical name, the same physical name and id."""
        self.columns = [c.renamed(old, new) for c in self.columns]
        self.renames.append((old, new))
        metadata = self._metadata()
        updated = replace(metadata, schemaString=json.dumps(self.schema_json(), separators=(",", ":")))
        self.rows = {i: _renamed_key(r, old, new) for i, r in self.rows.items()}
        version = self.table.commit([updated], "RENAME COLUMN", {"oldColumnPath": old, "newColumnPath": new})
        self.versions["rename"] = version
        return version

    def enable_in_commit_timestamps(self) -> int:
        """SET TBLPROPERTIES delta.enableInCommitTimestamps=true on a table with earlier commits:
        PROTOCOL.md "In-Commit Timestamps" asks for the enablement version and timestamp (the
        enabling commit's own inCommitTimestamp), which must be later than the file modification
        time of the commit before it. The commit is written at a fixed time so that the
        timestamp in its metadata is the one its commitInfo gets."""
        version = self.version + 1
        previous = self.table.storage.uri(commit_path(version - 1))
        ict = max(SYSTEM_CLOCK.now_ms(), self.table.clock.now_ms(), int(os.stat(previous).st_mtime * 1000) + 1)
        updated = self._metadata().with_configuration({
            "delta.enableInCommitTimestamps": "true",
            ICT_ENABLEMENT_VERSION: str(version),
            ICT_ENABLEMENT_TIMESTAMP: str(ict),
        })
        written = commit(self.table.log, version - 1, [updated], operation="SET TBLPROPERTIES",
                         operation_parameters={"properties": {"delta.enableInCommitTimestamps": "true"}},
                         clock=_FixedClock(ict))
        assert written == version
        self.versions["enable_ict"] = version
        return version

    def append(self, ids_per_file: Sequence[Sequence[int]], *,
               row: Callable[[int], dict[str, Any]] | None = None) -> int:
        """INSERT INTO: new files with fresh row IDs above the high-water mark."""
        make = row or (lambda i: self.logical_row(default_row(i)))
        version = self.version + 1
        adds = [self._new_file([make(i) for i in ids], version) for ids in ids_per_file]
        written = self.table.commit([*adds, self._high_water_mark_domain()], "WRITE", {"mode": "Append"})
        assert written == version
        self.versions.setdefault("append", version)
        self.versions[f"append@{version}"] = version
        return version

    def optimize(self, paths: Sequence[str]) -> int:
        """OPTIMIZE on a clustered table: the rows of ``paths`` (files without DVs) rewritten into
        one file sorted by the clustering column, with ``clusteringProvider``. The rows are copied,
        so their stable row IDs and commit versions are kept in the materialised columns
        (PROTOCOL.md "Row Tracking": copied rows keep both); the new file gets fresh ones."""
        version = self.version + 1
        state = self.table.log.refresh().snapshot(check_read=False).state()
        by_path = {a.path: a for a in state.files.values()}
        sources = [by_path[p] for p in paths]
        assert all(a.dv is None for a in sources), "optimize() compacts files without deletion vectors"
        ids = sorted(i for p in paths for i in self.files[p].ids)
        add = self._new_file([self.rows[i] for i in ids], version, materialise_ids=ids,
                             materialise_versions=ids, clustering_provider=CLUSTERING_PROVIDER,
                             data_change=False)
        now = self.table.clock.now_ms()
        removes = [RemoveFile(path=a.path, deletionTimestamp=now, dataChange=False, extendedFileMetadata=True,
                              partitionValues=a.partitionValues, size=a.size, stats=a.stats,
                              baseRowId=a.baseRowId, defaultRowCommitVersion=a.defaultRowCommitVersion)
                   for a in sources]
        for p in paths:
            del self.files[p]
        written = self.table.commit([*removes, add, self._high_water_mark_domain()], "OPTIMIZE",
                                    {"predicate": [], "clusterBy": [self.clustering_column], "auto": False,
                                     "zOrderBy": []})
        assert written == version
        self.versions["optimize"] = version
        return version

    def delete(self, ids: Iterable[int], *, shared_file: bool = False, inline: bool = False) -> int:
        """DELETE with deletion vectors: one commit of remove/add pairs (dv_builder)."""
        ids = list(ids)
        version = self.version + 1
        actions = self._dv_actions(ids, shared_file=shared_file, inline=inline)
        written = self.table.commit(actions, "DELETE", {"predicate": json.dumps(["<ids>"])})
        assert written == version
        for i in ids:
            del self.rows[i]
            del self.tracking[i]
        self.versions.setdefault("delete", version)
        self.versions[f"delete@{version}"] = version
        return version

    def update(self, ids: Sequence[int], change: Callable[[dict[str, Any]], dict[str, Any]], *,
               shared_file: bool = False) -> int:
        """UPDATE on a DV table: DVs mark the old rows deleted and one new file holds the updated
        rows, in one commit. The updated rows keep their stable row IDs (materialised) and get
        this commit's version as their row commit version (the materialised column is NULL:
        PROTOCOL.md "Row Tracking", an updated row's commit version is the fresh one)."""
        version = self.version + 1
        dv_actions = self._dv_actions(ids, shared_file=shared_file, inline=False)
        updated = [change(dict(self.rows[i])) for i in ids]
        stable = {i: self.tracking[i].row_id for i in ids}
        add = self._new_file(updated, version, materialise_ids=list(ids), materialise_versions=[],
                             preserved_row_ids=stable)
        written = self.table.commit([*dv_actions, add, self._high_water_mark_domain()], "UPDATE",
                                    {"predicate": json.dumps(["<ids>"])})
        assert written == version
        self.versions["update"] = version
        return version

    def checkpoint(self) -> Any:
        """A checkpoint at the latest version by the package's ``checkpoint_table`` (a V2
        checkpoint under ``delta.checkpointPolicy=v2``)."""
        result = self.table.checkpoint()
        self.versions["checkpoint"] = self.version
        return result

    # --- files --------------------------------------------------------------------------------

    def logical_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """A row keyed by the names the columns were created with, under the current logical
        names (after the renames so far; top-level columns)."""
        out = dict(row)
        for old, new in self.renames:
            out = _renamed_key(out, old, new)
        return out

    def _high_water_mark_domain(self) -> DomainMetadata:
        return DomainMetadata(ROW_TRACKING_DOMAIN, _compact({"rowIdHighWaterMark": self.high_water_mark}))

    def _new_file(self, rows: Sequence[dict[str, Any]], version: int, *,
                  materialise_ids: Sequence[int] = (), materialise_versions: Sequence[int] = (),
                  preserved_row_ids: Mapping[int, int] | None = None,
                  clustering_provider: str | None = None, data_change: bool = True) -> AddFile:
        """Write one parquet file with physical names and field ids and return its add, with a
        fresh ``baseRowId`` above the high-water mark and ``defaultRowCommitVersion`` = version.

        ``materialise_ids``: the rows (by id) whose stable row ID is written in the materialised
        column (their current one, or ``preserved_row_ids``); ``materialise_versions``: the rows
        whose stable commit version is. The other rows get NULL there: their stable values are
        the fresh ones (PROTOCOL.md "Row Tracking"). When no row materialises anything, neither
        column is written: the protocol allows leaving out a column that is NULL throughout."""
        base_row_id = self.high_water_mark + 1
        self.high_water_mark += len(rows)
        ids = [r["id"] for r in rows]
        physical = pa.Table.from_pylist([{c.physical: c.physical_value(r.get(c.name)) for c in self.columns}
                                         for r in rows], schema=pa.schema([c.arrow_field() for c in self.columns]))
        stats = physical_stats(physical)
        keep_ids, keep_versions = set(materialise_ids), set(materialise_versions)
        preserved = dict(preserved_row_ids or {})
        if keep_ids or keep_versions:
            row_ids = [preserved.get(i, self.tracking[i].row_id if i in self.tracking else None)
                       if i in keep_ids else None for i in ids]
            commit_versions = [self.tracking[i].commit_version if i in keep_versions else None for i in ids]
            physical = physical.append_column(pa.field(self.row_id_column, pa.int64()), pa.array(row_ids, pa.int64()))
            physical = physical.append_column(pa.field(self.row_commit_version_column, pa.int64()),
                                              pa.array(commit_versions, pa.int64()))
        name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        full = self.table.storage.uri(name)
        pq.write_table(physical, full, compression="snappy")
        st = os.stat(full)
        for index, (i, r) in enumerate(zip(ids, rows)):
            fresh_id = base_row_id + index
            row_id = preserved.get(i, self.tracking[i].row_id if i in self.tracking else fresh_id) \
                if i in keep_ids else fresh_id
            commit_version = self.tracking[i].commit_version if i in keep_versions else version
            self.tracking[i] = RowTracking(row_id, commit_version)
            self.rows[i] = dict(r)
        self.files[name] = DataFile(name, ids)
        return AddFile(path=name, partitionValues={}, size=st.st_size, modificationTime=int(st.st_mtime * 1000),
                       dataChange=data_change, stats=stats, baseRowId=base_row_id,
                       defaultRowCommitVersion=version, clusteringProvider=clustering_provider)

    def _dv_actions(self, ids: Iterable[int], *, shared_file: bool, inline: bool) -> list[AnyAction]:
        wanted = set(ids)
        selection = {path: [index for index, i in enumerate(f.ids) if i in wanted and index not in f.deleted]
                     for path, f in self.files.items()}
        selection = {p: rows for p, rows in selection.items() if rows}
        found = {self.files[p].ids[r] for p, rows in selection.items() for r in rows}
        assert found == wanted, f"rows {sorted(wanted - found)} are not live in the table"
        actions = deletion_vector_actions(self.table, selection, shared_file=shared_file, inline=inline)
        for p, rows in selection.items():
            self.files[p].deleted.update(rows)
        return actions


def physical_stats(table: pa.Table) -> str:
    """numRecords, minValues, maxValues and nullCount keyed by physical names, nested structs
    as nested objects (PROTOCOL.md "Per-file Statistics"), tight bounds."""
    def column_stats(array: pa.ChunkedArray | pa.Array) -> tuple[Any, Any, Any]:
        t = array.type
        if pa.types.is_struct(t):
            mins, maxs, nulls = {}, {}, {}
            combined = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
            for i in range(t.num_fields):
                name = t.field(i).name
                child = combined.field(i)
                # A child is null where its parent is (Spark counts those nulls for the child too).
                child = pc.if_else(pc.is_null(combined), pa.scalar(None, child.type), child)
                lo, hi, n = column_stats(child)
                nulls[name] = n
                if lo is not None:
                    mins[name], maxs[name] = lo, hi
            return mins or None, maxs or None, nulls
        if array.null_count == len(array):
            return None, None, array.null_count
        mm = pc.min_max(array).as_py()
        return _stat_value(mm["min"]), _stat_value(mm["max"]), array.null_count

    mins, maxs, nulls = {}, {}, {}
    for name in table.column_names:
        lo, hi, n = column_stats(table.column(name))
        nulls[name] = n
        if lo is not None:
            mins[name], maxs[name] = lo, hi
    return json.dumps({"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs,
                       "nullCount": nulls, "tightBounds": True}, separators=(",", ":"))


@dataclass
class ModernTable:
    """What :func:`build_modern_table` built: where, and what the table must read as."""

    path: str
    builder: ModernTableBuilder
    rows: list[dict[str, Any]]
    tracking: dict[int, RowTracking]
    renamed: tuple[str, str]
    clustering_physical: str
    checkpoint: Any
    versions: dict[str, int]


def build_modern_table(path: str | os.PathLike[str], *, v2_checkpoint: bool = True,
                       clock: Clock = SYSTEM_CLOCK) -> ModernTable:
    """The default modern table (module doc), ten commits:

    ==  ========================  ===============================================================
    v0  CREATE TABLE AS SELECT    files A (ids 0-9), B (10-19); row IDs 0-19, commit version 0
    v1  RENAME COLUMN             name -> customer
    v2  SET TBLPROPERTIES         in-commit timestamps on, with enablement version/timestamp
    v3  WRITE                     files C (20-29), D (30-39)
    v4  OPTIMIZE                  C + D -> E, clusteringProvider liquid, materialised row IDs
                                  20-39 and commit version 3 (fresh: base 40, version 4)
    v5  DELETE                    ids 1, 4 (A) and 20, 27, 28 (E): one DV file for both
    v6  UPDATE                    ids 12, 15 (B) and 33 (E, its DV merged with the new one): the
                                  DVs of B and E share one new DV file; new file F keeps the
                                  rows' IDs materialised, commit version 6
    v7  DELETE                    id 15's new copy in F, an inline DV
    --  checkpoint at v7          unless ``v2_checkpoint`` is false (the policy stays v2)
    v8  WRITE                     file G (ids 40-44), row IDs 63-67, commit version 8
    ==  ========================  ===============================================================
    """
    b = ModernTableBuilder(path, clock=clock)
    b.create([range(0, 10), range(10, 20)])
    b.rename_column("name", "customer")
    b.enable_in_commit_timestamps()
    b.append([range(20, 30), range(30, 40)])
    c, d = list(b.files)[2:4]
    b.optimize([c, d])
    b.delete([1, 4, 20, 27, 28], shared_file=True)

    def raise_amount(r: dict[str, Any]) -> dict[str, Any]:
        r["amount"] = -1.0 if r["amount"] is None else r["amount"] + 1000
        return r

    b.update([12, 15, 33], raise_amount, shared_file=True)
    b.delete([15], inline=True)
    checkpoint = b.checkpoint() if v2_checkpoint else None
    b.append([range(40, 45)])
    return ModernTable(path=b.path, builder=b, rows=b.expected_rows(), tracking=dict(b.tracking),
                       renamed=("name", "customer"), clustering_physical=b.column("id").physical,
                       checkpoint=checkpoint, versions=dict(b.versions))


__all__ = ["MODERN_PROTOCOL", "ModernTable", "ModernTableBuilder", "RowTracking", "build_modern_table",
           "default_columns", "default_row", "physical_stats"]
