"""The benchmark tables of ``run_all.py``: Delta logs written directly as commit JSON (no data
files: every benchmarked operation reads only the log), cached once per parameter set.

Two shapes, both with the add actions a Spark append writes (partitioned path, one partition
value, size, modificationTime, dataChange and a stats JSON string for three columns: ~450 bytes a
line, the shape of ``checkpoint_bench._add``) and with tombstones:

- ``files``: ``live_files / 1000`` commits of 1,000 adds. Every tenth commit (v % 10 == 9) is also
  a small rewrite: it removes the first 100 files of commit v-5 and adds 100 replacements, so that
  the live count stays exactly ``live_files`` and ~1% of all adds end as tombstones. Optionally a
  classic checkpoint a few commits before the end (``prior_checkpoint``), as a Spark writer with
  checkpointInterval 10 leaves it.
- ``commits``: ``commits`` commits of one add each; every fourth commit (v % 4 == 3) also removes
  the file of commit v-2. Optionally a classic checkpoint every ``checkpoint_every`` commits at
  versions 100, 200, ... (delta-spark checkpoints when ``version % interval == 0``).

Version 0 holds protocol (3, 7, readerFeatures [deletionVectors], writerFeatures
[deletionVectors]) and ``delta.enableDeletionVectors=true``; no file has a deletion vector, so
dropping deletionVectors is the metadata-only fast drop.

The checkpoints are written by delta-rs (``DeltaTable(path, version=v).create_checkpoint()``), not
by this package, so that the tables do not depend on the code under measure.

The JSON is formatted with string templates (no ``json.dumps`` per field) by one process per CPU:
10M files (10,000 commits of 1,000 adds, ~4.5 GB) take a few minutes on 2 cores.

Timestamps: the last commit is dated at build time and commits are ``spacing_s`` apart, so that
the recent tombstones are within the default retention (deletedFileRetentionDuration, 7 days) and
checkpoints keep them; a cached table older than ``STALE_AFTER_S`` is rebuilt.
"""

from __future__ import annotations

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
BUILDER_VERSION = 1
STALE_AFTER_S = 6 * 86_400
PARTITIONS = 50
FILES_PER_COMMIT = 1_000
REWRITE_EVERY = 10          # files shape: every tenth commit rewrites REWRITE_FILES files ...
REWRITE_LAG = 5             # ... of the commit REWRITE_LAG versions before
REWRITE_FILES = 100
PRIOR_CHECKPOINT_BACK = 9   # files shape: the prior checkpoint is this many commits before the end

SCHEMA_STRING = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "name", "type": "string", "nullable": True, "metadata": {}},
    {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
    {"name": "part", "type": "integer", "nullable": True, "metadata": {}},
]}, separators=(",", ":"))

PROTOCOL_LINE = ('{"protocol":{"minReaderVersion":3,"minWriterVersion":7,'
                 '"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}')

_ADD = ('{"add":{"path":"%s","partitionValues":{"part":"%d"},"size":%d,"modificationTime":%d,'
        '"dataChange":true,"stats":"{\\"numRecords\\":%d,\\"minValues\\":{\\"id\\":%d,'
        '\\"name\\":\\"name-%06d\\",\\"ts\\":\\"%s\\"},\\"maxValues\\":{\\"id\\":%d,'
        '\\"name\\":\\"name-%06d\\",\\"ts\\":\\"%s\\"},\\"nullCount\\":{\\"id\\":0,'
        '\\"name\\":%d,\\"ts\\":0}}"}}')
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

    @property
    def key(self) -> str:
        return f"{self.shape}-{self.size}-{self.checkpoint}-b{BUILDER_VERSION}"

    @property
    def label(self) -> str:
        n = _short(self.size)
        if self.shape == "files":
            return f"{n} files" + (" +ckpt" if self.checkpoint == "prior" else "")
        return f"{n} commits" + (" ckpt/100" if self.checkpoint == "every100" else " no ckpt")

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
        return self.size - _commits_removals(self.size)


def _short(n: int) -> str:
    for div, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suffix}"
    return str(n)


def _commits_removals(commits: int) -> int:
    """Commits shape: commit v (v % 4 == 3) removes the file of commit v-2."""
    return len(range(3, commits, 4))


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


def _add_line(f) -> str:
    name, part, size, mtime, rows, lo, name_lo, ts_lo, hi, name_hi, ts_hi, nulls = f
    return _ADD % (name, part, size, mtime, rows, lo, name_lo, ts_lo, hi, name_hi, ts_hi, nulls)


def _remove_line(f, deleted_ms: int) -> str:
    return _REMOVE % (f[0], deleted_ms, f[1], f[2])


