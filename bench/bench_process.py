"""Running one timed child process: wall time from spawn to reap, exit code, output, and its peak
RSS taken from ``os.wait4`` — so our CLI and the delta-rs baseline are measured the same way,
whole process, interpreter start-up and imports included.

The child is started by a tiny launcher (``python -S``, ~10 MiB), which times it and reaps it with
``wait4``, not by the harness itself: on Linux a process's ``ru_maxrss`` starts from the RSS of the
process it was forked from (fork copies the memory map's high-water mark, and exec keeps the
larger of the two), so a child forked straight from a harness that holds pyarrow and a verified
table's state would report the harness's RSS as its floor (seen: 221 MiB on every child).

``wait4`` reports the rusage of the child and of the descendants it reaped itself (Linux folds them
in with ``RUSAGE_BOTH``): ``ru_maxrss`` is the largest of them, not a sum. A JVM that a PySpark
child leaves unreaped is not in it; the Spark child reports its JVM itself.

The same rusage gives the child's CPU time (user + system, all its threads and the descendants it
reaped): unlike the wall time it does not grow when other jobs take the machine's cores, so on a
shared machine it is the measure to compare. It counts the work of every thread: a baseline that
spreads its work over both cores has a CPU time above its wall time.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import signal
import sys
from dataclasses import dataclass, field


# argv: python -S -c LAUNCHER REPORT_FILE CHILD_ARGV... ; the child inherits stdout and stderr.
_LAUNCHER = r"""
import os, sys, time
report, argv = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
pid = os.posix_spawn(argv[0], argv, os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(report, "w") as fh:
    fh.write("%r %d %d %r" % (wall, os.waitstatus_to_exitcode(status), usage.ru_maxrss,
                              usage.ru_utime + usage.ru_stime))
"""


@dataclass
class ChildRun:
    argv: list[str]
    wall_s: float
    exit_code: int
    maxrss_mib: float            # ru_maxrss of wait4 (KiB on Linux)
    cpu_s: float                 # user + system CPU seconds of wait4 (every thread; reaped descendants)
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
    """Run ``argv`` (``argv[0]`` an absolute path) to its end under the launcher and measure it.
    Output goes to temporary files, not pipes, so that a chatty child never blocks on a full pipe."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".rusage") as report:
        proc = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, report.name, *argv],
                                stdout=out, stderr=err, env=env, start_new_session=True)
        try:
            proc.wait(timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)   # the launcher and the child (its own group)
            proc.wait()
            timed_out = True
        except BaseException:                     # interrupted: leave no child running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        measured = report.read().split()
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    if len(measured) == 4:
        wall, exit_code, maxrss_mib = float(measured[0]), int(measured[1]), int(measured[2]) / 1024
        cpu = float(measured[3])
    else:   # the launcher itself failed or was killed
        wall, exit_code, maxrss_mib, cpu = float("nan"), proc.returncode or -1, float("nan"), float("nan")
    run = ChildRun(argv, wall, exit_code, maxrss_mib, cpu, stdout, stderr, timed_out)
    lines = stdout.strip().splitlines()
    if lines:
        try:
            parsed = json.loads(lines[-1])
            if isinstance(parsed, dict):
                run.report = parsed
        except ValueError:
            pass
    return run
