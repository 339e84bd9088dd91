"""Build real Delta tables directly: parquet data files written with pyarrow and commit JSON
written through delta_downgrade's own commit path.

Tests use it for tables the golden set lacks (checkpointProtection, stable typeWidening, inline
deletion vectors, …) and ``make demo`` for its sample table. delta-rs cannot create most of
these protocols, and the point of building them here is that every byte is what the protocol
says, with nothing hidden behind another writer.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import uuid
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_downgrade.protocol.actions import AddFile, AnyAction, Metadata, ProtocolAction, RemoveFile
from delta_downgrade.clock import SYSTEM_CLOCK, Clock
from delta_downgrade.log.commit import commit
from delta_downgrade.log.delta_log import DeltaLog, Refresh
from delta_downgrade.log.format.file_names import commit_path
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.schema import schema_string
from delta_downgrade.storage.local import LocalStorage


def _stat_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return value.isoformat(timespec="microseconds")
        return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def file_stats(table: pa.Table) -> str:
    """numRecords, minValues, maxValues and nullCount of top-level primitive columns."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name in table.column_names:
        column = table.column(name)
        t = column.type
        if pa.types.is_nested(t):
            continue
        nulls[name] = column.null_count
        if pa.types.is_binary(t) or pa.types.is_boolean(t) or column.null_count == len(column):
            continue
        mm = pc.min_max(column).as_py()
        mins[name] = _stat_value(mm["min"])
        maxs[name] = _stat_value(mm["max"])
    return json.dumps({"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs,
                       "nullCount": nulls}, separators=(",", ":"))


def _partition_string(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, decimal.Decimal):
        # PROTOCOL.md "Partition Value Serialization": the number with the column's scale
        # ("1.50" for decimal(p,2)), as delta-spark writes it; not a float's spelling.
        return format(value, "f")
    return str(_stat_value(value))


