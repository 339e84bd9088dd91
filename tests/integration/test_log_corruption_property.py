"""Random damage to a table's log, and what every writing command must then do.

For each of ``N`` seeded cases, one file of a table's log - a commit, a checkpoint file or part, a
V2 sidecar, ``_last_checkpoint`` - is damaged in one way: a single byte changed, or a structural
change (cut short, emptied, a line dropped, doubled or replaced by garbage, a file replaced by
another of its kind). Then a command runs on it - ``drop-feature`` (which writes commits and
checkpoints from the state it reads) or ``vacuum`` with no retention (which deletes every file the
state does not reference) - and one of these must hold:

- **refused**: exit 2 (a :class:`DeltaDowngradeError` with exit code 2) and not one byte of the
  table changed;
- **same rows**: the command succeeded and delta-rs reads exactly the rows of the undamaged table;
- **faithful**: the damage made another valid table (e.g. a byte of a statistic, an unknown
  action name: every reader takes it as written), delta-rs reads the damaged input, and after the
  command it reads exactly those rows - the command kept what the log says, it did not make
  anything up or lose anything more.

Anything else fails: another exception (exit 1), a refusal that wrote, a table whose rows differ.

Bases: the golden table ``v2_checkpoint_parquet_sidecars`` (a V2 checkpoint with parquet sidecars
written by Spark), ``multipart_checkpoint`` (a two-part classic checkpoint by Spark), the modern
``v2_table`` of tests/v2_tables.py (deletion vectors, a V2 checkpoint with a sidecar written by
this package, commits after it) and the Databricks-like table of tests/modern_support.py (column
mapping, row tracking, clustering, in-commit timestamps, deletion vectors, a V2 checkpoint and a
commit after it).

``N`` is :data:`CASES` (48; ``DELTA_DOWNGRADE_CORRUPTIONS`` overrides it) with seed :data:`SEED`
(``DELTA_DOWNGRADE_CORRUPTION_SEED``); each case derives its own generator from both, so a failing
case id reproduces alone. The commands run in-process (the CLI maps the same exceptions to its exit
codes); delta-rs runs in a subprocess (tests/oracle.py)."""

from __future__ import annotations

import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.operations.vacuum import vacuum
from tests.modern_support import build as build_modern_table
from tests.oracle import same_rows
from tests.process_support import tree_hashes
from tests.v2_tables import v2_table

CASES = int(os.environ.get("DELTA_DOWNGRADE_CORRUPTIONS", "48"))
SEED = int(os.environ.get("DELTA_DOWNGRADE_CORRUPTION_SEED", "20261127"))

BYTE = ("flip a byte", "set a byte to a bracket or quote")
STRUCTURAL = ("cut short", "empty", "drop a line", "double a line", "garbage line", "swap with a sibling")


@dataclass
class Base:
    name: str
    path: Path
    feature: str | None  # what drop-feature drops (None: the table has nothing droppable)
    rows: object          # delta-rs's rows of the undamaged table


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory, golden_root: Path, oracle) -> list[Base]:
    root = tmp_path_factory.mktemp("bases")
    out = []
    for name, feature in (("v2_checkpoint_parquet_sidecars", "v2Checkpoint"), ("multipart_checkpoint", None)):
        path = root / name
        shutil.copytree(golden_root / name, path)
        out.append(Base(name, path, feature, None))
    modern = root / "modern_v2"
    builder = v2_table(modern)
    checkpoint_table(builder.log.refresh(), 3)  # V2 checkpoint at version 3, one commit after it
    out.append(Base("modern_v2", modern, "v2Checkpoint", None))
    databricks_like = root / "modern_databricks"
    build_modern_table(str(databricks_like), v2_checkpoint=True)
    out.append(Base("modern_databricks", databricks_like, "v2Checkpoint", None))
    for base in out:
        rows = oracle.scan_rows(str(base.path))
        assert rows.ok, f"{base.name}: {rows.error}"
        base.rows = rows
    return out


def _targets(table: Path) -> list[Path]:
    log = table / LOG_DIR
    files = [p for p in log.iterdir() if p.is_file() and not p.name.startswith(".")]
    sidecars = log / "_sidecars"
    if sidecars.is_dir():
        files += [p for p in sidecars.iterdir() if p.is_file() and not p.name.startswith(".")]
    return sorted(files)


def _kind(path: Path) -> str:
    if path.parent.name == "_sidecars":
        return "sidecar"
    if path.name == "_last_checkpoint":
        return "_last_checkpoint"
    return "checkpoint" if ".checkpoint." in path.name else "commit" if path.suffix == ".json" else "other"


