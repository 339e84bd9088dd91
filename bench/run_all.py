"""All the benchmarks in one run: ours next to a baseline measured in the same run,
and one table of ratios and peak RSS per goal.

For every row, ``--repeat`` times (:data:`SHORT_RUN_FACTOR` times that for a row whose first
round of runs took under :data:`SHORT_RUN_S` each), ours and the baseline each run in a fresh
process on a fresh copy of a cached master table; the side that goes first alternates from one
repeat to the next.
Each child is timed from spawn to reap (whole process: interpreter, imports, work) and its peak
RSS is read from ``os.wait4`` (see bench_process.py); rows that compare calls rather than
processes take the time the child measured around the call. Every run is verified (our drop leaves
a protocol without deletionVectors, read back with our DeltaLog; checkpoints hold the expected
number of adds; inspect counts the live files), and a failed run fails its row, not the whole run.

The tables (bench_tables.py) are built once into ``--cache`` and reused by later runs.

Usage (from the repository root, with the project's venv):
    .venv/bin/python bench/run_all.py [--profile small|medium|large] [--repeat R] [--only TEXT]
                                      [--cache DIR] [--instructions]
    .venv/bin/python bench/run_all.py --log-only-files N    # build a commits-only log of N files

``--instructions`` also runs each side of a row once under valgrind's callgrind and prints the
instructions each process executed and their ratio: unlike seconds, that count does not move with
the machine's load, so an A/B of two trees (``--src``) on the small rows can be read from one run.

``--only TEXT`` keeps the rows whose name contains TEXT (case-insensitive); without ``--profile`` it
looks at the rows of every profile (``--only 1M`` runs all the 1M-file rows).
Not a timed test: CI does not run it.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import json
import os
import re
import shutil
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
sys.path.insert(0, HERE)

import bench_children as children  # noqa: E402
from bench_process import ChildRun, run_child  # noqa: E402
from bench_tables import TableSpec, cached, fingerprint, fresh_copy  # noqa: E402

PROFILES = ("small", "medium", "large")
DEFAULT_CACHE = "/tmp/delta-downgrade-bench"
PY = sys.executable
# The environment of every timed child; main() points PYTHONPATH at --src.
CHILD_ENV = {**os.environ, "PYTHONPATH": SRC, "PYSPARK_PYTHON": sys.executable}

F10K, F100K, F1M = TableSpec("files", 10_000), TableSpec("files", 100_000), TableSpec("files", 1_000_000)
F100K_CKPT, F1M_CKPT = TableSpec("files", 100_000, "prior"), TableSpec("files", 1_000_000, "prior")
C1K, C10K, C100K = (TableSpec("commits", n, "every100") for n in (1_000, 10_000, 100_000))
C1K_BARE, C10K_BARE = TableSpec("commits", 1_000), TableSpec("commits", 10_000)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- verifying a run ----------------------------------------------------------------------------

def _adds_in(files: list[str]) -> int:
    """Add actions in checkpoint parquet files (rows whose add.path is set)."""
    import pyarrow.parquet as pq

    total = 0
    for f in files:
        column = pq.read_table(f, columns=["add.path"]).column(0)
        total += len(column) - column.null_count
    return total


def _classic_checkpoint_files(path: str, version: int) -> list[str]:
    log_dir = os.path.join(path, "_delta_log")
    prefix = "%020d.checkpoint." % version
    return sorted(os.path.join(log_dir, n) for n in os.listdir(log_dir)
                  if n.startswith(prefix) and n.endswith(".parquet"))


def verify_drop(path: str, run: ChildRun, meta: dict) -> str | None:
    results = [json.loads(line[len("RESULT "):]) for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    if len(results) != 1 or results[0].get("status") != "dropped":
        return f"no RESULT line with status dropped: {results}"
    sys.path.insert(0, SRC)
    from delta_downgrade.log.delta_log import DeltaLog

    protocol = DeltaLog(path).snapshot().protocol
    if "deletionVectors" in set(protocol.reader_features or ()) | set(protocol.writer_features or ()):
        return f"deletionVectors still in the protocol: {protocol!r}"
    return None


def verify_dropped(path: str, run: ChildRun, meta: dict) -> str | None:
    """A drop run as a call (ours) or by delta-spark: the protocol read back without deletionVectors."""
    if run.report.get("status") not in (None, "dropped"):
        return f"status {run.report.get('status')}"
    sys.path.insert(0, SRC)
    from delta_downgrade.log.delta_log import DeltaLog

    protocol = DeltaLog(path).snapshot().protocol
    if "deletionVectors" in set(protocol.reader_features or ()) | set(protocol.writer_features or ()):
        return f"deletionVectors still in the protocol: {protocol!r}"
    return None


def verify_rs_checkpoint(path: str, run: ChildRun, meta: dict) -> str | None:
    if run.report.get("version") != meta["last_version"]:
        return f"delta-rs opened version {run.report.get('version')}, not {meta['last_version']}"
    files = _classic_checkpoint_files(path, meta["last_version"])
    found = _adds_in(files) if files else None
    return None if found == meta["live_files"] else f"delta-rs checkpoint holds {found} adds, not {meta['live_files']}"


def verify_ours_checkpoint(path: str, run: ChildRun, meta: dict) -> str | None:
    report = run.report
    if report.get("version") != meta["last_version"] or report.get("num_add_files") != meta["live_files"]:
        return f"checkpoint of version {report.get('version')} with {report.get('num_add_files')} adds"
    parquet = [os.path.join(path, p) for p in report["paths"] if p.endswith(".parquet")]
    found = _adds_in(parquet)
    return None if found == meta["live_files"] else f"our checkpoint files hold {found} adds, not {meta['live_files']}"


def verify_inspect(history: bool) -> Callable[[str, ChildRun, dict], str | None]:
    def verify(path: str, run: ChildRun, meta: dict) -> str | None:
        doc = json.loads(run.stdout)
        if doc["files"]["live_files"] != meta["live_files"] or doc["version"] != meta["last_version"]:
            return f"inspect says {doc['files']['live_files']} live files at version {doc['version']}"
        if "deletionVectors" not in (doc["protocol"].get("readerFeatures") or []):
            return f"inspect protocol {doc['protocol']}"
        if history and not doc.get("protocol_history"):
            return "inspect without protocol_history"
        return None
    return verify


def verify_history(path: str, run: ChildRun, meta: dict) -> str | None:
    """delta-rs's history(): one entry per commit of the log but version 0 (bench_children)."""
    expected = meta["last_version"]
    got = run.report.get("commits")
    return None if got == expected else f"history(): {got} commits, expected {expected}"


