"""What a command imports at start-up, observed in a fresh interpreter (the process start is the
point)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from delta_downgrade.log.files import LOG_DIR

HEAVY = ("pyarrow", "pyspark", "pydantic", "pydantic_settings", "py4j")

PROBE = """
import contextlib, io, json, sys
from delta_downgrade.app.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(json.loads(sys.argv[1]))
    except SystemExit as exit:
        code = exit.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
print(json.dumps({"code": code, "heavy": heavy, "out": out.getvalue()}))
"""


def _run_main(argv: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _small_table(root: Path) -> str:
    (root / LOG_DIR).mkdir(parents=True)
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                       "metadata": {}}]})
    commits = [
        [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
         {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                       "partitionColumns": [], "configuration": {}, "createdTime": 0}},
         {"add": {"path": "a.parquet", "partitionValues": {}, "size": 10, "modificationTime": 0,
                  "dataChange": True}}],
        [{"add": {"path": "b.parquet", "partitionValues": {}, "size": 20, "modificationTime": 1,
                  "dataChange": True}}],
        [{"remove": {"path": "a.parquet", "deletionTimestamp": 2, "dataChange": True}}],
    ]
    for v, lines in enumerate(commits):
        info = {"commitInfo": {"timestamp": v, "operation": "WRITE"}}
        (root / LOG_DIR / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in [info, *lines]) + "\n")
    return str(root)


def test_help_imports_no_engine_no_arrow_no_settings():
    result = _run_main(["--help"])
    assert result["code"] == 0 and "inspect" in result["out"]
    assert result["heavy"] == []


def test_inspect_of_a_small_table_imports_no_arrow(tmp_path):
    path = _small_table(tmp_path / "t")
    result = _run_main(["inspect", path, "--json"])
    assert result["code"] == 0
    assert result["heavy"] == []
    document = json.loads(result["out"])
    assert document["files"]["live_files"] == 1 and document["files"]["live_bytes"] == 20
    assert document["files"]["tombstones"] == 1
    assert [(s["start_version"], s["end_version"]) for s in document["protocol_history"]] == [(0, 2)]
