"""What a command imports at start-up, observed in a fresh interpreter (the process start is the
point)."""

from __future__ import annotations

import json
from pathlib import Path

from delta_downgrade.log.format.file_names import LOG_DIR
from tests.import_probe import cli_imports

HEAVY = ("pyarrow", "pyspark", "pydantic", "pydantic_settings", "py4j")

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
    result = cli_imports(["--help"], HEAVY)
    assert result["code"] == 0 and "inspect" in result["out"]
    assert result["heavy"] == []


def test_inspect_of_a_small_table_imports_no_arrow(tmp_path):
    path = _small_table(tmp_path / "t")
    result = cli_imports(["inspect", path, "--json"], HEAVY)
    assert result["code"] == 0
    assert result["heavy"] == []
    document = json.loads(result["out"])
    assert document["files"]["live_files"] == 1 and document["files"]["live_bytes"] == 20
    assert document["files"]["tombstones"] == 1
    assert [(s["start_version"], s["end_version"]) for s in document["protocol_history"]] == [(0, 2)]
