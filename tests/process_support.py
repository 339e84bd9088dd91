"""Helpers for tests that run the package as a user does: a command in its own process, and
proof that a refused command changed nothing on disk."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# What a Python or Java stack trace leaves in a command's output.
TRACEBACK_MARKERS = ("Traceback", "Py4J", "at org.apache")


def tree_hashes(root: str | os.PathLike[str]) -> dict[str, str]:
    """Every entry below ``root`` (hidden ones included): a file with the sha256 of its bytes, a
    symlink with its target (never followed), a directory as ``dir``. A file given as ``root``
    maps its own name to its digest."""
    root = Path(root)
    if root.is_file() and not root.is_symlink():
        return {root.name: hashlib.sha256(root.read_bytes()).hexdigest()}
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


def run_cli(*args: str, timeout: float = 300, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``delta-downgrade ARGS`` in a fresh interpreter (extra keyword arguments go to
    ``subprocess.run``, e.g. ``preexec_fn`` for resource limits)."""
    return subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", *args], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def assert_bad_input(proc: subprocess.CompletedProcess[str], error_class: str) -> None:
    """Exit 2, the Delta error class on stderr, and no stack trace anywhere in the output."""
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert f"[{error_class}]" in proc.stderr, output
    assert not any(marker in output for marker in TRACEBACK_MARKERS), output