def verify_protocol(path: str, run: ChildRun, meta: dict) -> str | None:
    features = run.report.get("reader_features") or []
    return None if "deletionVectors" in features else f"protocol read: {run.report}"


# --- the rows -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Side:
    name: str
    argv: Callable[[str], list[str]]
    verify: Callable[[str, ChildRun, dict], str | None]


@dataclass(frozen=True)
class Measure:
    """One line of the table from a row's runs: which time of each side (``wall`` for the whole
    process, else a key of the child's JSON report) and the goal on their ratio. Each time has its
    CPU counterpart (``cpu_key``): the whole process's user + system time, or the report's
    ``call_cpu_s`` next to ``call_s``."""
    goal: str
    ours: str = "wall"
    base: str = "wall"
    max_ratio: float | None = 1.0
    max_rss_mib: float | None = None   # the goal on ours' peak RSS, if any


@dataclass(frozen=True)
class Row:
    name: str
    profile: str
    table: TableSpec
    ours: Side
    base: Side
    measures: tuple[Measure, ...]
    #: What the row's floor is made of (``measure_floor``): "tail" (an interpreter start and the
    #: reads of _last_checkpoint, its checkpoint and the commits after it - all commits without a
    #: checkpoint), "drop" (the tail, and the writes of the drop: its files with their fsyncs),
    #: "history" (the tail and every commit); None: no floor defined.
    floor: str | None = None


#: The module ``python -m`` runs as our CLI; main() sets it from --src (cli_module).
CLI_MODULE = ["delta_downgrade.app.cli"]


def cli_module(src: str) -> str:
    """The CLI's module in the tree ``src``: ``delta_downgrade.app.cli``, or ``delta_downgrade.cli``
    in a tree from before the package was split into layers (so that ``--src`` can measure it)."""
    if os.path.isfile(os.path.join(src, "delta_downgrade", "app", "cli", "__main__.py")):
        return "delta_downgrade.app.cli"
    return "delta_downgrade.cli"


def _cli(command: str, *options: str, after: tuple[str, ...] = ()) -> Callable[[str], list[str]]:
    """Our CLI as a user runs it: ``python -m delta_downgrade.app.cli COMMAND OPTIONS PATH AFTER``."""
    return lambda path: [PY, "-m", CLI_MODULE[0], command, *options, path, *after]


def _program(source: str) -> Callable[[str], list[str]]:
    return lambda path: [PY, "-c", source, path]


OURS_DROP = Side("ours drop-feature CLI", _cli("drop-feature", after=("deletionVectors",)), verify_drop)
RS_OPEN_CHECKPOINT = Side("delta-rs open+create_checkpoint", _program(children.DELTA_RS_OPEN_CHECKPOINT),
                          verify_rs_checkpoint)
RS_OPEN = Side("delta-rs open", _program(children.DELTA_RS_OPEN), verify_protocol)
RS_HISTORY = Side("delta-rs open+history()", _program(children.DELTA_RS_HISTORY), verify_history)
OURS_INSPECT = Side("ours inspect --json --no-history", _cli("inspect", "--json", "--no-history"),
                    verify_inspect(False))
OURS_INSPECT_HISTORY = Side("ours inspect --json", _cli("inspect", "--json"), verify_inspect(True))
OURS_PROTOCOL = Side("ours DeltaLog protocol", _program(children.OURS_PROTOCOL), verify_protocol)
OURS_CHECKPOINT = Side("ours checkpoint_table", _program(children.OURS_CHECKPOINT), verify_ours_checkpoint)
OURS_SPARK_CHECKPOINT = Side("ours spark_checkpoint_table", _program(children.OURS_SPARK_CHECKPOINT),
                             verify_ours_checkpoint)