def _damage(rng: random.Random, target: Path, siblings: list[Path]) -> str:
    data = target.read_bytes()
    text_like = target.suffix == ".json" or target.name == "_last_checkpoint"
    how = rng.choice(BYTE + STRUCTURAL)
    if how == "swap with a sibling":
        others = [s for s in siblings if s != target and _kind(s) == _kind(target) and s.suffix == target.suffix]
        how = "cut short" if not others else how
    if not data and how not in ("garbage line", "swap with a sibling"):
        how = "garbage line"
    if how == "flip a byte":
        at = rng.randrange(len(data))
        data = data[:at] + bytes([data[at] ^ rng.randrange(1, 256)]) + data[at + 1:]
        how += f" at {at}"
    elif how == "set a byte to a bracket or quote":
        at = rng.randrange(len(data))
        data = data[:at] + rng.choice([b"{", b"}", b"[", b"]", b'"', b",", b"\n", b"\x00"]) + data[at + 1:]
        how += f" at {at}"
    elif how == "cut short":
        at = rng.randrange(len(data))
        data = data[:at]
        how += f" at {at}"
    elif how == "empty":
        data = b""
    elif how in ("drop a line", "double a line") and text_like:
        lines = data.split(b"\n")
        at = rng.randrange(len(lines))
        lines[at:at + 1] = [] if how == "drop a line" else [lines[at], lines[at]]
        data = b"\n".join(lines)
        how += f" {at + 1}"
    elif how in ("drop a line", "double a line"):  # binary: a run of bytes instead of a line
        at, size = rng.randrange(len(data)), rng.randrange(1, 64)
        data = data[:at] + data[at + size:] if how == "drop a line" else data[:at] + data[at:at + size] * 2 + data[at + size:]
        how += f" (bytes {at}..{at + size})"
    elif how == "garbage line":
        garbage = rng.choice([b"[1,2,3]", b"42", b"{}", b'{"add": null}', b'{"x": {"y": 1}}', b"\xff\xfe",
                              b"[" * 5000 + b"]" * 5000])
        data = data + (b"\n" if data and not data.endswith(b"\n") else b"") + garbage + b"\n"
    else:
        others = [s for s in siblings if s != target and _kind(s) == _kind(target) and s.suffix == target.suffix]
        other = rng.choice(others)
        data = other.read_bytes()
        how += f" ({other.name})"
    target.write_bytes(data)
    return how


def _command(rng: random.Random, base: Base) -> str:
    return rng.choice(["drop-feature", "vacuum"]) if base.feature else "vacuum"


def _run(command: str, table: Path, base: Base) -> None:
    if command == "drop-feature":
        drop_feature(str(table), base.feature)
    else:
        vacuum(str(table), retention_hours=0, enforce_retention_check=False)


@pytest.mark.parametrize("case", range(CASES))
def test_damage_is_refused_or_changes_no_row(case, bases, oracle, tmp_path):
    rng = random.Random(SEED * 100_003 + case)
    base = bases[case % len(bases)]
    table = tmp_path / "t"
    shutil.copytree(base.path, table)
    targets = _targets(table)
    target = rng.choice(targets)
    how = _damage(rng, target, targets)
    command = _command(rng, base)
    story = f"case {case} (seed {SEED}): {base.name}, {_kind(target)} {target.name}: {how}; {command}"
    damaged = tmp_path / "damaged"  # the damaged input as it was, for delta-rs if needed
    shutil.copytree(table, damaged, symlinks=True)
    before = tree_hashes(table)
    try:
        _run(command, table, base)
    except DeltaDowngradeError as exc:
        assert exc.exit_code == 2, f"{story}: exit {exc.exit_code}: {exc}"
        assert tree_hashes(table) == before, f"{story}: refused ({exc.error_class}) but the table changed"
        print(f"{story} -> refused [{exc.error_class}]")
        return
    after = oracle.scan_rows(str(table))
    assert after.ok, f"{story}: succeeded, but delta-rs cannot read the result: {after.error}"
    if same_rows(after, base.rows):
        print(f"{story} -> same rows")
        return
    damaged_rows = oracle.scan_rows(str(damaged))
    assert damaged_rows.ok and same_rows(after, damaged_rows), (
        f"{story}: succeeded with rows that are neither the undamaged table's nor what delta-rs reads "
        f"from the damaged input ({'other rows' if damaged_rows.ok else 'unreadable: ' + str(damaged_rows.error)})")
    print(f"{story} -> faithful (the damage is a valid table; delta-rs reads the same before and after)")
