"""Finding the latest protocol of a checkpointed table, in a fresh interpreter (the process start is
the point): the checkpoint's ``protocol`` and ``metaData`` columns are read with pyarrow's Parquet
reader, and Arrow's compute module - about a fifth of that process's CPU - is never loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR

PROBE = """
import json, sys
from delta_downgrade.log.delta_log import DeltaLog
protocol = DeltaLog(sys.argv[1]).snapshot().protocol
print(json.dumps({"writer_features": sorted(protocol.writer_features or []),
                  "modules": sorted(m for m in ("pyarrow.parquet", "pyarrow.compute", "pandas")
                                    if m in sys.modules)}))
"""


def _checkpointed_table(root: Path) -> str:
    """Three commits, a checkpoint of the second (with a null protocol/metaData on most rows), a
    commit after it."""
    (root / LOG_DIR).mkdir(parents=True)
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                       "metadata": {}}]})
    first = [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                           "writerFeatures": ["deletionVectors"]}},
             {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                           "partitionColumns": [], "configuration": {"delta.enableDeletionVectors": "true"},
                           "createdTime": 0}}]
    for v in range(4):
        adds = [{"add": {"path": f"f{v}-{i}.parquet", "partitionValues": {}, "size": 10 + i, "modificationTime": v,
                         "dataChange": True}} for i in range(20)]
        info = {"commitInfo": {"timestamp": v, "operation": "WRITE"}}
        lines = [info, *(first if v == 0 else []), *adds]
        (root / LOG_DIR / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        if v == 2:
            checkpoint_table(DeltaLog(str(root)), 2)
    return str(root)


def test_latest_protocol_of_a_checkpointed_table_leaves_out_arrow_compute(tmp_path):
    path = _checkpointed_table(tmp_path / "t")
    assert (tmp_path / "t" / LOG_DIR / f"{2:020d}.checkpoint.parquet").exists()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", PROBE, path], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["writer_features"] == ["deletionVectors"]
    # the checkpoint was read (Parquet), without Arrow's compute functions
    assert result["modules"] == ["pyarrow.parquet"]