OURS_DROP_CALL = Side("ours drop_feature() call", _program(children.OURS_DROP_CALL), verify_dropped)
DELTA_SPARK_DROP = Side("delta-spark ALTER TABLE DROP FEATURE", _program(children.DELTA_SPARK_DROP), verify_dropped)

DROP = (Measure("fast drop DV vs delta-rs open+create_checkpoint (whole processes) <= 1.0x"),)
VS_DELTA_SPARK = (Measure("fast drop DV vs delta-spark DROP FEATURE: warm session (calls)", ours="call_s",
                          base="call_s", max_ratio=None),
                  Measure("fast drop DV vs delta-spark DROP FEATURE: whole processes (JVM start)",
                          max_ratio=None))
INSPECT = (Measure("inspect --json --no-history vs delta-rs open <= 1.0x"),)
INSPECT_HISTORY = (Measure("inspect --json (history) vs delta-rs open <= 1.5x", max_ratio=1.5),)
#: delta-rs's history() reads every commit file, as the protocol history must (its commitInfo
#: where ours looks for protocol and metaData): the baseline that does the same reads.
INSPECT_VS_HISTORY = (Measure("inspect --json (history) vs delta-rs open+history() <= 1.0x"),)
PROTOCOL = (Measure("latest protocol vs delta-rs protocol() (whole processes) <= 1.0x"),
            Measure("latest protocol: the calls in-process, imports excluded", ours="call_s", base="call_s",
                    max_ratio=None))


def cpu_key(key: str) -> str:
    """The CPU time that goes with a time key: ``cpu`` (whole process, from wait4) for ``wall``,
    ``call_cpu_s`` for ``call_s``."""
    return "cpu" if key == "wall" else key.replace("_s", "_cpu_s", 1) if key.endswith("_s") else key + "_cpu"


def _checkpoint_measures(rss_goal: float | None) -> tuple[Measure, ...]:
    """The writer against delta-rs's, each timed after its open (ours: a DeltaLog and its latest
    state replayed, as ``DeltaTable(path)`` loads its files; until stop 51 ours' call included its
    open, delta-rs's did not); then open and writer together, in process; then whole processes
    (ours a library import, which loads numpy and pandas with pyarrow)."""
    return (Measure("checkpoint: ours checkpoint_table() vs delta-rs create_checkpoint(), each after its open <= 1.0x"
                    + (f", RSS <= {rss_goal:.0f} MiB" if rss_goal else ""),
                    ours="call_s", base="call_s", max_rss_mib=rss_goal),
            Measure("checkpoint: open + checkpoint, in process (imports excluded)", ours="open_call_s",
                    base="open_call_s", max_ratio=None),
            Measure("checkpoint: whole processes (delta-rs: open+create_checkpoint)", max_ratio=None))


ROWS: tuple[Row, ...] = (
    *(Row(f"fast drop {t.label}", p, t, OURS_DROP, RS_OPEN_CHECKPOINT, DROP, "drop") for p, t in (
        ("small", F10K), ("small", F100K), ("small", F100K_CKPT), ("medium", F1M), ("medium", F1M_CKPT),
        ("small", C1K), ("small", C10K), ("small", C1K_BARE), ("medium", C10K_BARE), ("medium", C100K))),
    *(Row(f"inspect {t.label}", p, t, OURS_INSPECT, RS_OPEN, INSPECT, "tail") for p, t in (
        ("small", F10K), ("small", F100K), ("medium", F1M), ("small", C10K))),
    *(Row(f"inspect history {t.label}", p, t, OURS_INSPECT_HISTORY, RS_OPEN, INSPECT_HISTORY, "history")
      for p, t in (
        ("small", C1K), ("small", C10K), ("medium", C10K_BARE), ("medium", C100K))),
    *(Row(f"inspect history vs delta-rs history() {t.label}", p, t, OURS_INSPECT_HISTORY, RS_HISTORY,
          INSPECT_VS_HISTORY, "history") for p, t in (
        ("small", C1K), ("small", C10K), ("medium", C100K))),
    *(Row(f"latest protocol {t.label}", p, t, OURS_PROTOCOL, RS_OPEN, PROTOCOL, "tail") for p, t in (
        ("small", F100K_CKPT), ("medium", F1M_CKPT), ("small", C10K), ("medium", C100K))),
    Row(f"checkpoint {F100K.label}", "small", F100K, OURS_CHECKPOINT, RS_OPEN_CHECKPOINT, _checkpoint_measures(None)),
    Row(f"checkpoint {F1M.label}", "medium", F1M, OURS_CHECKPOINT, RS_OPEN_CHECKPOINT, _checkpoint_measures(1024)),
)
# delta-spark's own fast drop against ours (a local[2] session with Delta's jars), on tables of the
# same shapes whose adds name real Parquet files (data=True, bench_tables.py): delta-spark's DROP
# FEATURE deletionVectors scans the live files, which a log alone does not have. ``--only "vs
# delta-spark"`` runs them all.
DELTA_SPARK_ROWS: tuple[Row, ...] = tuple(
    Row(f"vs delta-spark {t.label}", p, t, OURS_DROP_CALL, DELTA_SPARK_DROP, VS_DELTA_SPARK)
    for p, t in (("medium", TableSpec("files", 10_000, data=True)),
                 ("medium", TableSpec("commits", 1_000, "every100", data=True)),
                 ("large", TableSpec("files", 100_000, "prior", data=True)),
                 ("large", TableSpec("commits", 10_000, "every100", data=True)),
                 ("large", TableSpec("files", 1_000_000, "prior", data=True)),
                 ("large", TableSpec("commits", 100_000, "every100", data=True))))
