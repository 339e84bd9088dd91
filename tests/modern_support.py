"""Helpers of the modern-table scenarios: building the table, running the CLI, and telling a
refusal that waits for a capability other branches are adding from a real failure.

A scenario stops with ``pytest.xfail`` only on the package's own refusal of exactly that
capability (its error class and the feature it names); anything else fails. When the capability
lands the refusal disappears and the same test runs on to its end.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Sequence

import pytest

from delta_downgrade.errors import UnsupportedCheckpointPolicyError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.files import commit_path
from delta_downgrade.storage.local import LocalStorage
from delta_downgrade_tools.modern_builder import ModernTable, build_modern_table
from tests.process_support import run_cli

V2_CHECKPOINT_WRITER = "the V2 checkpoint writer (delta.checkpointPolicy=v2; branch h/v2ckpt)"
ROW_TRACKING_REWRITES = "row tracking through the DV purge and the other rewrites (branch h/rowtrack)"
CLUSTERING_WRITES = "liquid / clustering / collations as writable features (branch h/cluster)"


@dataclass(frozen=True)
class Refusal:
    """A refusal the package makes today because a capability is missing."""

    error_class: str
    needle: str          # a word the message must hold (the feature it is about)
    waits_for: str


KNOWN_REFUSALS = (
    Refusal("DELTA_DOWNGRADE_V2_CHECKPOINT_POLICY", "v2", V2_CHECKPOINT_WRITER),
    Refusal("DELTA_DOWNGRADE_NOT_SUPPORTED_YET", "rowTracking", ROW_TRACKING_REWRITES),
    Refusal("DELTA_UNSUPPORTED_FEATURES_FOR_WRITE", "'liquid'", CLUSTERING_WRITES),
    Refusal("DELTA_UNSUPPORTED_FEATURES_FOR_WRITE", "'collations'", CLUSTERING_WRITES),
)


def missing_capability(output: str) -> Refusal | None:
    """The known refusal ``output`` (a command's stderr, or an error's text) reports, if any."""
    for refusal in KNOWN_REFUSALS:
        if f"[{refusal.error_class}]" in output and refusal.needle in output:
            return refusal
    return None


def build(path: str, *, v2_checkpoint: bool) -> ModernTable:
    """The modern table; with its V2 checkpoint, or xfail while the package cannot write one."""
    try:
        return build_modern_table(path, v2_checkpoint=v2_checkpoint)
    except UnsupportedCheckpointPolicyError as exc:
        pytest.xfail(f"waits for {V2_CHECKPOINT_WRITER}: building the table's checkpoint was refused: {exc}")


def cli(*args: str, step: str, pending: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """``delta-downgrade ARGS`` in its own process; xfail on a known missing capability, fail
    on any other non-zero exit. ``pending``: problems the scenario found on the way and holds
    until its end; an xfail reports them too, so they are never lost behind it."""
    proc = run_cli(*args, timeout=900)
    if proc.returncode != 0:
        known = missing_capability(proc.stderr)
        if known is not None:
            also = ("; also found on the way: " + "; ".join(pending)) if pending else ""
            pytest.xfail(f"waits for {known.waits_for}: {step} exited {proc.returncode}: "
                         f"{proc.stderr.strip().splitlines()[-1]}{also}")
        raise AssertionError(f"{step}: exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
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
    for offset, version in enumerate(sorted(log.listing().commits)):
        storage.set_modification_time(commit_path(version), start + offset)
