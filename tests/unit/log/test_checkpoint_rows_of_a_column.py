"""The rows the checkpoint reader returns for an action column are the column's non-null rows,
in order, whatever the pattern of nulls: one row among thousands (a checkpoint's ``protocol``),
a few blocks, rows and nulls alternating, rows split over several row groups - the same rows as
pyarrow's own ``is_valid`` filter gives."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.read.checkpoint_reader import CheckpointReader
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.storage.base import FileStatus
from delta_downgrade.storage.local import LocalStorage

TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])


def _pattern(name: str, n: int) -> list[bool]:
    """Which of ``n`` rows hold a txn action."""
    rng = random.Random(name)
    if name == "one":
        return [i == n - 3 for i in range(n)]
    if name == "blocks":
        return [(i // 700) % 3 == 1 for i in range(n)]
    if name == "alternating":
        return [i % 2 == 0 for i in range(n)]
    if name == "sparse":
        return [rng.random() < 0.02 for i in range(n)]
    return [rng.random() < 0.9 for i in range(n)]  # dense


@pytest.mark.parametrize("name", ["one", "blocks", "alternating", "sparse", "dense"])
@pytest.mark.parametrize("row_group_size", [None, 777])
def test_the_rows_of_an_action_column_are_its_non_null_rows_in_order(tmp_path, name, row_group_size):
    n = 5_000
    txn = pa.array([{"appId": f"app-{i}", "version": i, "lastUpdated": 7 * i} if held else None
                    for i, held in enumerate(_pattern(name, n))], TXN)
    rel = f"{LOG_DIR}/{3:020d}.checkpoint.parquet"
    (tmp_path / LOG_DIR).mkdir()
    pq.write_table(pa.table({"txn": txn}), tmp_path / rel, row_group_size=row_group_size)
    checkpoint = CheckpointInstance(3, "classic", (FileStatus(rel, (tmp_path / rel).stat().st_size, 0),))

    rows = CheckpointReader(LocalStorage(str(tmp_path)), checkpoint).rows(["txn"])["txn"]

    expected = pq.read_table(tmp_path / rel).column("txn")
    assert rows == expected.filter(pc.is_valid(expected)).to_pylist()
    assert len(rows) == sum(_pattern(name, n))
