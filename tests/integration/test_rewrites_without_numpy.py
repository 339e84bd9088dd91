"""A drop on the native engine loads pyarrow without numpy (``app/cli/lean_imports.py``), also
where it starts Spark: the deletion-vector purge, the column-mapping and type-widening rewrites
and the Spark checkpoint engine hand Spark Arrow tables and read rows back, on a classic session
and (in the Connect pass, through ``SPARK_REMOTE``) on a Spark Connect one. Each case runs the
real CLI in a fresh interpreter, checks that its pyarrow really had no numpy while Spark ran, and
compares the table it leaves, row by row with delta-rs, against the same drop run in this process
(whose pyarrow has numpy) and, where delta-rs reads the original, against the original's rows."""

from __future__ import annotations

import json

import pytest

from delta_downgrade.log.delta_log import DeltaLog
from tests.import_probe import cli_pyarrow_numpy
from tests.oracle import same_rows
from tests.process_support import run_cli

# With no minimum number of file actions, the checkpoints a drop writes after its rewrite go
# through the Spark engine too (its session is up). One case does that: the engine's Arrow input
# is the same in every case, and each Spark checkpoint costs a few seconds.
SPARK_CHECKPOINTS = {"DELTA_DOWNGRADE_SPARK_CHECKPOINT_MIN_ACTIONS": "0"}

# (golden table, feature, environment of the CLI process, whether delta-rs reads the original)
CASES = [
    # deletion vectors in commits and in a classic checkpoint, partitioned: the purge's join, and
    # the Spark checkpoint engine after it
    ("dv_partitioned_checkpoint", "deletionVectors", SPARK_CHECKPOINTS, True),
    # a renamed column (physical name != logical name): the column-mapping rewrite
    ("cm_name_renamed_column", "columnMapping", {}, True),
    # files written before a type change: the type-widening rewrite (delta-rs refuses
    # typeWidening-preview, so the original's rows are not read)
    ("type_widening_preview", "typeWidening-preview", {}, False),
]


def _result(stdout: str) -> dict:
    line = next(line for line in stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize("name,feature,env,reads_original", CASES, ids=[case[0] for case in CASES])
def test_a_spark_rewrite_in_a_cli_process_whose_pyarrow_has_no_numpy(golden_table, oracle, spark, name, feature,
                                                                     env, reads_original):
    # ``spark``: the in-process drop below uses the test session's (the fixture stops it at the end)
    original, lean, reference = golden_table(name), golden_table(name), golden_table(name)

    probe, done = cli_pyarrow_numpy(["drop-feature", lean, feature, "--verbose"], env=env)
    assert probe["code"] == 0, done.stderr[-4000:]
    assert probe["pyspark"] and probe["pyarrow"]  # the rewrite ran on Spark, the log on pyarrow
    assert not probe["pyarrow_with_numpy"]
    assert ("Spark checkpoint of" in done.stderr) == bool(env)  # the checkpoints' engine
    result = _result(done.stdout)
    assert result["status"] == "dropped"

    same_drop = run_cli("drop-feature", reference, feature)  # this process: pyarrow with numpy
    assert same_drop.returncode == 0, same_drop.stderr
    expected = _result(same_drop.stdout)
    for key in ("commits", "checkpoints_written", "protected_checkpoints", "boundary_version",
                "min_reader_version", "min_writer_version", "reader_features", "writer_features"):
        assert result[key] == expected[key], key
    protocol = DeltaLog(lean).snapshot().protocol
    assert protocol == DeltaLog(reference).snapshot().protocol
    assert feature not in (protocol.reader_features or frozenset()) | (protocol.writer_features or frozenset())

    rows = oracle.scan_rows(lean)
    assert rows.ok and rows.value, rows
    assert same_rows(rows, oracle.scan_rows(reference))
    if reads_original:
        assert same_rows(rows, oracle.scan_rows(original))
