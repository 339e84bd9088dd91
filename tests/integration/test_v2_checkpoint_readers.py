"""The outside readers read the V2 checkpoints this package writes: deltalake 1.6.6 (delta-rs on
delta-kernel-rs, ``scan_rows``) and DuckDB's delta extension (delta-kernel-rs inside DuckDB).

For both top-level formats, with several sidecars, deletion vectors, a tombstone, an app
transaction and domains in the checkpoint: the commits up to the checkpoint are deleted, so that
the readers can only build the table from it (with ``_last_checkpoint`` naming it, and from the
listing alone); the rows must equal the rows read before. Then a commit after the checkpoint is
read on top of it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LAST_CHECKPOINT, LOG_DIR
from tests.oracle import same_rows
from tests.v2_tables import rows, v2_table


def _read(oracle, duckdb_reader, path: str) -> tuple[list[dict], list[dict]]:
    kernel, duck = oracle.scan_rows(path), duckdb_reader.duckdb_rows(path)
    assert kernel.ok, kernel.error
    assert duck.ok, duck.error
    return kernel.value, duck.value


@pytest.mark.parametrize("fmt", ["parquet", "json"])
@pytest.mark.parametrize("hint", [True, False], ids=["with-last-checkpoint", "listing-only"])
def test_outside_readers_read_our_v2_checkpoint_alone(tmp_path, oracle, duckdb_reader, fmt, hint):
    b = v2_table(tmp_path / "t")
    path = b.path
    before = _read(oracle, duckdb_reader, path)
    ids = {r["id"] for r in before[0]}
    assert same_rows(*before) and ids and not ids & {0, 5, 10, 15}  # DV-deleted rows stay deleted
    result = checkpoint_table(DeltaLog(path), clock=b.clock, part_size=2, v2_format=fmt)
    assert result.checkpoint_kind == "v2" and len(result.sidecars) >= 3
    for version in range(result.version + 1):
        os.unlink(Path(path, LOG_DIR, f"{version:020d}.json"))
    if not hint:
        os.unlink(Path(path, LAST_CHECKPOINT))
    after = _read(oracle, duckdb_reader, path)
    assert same_rows(after[0], before[0]) and same_rows(after[1], before[1])
    assert oracle.version(path).unwrap() == result.version

    b.append(rows(100, 2))
    kernel, duck = _read(oracle, duckdb_reader, path)
    assert len(kernel) == len(before[0]) + 2 and same_rows(kernel, duck)
