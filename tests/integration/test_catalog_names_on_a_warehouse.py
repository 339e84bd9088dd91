"""Catalog names from a laptop: with DATABRICKS_HOST, a token and DELTA_DOWNGRADE_WAREHOUSE_ID,
`inspect`, `compat`, `drop-feature`, `truncate-history` and the verify task run Delta's SQL on a
SQL warehouse through databricks-sdk's Statement Execution API, with the RESULT fields of a
session. No warehouse runs here: the workspace stand-in
(tests/workspace_standin.py) answers ``/api/2.0/sql/statements`` in the documented shape
(``JSON_ARRAY`` rows, typed columns in the manifest, ``FAILED`` with the runtime's error), and a
table's answers come from a small model of one Delta table below (DESCRIBE DETAIL / HISTORY,
ALTER TABLE … DROP FEATURE, the wait of a too-early TRUNCATE HISTORY)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from delta_downgrade.app.render.result import parse_result_lines
from tests.workspace_standin import ApiError, WorkspaceStandIn

# no Spark: the Connect pass (`pytest --spark-connect`) leaves it out

NAME = "main.sales.events"
IDENT = "`main`.`sales`.`events`"
WAREHOUSE = "4b9b953939869799"
DETAIL_COLUMNS = [("format", "STRING"), ("id", "STRING"), ("name", "STRING"), ("location", "STRING"),
                  ("createdAt", "TIMESTAMP"), ("lastModified", "TIMESTAMP"), ("partitionColumns", "ARRAY"),
                  ("clusteringColumns", "ARRAY"), ("numFiles", "LONG"), ("sizeInBytes", "LONG"),
                  ("properties", "MAP"), ("minReaderVersion", "INT"), ("minWriterVersion", "INT"),
                  ("tableFeatures", "ARRAY")]
HISTORY_COLUMNS = [("version", "LONG"), ("timestamp", "TIMESTAMP"), ("operation", "STRING"),
                   ("operationParameters", "MAP")]


class OneDeltaTable:
    """What a warehouse answers about one table with deletion vectors, as Databricks does."""

    def __init__(self) -> None:
        start = datetime.now(timezone.utc) - timedelta(hours=2)
        self.features = ["appendOnly", "deletionVectors", "invariants"]
        self.reader, self.writer = 3, 7
        self.properties = {"delta.enableDeletionVectors": "true"}
        self.history = [(v, start + timedelta(minutes=v), op, {}) for v, op in
                        enumerate(["CREATE TABLE", "WRITE", "DELETE"])]
        self.statements: list[str] = []

    def _iso(self, moment: datetime) -> str:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    def __call__(self, statement: str, warehouse: str):
        assert warehouse == WAREHOUSE
        self.statements.append(statement)
        if statement == f"DESCRIBE DETAIL {IDENT}":
            now = self._iso(self.history[-1][1])
            return DETAIL_COLUMNS, [["delta", "0f0e", "main.sales.events", "s3://bucket/events", now, now, [], [],
                                     4, 4096, self.properties, self.reader, self.writer, self.features]]
        if match := re.fullmatch(rf"DESCRIBE HISTORY {re.escape(IDENT)}(?: LIMIT (\d+))?", statement):
            newest = list(reversed(self.history))[:int(match.group(1) or len(self.history))]
            return HISTORY_COLUMNS, [[v, self._iso(t), op, params] for v, t, op, params in newest]
        if statement == f"ALTER TABLE {IDENT} DROP FEATURE `deletionVectors`":
            version = self.history[-1][0] + 1
            self.history.append((version, datetime.now(timezone.utc), "DROP FEATURE",
                                 {"featureName": "deletionVectors", "truncateHistory": "false"}))
            self.features = ["appendOnly", "checkpointProtection", "invariants"]
            self.reader, self.writer = 1, 7
            self.properties = {"delta.requireCheckpointProtectionBeforeVersion": str(version)}
            return [], []
        if statement == f"SELECT * FROM {IDENT} LIMIT 1":
            return [("id", "LONG"), ("amount", "DOUBLE")], [[1, 2.5]]
        if statement == f"ALTER TABLE {IDENT} DROP FEATURE `checkpointProtection` TRUNCATE HISTORY":
            raise ApiError(400, "BAD_REQUEST",
                           "[DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD] The "
                           "operation could not be performed: wait for the retention period. SQLSTATE: 44000")
        raise ApiError(400, "BAD_REQUEST", f"[PARSE_SYNTAX_ERROR] not modelled: {statement}")


@pytest.fixture(autouse=True)
def _databricks_sdk():
    # At run time, not at import: importing the SDK takes ~2 s, which every collection would pay.
    pytest.importorskip("databricks.sdk")


def _task(ws: WorkspaceStandIn, tmp_path, entry_point: str, *args: str) -> subprocess.CompletedProcess:
    """A wheel task's entry point, as a job on a laptop or CI would call it."""
    code = f"import sys; from delta_downgrade.app.tasks.entrypoints import {entry_point}; sys.exit({entry_point}())"
    return _cli(ws, tmp_path, *args, argv0=["-c", code])


