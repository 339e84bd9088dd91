"""Small Delta logs written line by line (test support), for tests about what a process loads or
reads rather than about the data: commit 0 holds the protocol and metaData, every commit a
commitInfo and its adds (``f{v}.parquet``, or ``f{v}-{i}.parquet`` with several per commit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping

from delta_downgrade.log.format.file_names import LOG_DIR

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                   "metadata": {}}]})
PLAIN_PROTOCOL: Mapping[str, Any] = {"minReaderVersion": 1, "minWriterVersion": 2}
DV_PROTOCOL: Mapping[str, Any] = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                                  "writerFeatures": ["deletionVectors"]}


def write_log(root: Path, commits: int, *, protocol: Mapping[str, Any] = PLAIN_PROTOCOL,
              configuration: Mapping[str, str] | None = None, adds_per_commit: int = 1,
              after_commit: Callable[[int], None] | None = None) -> str:
    """``commits`` commits at ``root`` (created); ``after_commit(v)`` runs once commit v is
    written (a checkpoint, say). Returns the table's path."""
    (root / LOG_DIR).mkdir(parents=True)
    first = [{"protocol": dict(protocol)},
             {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                           "partitionColumns": [], "configuration": dict(configuration or {}), "createdTime": 0}}]
    for v in range(commits):
        names = [f"f{v}.parquet"] if adds_per_commit == 1 else [f"f{v}-{i}.parquet" for i in range(adds_per_commit)]
        adds = [{"add": {"path": name, "partitionValues": {}, "size": 10 + v + i, "modificationTime": v,
                         "dataChange": True}} for i, name in enumerate(names)]
        info = {"commitInfo": {"timestamp": v, "operation": "WRITE"}}
        lines = [info, *(first if v == 0 else []), *adds]
        (root / LOG_DIR / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        if after_commit is not None:
            after_commit(v)
    return str(root)