SPARK_ROW = Row(f"spark checkpoint {F1M.label}", "large", F1M, OURS_SPARK_CHECKPOINT, OURS_CHECKPOINT,
                (Measure("checkpoint: Spark path (local[2]) vs our Arrow path (calls, each reading the log)",
                         ours="call_s", base="open_call_s", max_ratio=None),))
# The DV purge benchmark (a Spark job each side, in one process): rows and data files per profile.
DV_PURGE = {"medium": (2_400_000, 240), "large": (24_000_000, 2_400)}


# --- running ------------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What a row's runs gave: per side the measured seconds (by time key) and peak RSS."""
    ours: dict[str, list[float]] = field(default_factory=dict)
    base: dict[str, list[float]] = field(default_factory=dict)
    ours_rss: list[float] = field(default_factory=list)
    base_rss: list[float] = field(default_factory=list)
    ours_rss_text: str | None = None      # when a side's RSS needs more than one number
    base_rss_text: str | None = None
    problems: list[str] = field(default_factory=list)
    note: str | None = None               # a row that did not run: why
    written: list[int] = field(default_factory=list)   # sizes of the log files ours wrote (a drop)
    floor: Floor | None = None
    instructions: tuple[int, int] | None = None        # (ours, baseline) under callgrind (--instructions)


def _written(path: str, meta: dict) -> list[int]:
    """Sizes of the commits and checkpoints a run added after the master's last version."""
    log_dir = os.path.join(path, "_delta_log")
    return [os.path.getsize(os.path.join(log_dir, n)) for n in sorted(os.listdir(log_dir))
            if n[:20].isdigit() and int(n[:20]) > meta["last_version"] and n.endswith((".json", ".parquet"))]


#: ``--instructions``: the valgrind command that counts a child's instructions, else empty.
CALLGRIND: list[str] = []
_COLLECTED = re.compile(r"==\d+== Collected : (\d+)")


def instructions_of(run: ChildRun) -> int | None:
    """The instructions callgrind counted in a child run under :data:`CALLGRIND` (every thread)."""
    found = _COLLECTED.findall(run.stderr)
    return int(found[-1]) if found else None


def _one_run(side: Side, master: str, meta: dict, work_dir: str,
             prefix: list[str] | None = None, env: dict[str, str] | None = None) -> tuple[ChildRun, str | None]:
    path = os.path.join(work_dir, "table")
    shutil.rmtree(path, ignore_errors=True)
    fresh_copy(master, path)
    try:
        run = run_child([*(prefix or []), *side.argv(path)], env={**CHILD_ENV, **(env or {})})
        problem = run.failure()
        if problem is None:
            try:
                problem = side.verify(path, run, meta)
            except Exception as exc:  # a verifier that cannot read the result is a failed run too
                problem = f"verification failed: {exc!r}"
        run.written = _written(path, meta) if problem is None else []  # type: ignore[attr-defined]
        return run, problem
    finally:
        shutil.rmtree(path, ignore_errors=True)


# --- the floor ----------------------------------------------------------------------------------

_STARTS: dict[str, list[float]] = {}   # each start measured once per harness run


def _start_s(program: str) -> float:
    """Median wall time of ``python -c program`` (5 runs), the way every child is started."""
    if program not in _STARTS:
        _STARTS[program] = [run_child([PY, "-c", program], env=CHILD_ENV).wall_s for _ in range(5)]
    return statistics.median(_STARTS[program])


def interpreter_start_s() -> float:
    """The interpreter's start (``python -c pass``)."""
    return _start_s(children.PYTHON_START)


def pyarrow_start_s() -> float:
    """The start of a Python reader of a Delta log: pyarrow's parquet and JSON readers loaded
    (``PYARROW_START``). Our every row pays it; delta-rs reads in its own native library."""
    return _start_s(children.PYARROW_START)


_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$", re.M)

#: The module sets already measured in this harness run: the median start and what it reported.
_MODULE_STARTS: dict[tuple[str, ...], tuple[float, dict]] = {}