def _commit_lines(spec: TableSpec, anchor_ms: int, spacing_ms: int, version: int, table_id: str) -> list[str]:
    ms = anchor_ms - (spec.commits - 1 - version) * spacing_ms
    rng = random.Random(version)
    lines: list[str] = []
    removes: list[str] = []
    adds: list[str] = []
    if spec.shape == "files":
        adds = [_add_line(f) for f in _files(version, FILES_PER_COMMIT, ms)]
        if version % REWRITE_EVERY == REWRITE_EVERY - 1 and version >= REWRITE_LAG:
            old = version - REWRITE_LAG
            old_ms = anchor_ms - (spec.commits - 1 - old) * spacing_ms
            removes = [_remove_line(f, ms) for f in _files(old, REWRITE_FILES, old_ms)]
            adds += [_add_line(f) for f in _files(version, REWRITE_FILES, ms, FILES_PER_COMMIT)]
    else:
        adds = [_add_line(f) for f in _files(version, 1, ms)]
        if version % 4 == 3:
            old = version - 2
            old_ms = anchor_ms - (spec.commits - 1 - old) * spacing_ms
            removes = [_remove_line(f, ms) for f in _files(old, 1, old_ms)]
    operation = "WRITE" if not removes else "MERGE"
    lines.append(_COMMIT_INFO % (ms, operation, version - 1, "false" if removes else "true", _uuid(rng)))
    if version == 0:
        lines.append(PROTOCOL_LINE)
        lines.append(json.dumps({"metaData": {
            "id": table_id, "format": {"provider": "parquet", "options": {}},
            "schemaString": SCHEMA_STRING, "partitionColumns": ["part"],
            "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": ms}},
            separators=(",", ":")))
    return lines + removes + adds


def _write_commits(job: tuple) -> int:
    spec, log_dir, anchor_ms, spacing_ms, table_id, first, last = job
    written = 0
    for version in range(first, last):
        text = "\n".join(_commit_lines(spec, anchor_ms, spacing_ms, version, table_id)) + "\n"
        with open(os.path.join(log_dir, "%020d.json" % version), "w") as fh:
            fh.write(text)
        written += len(text)
    return written


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


def write_log(spec: TableSpec, path: str, *, processes: int | None = None) -> dict:
    """Write the commits of ``spec`` under ``path/_delta_log`` (no checkpoint)."""
    log_dir = os.path.join(path, "_delta_log")
    os.makedirs(log_dir)
    spacing_ms = 60_000 if spec.shape == "files" else 1_000
    anchor_ms = int(time.time() * 1000) // 1000 * 1000
    table_id = "%08x-0000-4000-8000-%012x" % (spec.size % 2**32, BUILDER_VERSION)
    processes = processes or os.cpu_count() or 1
    step = max(1, min(100, spec.commits // (processes * 4) or 1))
    jobs = [(spec, log_dir, anchor_ms, spacing_ms, table_id, first, min(first + step, spec.commits))
            for first in range(0, spec.commits, step)]
    if processes > 1 and len(jobs) > 1:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            log_bytes = sum(pool.imap_unordered(_write_commits, jobs))
    else:
        log_bytes = sum(map(_write_commits, jobs))
    return {"anchor_ms": anchor_ms, "log_bytes": log_bytes}


def build(spec: TableSpec, path: str) -> dict:
    """Build ``spec`` at ``path``: its commits, then its checkpoints (by delta-rs)."""
    t0 = time.perf_counter()
    info = write_log(spec, path)
    versions = spec.checkpoint_versions()
    if versions:
        proc = subprocess.run([sys.executable, "-c", _CHECKPOINTER, path, json.dumps(versions)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"delta-rs checkpoints of {spec.key} failed: {proc.stderr[-2000:]}")
    info.update(spec=asdict(spec), key=spec.key, last_version=spec.commits - 1,
                live_files=spec.live_files(), checkpoints=versions, built_at=time.time(),
                build_s=time.perf_counter() - t0)
    return info


def cached(spec: TableSpec, cache_dir: str, log=print) -> tuple[str, dict]:
    """The master copy of ``spec`` in ``cache_dir`` (built now when absent, incomplete or stale)
    and its build info. Never to be written by a benchmark run: copy it first."""
    folder = os.path.join(cache_dir, "tables", spec.key)
    table, meta_path = os.path.join(folder, "table"), os.path.join(folder, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as fh:
            meta = json.load(fh)
        if time.time() - meta["built_at"] < STALE_AFTER_S:
            return table, meta
        log(f"  {spec.key}: built {(time.time() - meta['built_at']) / 86_400:.1f} days ago; its "
            f"tombstones near the retention limit: rebuilding")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    log(f"  building {spec.label} ({spec.key}) ...")
    meta = build(spec, table)
    with open(meta_path + ".tmp", "w") as fh:    # meta.json last: its presence marks a whole table
        json.dump(meta, fh)
    os.replace(meta_path + ".tmp", meta_path)
    log(f"  built {spec.label}: {meta['log_bytes'] / 1e6:.0f} MB of commit JSON, "
        f"{len(meta['checkpoints'])} checkpoint(s), {meta['build_s']:.1f} s")
    return table, meta
