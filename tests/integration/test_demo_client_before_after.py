"""What ``make demo`` shows, piece by piece, on its sample table: before the drop the named client
(the venv's deltalake 1.6.6, pyarrow path, spelled as pip spells it) is refused by the real client
in a subprocess and the catalogue counts say fewer clients read the table; ``drop-feature --for``
drops what blocks it; afterwards the real client reads exactly the rows the table had, and the
catalogue counts grow."""

from __future__ import annotations

import importlib.util
import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from delta_downgrade.app.cli import main


CLIENT = "deltalake==1.6.6"


def test_demo_counts_and_the_named_client_reading_the_result(tmp_path):
    if importlib.util.find_spec("deltalake") is None:
        pytest.skip("deltalake is not installed (pip install -e '.[dev]')")
    from delta_downgrade_tools.demo import (
        build_sample_table, catalogue_access, client_access, read_with_client, visible_rows,
    )

    table = str(tmp_path / "table")
    build_sample_table(table, truncate_retention=None)
    rows = visible_rows(table)
    before = catalogue_access(table)
    entry, read_before, _ = client_access(table, CLIENT)
    assert entry == "deltalake-1.6.6-pyarrow" and read_before.startswith("no (") and "vacuumProtocolCheck" in read_before
    version, refused = read_with_client(table, CLIENT)
    assert isinstance(refused, str), "deltalake 1.6.6's pyarrow reader should refuse the sample table"
    assert "vacuumProtocolCheck" in refused, refused  # refused for the table's features, not a crash

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["drop-feature", table, "--for", CLIENT])
    assert code == 0, err.getvalue()[-2000:]

    after = catalogue_access(table)
    _, read_after, _ = client_access(table, CLIENT)
    assert read_after == "yes"
    version, read_back = read_with_client(table, CLIENT)
    assert version == "1.6.6", read_back
    assert read_back == rows
    assert after["read"] > before["read"] and after["clients"] == before["clients"]
