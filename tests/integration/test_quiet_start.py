"""A drop that rewrites data, from process start: the user's stderr carries the drop's steps and
one "starting Spark (…) … N s" line, and no line of the JVM (its own start-up lines, Spark's
log4j lines) nor pyspark's pandas warning. The JVM did print: its lines are in the log file that
line names, and none of them is on stderr."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.spark_connect_server import classic_environment

pytestmark = pytest.mark.spark

JVM_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR)\b|log4j|setLogLevel|"
                      r"Using incubator modules|Setting default log level|NativeCodeLoader")


def test_a_drop_with_a_data_rewrite_prints_no_jvm_line(golden_table, tmp_path):
    table = golden_table("dv_basic_no_checkpoint")
    env = classic_environment({k: v for k, v in os.environ.items() if k != "DELTA_DOWNGRADE_SPARK_LOG_LEVEL"})
    env.pop("DATABRICKS_RUNTIME_VERSION", None)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    proc = subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", "drop-feature", table, "deletionVectors"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert any("purging deletion vectors" in line for line in lines)  # the drop rewrote data
    starts = [line for line in lines if line.startswith("starting Spark (")]
    assert len(starts) == 1, proc.stderr
    match = re.fullmatch(r"starting Spark \(local\[\d+\]; its log: (\S+)\) \.\.\. \d+\.\d s", starts[0])
    assert match, starts[0]
    assert [line for line in lines if JVM_LINE.search(line)] == []
    assert "FutureWarning" not in proc.stderr and "pandas" not in proc.stderr
    with open(match.group(1), encoding="utf-8", errors="replace") as fh:
        jvm_lines = [line.rstrip("\n") for line in fh if line.strip()]
    assert jvm_lines, "the JVM printed nothing: the check above proves nothing"
    assert not set(jvm_lines) & set(lines)
