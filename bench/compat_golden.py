"""``compat`` over every golden table: the time of :func:`table_compat` per table (in one process,
after a warm-up so the first table does not carry the imports), and the wall time of one CLI run
(``python -m delta_downgrade.app.cli compat TABLE --json``, process start and imports included).
The goal: < 1 s per table, no data read.

Usage (from the repository root, with the project's venv):
    DELTA_DOWNGRADE_GOLDEN=/path/to/golden .venv/bin/python bench/compat_golden.py [--repeat R] [--cli TABLE]
Not a timed test: CI does not run it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
sys.path.insert(0, SRC)

from delta_downgrade.compat import packaged_catalogue  # noqa: E402
from delta_downgrade.errors import DeltaDowngradeError  # noqa: E402
from delta_downgrade.operations.compat import table_compat  # noqa: E402


def golden_tables(root: str) -> list[str]:
    return sorted(os.path.join(root, n) for n in os.listdir(root)
                  if os.path.isdir(os.path.join(root, n, "_delta_log")))


def time_one(path: str) -> tuple[float, str]:
    start = time.perf_counter()
    try:
        report = table_compat(path, packaged_catalogue())
        outcome = "blocked" if report.blocked_read or report.blocked_write else "compatible"
    except DeltaDowngradeError as exc:
        outcome = exc.error_class
    return time.perf_counter() - start, outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--golden", default=os.environ.get("DELTA_DOWNGRADE_GOLDEN", "golden"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cli", default=None, help="the table of the CLI wall-time run (default: the first)")
    args = parser.parse_args()
    tables = golden_tables(args.golden)
    if not tables:
        print(f"no golden tables under {args.golden}", file=sys.stderr)
        return 2
    time_one(tables[0])  # warm-up: imports, the catalogue
    times: dict[str, list[float]] = {}
    outcomes: dict[str, str] = {}
    for _ in range(args.repeat):
        for path in tables:
            seconds, outcomes[path] = time_one(path)
            times.setdefault(path, []).append(seconds)
    best = {p: min(ts) for p, ts in times.items()}
    for path in tables:
        print(f"{os.path.basename(path):40s} {best[path] * 1000:8.1f} ms  {outcomes[path]}")
    values = sorted(best.values())
    print(f"\n{len(tables)} tables: median {statistics.median(values) * 1000:.1f} ms, "
          f"max {values[-1] * 1000:.1f} ms (best of {args.repeat} per table)")

    cli_table = args.cli or tables[0]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    walls = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", "compat", cli_table, "--json"],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        walls.append(time.perf_counter() - start)
    print(f"CLI wall time (process start included) on {os.path.basename(cli_table)}: "
          f"median {statistics.median(walls):.2f} s, min {min(walls):.2f} s")
    return 0 if values[-1] < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
