"""The drop task records a table whose checkpointProtection waits for its truncate retention; the
daily truncate task, given only the record directory, handles exactly the recorded tables, keeps a
table still waiting, forgets one it finished, and is a green run with nothing left."""

from __future__ import annotations

import os
import time

import pytest

from delta_downgrade.app.tasks.entrypoints import drop_feature_task, truncate_task
from delta_downgrade.app.tasks.waiting_records import waiting_tables
from delta_downgrade.clock import ManualClock
from delta_downgrade.protocol import Protocol
from tests.drop_support import PROPERTY, RW_T, build, latest, registered_test_features, run_task

# no Spark: the Connect pass (`pytest --spark-connect`) leaves it out

CP = "checkpointProtection"


@pytest.fixture(autouse=True)
def _test_features():
    with registered_test_features():
        yield


def _age_log(path: str, days: float) -> None:
    """Date the table's log files ``days`` back: its truncate retention has passed."""
    past = time.time() - days * 86400
    for root, _dirs, files in os.walk(os.path.join(path, "_delta_log")):
        for name in files:
            os.utime(os.path.join(root, name), (past, past))


def test_the_drop_records_the_table_and_the_daily_truncate_finishes_and_forgets_it(tmp_path):
    table = str(tmp_path / "events")
    build(table, Protocol(1, 2).denormalized().with_feature(RW_T), properties={PROPERTY[RW_T]: "true"},
          clock=ManualClock())
    records = str(tmp_path / "volume" / "waiting")

    code, (dry,), err = run_task(drop_feature_task, [f"--table={table}", f"--feature={RW_T}",
                                                     f"--waiting_dir={records}", "--dry_run=true"])
    assert code == 0, err
    assert waiting_tables(records) == []  # a dry run wrote nothing, records included

    code, (dropped,), err = run_task(drop_feature_task, [f"--table={table}", f"--feature={RW_T}",
                                                         f"--waiting_dir={records}"])
    assert code == 0, err
    assert dropped["needs_truncate"] is True
    assert waiting_tables(records) == [table]
    assert f"{table} waits for its history truncation: recorded in {records}" in err

    code, (waiting,), err = run_task(truncate_task, [f"--waiting_dir={records}"])
    assert code == 0, err
    assert waiting["table"] == table and waiting["status"] == "waiting"
    assert waiting_tables(records) == [table]  # still inside its retention: kept for tomorrow
    assert CP in latest(table).protocol.writer_features

    _age_log(table, days=3)
    code, (done,), err = run_task(truncate_task, [f"--waiting_dir={records}"])
    assert code == 0, err
    assert done["status"] == "dropped", done
    assert CP not in (latest(table).protocol.writer_features or ())
    assert waiting_tables(records) == []

    code, (nothing,), err = run_task(truncate_task, [f"--waiting_dir={records}"])
    assert code == 0 and nothing["tables"] == 0
    assert "no table waits for its history truncation" in err
