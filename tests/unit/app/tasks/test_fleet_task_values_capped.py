"""A fleet's task values fit Databricks' 48 KiB per value however many tables fail or wait: the
summary's lists name the first tables, with their count and whether some were left out, and
``status``, ``exit_code`` and ``needs_truncate`` are set whatever else cannot be."""

from __future__ import annotations

import json
import os

import pytest

from delta_downgrade.app.tasks.entrypoints import truncate_task
from delta_downgrade.app.tasks.task_values import MAX_VALUE_BYTES, read_task_values
from tests.drop_support import run_task

FLEET = 400


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for key in list(os.environ):
        if key.startswith("DELTA_DOWNGRADE_"):
            monkeypatch.delenv(key)


def test_a_fleet_of_failing_tables_sets_every_value_within_the_limit(tmp_path, monkeypatch):
    # Every table is missing (a fast error each); the paths are long, as a bucket's are.
    deep = tmp_path / ("warehouse-" + "x" * 120) / ("schema-" + "y" * 120)
    missing = [str(deep / f"table_{i:04d}") for i in range(FLEET)]
    listing = tmp_path / "tables.txt"
    listing.write_text("\n".join(missing) + "\n")
    run_dir = tmp_path / "run"
    monkeypatch.setenv("DELTA_DOWNGRADE_RUN_DIR", str(run_dir))
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_KEY", "truncate")
    code, results, err = run_task(truncate_task, [f"--tables_file={listing}", "--parallelism=4"])
    assert code == 2, err[-2000:]
    assert "Traceback" not in err
    summary = results[-1]
    assert summary["summary"] is True and summary["tables"] == FLEET
    assert summary["failed_tables_count"] == FLEET and summary["failed_tables_truncated"] is True
    assert 0 < len(summary["failed_tables"]) < FLEET and set(summary["failed_tables"]) <= set(missing)
    assert summary["waiting_tables"] == [] and summary["waiting_tables_count"] == 0
    values = read_task_values(run_dir, "truncate")
    assert values["status"] == "fleet" and values["exit_code"] == 2 and values["needs_truncate"] is False
    assert values["summary"]["failed_tables_count"] == FLEET
    for key, value in values.items():
        assert len(json.dumps(value).encode()) <= MAX_VALUE_BYTES, key
