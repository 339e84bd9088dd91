"""``inspect`` of a log too long for the Python replay and without a checkpoint, in a fresh
interpreter (the process start is the point): the Arrow replay parses the commits with pyarrow's
JSON reader, and Arrow's Parquet module (``pyarrow._parquet``, which ``arrow_parquet.py`` opens;
``pyarrow.parquet`` with its filesystems) is never imported - only a checkpoint is Parquet."""

from __future__ import annotations

import json

from delta_downgrade.log.replay.choice import PYTHON_REPLAY_MAX_COMMITS
from tests.hand_made_logs import write_log
from tests.import_probe import cli_imports


def test_inspect_of_a_long_log_without_checkpoint_leaves_out_the_parquet_module(tmp_path):
    commits = PYTHON_REPLAY_MAX_COMMITS + 1
    path = write_log(tmp_path / "t", commits)  # one add per commit, no checkpoint
    wanted = ("pyarrow.json", "pyarrow._parquet", "pyarrow.parquet", "pyarrow.fs")
    result = cli_imports(["inspect", "--json", "--no-history", path], wanted)
    assert result["code"] == 0, result["out"]
    assert json.loads(result["out"])["files"]["live_files"] == commits
    # the Arrow replay ran (its JSON reader), without Parquet
    assert result["modules"] == ["pyarrow.json"]
