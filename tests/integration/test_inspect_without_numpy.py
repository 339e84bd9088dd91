"""``inspect`` of a path reads the log only and never starts Spark: its process loads pyarrow
(for a checkpoint) without numpy, which pyarrow would otherwise import when it loads
(``app/cli/lean_imports.py``), and its report is the one a process with numpy makes. A command
that works on a path goes without it too, Spark rewrites included (test_rewrites_without_numpy.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.import_probe import cli_imports

HEAVY = ("numpy", "pyarrow", "pandas")


def _inspect_with_numpy_loaded_first(path: str) -> dict:
    """``inspect --json`` of ``path`` in a process that imported numpy before the CLI ran (so
    pyarrow gets numpy as it does anywhere)."""
    probe = """
import contextlib, io, json, sys
import numpy  # noqa: F401 - loaded first: pyarrow finds it
from delta_downgrade.app.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["inspect", "--json", sys.argv[1]])
print(json.dumps({"code": code, "out": out.getvalue()}))
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["dv_partitioned_checkpoint", "v2_checkpoint_parquet_sidecars"])
def test_inspect_of_a_checkpointed_table_loads_pyarrow_without_numpy(golden_table, name):
    path = str(golden_table(name))
    result = cli_imports(["inspect", "--json", path], HEAVY)
    assert result["code"] == 0, result["out"]
    assert result["heavy"] == ["pyarrow"]  # the checkpoint is read with pyarrow; numpy is not loaded
    with_numpy = _inspect_with_numpy_loaded_first(path)
    assert with_numpy["code"] == 0
    report, expected = json.loads(result["out"]), json.loads(with_numpy["out"])
    assert report == expected
    assert report["files"]["live_files"] > 0 and report["checkpoints"]
