"""Running one timed child process: wall time from spawn to reap, exit code, output, and its peak
RSS taken from ``os.wait4`` — so our CLI and the delta-rs baseline are measured the same way,
whole process, interpreter start-up and imports included.

``wait4`` reports the rusage of the child and of the descendants it reaped itself (Linux folds them
in with ``RUSAGE_BOTH``): ``ru_maxrss`` is the largest of them, not a sum. A JVM that a PySpark
child leaves unreaped is not in it; the Spark child reports its JVM itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field


@dataclass
class ChildRun:
    argv: list[str]
    wall_s: float
    exit_code: int
    maxrss_mib: float            # ru_maxrss of wait4 (KiB on Linux)
    stdout: str
    stderr: str
    timed_out: bool = False
    report: dict = field(default_factory=dict)   # the child's last stdout line when it is JSON

    def failure(self) -> str | None:
        if self.timed_out:
            return "timed out"
        if self.exit_code != 0:
            tail = (self.stderr.strip().splitlines() or ["(no stderr)"])[-1]
            return f"exit {self.exit_code}: {tail[:200]}"
        return None


def run_child(argv: list[str], *, env: dict[str, str] | None = None, timeout_s: float = 3_600) -> ChildRun:
    """Run ``argv`` to its end and measure it. Output goes to temporary files, not pipes, so that a
    chatty child never blocks on a full pipe while the parent waits in ``wait4``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            proc.kill()

        timer = threading.Timer(timeout_s, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    run = ChildRun(argv, wall, proc.returncode, usage.ru_maxrss / 1024, stdout, stderr, timed_out.is_set())
    lines = stdout.strip().splitlines()
    if lines:
        try:
            report = json.loads(lines[-1])
            if isinstance(report, dict):
                run.report = report
        except ValueError:
            pass
    return run