def modules_start(side: Side, master: str, meta: dict, work_dir: str) -> tuple[float, dict] | None:
    """The start of a process that loads every module one run of ``side`` loads, and nothing else
    (:data:`children.MODULES_START`; median of 5), with what it reports: the seconds our run spends
    before its work. One more run of ``side``, under ``PYTHONPROFILEIMPORTTIME``, names the modules;
    None when that run fails."""
    run, problem = _one_run(side, master, meta, work_dir, env={"PYTHONPROFILEIMPORTTIME": "1"})
    if problem is not None:
        return None
    names = tuple(n for n in _IMPORTED.findall(run.stderr) if not n.endswith("__main__"))
    if names not in _MODULE_STARTS:
        runs = [run_child([PY, "-c", children.MODULES_START, *names], env=CHILD_ENV) for _ in range(5)]
        _MODULE_STARTS[names] = (statistics.median(r.wall_s for r in runs), runs[-1].report)
    return _MODULE_STARTS[names]


def floor_reads(master: str, kind: str) -> list[str]:
    """The files a row must read at least: ``_last_checkpoint``, the checkpoint it names and the
    commits after it (every commit without one); for ``history`` every commit."""
    log_dir = os.path.join(master, "_delta_log")
    names = sorted(os.listdir(log_dir))
    commits = [n for n in names if n.endswith(".json") and n[:20].isdigit()]
    files: list[str] = []
    after = -1
    hint = os.path.join(log_dir, "_last_checkpoint")
    if os.path.exists(hint):
        with open(hint) as fh:
            after = json.loads(fh.readline())["version"]
        files.append(hint)
        files += [os.path.join(log_dir, n) for n in names if n.startswith("%020d.checkpoint." % after)]
    files += [os.path.join(log_dir, n) for n in commits if kind == "history" or int(n[:20]) > after]
    return files


def _timed_reads(files: list[str]) -> float:
    t = time.perf_counter()
    for f in files:
        with open(f, "rb") as fh:
            fh.read()
    return time.perf_counter() - t


def _timed_writes(folder: str, sizes: list[int]) -> float:
    """Write files of ``sizes`` as the package publishes a commit or a checkpoint: the file
    synced, then its directory (LocalStorage)."""
    os.makedirs(folder, exist_ok=True)
    t = time.perf_counter()
    for i, size in enumerate(sizes):
        with open(os.path.join(folder, f"f{i}"), "wb") as fh:
            fh.write(b"x" * size)
            fh.flush()
            os.fsync(fh.fileno())
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    elapsed = time.perf_counter() - t
    shutil.rmtree(folder, ignore_errors=True)
    return elapsed


@dataclass(frozen=True)
class Floor:
    """What no implementation can go under in a row, measured in this run (:func:`measure_floor`)."""

    seconds: float       # an interpreter start, the reads, the writes
    what: str            # what the seconds are made of
    with_pyarrow: float  # the same with a Python reader's start (pyarrow's readers loaded)
    #: the same with the start of a process that loaded every module our run loaded (not a floor
    #: of the work, the floor of this implementation's work: ours above it is the work itself)
    with_modules: float | None = None


def measure_floor(kind: str, master: str, written: list[int], work_dir: str,
                  loaded: tuple[float, dict] | None = None) -> Floor:
    """A row's floor, measured in this run (warm page cache, as the runs are): an interpreter
    start, a plain read of the files it must read, and for a drop a plain write of the files it
    wrote, each synced with its directory (2 fsyncs a file). Then the same with the start of a
    Python reader (:func:`pyarrow_start_s`) for the interpreter's: the floor of any Python tool
    on pyarrow, which the small rows are measured against."""
    start = interpreter_start_s()
    files = floor_reads(master, kind)
    size = sum(os.path.getsize(f) for f in files)
    read = statistics.median(_timed_reads(files) for _ in range(3))
    write = 0.0
    what = f"start {start:.2f} + read {len(files)} files {size / 1e6:.1f} MB {read:.2f}"
    if kind == "drop" and written:
        write = statistics.median(_timed_writes(os.path.join(work_dir, "floor"), written) for _ in range(3))
        what += f" + write {len(written)} files {sum(written) / 1e6:.1f} MB, {2 * len(written)} fsyncs {write:.2f}"
    runtime = pyarrow_start_s()
    what += f"; with pyarrow's readers loaded (start {runtime:.2f}) {runtime + read + write:.2f}"
    with_modules = None
    if loaded is not None:
        seconds, report = loaded
        with_modules = seconds + read + write
        made = (f", {report['dataclasses']} dataclasses made in {report.get('dataclass_s', 0.0):.3f} s"
                if report.get("dataclasses") else "")
        what += (f"; with our run's modules loaded (start {seconds:.2f}: {report.get('ours', '?')} of ours"
                 f"{made}) {with_modules:.2f}")
    return Floor(start + read + write, what, runtime + read + write, with_modules)


#: A row whose first round (both sides) ran under this many seconds a process is run
#: :data:`SHORT_RUN_FACTOR` times as many rounds as ``--repeat`` says: on this 2-core machine a
#: 0.2-0.4 s process moves by a third from one run to the next, and a median of three can land
#: either side of a goal of 1.0. Its rounds cost seconds where a long row's cost minutes.
SHORT_RUN_S = 1.5
SHORT_RUN_FACTOR = 3


