"""The clients matrix's catalogue part has every client read a copy of the table without
Hadoop's hidden ``.crc`` files, the original state too: a test table whose commit was rewritten
after Spark wrote it keeps a stale checksum, which delta-spark < 4.0's log replay (Hadoop's
checksummed local file system) refuses with a ChecksumException - a property of the copy on disk,
not of the protocol the catalogue judges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from delta_downgrade_tools import clients_matrix
from delta_downgrade_tools.clients_matrix import ClientPool, catalogue_part
from delta_downgrade_tools.older_clients import client

SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}


def _table(root: Path) -> Path:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    actions = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
               {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                             "schemaString": json.dumps(SCHEMA), "partitionColumns": [], "configuration": {},
                             "createdTime": 0}}]
    (log / "00000000000000000000.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    # Hadoop's checksum of a file that was since rewritten
    (log / ".00000000000000000000.json.crc").write_bytes(b"crc\x00\x00\x00\x02\x00\x01\x02\x03\x04")
    return root


class Recording:
    def __init__(self, spec, log_dir) -> None:
        self.spec, self.proc, self.requests = spec, None, []

    def run(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.proc = object()
        self.requests += requests
        return [{"ok": True, "columns": ["id"], "rows": []} for _ in requests]

    def close(self) -> None:
        self.proc = None


def test_every_client_reads_a_copy_without_hidden_checksums_the_original_state_too(tmp_path, monkeypatch):
    # with a JVM limit the part stops the package's own Spark (and its JVM): here that would be
    # the Spark session of the test process, which later tests and its teardown still use
    monkeypatch.setattr(clients_matrix, "stop_package_spark", lambda: None)
    source = _table(tmp_path / "golden" / "t")
    pool = ClientPool(jvms=2, start=Recording)
    cells = catalogue_part([("t", source)], [], [client("delta-spark 3.1.0")], pool, tmp_path / "work",
                           "all", progress=lambda m: None)

    assert [c.state for c in cells if c.action == "read latest"] == ["original"]
    reads = [r["path"] for p in pool.processes.values() for r in p.requests if r["op"] == "read"]
    assert reads and all(Path(r) != source for r in reads), reads
    for read in {Path(r) for r in reads}:
        assert (read / "_delta_log" / "00000000000000000000.json").is_file()
        assert not [p for p in read.rglob(".*.crc")], f"{read} keeps a hidden checksum"
