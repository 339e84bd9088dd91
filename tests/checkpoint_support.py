"""Helpers shared by the checkpoint writer's unit tests and the tests in which delta-rs reads its
checkpoints: a Metadata action, the replay of a small log into checkpoint content, and a copy of a
table whose log keeps only the checkpoint written for it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from delta_downgrade.log.checkpoint.classic_writer import (
    CheckpointContent,
    CheckpointResult,
    write_checkpoint,
)
from delta_downgrade.log.format.file_names import (
    parse_log_file,
)
from delta_downgrade.protocol.actions import (
    AddFile,
    DomainMetadata,
    Metadata,
    ProtocolAction,
    RemoveFile,
    Txn,
    parse_commit,
)
from delta_downgrade.storage.local import LocalStorage


def checkpoint_metadata(**kw: Any) -> Metadata:
    base = dict(id="6f2a7b2e-0000-4000-8000-000000000001",
                schemaString=json.dumps({"type": "struct", "fields": []}),
                partitionColumns=[], configuration={}, createdTime=1700000000000)
    base.update(kw)
    return Metadata(**base)


def dv_key(action: AddFile | RemoveFile) -> tuple[str, str | None]:
    dv = action.dv
    return (action.path, None if dv is None else dv.unique_id)


def replay_to_content(root: Path) -> tuple[int, CheckpointContent]:
    """Minimal reconciliation of a JSON-only log (PROTOCOL.md "Action Reconciliation")."""
    commits = sorted(((lf, p) for p in (root / "_delta_log").iterdir()
                      if (lf := parse_log_file(p.name)) is not None and lf.kind == "commit"),
                     key=lambda item: item[0].version)
    protocol = metadata = None
    adds: dict[tuple, AddFile] = {}
    removes: dict[tuple, RemoveFile] = {}
    txns: dict[str, Txn] = {}
    domains: dict[str, DomainMetadata] = {}
    version = -1
    for lf, path in commits:
        assert lf.version == version + 1, "test replay needs the full JSON history"
        version = lf.version
        for action in parse_commit(path.read_bytes()):
            if isinstance(action, ProtocolAction):
                protocol = action
            elif isinstance(action, Metadata):
                metadata = action
            elif isinstance(action, Txn):
                txns[action.appId] = action
            elif isinstance(action, DomainMetadata):
                if action.removed:
                    domains.pop(action.domain, None)
                else:
                    domains[action.domain] = action
            elif isinstance(action, AddFile):
                adds[dv_key(action)] = action
                removes.pop(dv_key(action), None)
            elif isinstance(action, RemoveFile):
                adds.pop(dv_key(action), None)
                removes[dv_key(action)] = action
    assert protocol is not None and metadata is not None
    return version, CheckpointContent(protocol, metadata, list(adds.values()),
                                      list(removes.values()), list(txns.values()),
                                      list(domains.values()))


def checkpoint_only_copy(src: str, dest: Path, part_size: int | None) -> CheckpointResult:
    shutil.copytree(src, dest)
    storage = LocalStorage(dest)
    version, state = replay_to_content(dest)
    for p in list((dest / "_delta_log").iterdir()):
        if p.is_file():
            p.unlink()          # commits, crc, delta-spark's checkpoints, _last_checkpoint
    return write_checkpoint(storage, version, state, part_size=part_size)

