"""delta-spark writing a table while this package drops a feature from it.

A table delta-spark created with deletion vectors on, and deletion vectors in it; this package's
``drop-feature … deletionVectors`` (the purge rewrites the files carrying DVs, then the property,
the tombstones, the barrier checkpoints and the protocol) runs in this process while a thread of
the same process writes through delta-spark, in an order a seeded generator picks: appends,
MERGEs updating a row, OPTIMIZEs and DELETEs that create new deletion vectors as long as the table
allows them. A statement delta-spark acknowledged (it returned) is a commit; one it refused (a
concurrent-modification conflict) wrote nothing. The test keeps the rows every acknowledged
statement leaves and checks:

- the exit-code contract: the drop ends 0 (dropped) or 4 (conflict with a concurrent writer, its
  RESULT ``error`` with the class); after 4 a rerun without the writer ends 0; then
  ``truncate-history`` ends 3 (waiting for the retention);
- no acknowledged commit lost: every version delta-spark acknowledged is in the log with its
  operation, and every row: the final rows read by delta-spark and by delta-rs are exactly the
  rows kept;
- the drop is complete: ``verify_task`` finds no deletion vector and no trace of the feature.

Rounds: ``DELTA_DOWNGRADE_RACE_ROUNDS`` (default 1) seeds, each bounded by ``ROUND_TIMEOUT_S``.
Once, on the classic session: the Connect server the tests start has no Delta extension.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time

import pytest

from tests.delta_spark_support import (
    canonical_rows, condition, delta_rs_rows, history, read_rows
)
from tests.process_support import run_cli

pytestmark = pytest.mark.classic_spark("delta-spark's SQL runs on the classic session")

ROUNDS = int(os.environ.get("DELTA_DOWNGRADE_RACE_ROUNDS", "1"))
ROUND_TIMEOUT_S = 600
#: The writer's statements after the drop ended: it also writes on the result.
AFTER_DROP = 2
#: The writer's statements at least, in all.
MIN_STATEMENTS = 6
#: delta-spark's refusals of a commit that lost to a concurrent one (its optimistic concurrency
#: control): nothing of the statement was written.
CONFLICT = re.compile(r"DELTA_CONCURRENT_\w+|DELTA_PROTOCOL_CHANGED|DELTA_METADATA_CHANGED|"
                      r"Concurrent\w*Exception|ProtocolChangedException|MetadataChangedException")


class Writer(threading.Thread):
    """delta-spark's statements on ``path`` until told to stop; what it acknowledged."""

    def __init__(self, spark, path: str, seed: int, rows: dict[int, int]) -> None:
        super().__init__(daemon=True)
        self.spark, self.path, self.rng = spark, path, random.Random(seed)
        self.rows = rows  # id -> value: what the acknowledged statements leave
        self.next_id = max(rows) + 1
        self.acknowledged: list[str] = []
        self.refused: list[str] = []
        self.drop_done = threading.Event()
        self.started = threading.Event()  # its first statement is done: the table is being written
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            after = done = 0
            while after < AFTER_DROP or done < MIN_STATEMENTS:
                self.statement()
                done += 1
                if self.drop_done.is_set():
                    after += 1
                self.started.set()
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    def statement(self) -> None:
        t = f"delta.`{self.path}`"
        kind = self.rng.choice(("append", "append", "merge", "delete", "delete", "optimize"))
        if kind == "append":
            new = {self.next_id + i: self.rng.randrange(1000) for i in range(3)}
            self.next_id += 3
            sql = f"INSERT INTO {t} VALUES " + ", ".join(f"({k}, {v})" for k, v in new.items())
            if self._run(kind, sql):
                self.rows.update(new)
        elif kind == "merge":
            key = self.rng.choice(sorted(self.rows))
            sql = (f"MERGE INTO {t} AS target USING (SELECT {key} AS id) AS source ON target.id = source.id "
                   "WHEN MATCHED THEN UPDATE SET target.v = target.v + 1")
            if self._run(kind, sql):
                self.rows[key] += 1
        elif kind == "delete":
            key = self.rng.choice(sorted(self.rows))
            if self._run(kind, f"DELETE FROM {t} WHERE id = {key}"):
                del self.rows[key]
        else:
            self._run(kind, f"OPTIMIZE {t}")

    def _run(self, kind: str, sql: str) -> bool:
        try:
            self.spark.sql(sql).collect()
        except Exception as exc:
            if not CONFLICT.search(f"{condition(exc)} {exc}"):
                raise
            self.refused.append(kind)
            return False
        self.acknowledged.append(kind)
        return True


