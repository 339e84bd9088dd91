"""Which heavy modules each command imports, in a fresh interpreter per command (the process
start is the point): pandas never (pyarrow would load it for its pandas shim: the CLI answers
pyarrow's probe with "no pandas", see ``app/cli/lean_imports.py``), no engine, no settings
library, and pyarrow only where the command writes or reads Parquet - without ``pyarrow.compute``,
whose import builds a wrapper for each of Arrow's kernels (``delta_downgrade/arrow_compute.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from delta_downgrade.log.format.file_names import LOG_DIR
from tests.hand_made_logs import DV_PROTOCOL, write_log
from tests.import_probe import cli_imports

HEAVY = ("pandas", "pyarrow", "numpy", "pyspark", "py4j", "pydantic", "pydantic_settings", "deltalake", "yaml")
#: Loaded by pyarrow's own kernel methods (``Array.cast``, ``Table.filter``, ...) and by
#: ``from_arrays(mask=...)``; the package calls the kernels through ``arrow_compute`` instead.
COMPUTE = "pyarrow.compute"
#: Arrow's filesystems (ssl, the S3/GCS/Azure/HDFS modules), loaded by ``pyarrow.parquet``; the
#: package reads and writes checkpoints through ``arrow_parquet`` instead, without them.
ARROW_FS = ("pyarrow.fs", "pyarrow.parquet")
#: What only a command that writes to the log needs: the commit, its conflict checks, row ids.
COMMIT_MACHINERY = ("delta_downgrade.log.commit", "delta_downgrade.log.row_ids", "delta_downgrade.drop.run")


def _dv_table(root: Path, commits: int = 3) -> str:
    """A table with deletionVectors in its protocol and no deletion vector: a fast drop."""
    return write_log(root, commits, protocol=DV_PROTOCOL, configuration={"delta.enableDeletionVectors": "true"})


def test_fast_drop_imports_pyarrow_for_its_checkpoints_and_nothing_else_heavy(tmp_path):
    path = _dv_table(tmp_path / "t")
    result = cli_imports(["drop-feature", path, "deletionVectors"], (*HEAVY, COMPUTE, *ARROW_FS))
    assert result["code"] == 0, result["out"]
    assert '"status":"dropped"' in result["out"]
    # pyarrow writes the checkpoints, without numpy (the native engine on a path:
    # test_rewrites_without_numpy.py), without pyarrow.compute's wrappers and without Arrow's
    # filesystems; pandas, the engines, the settings library and YAML are never loaded
    assert result["heavy"] == ["pyarrow"]
    assert [m for m in result["modules"] if m in (COMPUTE, *ARROW_FS)] == []


def test_fast_drop_of_a_log_with_rewritten_files_leaves_out_arrows_query_engine(tmp_path):
    """A log whose files are rewritten now and then (a path added, removed, added again) is
    reconciled without Arrow's group-by, so pyarrow's query engine (acero, and the dataset module
    it loads) is never imported."""
    path = _dv_table(tmp_path / "t", commits=4)
    log = tmp_path / "t" / LOG_DIR
    remove = {"remove": {"path": "f1.parquet", "deletionTimestamp": 4, "dataChange": True}}
    add = {"add": {"path": "f1.parquet", "partitionValues": {}, "size": 99, "modificationTime": 4, "dataChange": True}}
    (log / f"{4:020d}.json").write_text("\n".join(json.dumps(x) for x in (remove, add)) + "\n")
    engine = ("pyarrow.acero", "pyarrow.dataset", "pandas", COMPUTE)
    with_arrow = ("pyarrow.json", "pyarrow._parquet")
    result = cli_imports(["drop-feature", path, "deletionVectors"], engine + with_arrow)
    assert result["code"] == 0 and '"status":"dropped"' in result["out"], result["out"]
    assert result["modules"] == sorted(with_arrow)


@pytest.mark.parametrize("argv", [["inspect", "--json", "--no-history"], ["inspect", "--json"]])
def test_inspect_of_a_small_table_imports_nothing_heavy(tmp_path, argv):
    path = _dv_table(tmp_path / "t")
    result = cli_imports([*argv, path], HEAVY)
    assert result["code"] == 0
    assert result["heavy"] == []
    assert json.loads(result["out"])["files"]["live_files"] == 3


@pytest.mark.parametrize("argv", [["inspect", "--json", "--no-history"], ["compat", "--json"]])
def test_a_read_only_command_leaves_out_the_commit_machinery(tmp_path, argv):
    """The feature catalogue, which every command loads, imports the commit machinery only where a
    drop commits (``features/base.py``)."""
    path = _dv_table(tmp_path / "t")
    result = cli_imports([*argv, path], COMMIT_MACHINERY)
    assert result["code"] == 0, result["out"]
    assert result["modules"] == []


def test_a_drop_loads_the_commit_machinery(tmp_path):
    """The other side of the check above: the probe sees the modules when a command commits."""
    path = _dv_table(tmp_path / "t")
    dropped = cli_imports(["drop-feature", path, "deletionVectors"], COMMIT_MACHINERY)
    assert dropped["code"] == 0 and dropped["modules"] == sorted(COMMIT_MACHINERY), dropped["out"]


def test_pandas_loaded_after_pyarrow_in_the_cli_process_converts_as_before(tmp_path):
    """A CLI process that needs pandas after all (pyspark's Connect client imports it) gets it,
    and pyarrow converts pandas objects as it does anywhere (nulls from a pandas Series)."""
    probe = """
import json, sys
from delta_downgrade.app.cli import lean_imports
lean_imports.install()
import pyarrow as pa
from delta_downgrade.log.format import arrow_columns  # converts Python values at import
before = "pandas" in sys.modules
import pandas as pd
array = pa.array(pd.Series([1.0, None]))
print(json.dumps({"before": before, "nulls": array.null_count, "shim": pa.lib._pandas_api.have_pandas}))
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"before": False, "nulls": 1, "shim": True}


