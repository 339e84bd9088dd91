"""``inspect`` of a log too long for the Python replay and without a checkpoint, in a fresh
interpreter (the process start is the point): the Arrow replay parses the commits with pyarrow's
JSON reader, and the Parquet module (with the filesystem modules it loads) is never imported -
only a checkpoint is Parquet."""

from __future__ import annotations

import json
from pathlib import Path

from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.log.replay.choice import PYTHON_REPLAY_MAX_COMMITS
from tests.import_probe import cli_imports


def _long_log(root: Path, commits: int) -> str:
    """``commits`` commits of one add each, protocol and metaData in the first, no checkpoint."""
    (root / LOG_DIR).mkdir(parents=True)
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                       "metadata": {}}]})
    first = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
             {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                           "partitionColumns": [], "configuration": {}, "createdTime": 0}}]
    for v in range(commits):
        add = {"add": {"path": f"f{v}.parquet", "partitionValues": {}, "size": 10 + v, "modificationTime": v,
                       "dataChange": True}}
        info = {"commitInfo": {"timestamp": v, "operation": "WRITE"}}
        lines = [info, *(first if v == 0 else []), add]
        (root / LOG_DIR / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return str(root)


def test_inspect_of_a_long_log_without_checkpoint_leaves_out_the_parquet_module(tmp_path):
    commits = PYTHON_REPLAY_MAX_COMMITS + 1
    path = _long_log(tmp_path / "t", commits)
    wanted = ("pyarrow.json", "pyarrow.parquet", "pyarrow.fs")
    result = cli_imports(["inspect", "--json", "--no-history", path], wanted)
    assert result["code"] == 0, result["out"]
    assert json.loads(result["out"])["files"]["live_files"] == commits
    # the Arrow replay ran (its JSON reader), without Parquet
    assert result["modules"] == ["pyarrow.json"]