def _create(spark, path: str, seed: int) -> dict[int, int]:
    rng = random.Random(seed)
    rows = {i: rng.randrange(1000) for i in range(60)}
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v BIGINT) USING delta "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')").collect()
    # Three files, then deletes in each: deletion vectors the drop must purge.
    for part in range(3):
        chunk = [(k, v) for k, v in rows.items() if k % 3 == part]
        spark.sql(f"INSERT INTO {t} VALUES " + ", ".join(f"({k}, {v})" for k, v in chunk)).collect()
    for key in rng.sample(sorted(rows), 4):
        spark.sql(f"DELETE FROM {t} WHERE id = {key}").collect()
        del rows[key]
    return rows


def _rows_of(rows: dict[int, int]) -> list[str]:
    return canonical_rows({"id": k, "v": v} for k, v in rows.items())


def _result(proc) -> dict:
    return json.loads(proc.stdout)


@pytest.mark.parametrize("seed", range(ROUNDS))
def test_drop_racing_delta_spark_loses_no_acknowledged_commit(delta_spark, oracle, tmp_path, seed):
    from delta_downgrade.app.tasks.entrypoints import verify_task
    from tests.drop_support import run_task

    spark = delta_spark
    path = str(tmp_path / f"race-{seed}")
    rows = _create(spark, path, seed)
    before_versions = {v for v, _ in history(spark, path)}
    started = time.monotonic()

    writer = Writer(spark, path, seed, rows)
    writer.start()
    # The drop starts while delta-spark writes: after its first statement, at a seeded moment of
    # the next ones.
    assert writer.started.wait(timeout=ROUND_TIMEOUT_S / 2), "delta-spark's writer did not start"
    time.sleep(random.Random(seed).uniform(0.0, 2.0))
    drop = run_cli("drop-feature", path, "deletionVectors", "--json")
    writer.drop_done.set()
    writer.join(timeout=ROUND_TIMEOUT_S - (time.monotonic() - started))
    assert not writer.is_alive(), "delta-spark's writer did not finish in time"
    if writer.error is not None:
        raise writer.error

    first = _result(drop)
    assert drop.returncode in (0, 4), (drop.returncode, first, drop.stderr[-3000:])
    assert first["exit_code"] == drop.returncode
    if drop.returncode == 4:
        assert first["status"] == "error" and first["error_class"], first
        rerun = run_cli("drop-feature", path, "deletionVectors", "--json")
        assert rerun.returncode == 0, (_result(rerun), rerun.stderr[-3000:])
        first = _result(rerun)
    assert first["status"] in ("dropped", "already_absent"), first
    print(f"seed {seed}: drop exit {drop.returncode}; delta-spark acknowledged {writer.acknowledged}, "
          f"refused {writer.refused}")

    # Every acknowledged statement is a commit of the log, and every row is there.
    operations = [op for v, op in history(spark, path) if v not in before_versions]
    writes = {"append": "WRITE", "merge": "MERGE", "delete": "DELETE", "optimize": "OPTIMIZE"}
    for kind in set(writer.acknowledged):
        expected = sum(1 for k in writer.acknowledged if k == kind)
        found = sum(1 for op in operations if op == writes[kind])
        # Each append, MERGE and DELETE matched a row it was chosen for: one commit each. An
        # OPTIMIZE with nothing to compact commits nothing.
        assert found == expected or (kind == "optimize" and found <= expected), (kind, expected, operations)
    expected_rows = _rows_of(writer.rows)
    assert read_rows(spark, path) == expected_rows, "delta-spark reads other rows than were acknowledged"
    assert delta_rs_rows(oracle.scan_rows(path).unwrap()) == expected_rows, "delta-rs reads other rows"

    code, (verified,), err = run_task(verify_task, [f"--table={path}", "--expect_absent_feature=deletionVectors"])
    assert code == 0, (verified, err)
    truncate = run_cli("truncate-history", path, "--json")
    assert truncate.returncode == 3 and _result(truncate)["status"] == "waiting", truncate.stdout