def test_inspect_of_a_table_with_a_commit_of_many_brackets_imports_nothing_heavy(tmp_path):
    """A commit of a few hundred actions holds more opening brackets than the nesting bound
    allows one line (``protocol/json_nesting.py``): its lines are counted one by one, and that
    count needs no pyarrow either."""
    path = _dv_table(tmp_path / "t")
    log = tmp_path / "t" / LOG_DIR
    adds = [{"add": {"path": f"g{i}.parquet", "partitionValues": {}, "size": 1, "modificationTime": 3,
                     "dataChange": True, "tags": {}}} for i in range(300)]
    (log / f"{3:020d}.json").write_text("\n".join(json.dumps(a) for a in adds) + "\n")
    assert sum((log / f"{3:020d}.json").read_text().count(c) for c in "{[") > 512
    result = cli_imports(["inspect", "--json", "--no-history", path], HEAVY)
    assert result["code"] == 0, result["out"]
    assert result["heavy"] == []
    assert json.loads(result["out"])["files"]["live_files"] == 303


@pytest.mark.parametrize("argv", [["compat", "--json"], ["cleanup", "--dry-run", "--json"],
                                  ["vacuum", "--dry-run", "--json"], ["truncate-history", "--dry-run"],
                                  ["inspect", "--json"]], ids=lambda argv: argv[0])
def test_the_commands_on_a_path_read_its_checkpoints_with_pyarrow_without_numpy(tmp_path, argv):
    """After a fast drop the log has checkpoints, which every command on the path reads with
    pyarrow: none of them loads numpy for it (``app/cli/lean_imports.py``), nor
    ``pyarrow.compute``, nor Arrow's filesystems (``arrow_parquet.py``)."""
    path = _dv_table(tmp_path / "t")
    dropped = cli_imports(["drop-feature", path, "deletionVectors"], HEAVY)
    assert dropped["code"] == 0 and '"status":"dropped"' in dropped["out"], dropped["out"]
    result = cli_imports([*argv, path], (*HEAVY, COMPUTE, *ARROW_FS))
    assert result["code"] in (0, 3), result["out"]  # truncate-history waits for the retention: 3
    assert "pyarrow" in result["heavy"] and "numpy" not in result["heavy"]
    assert [m for m in result["modules"] if m in (COMPUTE, *ARROW_FS)] == []
