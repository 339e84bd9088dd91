"""Benchmark: the DV bitmap codec of the package next to the hand-written Roaring codec it replaced.

The package encodes and decodes each 32-bit Roaring bitmap of a DV with CRoaring (pyroaring); up
to the commit that adopted it, ``deletion_vectors.py`` held a pure Python + pyarrow codec. This
loads that module from git (``--handwritten REV``: the last commit that had it, found by default)
and times both on realistic DVs (PROTOCOL.md "Deletion Vector Format"):

- ``sparse``: 2,000 scattered rows of a 10-million-row file (array containers);
- ``purge``: a 1-million-row file with 5% scattered rows and a 5% range deleted (the mix of
  ``dv_purge_bench.py``);
- ``runs``: 90% of a 10-million-row file deleted in 50 long runs (run containers);
- ``containers``: every third row of 12 million (bitmap containers, 184 of them);
- ``wide``: 8 buckets above 2^32 (64-bit keys), each with scattered rows and a run.

Operations: ``encode`` (``serialize_bitmap`` of a sorted Python list, what the builders pass),
``encode_arrow`` (of a ``pyarrow.UInt64Array``), ``decode`` (``parse_dv_data``: the broadcast
purge), ``runs`` (``parse_dv_runs``: the shuffle purge), ``count`` (``dv_data_cardinality``:
the header-only check). Both codecs must give the same bytes and the same rows; the best of
``--repeat`` runs is printed and the ratio package / hand-written (< 1: the package is faster).

Usage: .venv/bin/python bench/roaring_bench.py [--repeat R] [--handwritten REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import pyarrow as pa  # noqa: E402

import delta_downgrade.deletion_vectors as package  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OLD_PATH = "src/delta_downgrade/deletion_vectors.py"


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], check=True, capture_output=True, text=True).stdout.strip()


def load_handwritten(rev: str | None):
    """The single-module codec at ``rev`` (default: the parent of the commit that removed it)."""
    if rev is None:
        removed = _git("log", "-1", "--format=%H", "--diff-filter=D", "--", OLD_PATH)
        rev = f"{removed}^" if removed else "HEAD"
    source = _git("show", f"{rev}:{OLD_PATH}")
    path = os.path.join(tempfile.mkdtemp(prefix="roaring-bench-"), "handwritten_dv.py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location("handwritten_dv", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["handwritten_dv"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module, rev


def cases(seed: int = 11) -> dict[str, list[int]]:
    rng = random.Random(seed)
    out: dict[str, list[int]] = {}
    out["sparse"] = sorted(rng.sample(range(10_000_000), 2_000))
    n = 1_000_000
    start = rng.randrange(0, n - n // 20)
    out["purge"] = sorted(set(rng.sample(range(n), n // 20)) | set(range(start, start + n // 20)))
    runs: list[int] = []
    step = 10_000_000 // 50
    for i in range(50):
        runs.extend(range(i * step, i * step + step * 9 // 10))
    out["runs"] = runs
    out["containers"] = list(range(0, 12_000_000, 3))
    wide: set[int] = set()
    for bucket in range(1, 9):
        base = bucket << 32
        wide.update(base + v for v in rng.sample(range(1 << 22), 20_000))
        begin = base + rng.randrange(1 << 22)
        wide.update(range(begin, begin + 100_000))
    out["wide"] = sorted(wide)
    return out


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--handwritten", default=None, help="git revision holding deletion_vectors.py")
    args = parser.parse_args()
    old, rev = load_handwritten(args.handwritten)
    print(f"hand-written codec: {OLD_PATH} at {rev}; package: {package.__file__}")
    print(f"{'case':<11} {'rows':>10} {'op':<13} {'hand-written':>13} {'package':>10} {'ratio':>7}")
    ratios: list[float] = []
    for name, values in cases().items():
        arrow = pa.array(values, pa.uint64())
        data = old.serialize_bitmap(values)
        assert package.serialize_bitmap(values) == data, f"{name}: the bytes differ"
        assert package.serialize_bitmap(arrow) == data, f"{name}: the bytes differ (Arrow input)"
        assert package.parse_dv_data(data).equals(old.parse_dv_data(data)), f"{name}: the rows differ"
        old_runs, new_runs = old.parse_dv_runs(data), package.parse_dv_runs(data)
        assert all(a.equals(b) for a, b in zip(old_runs, new_runs)), f"{name}: the runs differ"
        ops = {
            "encode": ("serialize_bitmap", values),
            "encode_arrow": ("serialize_bitmap", arrow),
            "decode": ("parse_dv_data", data),
            "runs": ("parse_dv_runs", data),
            "count": ("dv_data_cardinality", data),
        }
        for op, (function, argument) in ops.items():
            t_old = best(partial(getattr(old, function), argument), args.repeat)
            t_new = best(partial(getattr(package, function), argument), args.repeat)
            ratio = t_new / t_old
            ratios.append(ratio)
            print(f"{name:<11} {len(values):>10} {op:<13} {t_old * 1e3:>10.2f} ms {t_new * 1e3:>7.2f} ms {ratio:>7.2f}")
    geo = 1.0
    for r in ratios:
        geo *= r
    print(f"geometric mean of the ratios (package / hand-written): {geo ** (1 / len(ratios)):.2f}; "
          f"worst {max(ratios):.2f}")


if __name__ == "__main__":
    main()
