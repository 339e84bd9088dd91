"""The benchmark tables of ``run_all.py``: Delta logs written directly as commit JSON (no data
files unless asked for: every operation measured but delta-spark's drop reads only the log), cached
once per parameter set.

Two shapes, both with the add actions a Spark append writes (partitioned path, one partition
value, size, modificationTime, dataChange and a stats JSON string for three columns: ~450 bytes a
line, the shape of ``checkpoint_bench._add``) and with tombstones:

- ``files``: ``live_files / 1000`` commits of 1,000 adds. Every tenth commit (v % 10 == 9) is also
  a small rewrite: it removes the first 100 files of commit v-5 and adds 100 replacements, so that
  the live count stays exactly ``live_files`` and ~1% of all adds end as tombstones. Optionally a
  classic checkpoint 9 commits before the end (``prior``, by delta-rs), as a Spark writer with
  checkpointInterval 10 leaves it.
- ``commits``: ``commits`` commits of a streaming writer: each appends one file, and every
  hundredth (v % 100 == 99) is an OPTIMIZE that removes the 99 files appended since the last one
  and adds one compacted file — a few live files per 100 commits and 99 tombstones, so that the
  commit count, not the file count, is what this shape measures. Optionally (``every100``) a
  classic checkpoint at versions 100, 200, ... (delta-spark checkpoints when ``version % interval
  == 0``; 100 like inspect_bench).

Version 0 holds protocol (3, 7, readerFeatures [deletionVectors], writerFeatures
[deletionVectors]) and ``delta.enableDeletionVectors=true``; no file has a deletion vector, so
dropping deletionVectors is the metadata-only fast drop.

With data (``TableSpec(..., data=True)``, the tables of the delta-spark rows): every added path is
a real Parquet file. delta-spark's DROP FEATURE deletionVectors scans the live files, which a log
alone does not have. All the files hold the same few rows (one file written with pyarrow,
``DATA_ROWS`` rows of the table's schema without the partition column) and are hard links of it
(a new copy every ``LINKS_PER_TEMPLATE`` links: ext4 allows 65,000 links to one inode); every add
carries that file's size and statistics, so that the log tells the truth about the files it names.
Creating a link costs what creating the file would not: ~50 us, 1M files in about a minute.

No checkpoint is written by this package, so that the tables do not depend on the code under
measure: the one prior checkpoint of the files shape by delta-rs (``DeltaTable(path,
version=v).create_checkpoint()``); the many of the commits shape by bench_checkpoint.py (pyarrow)
from the builder's own state, as delta-rs lists the whole log for each checkpoint (~1 s each at
10k commits, and growing).

The JSON is formatted with string templates (no ``json.dumps`` per field) by one process per CPU:
10M files (10,000 commits of 1,000 adds, ~4.5 GB) take a few minutes on 2 cores.

Timestamps: the last commit is dated at build time, commits are one minute (files shape) or 30 s
(commits shape) apart, so that the recent tombstones are within the default retention
(deletedFileRetentionDuration, 7 days) and checkpoints keep them (the 100k-commit log spans 35
days: its older tombstones are expired); a cached table older than ``STALE_AFTER_S`` is rebuilt.
"""

from __future__ import annotations

import glob
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

# Bump when the builder's output changes: cached tables of another version are rebuilt.
BUILDER_VERSION = 2
DATA_ROWS = 4                 # rows of every data file (data=True)
DATA_TS_MS = 1_700_000_000_000  # their one timestamp
LINKS_PER_TEMPLATE = 60_000   # hard links to one copy of the data file (ext4: at most 65,000)
STALE_AFTER_S = 6 * 86_400
PARTITIONS = 50
FILES_PER_COMMIT = 1_000
REWRITE_EVERY = 10          # files shape: every tenth commit rewrites REWRITE_FILES files ...
REWRITE_LAG = 5             # ... of the commit REWRITE_LAG versions before
REWRITE_FILES = 100
OPTIMIZE_EVERY = 100        # commits shape: v % 100 == 99 compacts the files appended since the last
RETENTION_MS = 7 * 86_400_000   # delta.deletedFileRetentionDuration default: tombstones a checkpoint keeps
PRIOR_CHECKPOINT_BACK = 9   # files shape: the prior checkpoint is this many commits before the end

SCHEMA_STRING = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "name", "type": "string", "nullable": True, "metadata": {}},
    {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
    {"name": "part", "type": "integer", "nullable": True, "metadata": {}},
]}, separators=(",", ":"))

PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors"]}

_STATS = ('{"numRecords":%d,"minValues":{"id":%d,"name":"name-%06d","ts":"%s"},"maxValues":'
          '{"id":%d,"name":"name-%06d","ts":"%s"},"nullCount":{"id":0,"name":%d,"ts":0}}')
_ADD = ('{"add":{"path":"%s","partitionValues":{"part":"%d"},"size":%d,"modificationTime":%d,'
        '"dataChange":true,"stats":"%s"}}')
_REMOVE = ('{"remove":{"path":"%s","deletionTimestamp":%d,"dataChange":true,'
           '"extendedFileMetadata":true,"partitionValues":{"part":"%d"},"size":%d}}')
_COMMIT_INFO = ('{"commitInfo":{"timestamp":%d,"operation":"%s","operationParameters":'
                '{"mode":"Append","partitionBy":"[\\"part\\"]"},"readVersion":%d,"isBlindAppend":%s,'
                '"engineInfo":"Apache-Spark/3.5.1 Delta-Lake/3.1.0","txnId":"%s"}}')


@dataclass(frozen=True)
class TableSpec:
    """One benchmark table; ``key`` names its cache folder."""

    shape: str                       # "files" or "commits"
    size: int                        # live files (files shape) or commits (commits shape)
    checkpoint: str = "none"         # "none", "prior" (files) or "every100" (commits)
    data: bool = False               # every added path a real Parquet file (the module docstring)

    @property
    def key(self) -> str:
        return f"{self.shape}-{self.size}-{self.checkpoint}{'-data' if self.data else ''}-b{BUILDER_VERSION}"

    @property
    def label(self) -> str:
        n = _short(self.size)
        data = " +data" if self.data else ""
        if self.shape == "files":
            return f"{n} files" + (" +ckpt" if self.checkpoint == "prior" else "") + data
        return f"{n} commits" + (" ckpt/100" if self.checkpoint == "every100" else " no ckpt") + data

    @property
    def commits(self) -> int:
        return self.size // FILES_PER_COMMIT if self.shape == "files" else self.size

    def checkpoint_versions(self) -> list[int]:
        last = self.commits - 1
        if self.checkpoint == "prior":
            return [max(0, last - PRIOR_CHECKPOINT_BACK)]
        if self.checkpoint == "every100":
            return list(range(100, last + 1, 100))
        return []

    def live_files(self) -> int:
        if self.shape == "files":
            return self.size
        # One compacted file per full block of 100 commits, one per commit of the last partial block.
        return self.size // OPTIMIZE_EVERY + self.size % OPTIMIZE_EVERY


def _short(n: int) -> str:
    for div, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suffix}"
    return str(n)


# --- generating the actions ---------------------------------------------------------------------

_MINUTE_PREFIX: dict[int, str] = {}


