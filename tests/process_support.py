"""Helpers for tests that run the package as a user does — a command with its arguments, its exit
code, its stdout and stderr — and proof that a refused command changed nothing on disk.

`run_cli` runs the command in this process (``main(argv)`` with ``sys.stdout``/``sys.stderr``
captured, the package's documented entry point): a fresh interpreter costs ~1 s of imports and a
rewrite in it a new Spark JVM (10-50 s), while here it uses the test process's one session.
`run_cli_process` starts ``python -m delta_downgrade.app.cli`` for the tests whose subject is the
process itself: exit statuses seen by a shell, output written by the JVM or at interpreter exit,
signals, environment and working directory, resource limits."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

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
    """``delta-downgrade ARGS`` in this process; with keyword arguments for ``subprocess.run``
    (``env``, ``cwd``, ``preexec_fn`` for resource limits, ...) in a fresh interpreter instead."""
    if kwargs:
        return run_cli_process(*args, timeout=timeout, **kwargs)
    return run_main_in_process(["delta-downgrade", *args], _cli_main)


def run_cli_process(*args: str, timeout: float = 300, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``delta-downgrade ARGS`` in a fresh interpreter (extra keyword arguments go to
    ``subprocess.run``)."""
    return subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", *args], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def _cli_main(argv: list[str]) -> int:
    from delta_downgrade.app.cli import main

    return main(argv)


def run_main_in_process(argv: list[str], main: Callable[[list[str]], Any]) -> subprocess.CompletedProcess[str]:
    """``main(argv[1:])`` with stdout and stderr captured, as a completed process: its return value
    (or ``SystemExit``'s code, as ``--help`` raises) is the exit code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv[1:]))
        except SystemExit as exit_:
            code = exit_.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed on stderr, status 1
        err.write(f"{code}\n")
        code = 1
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def assert_bad_input(proc: subprocess.CompletedProcess[str], error_class: str) -> None:
    """Exit 2, the Delta error class on stderr, and no stack trace anywhere in the output."""
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert f"[{error_class}]" in proc.stderr, output
    assert not any(marker in output for marker in TRACEBACK_MARKERS), output
