"""Helpers of the modern-table scenarios: building the table, running the CLI, reading its
RESULT line, and letting the truncate-history retention pass."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any, Sequence

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import commit_path
from delta_downgrade.storage.local import LocalStorage
from delta_downgrade_tools.modern_builder import ModernTable, build_modern_table
from tests.process_support import run_cli


def build(path: str, *, v2_checkpoint: bool) -> ModernTable:
    """The modern table, with or without its V2 checkpoint."""
    return build_modern_table(path, v2_checkpoint=v2_checkpoint)


def cli(*args: str, step: str, pending: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """``delta-downgrade ARGS`` in its own process; any non-zero exit fails the test.
    ``pending``: problems the scenario found on the way and holds until its end, reported with
    the failure so that they are never lost behind it."""
    proc = run_cli(*args, timeout=900)
    if proc.returncode != 0:
        also = ("\nalso found on the way: " + "; ".join(pending)) if pending else ""
        raise AssertionError(f"{step}: exit {proc.returncode}\nstdout:\n{proc.stdout}\n"
                             f"stderr:\n{proc.stderr}{also}")
    return proc


def result_line(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The one RESULT line a command printed."""
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0][len("RESULT "):])


def age_history(path: str, *, days: float = 3) -> None:
    """Give every commit file of the table a modification time ``days`` in the past, one
    millisecond apart in version order: the retention periods that metadata cleanup measures
    against commit times (delta.dropFeatureTruncateHistory.retentionDuration, 24 hours by
    default) have passed, as they would for a table that waited before its history is truncated.
    In-commit timestamps are left as written."""
    log = DeltaLog(path)
    storage = LocalStorage(path)
    start = int((time.time() - days * 86_400) * 1000)
    for offset, version in enumerate(sorted(log.whole_listing().commits)):
        storage.set_modification_time(commit_path(version), start + offset)
