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


def test_fresh_row_id_violations_flag_a_rewrite_that_reuses_row_ids(tmp_path):
    from msgspec.structs import replace

    from delta_downgrade.log.delta_log import DeltaLog
    from delta_downgrade_tools.modern_builder import build_modern_table
    from tests.row_tracking_support import fresh_row_id_violations, fresh_row_ids

    table = build_modern_table(str(tmp_path / "t"), v2_checkpoint=False)
    before = fresh_row_ids(table.path)
    assert fresh_row_id_violations(before, before) == []
    table.builder.append([range(100, 103)])  # a writer that follows the protocol
    after_append = fresh_row_ids(table.path)
    assert fresh_row_id_violations(before, after_append) == []
    # A "rewrite" that commits an existing file's data under a new path with its old row IDs.
    add = next(a for a in DeltaLog(table.path).snapshot().state().files.values() if a.dv is None)
    copy = "copy-" + add.path
    (tmp_path / "t" / copy).write_bytes((tmp_path / "t" / add.path).read_bytes())
    table.builder.table.commit([replace(add, path=copy, dataChange=False)], "COPY")
    problems = fresh_row_id_violations(after_append, fresh_row_ids(table.path))
    assert any("baseRowId" in p and "high-water mark" in p for p in problems), problems
    assert any("defaultRowCommitVersion" in p for p in problems), problems
    assert any("overlap" in p for p in problems), problems
