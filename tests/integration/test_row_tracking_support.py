"""tests/row_tracking_support.py reads the rows of real tables as delta-rs does: column mapping
(name and id, nested structs, arrays and maps), partition values, deletion vectors (files, shared
files), timestamps stored without the UTC flag; and on the row-tracking tables every row has a
stable row ID, unique within the version."""

from __future__ import annotations

import pytest

from tests.oracle import same_rows
from tests.row_tracking_support import tracked_rows

TABLES = ["row_tracking", "row_tracking_dv", "liquid_row_tracking_dbr", "dv_cm_name_checkpoint",
          "cm_id_nested_all_types", "cm_name_partitioned", "dv_cdf_shared_dv_file_dbr",
          "v2_checkpoint_dbr_identity"]
TRACKING = {"row_tracking", "row_tracking_dv", "liquid_row_tracking_dbr"}


@pytest.mark.parametrize("name", TABLES)
def test_rows_read_from_the_files_are_the_rows_delta_rs_reads(golden_root, oracle, name):
    path = str(golden_root / name)  # read only
    rows = tracked_rows(path)
    assert same_rows(rows.data_rows(), oracle.scan_rows(path))
    assert rows.tracks_rows == (name in TRACKING)
    if rows.tracks_rows:
        assert len({r["_row_id"] for r in rows.rows}) == len(rows.rows)