def run_row(row: Row, master: str, meta: dict, repeat: int, work_dir: str) -> Outcome:
    outcome = Outcome()
    keys_ours = {m.ours for m in row.measures}
    keys_base = {m.base for m in row.measures}
    rounds, i = repeat, 0
    first_round: list[float] = []   # the wall times of the first round's runs
    while i < rounds:
        if i == 1 and len(first_round) == 2 and max(first_round) < SHORT_RUN_S:
            rounds = repeat * SHORT_RUN_FACTOR   # a short row: more rounds, a steadier median
        order = [("ours", row.ours), ("base", row.base)]
        if i % 2:
            order.reverse()   # alternate who goes first: neither always runs on a cooler machine
        for who, side in order:
            run, problem = _one_run(side, master, meta, work_dir)
            if problem:
                outcome.problems.append(f"{side.name}: {problem}")
                log(f"    {who:4s} FAILED {problem}")
                continue
            if i == 0:
                first_round.append(run.wall_s)
            if who == "ours" and getattr(run, "written", None) and not outcome.written:
                outcome.written = list(run.written)  # type: ignore[attr-defined]
            times = outcome.ours if who == "ours" else outcome.base
            for key in keys_ours if who == "ours" else keys_base:
                times.setdefault(key, []).append(run.wall_s if key == "wall" else float(run.report[key]))
                cpu = run.cpu_s if key == "wall" else run.report.get(cpu_key(key))
                if cpu is not None:
                    times.setdefault(cpu_key(key), []).append(float(cpu))
            (outcome.ours_rss if who == "ours" else outcome.base_rss).append(run.maxrss_mib)
            extra = ""
            if "driver_rss_mib" in run.report:
                jvm = run.report.get("jvm_rss_mib")
                outcome.ours_rss_text = (f"driver {run.report['driver_rss_mib']:.0f} / JVM "
                                         + ("n/a" if jvm is None else f"{jvm:.0f}"))
                extra = f" ({outcome.ours_rss_text})"
            call = f", call {run.report['call_s']:.2f} s" if "call_s" in run.report else ""
            if "call_cpu_s" in run.report:
                call += f" (CPU {run.report['call_cpu_s']:.2f} s)"
            log(f"    {who:4s} {run.wall_s:7.2f} s (CPU {run.cpu_s:.2f} s){call}, {run.maxrss_mib:6.0f} MiB{extra}"
                f"  [{side.name}]")
        i += 1
    if CALLGRIND and not outcome.problems:
        # Instructions do not depend on what else the machine runs (CPU seconds of a 0.3 s process
        # moved by a third between runs here): one run per side under callgrind says the same.
        counted = []
        for side in (row.ours, row.base):
            run, problem = _one_run(side, master, meta, work_dir, prefix=CALLGRIND)
            counted.append(None if problem else instructions_of(run))
            said = (f"{counted[-1]} instructions" if counted[-1] is not None else
                    problem or "no instruction count (callgrind printed no 'Collected' line)")
            log(f"    {'ours' if side is row.ours else 'base'} {said}  [{side.name}]")
        if None not in counted:
            outcome.instructions = (counted[0], counted[1])
    if row.floor is not None:
        loaded = modules_start(row.ours, master, meta, work_dir) if not outcome.problems else None
        outcome.floor = measure_floor(row.floor, master, outcome.written, work_dir, loaded)
        log(f"    floor {outcome.floor.seconds:.2f} s: {outcome.floor.what}")
    if fingerprint(master) != tuple(meta["fingerprint"]):
        raise SystemExit(f"a run of {row.name} wrote into the master table {master} through a hard link: "
                         f"delete {os.path.dirname(master)} and fix the writer or fresh_copy")
    return outcome


def run_dv_purge(profile: str, repeat: int) -> Outcome:
    """bench/dv_purge_bench.py as one child: it interleaves the purge and the plain Spark rewrite on
    one session itself. Only its whole process's peak RSS is known (the Python driver; the JVM it
    leaves running is not reaped by it)."""
    rows, files = DV_PURGE[profile]
    run = run_child([PY, os.path.join(HERE, "dv_purge_bench.py"), "--rows", str(rows), "--files", str(files),
                     "--repeat", str(repeat)], env=CHILD_ENV, timeout_s=4 * 3_600)
    outcome = Outcome()
    if run.failure():
        outcome.problems.append(f"dv_purge_bench: {run.failure()}")
        return outcome
    found = {m.group(1): ast.literal_eval(m.group(2)) for m in
             re.finditer(r"^(purge|plain Spark).*runs (\[.*\])$", run.stdout, re.MULTILINE)}
    if set(found) != {"purge", "plain Spark"}:
        outcome.problems.append(f"dv_purge_bench printed no runs: {run.stdout[-500:]}")
        return outcome
    outcome.ours["wall"], outcome.base["wall"] = found["purge"], found["plain Spark"]
    outcome.ours_rss_text = f"bench process {run.maxrss_mib:.0f} (driver; both sides)"
    outcome.base_rss_text = "(same process)"
    log(f"    dv purge: {run.stdout.strip().splitlines()[-3:]}")
    return outcome


