"""The rows a reconciliation keeps are the rows a take gives, whether they come back as slices of
the columns (a few runs) or copied (scattered rows)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from delta_downgrade.log.format.arrow_columns import runs_of, taken


def _column() -> pa.ChunkedArray:
    values = [{"path": f"f{i}", "size": i} for i in range(3000)]
    return pa.chunked_array([pa.array(values[:1000]), pa.array(values[1000:1700]), pa.array(values[1700:])])


@pytest.mark.parametrize("rows", [
    list(range(3000)),                                           # every row: one run
    [i for i in range(3000) if not 900 <= i < 1100],             # a hole across a chunk boundary
    [i for i in range(3000) if i % 500 not in range(10)],        # a few holes
    list(range(0, 3000, 2)),                                     # scattered: copied
    [],
    [2999],
])
def test_kept_rows_equal_a_take(rows):
    column = _column()
    index = pa.array(rows, pa.int64())
    kept = taken(column, index)
    assert kept.type == column.type
    assert kept.to_pylist() == column.take(index).to_pylist()


def test_runs_of_ascending_rows():
    assert runs_of(pa.array([3, 4, 5, 9, 10, 12], pa.int64())) == [(3, 6), (9, 11), (12, 13)]
    assert runs_of(pa.array([], pa.int64())) == []
    # more runs than one per 256 rows (and 64): a copy is cheaper than the slices
    assert runs_of(pa.array(list(range(0, 400, 2)), pa.int64())) is None
