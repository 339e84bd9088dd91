"""Finding the latest protocol of a checkpointed table, in a fresh interpreter (the process start is
the point): the checkpoint's ``protocol`` and ``metaData`` columns are read with pyarrow's Parquet
reader, opened directly (``arrow_parquet.py``: without Arrow's filesystems), and Arrow's compute
module - about a fifth of that process's CPU - is never loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR
from tests.hand_made_logs import DV_PROTOCOL, write_log

PROBE = """
import json, sys
from delta_downgrade.log.delta_log import DeltaLog
protocol = DeltaLog(sys.argv[1]).snapshot().protocol
print(json.dumps({"writer_features": sorted(protocol.writer_features or []),
                  "modules": sorted(m for m in ("pyarrow._parquet", "pyarrow.parquet", "pyarrow.fs",
                                                "pyarrow.compute", "pandas")
                                    if m in sys.modules)}))
"""


def _checkpointed_table(root: Path) -> str:
    """Four commits of 20 adds, a checkpoint of the third (with a null protocol/metaData on most
    rows), a commit after it."""
    def checkpoint_the_third(version: int) -> None:
        if version == 2:
            checkpoint_table(DeltaLog(str(root)), 2)

    return write_log(root, 4, protocol=DV_PROTOCOL, configuration={"delta.enableDeletionVectors": "true"},
                     adds_per_commit=20, after_commit=checkpoint_the_third)


def test_latest_protocol_of_a_checkpointed_table_leaves_out_arrow_compute(tmp_path):
    path = _checkpointed_table(tmp_path / "t")
    assert (tmp_path / "t" / LOG_DIR / f"{2:020d}.checkpoint.parquet").exists()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", PROBE, path], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["writer_features"] == ["deletionVectors"]
    # the checkpoint was read (Parquet), without Arrow's filesystems and compute functions
    assert result["modules"] == ["pyarrow._parquet"]