def has_spark_path() -> str | None:
    """None when this tree has ``spark_checkpoint_table`` and pyspark; else why not."""
    run = run_child([PY, "-c", children.HAS_SPARK_PATH], env=CHILD_ENV, timeout_s=120)
    return None if run.exit_code == 0 else (run.stdout.strip() or run.stderr.strip()[-200:])


# --- the table ----------------------------------------------------------------------------------

def _med_min(values: list[float] | None) -> str:
    return f"{statistics.median(values):.2f} / {min(values):.2f}" if values else "-"


def _med(values: list[float] | None) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def _rss(values: list[float], text: str | None) -> str:
    return text if text else (f"{max(values):.0f}" if values else "-")


def _ratio(ours: list[float] | None, base: list[float] | None) -> tuple[float | None, str]:
    """Median ours / median baseline, and its text with best / best in parentheses."""
    if not ours or not base or not statistics.median(base) or not min(base):
        return None, "-"
    r_med = statistics.median(ours) / statistics.median(base)
    return r_med, f"{r_med:.2f} ({min(ours) / min(base):.2f})"


def _verdict(measure: Measure, ratio: float | None, ours_rss: list[float]) -> str:
    if ratio is None:
        return "-"
    missed = []
    if measure.max_ratio is not None and ratio > measure.max_ratio:
        missed.append("ratio")
    if measure.max_rss_mib is not None and max(ours_rss) > measure.max_rss_mib:
        missed.append("RSS")
    return "NO (" + ", ".join(missed) + ")" if missed else "yes"


def table_lines(results: list[tuple[str, Measure, Outcome]]) -> list[str]:
    """One line per measure. ``CPU ratio`` is read from the CPU times (see bench_process.py): on
    a shared machine it is the ratio to read; ``goal met?`` says it for the CPU ratio, then for
    the wall ratio."""
    header = ["goal", "row", "ours s med / min", "baseline s med / min", "ratio med (min)",
              "CPU ours s med", "CPU baseline s med", "CPU ratio med (min)",
              "peak RSS MiB ours", "peak RSS MiB baseline", "goal met? CPU / wall",
              "floor s (ours / floor): bytes; pyarrow loaded; our modules loaded",
              "instructions M ours / baseline (ratio)"]
    lines = [header]
    for name, measure, o in results:
        ours, base = o.ours.get(measure.ours), o.base.get(measure.base)
        ours_cpu, base_cpu = o.ours.get(cpu_key(measure.ours)), o.base.get(cpu_key(measure.base))
        met = "-"
        floor = "-"
        if o.floor is not None and measure.ours == "wall" and ours:
            floor = (f"{o.floor.seconds:.2f} ({statistics.median(ours) / o.floor.seconds:.1f}x); "
                     f"{o.floor.with_pyarrow:.2f} ({statistics.median(ours) / o.floor.with_pyarrow:.1f}x)")
            if o.floor.with_modules is not None:
                floor += f"; {o.floor.with_modules:.2f} ({statistics.median(ours) / o.floor.with_modules:.1f}x)"
        r_wall, ratio = _ratio(ours, base)
        r_cpu, cpu_ratio = _ratio(ours_cpu, base_cpu)

        if o.note:
            met = o.note
        elif r_wall is not None:
            has_goal = measure.max_ratio is not None or measure.max_rss_mib is not None
            met = f"{_verdict(measure, r_cpu, o.ours_rss)} / {_verdict(measure, r_wall, o.ours_rss)}" if has_goal else "(info)"
        if o.problems:
            met = f"FAILED ({len(o.problems)} run(s)): {o.problems[0][:120]}"
        counted = "-"
        if o.instructions is not None and measure.ours == "wall" and measure.base == "wall":
            mine, theirs = o.instructions
            counted = f"{mine / 1e6:,.0f} / {theirs / 1e6:,.0f} ({mine / theirs:.2f})"
        lines.append([measure.goal, name, _med_min(ours), _med_min(base), ratio, _med(ours_cpu), _med(base_cpu),
                      cpu_ratio, _rss(o.ours_rss, o.ours_rss_text), _rss(o.base_rss, o.base_rss_text), met, floor,
                      counted])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(line, widths)) + " |" for line in lines]
    out.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return out


# --- main ---------------------------------------------------------------------------------------

def delta_jars() -> list[str]:
    """Delta's jars as ``make jars`` resolved them (``.jars/spark.classpath``, without the s3a
    connector): what the delta-spark rows put on their session's classpath."""
    classpath = os.path.join(ROOT, ".jars", "spark.classpath")
    if not os.path.isfile(classpath):
        return []
    with open(classpath, encoding="utf-8") as fh:
        jars = [j for j in fh.read().strip().split(",") if j]
    s3a = ("hadoop-aws-", "bundle-", "analyticsaccelerator-s3-", "wildfly-openssl-")
    return [j for j in jars if not os.path.basename(j).startswith(s3a)]


