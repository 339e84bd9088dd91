"""The non-null rows of a checkpoint's ``add``/``remove`` column (arrow_checkpoint._valid_runs): the
same rows, in order, as a filter keeps; taken as slices of the column (sharing its buffers) when they
lie in a few runs, gathered by a take when they lie in many (arrow_columns.taken)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from delta_downgrade.log.format.arrow_columns import SLICED_RUNS
from delta_downgrade.log.replay.arrow_checkpoint import _valid_runs

_TYPE = pa.struct([("path", pa.string()), ("size", pa.int64())])


def _column(valid_by_chunk: list[list[bool]]) -> pa.ChunkedArray:
    chunks, n = [], 0
    for valid in valid_by_chunk:
        rows = [{"path": f"part-{n + i:05d}.parquet", "size": n + i} if v else None for i, v in enumerate(valid)]
        chunks.append(pa.array(rows, _TYPE))
        n += len(valid)
    return pa.chunked_array(chunks, _TYPE)


def _kept(column: pa.ChunkedArray) -> list:
    return [row for row in column.to_pylist() if row is not None]


def _shares_buffers(piece: pa.StructArray, column: pa.ChunkedArray) -> bool:
    data = piece.field("path").buffers()[2].address
    return any(chunk.field("path").buffers()[2].address == data for chunk in column.chunks)


@pytest.mark.parametrize("valid_by_chunk", [
    [[True] * 10],                                   # no nulls
    [[False, False] + [True] * 8],                   # protocol and metadata first
    [[True] * 7 + [False] * 3],                      # the other kind last
    [[False] + [True] * 4 + [False] * 2 + [True] * 3, [True] * 5, [False] * 4, [True, False, True]],
    [[False] * 6],                                   # only other actions
    [[True], [False], [True]],                       # one-row chunks
], ids=["no-nulls", "nulls-first", "nulls-last", "chunks-with-runs", "all-null", "one-row-chunks"])
def test_few_runs_are_slices_of_the_column(valid_by_chunk):
    column = _column(valid_by_chunk)
    pieces = _valid_runs(column)
    assert [row for piece in pieces for row in piece.to_pylist()] == _kept(column)
    assert all(piece.null_count == 0 and len(piece) and _shares_buffers(piece, column) for piece in pieces)


def test_many_runs_are_gathered_by_a_filter():
    """Rows of the two kinds interleaved (as a hash-partitioned writer may leave them): more than
    SLICED_RUNS runs in a row group, which are copied once rather than cut in many slices."""
    rng = random.Random(5)
    valid = [rng.random() < 0.7 for _ in range(4 * SLICED_RUNS * 4)]
    column = _column([valid, [True] * 5])
    pieces = _valid_runs(column)
    assert [row for piece in pieces for row in piece.to_pylist()] == _kept(column)
    assert len(pieces) == 2 and not _shares_buffers(pieces[0], column) and _shares_buffers(pieces[1], column)


def _runs(count: int, *, null_first: bool) -> list[bool]:
    """A row group whose non-null rows lie in ``count`` runs of two rows, a null row between each."""
    return ([False] if null_first else []) + [v for _ in range(count) for v in (True, True, False)]


def test_runs_at_the_limit():
    """SLICED_RUNS runs (fewer than 256 rows each) are slices, one more is a copy, whether the row
    group starts with a null row or not."""
    for null_first in (False, True):
        at_limit = _column([_runs(SLICED_RUNS, null_first=null_first)])
        pieces = _valid_runs(at_limit)
        assert len(pieces) == SLICED_RUNS and all(_shares_buffers(p, at_limit) for p in pieces)
        assert [row for p in pieces for row in p.to_pylist()] == _kept(at_limit)
        over = _column([_runs(SLICED_RUNS + 1, null_first=null_first)])
        (gathered,) = _valid_runs(over)
        assert gathered.to_pylist() == _kept(over) and not _shares_buffers(gathered, over)


def test_a_column_of_nulls_only_or_of_null_type():
    assert _valid_runs(pa.chunked_array([pa.nulls(4)])) == []
    assert _valid_runs(_column([[False] * 3, [False] * 2])) == []
