"""A table under ``delta.checkpointPolicy=v2`` with every kind of action a checkpoint holds,
for the V2 checkpoint tests (unit: the writer; integration: the outside readers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from delta_downgrade.clock import ManualClock
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import DomainMetadata, Txn
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import create_dv_table, delete_rows

T0 = 1_700_000_000_000
SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])
V2 = "v2Checkpoint"
V2_PROTOCOL = Protocol(3, 7, frozenset({"deletionVectors", V2}),
                       frozenset({"deletionVectors", V2, "domainMetadata"}))
POLICY = {"delta.checkpointPolicy": "v2"}


def rows(start: int, n: int) -> list[dict[str, Any]]:
    return [{"id": i, "part": "ab"[i % 2]} for i in range(start, start + n)]


def v2_table(path: Path, *, files: int = 4, protocol: Protocol = V2_PROTOCOL,
             configuration: dict[str, str] | None = POLICY) -> TableBuilder:
    """Partitioned, with deletion vectors, a tombstone, an app transaction and a live and a
    removed domain: every kind of action a checkpoint holds."""
    clock = ManualClock(T0)
    b = TableBuilder(path, clock=clock)
    create_dv_table(b, SCHEMA, rows(0, 20), partition_columns=["part"], files=files, protocol=protocol,
                    configuration=dict(configuration or {}))
    clock.advance(minutes=1)
    delete_rows(b, lambda r: r["id"] % 5 == 0)
    clock.advance(minutes=1)
    first = sorted(b.log.refresh().snapshot().state().files.values(), key=lambda a: a.path)[0]
    b.remove_files([first.path])
    clock.advance(minutes=1)
    b.commit([Txn(appId="app-1", version=7, lastUpdated=clock.now_ms()),
              DomainMetadata(domain="user.a", configuration='{"k":1}'),
              DomainMetadata(domain="user.b", configuration="{}")], "WRITE")
    b.commit([DomainMetadata(domain="user.b", configuration="{}", removed=True)], "WRITE")
    return b
