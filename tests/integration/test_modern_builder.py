"""The modern table (tools/src/delta_downgrade_tools/modern_builder.py) read by outside readers:
deltalake 1.6.6 and DuckDB's delta extension (delta-kernel-rs) return exactly the rows the
builder wrote minus those its deletion vectors delete, under the logical column names; deltalake
0.18.2 (reader version 1) refuses it, which is what the drops of test_modern_table.py change."""

from __future__ import annotations

import pytest

from tests.modern_support import build
from tests.oracle import same_rows
from tests.row_tracking_support import jsonable


@pytest.mark.parametrize("v2_checkpoint", [False, True], ids=["no-checkpoint-yet", "v2-checkpoint"])
def test_outside_readers_read_the_expected_rows(tmp_path, oracle, duckdb_reader, v2_checkpoint):
    table = build(str(tmp_path / "t"), v2_checkpoint=v2_checkpoint)
    expected = [jsonable(r) for r in table.rows]
    assert "customer" in expected[0] and "name" not in expected[0]  # the renamed column's new name
    assert same_rows(oracle.scan_rows(table.path), expected)
    assert same_rows(duckdb_reader.duckdb_rows(table.path), expected)


def test_deltalake_018_refuses_the_reader_features(tmp_path, oracle_018):
    table = build(str(tmp_path / "t"), v2_checkpoint=False)
    refused = oracle_018.pyarrow_rows(table.path)
    assert not refused.ok
    assert any(f in refused.error for f in ("deletionVectors", "columnMapping", "v2Checkpoint")), refused.error