class TableBuilder:
    """A Delta table written step by step. Every step is one real commit."""

    def __init__(self, path: str | os.PathLike[str], clock: Clock = SYSTEM_CLOCK) -> None:
        self.path = os.fspath(path)
        os.makedirs(self.path, exist_ok=True)
        self.storage = LocalStorage(self.path)
        self.log = DeltaLog(self.path, self.storage)
        self.clock = clock
        self.partition_columns: list[str] = []
        self.arrow_schema: pa.Schema | None = None

    # --- versions ---------------------------------------------------------------------------------

    @property
    def version(self) -> int:
        self.log.refresh()
        try:
            return self.log.latest_version()
        except Exception:  # noqa: BLE001 - no log yet
            return -1

    def commit(self, actions: Sequence[AnyAction], operation: str = "WRITE",
               parameters: Mapping[str, Any] | None = None) -> int:
        return commit(self.log, self.version, actions, operation=operation,
                      operation_parameters=dict(parameters or {}), clock=self.clock)

    # --- table creation and changes -----------------------------------------------------------------

    def create(self, schema: pa.Schema, *, partition_columns: Sequence[str] = (),
               protocol: Protocol = Protocol(1, 2),  # noqa: B008 - a frozen value
               configuration: Mapping[str, str] | None = None,
               rows: pa.Table | Sequence[Mapping[str, Any]] | None = None,
               delta_schema: Mapping[str, Any] | None = None, files: int = 1) -> int:
        """Version 0: protocol + metaData (+ the first data files)."""
        self.arrow_schema = schema
        self.partition_columns = list(partition_columns)
        metadata = Metadata(
            id=str(uuid.uuid4()),
            schemaString=json.dumps(delta_schema, separators=(",", ":")) if delta_schema else schema_string(schema),
            partitionColumns=list(partition_columns), configuration=dict(configuration or {}),
            createdTime=self.clock.now_ms())
        actions: list[AnyAction] = [ProtocolAction.of(protocol), metadata]
        if rows is not None:
            actions += self.write_files(rows, files=files)
        return self.commit(actions, "CREATE TABLE", {"isManaged": "false", "partitionBy": list(partition_columns)})

    def append(self, rows: pa.Table | Sequence[Mapping[str, Any]], *, files: int = 1) -> int:
        return self.commit(self.write_files(rows, files=files), "WRITE", {"mode": "Append"})

    def set_properties(self, updates: Mapping[str, str | None]) -> int:
        snapshot = self.log.snapshot(check_read=False)
        return self.commit([snapshot.metadata.with_configuration(updates)], "SET TBLPROPERTIES",
                           {"properties": dict(updates)})

    def set_protocol(self, protocol: Protocol) -> int:
        return self.commit([ProtocolAction.of(protocol)], "UPGRADE PROTOCOL", {"newProtocol": protocol.to_action()})

    def set_metadata(self, metadata: Metadata) -> int:
        return self.commit([metadata], "CHANGE COLUMN")

    def empty_commit(self) -> int:
        return self.commit([], "Empty Commit")

    def remove_files(self, paths: Iterable[str]) -> int:
        state = self.log.snapshot(check_read=False).state()
        wanted = set(paths)
        now = self.clock.now_ms()
        removes = [RemoveFile(path=f.path, deletionTimestamp=now, dataChange=True, extendedFileMetadata=True,
                              partitionValues=f.partitionValues, size=f.size, deletionVector=f.deletionVector)
                   for f in state.files.values() if f.path in wanted]
        return self.commit(removes, "DELETE")

    def checkpoint(self, version: int | None = None) -> Any:
        from delta_downgrade.log.checkpoint.on_driver import checkpoint_table

        return checkpoint_table(self.log, version, clock=self.clock)

    def age_commit(self, version: int, epoch_ms: int) -> None:
        """Set a commit file's modification time, as if it had been written then."""
        self.storage.set_modification_time(commit_path(version), epoch_ms)
        self.log.refresh(Refresh.FROM_SCRATCH)  # refresh() keeps the status of known commits (never rewritten)

    # --- data files -----------------------------------------------------------------------------

    def _as_table(self, rows: pa.Table | Sequence[Mapping[str, Any]]) -> pa.Table:
        if isinstance(rows, pa.Table):
            return rows
        assert self.arrow_schema is not None, "create() the table first or pass a pyarrow Table"
        return pa.Table.from_pylist(list(rows), schema=self.arrow_schema)

    def write_files(self, rows: pa.Table | Sequence[Mapping[str, Any]], *, files: int = 1) -> list[AddFile]:
        """Write parquet files (split into ``files`` per partition) and return their add actions."""
        table = self._as_table(rows)
        adds: list[AddFile] = []
        for values, part in self._partitions(table):
            data = part.drop_columns(self.partition_columns) if self.partition_columns else part
            chunk = max(1, -(-data.num_rows // max(1, files)))
            for start in range(0, max(1, data.num_rows), chunk):
                piece = data.slice(start, chunk)
                adds.append(self._write_one(piece, values))
        return adds

    def _partitions(self, table: pa.Table) -> Iterable[tuple[dict[str, str | None], pa.Table]]:
        if not self.partition_columns:
            yield {}, table
            return
        keys = [tuple(table.column(c)[i].as_py() for c in self.partition_columns) for i in range(table.num_rows)]
        for key in dict.fromkeys(keys):
            mask = pa.array([k == key for k in keys])
            values = {c: _partition_string(v) for c, v in zip(self.partition_columns, key)}
            yield values, table.filter(mask)

    def _write_one(self, data: pa.Table, partition_values: dict[str, str | None]) -> AddFile:
        from urllib.parse import quote

        dirs = "/".join(f"{c}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}"
                        for c, v in partition_values.items())
        name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        rel = f"{dirs}/{name}" if dirs else name
        full = self.storage.uri(rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        pq.write_table(data, full, compression="snappy")
        st = os.stat(full)
        return AddFile(path=quote(rel, safe="/"), partitionValues=partition_values, size=st.st_size,
                       modificationTime=int(st.st_mtime * 1000), dataChange=True, stats=file_stats(data))