def _cli(ws: WorkspaceStandIn, tmp_path, *args: str, argv0: list[str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABRICKS_", "SPARK_REMOTE",
                                                                    "DELTA_DOWNGRADE_SPARK_REMOTE"))}
    env.update(DATABRICKS_HOST=ws.url, DATABRICKS_TOKEN="dapi-standin-token", HOME=str(tmp_path),
               DELTA_DOWNGRADE_WAREHOUSE_ID=WAREHOUSE, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, *(argv0 or ["-m", "delta_downgrade.app.cli"]), *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)


def test_drop_feature_on_a_warehouse_reports_what_a_session_does(tmp_path):
    table = OneDeltaTable()
    # The DROP FEATURE runs on past the first answer (PENDING, then polled).
    with WorkspaceStandIn(statement_handler=table,
                          pending=lambda statement: statement.startswith("ALTER TABLE")) as ws:
        proc = _cli(ws, tmp_path, "drop-feature", NAME, "deletionVectors")
        wait = _cli(ws, tmp_path, "truncate-history", NAME)
        verify = _task(ws, tmp_path, "verify_task", f"--table={NAME}", "--expect_absent_feature=deletionVectors",
                       "--expect_min_reader_version=1", "--expect_min_writer_version=7",
                       "--expect_boundary_version=3")
        assert ws.unknown == []
    assert proc.returncode == 0, proc.stderr
    polls = [r.path for r in ws.requests if r.method == "GET" and r.path.startswith("/api/2.0/sql/statements/")]
    assert len(polls) == 2 and all(p.count("/") == 5 for p in polls), polls  # drop, then truncate
    assert "starting Spark" not in proc.stderr  # no JVM: the warehouse ran it
    (result,) = parse_result_lines(proc.stdout)
    assert result["table"] == NAME and result["feature"] == "deletionVectors" and result["status"] == "dropped"
    assert (result["min_reader_version"], result["min_writer_version"]) == (1, 7)
    assert result["writer_features"] == ["appendOnly", "checkpointProtection", "invariants"]
    assert result["boundary_version"] == 3 and result["needs_truncate"] is True
    assert result["truncate_after"]  # the boundary commit's time plus the 24 h retention
    assert table.statements[:3] == [f"DESCRIBE DETAIL {IDENT}", f"DESCRIBE HISTORY {IDENT} LIMIT 1",
                                    f"ALTER TABLE {IDENT} DROP FEATURE `deletionVectors`"]
    # A refused statement keeps the runtime's error class: too early to truncate is a wait (exit 3).
    assert wait.returncode == 3, wait.stderr
    (waiting,) = parse_result_lines(wait.stdout)
    assert waiting["error_class"] == "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"
    # The verify task proves the drop on the warehouse too (DETAIL, HISTORY, a read).
    assert verify.returncode == 0, verify.stderr
    (verified,) = parse_result_lines(verify.stdout)
    assert verified["status"] == "verified" and verified["failed_checks"] == []


def test_inspect_and_compat_read_the_protocol_on_a_warehouse(tmp_path):
    table = OneDeltaTable()
    with WorkspaceStandIn(statement_handler=table, chunk_rows=2) as ws:  # HISTORY's 3 rows: 2 chunks
        proc = _cli(ws, tmp_path, "inspect", NAME)
        compat = _cli(ws, tmp_path, "compat", NAME, "--client", "deltalake-0.18")
    assert compat.returncode == 0, compat.stderr
    assert "deletionVectors" in compat.stdout, compat.stdout
    assert proc.returncode == 0, proc.stderr
    (result,) = parse_result_lines(proc.stdout)
    assert (result["min_reader_version"], result["min_writer_version"]) == (3, 7)
    assert result["droppable_features"] == ["deletionVectors"] and result["latest_version"] == 2
    assert "history back to 0" in proc.stdout  # the oldest commit came in the second chunk
    assert any(r.path.endswith("/result/chunks/1") for r in ws.requests)
    assert all(s.startswith(("DESCRIBE DETAIL", "DESCRIBE HISTORY", "SELECT")) for s in table.statements)


def test_without_a_workspace_one_line_names_what_is_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DATABRICKS_")}
    env.update(HOME=str(tmp_path), DELTA_DOWNGRADE_WAREHOUSE_ID=WAREHOUSE, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", "inspect", NAME], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "no Databricks workspace is configured" in proc.stderr and "Traceback" not in proc.stderr