def build_log_only(files: int, cache: str) -> int:
    """``--log-only-files N``: a commits-only log of N files (N/1000 commits of 1,000 adds, no
    checkpoint) for the acceptance run of the streaming and Spark checkpoint paths."""
    t0 = time.perf_counter()
    path, meta = cached(TableSpec("files", files), cache, log=log)
    print(json.dumps({"path": path, "live_files": meta["live_files"], "last_version": meta["last_version"],
                      "log_bytes": meta["log_bytes"], "build_s": meta["build_s"],
                      "this_call_s": time.perf_counter() - t0}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=PROFILES)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="run the rows whose name contains this text")
    parser.add_argument("--cache", default=DEFAULT_CACHE, help="where built tables are kept and reused")
    parser.add_argument("--src", default=SRC,
                        help="the package tree whose code is measured (default: this repository's src; "
                             "the DV purge row always runs this repository's bench and src)")
    parser.add_argument("--log-only-files", type=int, metavar="N",
                        help="only build (or find) a commits-only log of N files and print its path")
    parser.add_argument("--instructions", action="store_true",
                        help="also run each side once under valgrind's callgrind and print the instructions "
                             "each executed, and their ratio (about 50x slower: for the small rows)")
    args = parser.parse_args(argv)
    if args.instructions:
        valgrind = shutil.which("valgrind")
        if valgrind is None:
            parser.error("--instructions needs valgrind on PATH (Debian's package valgrind)")
        CALLGRIND[:] = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    # A SIGTERM unwinds like Ctrl-C, so that run_child kills the child it is waiting for.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    CHILD_ENV["PYTHONPATH"] = os.path.abspath(args.src)
    CLI_MODULE[0] = cli_module(os.path.abspath(args.src))
    jars = delta_jars()
    if jars and not CHILD_ENV.get("DELTA_DOWNGRADE_DELTA_JARS"):
        CHILD_ENV["DELTA_DOWNGRADE_DELTA_JARS"] = ",".join(jars)
    # Both sides run as installed packages do: from compiled bytecode (pip compiles a wheel's
    # modules at install; a shell with PYTHONDONTWRITEBYTECODE=1 would make every run of ours
    # compile the package again, and none of delta-rs's compiled extension).
    CHILD_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    compileall.compile_dir(os.path.abspath(args.src), quiet=1)
    if args.log_only_files is not None and (args.log_only_files <= 0 or args.log_only_files % 1_000):
        parser.error("--log-only-files: a positive multiple of 1,000 files (commits of 1,000 adds)")
    if args.log_only_files:
        return build_log_only(args.log_only_files, args.cache)

    started = time.perf_counter()
    profile = args.profile or ("large" if args.only else "small")
    upto = PROFILES.index(profile)
    rows = [r for r in (*ROWS, *DELTA_SPARK_ROWS, SPARK_ROW) if PROFILES.index(r.profile) <= upto]
    dv_profiles = [p for p in DV_PURGE if PROFILES.index(p) <= upto]
    dv_name = f"dv purge {DV_PURGE[dv_profiles[-1]][0] / 1e6:g}M rows" if dv_profiles else None
    if args.only:
        only = args.only.lower()
        rows = [r for r in rows if only in r.name.lower()]
        if dv_name and only not in dv_name.lower():
            dv_name = None
    if not rows and not dv_name:
        log(f"no row matches {args.only!r} in profile {profile}")
        return 2

    spark_problem = has_spark_path() if SPARK_ROW in rows else None
    specs = list(dict.fromkeys(r.table for r in rows if not (r is SPARK_ROW and spark_problem)))
    log(f"profile {profile}, {len(rows)} row(s), repeat {args.repeat}; tables in {args.cache}")
    t0 = time.perf_counter()
    masters = {spec: cached(spec, args.cache, log=log) for spec in specs}
    build_s = time.perf_counter() - t0
    work_dir = os.path.join(args.cache, "work")
    os.makedirs(work_dir, exist_ok=True)

    results: list[tuple[str, Measure, Outcome]] = []
    for row in rows:
        if row is SPARK_ROW and spark_problem:
            outcome = Outcome(note=f"n/a (no Spark path in this tree: {spark_problem[:80]})")
        else:
            log(f"  {row.name}: {row.ours.name} vs {row.base.name}")
            master, meta = masters[row.table]
            outcome = run_row(row, master, meta, args.repeat, work_dir)
        results += [(row.name, m, outcome) for m in row.measures]
    if dv_name:
        log(f"  {dv_name}: purge_deletion_vectors vs plain Spark read+write (bench/dv_purge_bench.py)")
        results.append((dv_name, Measure("DV purge vs plain Spark read+rewrite <= 1.3x", max_ratio=1.3),
                        run_dv_purge(dv_profiles[-1], args.repeat)))

    total = time.perf_counter() - started
    print(f"delta-downgrade bench: profile {profile}, repeat {args.repeat}, "
          f"{os.cpu_count()} CPUs; total {total:.0f} s (of which table builds {build_s:.0f} s)")
    print("\n".join(table_lines(results)))
    floors = [(name, o.floor) for name, m, o in results if o.floor is not None and m.ours == "wall"]
    if floors:
        print("\nfloors (measured in this run; warm page cache):")
        print("\n".join(f"  {name}: {f.seconds:.2f} s = {f.what}" for name, f in floors))
    return 1 if any(o.problems for _, _, o in results) else 0


if __name__ == "__main__":
    sys.exit(main())
