"""The outside readers the scenario tests compare against read golden tables as documented:
DuckDB's delta extension and delta-rs agree row for row, and deltalake 0.18.2 refuses reader
features it does not know instead of returning wrong rows."""

from __future__ import annotations

import pytest

from tests.oracle import same_rows


@pytest.mark.parametrize("name", ["v2_checkpoint_parquet_sidecars", "dv_partitioned_checkpoint",
                                  "liquid_row_tracking_dbr"])
def test_duckdb_and_delta_rs_read_the_same_rows(golden_table, oracle, duckdb_reader, name):
    path = golden_table(name)
    duck = duckdb_reader.duckdb_rows(path).unwrap()
    rs = oracle.scan_rows(path).unwrap()
    assert duck, "the table has rows"
    assert same_rows(duck, rs)


def test_deltalake_018_reads_reader_version_1_and_refuses_deletion_vectors(golden_table, oracle, oracle_018):
    plain = golden_table("row_tracking")
    assert same_rows(oracle_018.pyarrow_rows(plain).unwrap(), oracle.scan_rows(plain).unwrap())
    refused = oracle_018.pyarrow_rows(golden_table("dv_partitioned_checkpoint"))
    assert not refused.ok and "deletionVectors" in refused.error