def _iso(ms: int) -> str:
    """``ms`` as Spark spells a timestamp in stats (UTC, milliseconds), formatting each minute once."""
    minute, rest = divmod(ms, 60_000)
    prefix = _MINUTE_PREFIX.get(minute)
    if prefix is None:
        if len(_MINUTE_PREFIX) > 100_000:
            _MINUTE_PREFIX.clear()
        prefix = _MINUTE_PREFIX[minute] = time.strftime("%Y-%m-%dT%H:%M:", time.gmtime(minute * 60))
    return "%s%02d.%03dZ" % (prefix, rest // 1000, rest % 1000)


def _uuid(rng: random.Random) -> str:
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _files(version: int, count: int, commit_ms: int, first_index: int = 0):
    """The files ``first_index..first_index+count-1`` that commit ``version`` adds, as the values
    of their add lines (path, partition, size, modificationTime, stats). Deterministic in
    (version, index), so that a later commit can name the same paths in its removes. One 256-bit
    draw per file, cut into its fields (a per-field ``randrange`` costs 4x as much)."""
    rng = random.Random(version * 7_919 + 17)
    for index in range(first_index + count):
        bits = rng.getrandbits(256)
        if index < first_index:   # the draws of the earlier files, to stay deterministic
            continue
        h = "%032x" % (bits & (2**128 - 1))
        bits >>= 128
        part = bits % PARTITIONS
        size = 100_000 + (bits >> 8) % 49_900_000
        rows = 1_000 + (bits >> 34) % 99_000
        ts_min = commit_ms - (bits >> 51) % 86_400_000
        ts_max = ts_min + (bits >> 78) % 3_600_000
        name_lo, name_hi, nulls = (bits >> 100) % 10**6, (bits >> 120) % 10**6, (bits >> 124) % 10
        name = "part=%d/part-%05d-%s-%s-%s-%s-%s.c000.snappy.parquet" % (
            part, index, h[:8], h[8:12], h[12:16], h[16:20], h[20:])
        first_id = (version * 10_000 + index) * 100_000
        yield (name, part, size, commit_ms + index, rows, first_id, name_lo, _iso(ts_min),
               first_id + rows - 1, name_hi, _iso(ts_max), nulls)


def _stats(f) -> str:
    return _STATS % f[4:]


def _add_line(f) -> str:
    return _ADD % (f[0], f[1], f[2], f[3], _stats(f).replace('"', '\\"'))


def _remove_line(f, deleted_ms: int) -> str:
    return _REMOVE % (f[0], deleted_ms, f[1], f[2])


@dataclass(frozen=True)
class _Log:
    """The actions of every commit of one table, generated on demand (the same in every process)."""

    spec: TableSpec
    anchor_ms: int      # the last commit's timestamp
    spacing_ms: int
    table_id: str
    data_size: int | None = None   # data=True: the size of the one data file every add names

    def commit_ms(self, version: int) -> int:
        return self.anchor_ms - (self.spec.commits - 1 - version) * self.spacing_ms

    def metadata(self) -> dict:
        return {"id": self.table_id, "format": {"provider": "parquet", "options": {}},
                "schemaString": SCHEMA_STRING, "partitionColumns": ["part"],
                "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": self.commit_ms(0)}

    def actions(self, version: int) -> tuple[str, list, list]:
        """(operation, removed files, added files) of commit ``version``; a removed file's
        deletionTimestamp is the commit's timestamp."""
        operation, removes, adds = self._generated(version)
        if self.data_size is None:
            return operation, removes, adds
        return operation, [self._data(f) for f in removes], [self._data(f) for f in adds]

    def _generated(self, version: int) -> tuple[str, list, list]:
        ms = self.commit_ms(version)
        if self.spec.shape == "files":
            adds = list(_files(version, FILES_PER_COMMIT, ms))
            if version % REWRITE_EVERY == REWRITE_EVERY - 1 and version >= REWRITE_LAG:
                old = version - REWRITE_LAG
                removes = list(_files(old, REWRITE_FILES, self.commit_ms(old)))
                return "MERGE", removes, adds + list(_files(version, REWRITE_FILES, ms, FILES_PER_COMMIT))
            return "WRITE", [], adds
        adds = list(_files(version, 1, ms))
        if version % OPTIMIZE_EVERY == OPTIMIZE_EVERY - 1:
            appended = range(version - OPTIMIZE_EVERY + 1, version)
            return "OPTIMIZE", [next(_files(v, 1, self.commit_ms(v))) for v in appended], adds
        return "STREAMING UPDATE", [], adds

    def _data(self, f: tuple) -> tuple:
        """``f`` (a generated file) with the size and statistics of the data file (data=True)."""
        ts = _iso(DATA_TS_MS)
        return (f[0], f[1], self.data_size, f[3], DATA_ROWS, 0, 0, ts, DATA_ROWS - 1, DATA_ROWS - 1, ts, 0)

    def lines(self, version: int) -> list[str]:
        ms = self.commit_ms(version)
        operation, removes, adds = self.actions(version)
        lines = [_COMMIT_INFO % (ms, operation, version - 1, "false" if removes else "true",
                                 _uuid(random.Random(version)))]
        if version == 0:
            lines.append(json.dumps({"protocol": PROTOCOL}, separators=(",", ":")))
            lines.append(json.dumps({"metaData": self.metadata()}, separators=(",", ":")))
        return lines + [_remove_line(f, ms) for f in removes] + [_add_line(f) for f in adds]


def _write_commits(job: tuple) -> int:
    table_log, log_dir, first, last = job
    written = 0
    for version in range(first, last):
        text = "\n".join(table_log.lines(version)) + "\n"
        with open(os.path.join(log_dir, "%020d.json" % version), "w") as fh:
            fh.write(text)
        written += len(text)
    return written


def _write_own_checkpoints(table_log: _Log, log_dir: str, versions: list[int]) -> None:
    """Replay the generated actions in memory and write a classic checkpoint at each of
    ``versions``: the live files and the tombstones still within the retention now."""
    from bench_checkpoint import write_checkpoint

    live: dict[str, tuple] = {}
    tombstones: dict[str, tuple] = {}
    wanted = set(versions)
    cutoff = int(time.time() * 1000) - RETENTION_MS
    for version in range(max(versions) + 1):
        ms = table_log.commit_ms(version)
        _, removes, adds = table_log.actions(version)
        for f in removes:
            live.pop(f[0], None)
            tombstones[f[0]] = (f, ms)
        for f in adds:
            tombstones.pop(f[0], None)
            live[f[0]] = f
        if version in wanted:
            files = list(live.values())
            kept = [(f, t) for f, t in tombstones.values() if t >= cutoff]
            write_checkpoint(log_dir, version, PROTOCOL, table_log.metadata(), "part",
                             ([f[0] for f in files], [f[1] for f in files], [f[2] for f in files],
                              [f[3] for f in files], [_stats(f) for f in files]),
                             ([f[0] for f, _ in kept], [t for _, t in kept], [f[1] for f, _ in kept],
                              [f[2] for f, _ in kept]))


# --- building and caching -----------------------------------------------------------------------

_CHECKPOINTER = r"""
import json, os, sys
from deltalake import DeltaTable
path, versions = sys.argv[1], json.loads(sys.argv[2])
dt = DeltaTable(path, version=versions[0])
for v in versions:
    if dt.version() != v:
        dt.load_as_version(v)
    dt.create_checkpoint()
sys.stdout.flush()
os._exit(0)  # delta-rs was seen to abort at interpreter teardown
"""


def write_data_file(path: str) -> int:
    """The one data file of a data=True table (its rows: ``DATA_ROWS``, the schema without the
    partition column, as a Spark append writes it); returns its size."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "id": pa.array(range(DATA_ROWS), pa.int64()),
        "name": pa.array(["name-%06d" % i for i in range(DATA_ROWS)], pa.string()),
        "ts": pa.array([DATA_TS_MS * 1000] * DATA_ROWS, pa.timestamp("us", tz="UTC")),
    })
    pq.write_table(table, path, compression="snappy")
    return os.path.getsize(path)


def _link_data_files(job: tuple) -> int:
    """Job of :func:`write_log`: every path the commits ``first..last-1`` add, as a hard link of
    the data file (its own copies of it: one per ``LINKS_PER_TEMPLATE`` links)."""
    table_log, path, data_file, first, last = job
    copy, links, made = None, LINKS_PER_TEMPLATE, 0
    for version in range(first, last):
        for f in table_log.actions(version)[2]:
            if links >= LINKS_PER_TEMPLATE:
                copy = "%s.%d.%d" % (data_file, first, made)
                shutil.copyfile(data_file, copy)
                links = 0
            dest = os.path.join(path, f[0])
            try:
                os.link(copy, dest)
            except FileNotFoundError:
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                os.link(copy, dest)
            links, made = links + 1, made + 1
    return made


def _run_jobs(function, jobs: list, processes: int) -> int:
    if processes > 1 and len(jobs) > 1:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            return sum(pool.imap_unordered(function, jobs))
    return sum(map(function, jobs))


def write_log(spec: TableSpec, path: str, *, processes: int | None = None) -> tuple[_Log, dict]:
    """Write the commits of ``spec`` under ``path/_delta_log`` (no checkpoint), and with
    ``spec.data`` the data files they add (the data file itself beside ``path``)."""
    log_dir = os.path.join(path, "_delta_log")
    os.makedirs(log_dir)
    data_file = os.path.join(os.path.dirname(path), "data-file.parquet") if spec.data else None
    table_log = _Log(spec, anchor_ms=int(time.time()) * 1000,
                     spacing_ms=60_000 if spec.shape == "files" else 30_000,
                     table_id="%08x-0000-4000-8000-%012x" % (spec.size % 2**32, BUILDER_VERSION),
                     data_size=write_data_file(data_file) if data_file else None)
    processes = processes or os.cpu_count() or 1
    step = max(1, min(100, spec.commits // (processes * 4)))
    ranges = [(first, min(first + step, spec.commits)) for first in range(0, spec.commits, step)]
    log_bytes = _run_jobs(_write_commits, [(table_log, log_dir, *r) for r in ranges], processes)
    info = {"anchor_ms": table_log.anchor_ms, "log_bytes": log_bytes}
    if data_file:
        info["data_files"] = _run_jobs(_link_data_files, [(table_log, path, data_file, *r) for r in ranges],
                                       processes)
    return table_log, info


def build(spec: TableSpec, path: str) -> dict:
    """Build ``spec`` at ``path``: its commits, then its checkpoints."""
    t0 = time.perf_counter()
    table_log, info = write_log(spec, path)
    versions = spec.checkpoint_versions()
    if spec.checkpoint == "prior":
        proc = subprocess.run([sys.executable, "-c", _CHECKPOINTER, path, json.dumps(versions)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"delta-rs checkpoints of {spec.key} failed: {proc.stderr[-2000:]}")
    elif versions:
        _write_own_checkpoints(table_log, os.path.join(path, "_delta_log"), versions)
    info.update(spec=asdict(spec), key=spec.key, last_version=spec.commits - 1,
                live_files=spec.live_files(), checkpoints=versions, built_at=time.time(),
                build_s=time.perf_counter() - t0, fingerprint=fingerprint(path))
    return info


def fresh_copy(master: str, dest: str) -> None:
    """A copy of ``master`` at ``dest`` that a run may write: its log files hard-linked and
    ``_last_checkpoint``, which writers replace, copied. A commit file is created once and never
    written again (PROTOCOL.md "Delta Log Entries"); the runs write checkpoints of versions the
    master has none of, and a writer that replaces a file by rename leaves the linked master file
    alone. Linking costs ~50 us a file where creating one was seen to cost 3 ms on this machine's
    ext4 under load: copying a 100k-commit log would take minutes per run. The data folders of a
    data=True table (the partition directories) are symbolic links to the master's: the drops
    measured read data files and write only log files.
    :func:`fingerprint` checks after each row that no run wrote through a link into the master."""
    def link_or_copy(src: str, dst: str) -> None:
        if os.path.basename(src) == "_last_checkpoint":
            shutil.copy2(src, dst)
        else:
            os.link(src, dst)

    os.makedirs(dest)
    for name in os.listdir(master):
        if name == "_delta_log":
            shutil.copytree(os.path.join(master, name), os.path.join(dest, name), copy_function=link_or_copy)
        else:
            os.symlink(os.path.join(master, name), os.path.join(dest, name))


def fingerprint(master: str) -> tuple[int, int, int]:
    """(files, bytes, newest mtime in ns) of a master table: what a write through a hard link of
    :func:`fresh_copy` would change."""
    count = size = newest = 0
    for folder, _, names in os.walk(master):
        for name in names:
            st = os.stat(os.path.join(folder, name))
            count, size, newest = count + 1, size + st.st_size, max(newest, st.st_mtime_ns)
    return count, size, newest


def cached(spec: TableSpec, cache_dir: str, log=print) -> tuple[str, dict]:
    """The master copy of ``spec`` in ``cache_dir`` (built now when absent, incomplete or stale)
    and its build info. Never to be written by a benchmark run: copy it first."""
    folder = os.path.join(cache_dir, "tables", spec.key)
    table, meta_path = os.path.join(folder, "table"), os.path.join(folder, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as fh:
            meta = json.load(fh)
        if time.time() - meta["built_at"] < STALE_AFTER_S:
            if "fingerprint" not in meta:   # a table of an earlier harness: take it now
                meta["fingerprint"] = fingerprint(table)
                _write_meta(meta_path, meta)
            return table, meta
        log(f"  {spec.key}: built {(time.time() - meta['built_at']) / 86_400:.1f} days ago; its "
            f"tombstones near the retention limit: rebuilding")
    shutil.rmtree(folder, ignore_errors=True)
    stem = spec.key[:spec.key.rindex("-b")]
    for other in glob.glob(os.path.join(cache_dir, "tables", stem + "-b*")):   # older builders' tables
        shutil.rmtree(other, ignore_errors=True)
    os.makedirs(folder)
    log(f"  building {spec.label} ({spec.key}) ...")
    meta = build(spec, table)
    _write_meta(meta_path, meta)   # meta.json last: its presence marks a whole table
    log(f"  built {spec.label}: {meta['log_bytes'] / 1e6:.0f} MB of commit JSON, "
        f"{len(meta['checkpoints'])} checkpoint(s), {meta['build_s']:.1f} s")
    return table, meta


def _write_meta(meta_path: str, meta: dict) -> None:
    with open(meta_path + ".tmp", "w") as fh:
        json.dump(meta, fh)
    os.replace(meta_path + ".tmp", meta_path)
