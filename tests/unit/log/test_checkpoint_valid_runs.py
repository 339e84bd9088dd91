"""The non-null rows of a checkpoint's ``add``/``remove`` column (arrow_checkpoint._valid_runs): the
same rows, in order, as a filter keeps; taken as slices of the column (sharing its buffers) when they
lie in a few runs, gathered by a filter when they lie in many."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from delta_downgrade.log.replay import arrow_checkpoint
from delta_downgrade.log.replay.arrow_checkpoint import MAX_SLICED_RUNS, _valid_runs

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
    MAX_SLICED_RUNS runs in a row group, which are copied once rather than cut in many slices."""
    rng = random.Random(5)
    valid = [rng.random() < 0.7 for _ in range(4 * MAX_SLICED_RUNS * 4)]
    column = _column([valid, [True] * 5])
    pieces = _valid_runs(column)
    assert [row for piece in pieces for row in piece.to_pylist()] == _kept(column)
    assert len(pieces) == 2 and not _shares_buffers(pieces[0], column) and _shares_buffers(pieces[1], column)


def test_runs_at_the_limit(monkeypatch):
    monkeypatch.setattr(arrow_checkpoint, "MAX_SLICED_RUNS", 3)
    three = _column([[True, False, True, False, True]])
    assert len(_valid_runs(three)) == 3 and all(_shares_buffers(p, three) for p in _valid_runs(three))
    after_a_null = _column([[False, True, False, True, True, False, True, False]])
    assert len(_valid_runs(after_a_null)) == 3 and all(_shares_buffers(p, after_a_null)
                                                       for p in _valid_runs(after_a_null))
    for four in (_column([[True, False, True, False, True, False, True]]),
                 _column([[False, True, False, True, False, True, False, True]])):
        (gathered,) = _valid_runs(four)
        assert gathered.to_pylist() == _kept(four) and not _shares_buffers(gathered, four)


def test_a_column_of_nulls_only_or_of_null_type():
    assert _valid_runs(pa.chunked_array([pa.nulls(4)])) == []
    assert _valid_runs(_column([[False] * 3, [False] * 2])) == []
