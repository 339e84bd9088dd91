"""The compatibility matrix, verified with the real clients (older_clients.py): every cell one
thing a client did on a table this package dropped a feature from, against what it must do.

Three parts:

- **The Checkpoint Protection RFC's promise** (Spark clients): for every table of `tables()` and
  every feature of its protocol this package can drop, after the package's drop (``dropped``) and
  again after ``truncate-history`` (``truncated``): each client reads the latest version iff the
  catalogue says it can, with the current delta-spark's rows, and at every retained version it
  reads the current delta-spark's rows or refuses with its protocol error (`PROTOCOL_REFUSALS`);
  never other rows, never another exception. Writers: a client that does not know
  checkpointProtection refuses to append while the feature is present; after truncate-history it
  appends, checkpoints and cleans up (log retention expired) and the package reads what the
  current delta-spark reads; delta-spark 3.3's own writer on a protected table keeps the
  protected checkpoints and the boundary (the package's ``verify_task``).
- **An older client's own DROP FEATURE** (delta-spark >= 3.0): on a table this package dropped a
  feature from (and truncated), the client drops another feature with its own ``ALTER TABLE ...
  DROP FEATURE``: it refuses with a Delta error class of its own, or the feature is gone and the
  current delta-spark, the client and this package (``verify_task``) read the table as before.
- **The catalogue against the client** (every client installed here): on every table, before and
  after ``drop-feature --for`` that client, its catalogue entry's read and write verdicts equal
  what the client does (``yes``: reads the reference rows / appends; ``no``: refuses;
  ``misreads``: reads other rows).

``python -m delta_downgrade_tools.clients_matrix --out DIR [--scope sample|all]`` writes
``DIR/clients-matrix.md`` and ``DIR/clients-matrix.html`` and exits 1 when a cell failed.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol as TypingProtocol

from delta_downgrade_tools.older_clients import (
    CURRENT_SPARK,
    PYTHON_CLIENTS,
    PYTHON_REFERENCES,
    REPO_ROOT,
    SPARK_CLIENTS,
    ClientProcess,
    ClientSpec,
)

#: Error classes with which a Delta client refuses a protocol it does not support (its own
#: words: delta-spark 2.x raises InvalidProtocolVersionException without a class in the message;
#: from 2.3 DELTA_INVALID_PROTOCOL_VERSION / DELTA_UNSUPPORTED_FEATURES_FOR_READ / _WRITE).
PROTOCOL_REFUSALS = frozenset({
    "InvalidProtocolVersionException", "DELTA_INVALID_PROTOCOL_VERSION",
    "DELTA_UNSUPPORTED_FEATURES_FOR_READ", "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE",
    "DeltaUnsupportedTableFeatureException", "DELTA_UNSUPPORTED_FEATURES_IN_CONFIG",
    # deltalake / Polars / DuckDB: the Python exception of their protocol check
    "DeltaProtocolError", "CommitFailedError", "DeltaError", "InvalidInputException", "IOException",
})

#: (client name prefix, table) -> (what the client's answer shows, why it is no table-feature
#: matter or why the catalogue cannot say it): observed here, accepted as such, and listed in the
#: matrix. A client that stops showing it fails the cell (the entry is then out of date).
KNOWN_BEHAVIOURS: dict[tuple[str, str], tuple[str, str]] = {
    **{(prefix, "legacy_1_1_delta_0_1_0"): (
        "missing-column: createdTime", "requires metaData.createdTime in the checkpoint, which "
        "Delta 0.1.0 did not write (the field is optional in PROTOCOL.md): a client defect")
       for prefix in ("deltalake 0.18.2", "deltalake 0.20.2", "deltalake 0.25.5", "deltalake 1.0.2",
                      "polars 1.38.1")},
    ("deltalake 1.0.2 (rust)", "multipart_checkpoint"): (
        "Failed to parse parquet", "its writer cannot parse this multi-part checkpoint's add "
        "struct ('Incompatible type'): a client defect, reads are fine"),
    **{(prefix, "corpus-variant"): (
        shows, "its protocol check accepts the table; its Parquet reader does not know the VARIANT "
        "logical type with which delta-spark 4.4 (Spark 4.2) annotates variant columns: no table "
        "feature to drop, the catalogue's verdict is about the protocol")
       for prefix, shows in (("duckdb 1.5.5", "Unsupported Arrow type VARIANT"),
                             ("polars 2.1.0", "LogicalType union has no variant set"),
                             # deltalake 1.6.3's constants hold variantType: Polars' check lets
                             # the table through, the catalogue's "no" holds (nothing is read)
                             ("polars 1.41.2", "LogicalType union has no variant set"))},
    **{("duckdb 1.5.5", table): (
        "WRONG ROWS", "WRONG ROWS, accepted as a known client defect: the partition column comes "
        "back NULL on a column-mapping table whose data files are not in `<physical name>=<value>` "
        "directories (delta-spark 4.x's random prefixes); the catalogue's misreads_with cannot "
        "say 'partitioned' (its verdicts see the protocol and schema only)")
       for table in ("corpus-cm_name", "corpus-dv_column_mapping_checkpointed")},
    # Any table ("*") with the deletionVectors feature: the message says which
    ("delta-spark 2.3.0", "*"): (
        "Updates to tables with Deletion Vectors feature enabled are not supported",
        "its protocol check accepts the deletionVectors reader-writer feature (it reads deletion "
        "vectors), then its writer refuses the table with an UnsupportedOperationException of its "
        "own rather than its protocol error; writes arrived in 2.4 (Delta 2.4.0 release notes: "
        "'Support for all write operations on tables with Deletion Vectors enabled'); the "
        "catalogue's delta-spark-2.3 entry says it writes no such table"),
    # Any table ("*") with the clustering writer feature
    ("delta-spark 3.1.0", "*"): (
        "A clustered table is currently in preview and is disabled by default",
        "its protocol check knows the clustering writer feature, then its writer refuses a "
        "clustered table with an UnsupportedOperationException of its own rather than its protocol "
        "error: liquid clustering is a preview in 3.1, behind "
        "spark.databricks.delta.clusteredTable.enableClusteringTablePreview (Delta's 'Use liquid "
        "clustering' documentation, Limitations; 3.2 dropped the flag); the catalogue's "
        "delta-spark-3.1 entry says it writes no clustered table"),
    # Any table ("*") whose schema records a type change these releases do not support
    **{(prefix, "*"): (
        shows, "it supports typeWidening-preview with Delta 3.2's type changes only (byte to "
        "short or int, short to int, ...: Delta's 'Delta type widening' documentation, 'Supported "
        "type changes'); a version whose schema records a change added in Delta 4.0 (byte to long) "
        "it refuses with this error of its own rather than its protocol error: a refusal, no rows "
        "read; the catalogue's verdicts see the feature, not which changes it records")
       for prefix, shows in (("delta-spark 3.2.1", "DELTA_UNSUPPORTED_TYPE_CHANGE_IN_SCHEMA"),
                             ("delta-spark 3.3.2", "DELTA_UNSUPPORTED_TYPE_CHANGE_IN_PREVIEW"))},
    **{(prefix, "corpus-variant"): (
        "FAILED_READ_FILE", "its protocol check accepts the table (variantType is a feature it "
        "knows); its Parquet reader then fails on the data file, whose variant group carries "
        "Parquet's Variant logical type annotation written by delta-spark 4.4 (Spark 4.2): no "
        "table feature to drop, the catalogue's verdict is about the protocol")
       for prefix in ("delta-spark 4.0.1", "delta-spark 4.1.0")},
    ("deltalake 0.25.5 (pyarrow)", "catalog_managed_ict"): (
        "reads", "accepts the catalogManaged reader feature (0.20.2 refuses it) and reads the "
        "published commits by path, without the catalog: no source states this; 0.25.5 only"),
}


def known_behaviour(client: str, table: str, answer: dict[str, Any], problem: str = "") -> str | None:
    """Why the client's answer (and the problem the judging found in it) is a known behaviour of
    `KNOWN_BEHAVIOURS` (a table named ``*`` there: any table), else None."""
    for (prefix, name), (shows, why) in KNOWN_BEHAVIOURS.items():
        if client.startswith(prefix) and name in (table, "*"):
            text = f"{answer.get('error_class')}: {answer.get('error')}" if not answer.get("ok") else "reads"
            text += " " + problem
            if shows in text:
                return why
    return None
BOUNDARY = "delta.requireCheckpointProtectionBeforeVersion"


# --- the tables ------------------------------------------------------------------------------------

def golden_dir() -> Path:
    env = os.environ.get("DELTA_DOWNGRADE_GOLDEN")
    return Path(env).expanduser() if env else REPO_ROOT.parent / "shared" / "golden"


def golden_tables() -> list[tuple[str, Path]]:
    root = golden_dir()
    if not root.is_dir():
        return []
    return [(p.name, p) for p in sorted(root.iterdir()) if (p / "_delta_log").is_dir()]


def corpus_tables() -> list[tuple[str, Path]]:
    """The tables of the delta-spark corpus (``delta_spark_corpus.py``) as the tests built them for
    the delta-spark jar of ``.jars/spark.classpath`` (``.test-records/delta-spark-corpus/<key>/``),
    named ``corpus-<table>`` (a name that is also a directory name); none, said on stderr, when that build is not there (``make test``
    builds it, or ``python -m delta_downgrade_tools.delta_spark_corpus DIR``)."""
    from delta_downgrade_tools import delta_spark_corpus as generator

    classpath = REPO_ROOT / ".jars" / "spark.classpath"
    jars = [j for j in classpath.read_text().strip().split(",") if j] if classpath.is_file() else []
    built = REPO_ROOT / ".test-records" / "delta-spark-corpus" / (generator.corpus_key(jars) if jars else "-")
    manifest = built / generator.MANIFEST
    if not manifest.is_file():
        print(f"clients matrix: no delta-spark corpus at {built} (make test builds it): golden tables "
              f"only", file=sys.stderr)
        return []
    names = json.loads(manifest.read_text(encoding="utf-8"))["tables"]
    return [(f"corpus-{name}", built / name) for name in names]


#: Where the matrix's tables come from, each a function returning (name, path) pairs; the corpus's
#: tables are checked exactly as the golden ones.
TABLE_SOURCES: list[Callable[[], list[tuple[str, Path]]]] = [golden_tables, corpus_tables]


def tables() -> list[tuple[str, Path]]:
    """(name, path) of every table the matrix checks, from every source of `TABLE_SOURCES`."""
    out: list[tuple[str, Path]] = []
    seen: set[str] = set()
    for source in TABLE_SOURCES:
        for name, path in source():
            if name not in seen:
                seen.add(name)
                out.append((name, Path(path)))
    return out


def copy_table(src: Path, dest: Path) -> Path:
    """A writable copy, without Hadoop's hidden ``.crc`` files (some golden tables carry stale
    ones, which Hadoop's local file system refuses to read past)."""
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".*.crc"))
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath, name)
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR | (stat.S_IXUSR if p.is_dir() else 0))
    return dest


def commit_versions(path: Path) -> list[int]:
    log = path / "_delta_log"
    return sorted(int(n[:20]) for n in os.listdir(log) if len(n) == 25 and n.endswith(".json") and n[:20].isdigit())


# --- the cells ---------------------------------------------------------------------------------------

@dataclass
class Cell:
    """One thing one client did. ``expected``: the catalogue's verdict (``yes`` / ``no`` /
    ``misreads`` / ``unknown`` / ``n/a``) or ``same-or-refuse`` (a retained version: the
    current delta-spark's rows, or a protocol refusal). ``observed``: ``rows``, ``other rows``,
    ``wrote``, ``refused: CLASS``."""

    part: str
    client: str
    entry: str
    table: str
    feature: str
    state: str
    action: str
    expected: str
    observed: str
    ok: bool
    problem: str = ""


class Runner(TypingProtocol):
    def run(self, requests: Iterable[dict[str, Any]]) -> list[dict[str, Any]]: ...


def observed(answer: dict[str, Any], reference: dict[str, Any] | None = None) -> str:
    if not answer.get("ok"):
        return f"refused: {answer.get('error_class')}"
    if "rows" not in answer:
        return "wrote"
    if reference is not None and reference.get("ok") and not same_rows(answer, reference):
        return "other rows"
    return "rows"


def same_rows(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same columns (by name: deltalake 1.0 puts partition columns last) with the same
    values, row for row (each answer's rows are sorted canonically)."""
    return sorted(a.get("columns") or ()) == sorted(b.get("columns") or ()) and a.get("rows") == b.get("rows")


def _catalogue():
    from delta_downgrade.compat import packaged_catalogue

    return packaged_catalogue()


def verdicts(entry: str, path: Path) -> tuple[str, str]:
    """The catalogue's (read, write) verdict of ``entry`` on the table's latest version."""
    from delta_downgrade.compat import read_verdict, write_verdict
    from delta_downgrade.errors import DeltaDowngradeError
    from delta_downgrade.log.delta_log import DeltaLog

    try:
        snapshot = DeltaLog(str(path)).snapshot(check_read=False)
    except DeltaDowngradeError:
        return "refused-by-package", "refused-by-package"
    client = _catalogue().client(entry)
    return (read_verdict(client, snapshot.protocol, snapshot.schema).verdict.value,
            write_verdict(client, snapshot.protocol, snapshot.schema).verdict.value)


def judge_read(answer: dict[str, Any], reference: dict[str, Any] | None, expected: str) -> tuple[bool, str]:
    """Whether a read answer keeps the promise: ``expected`` a catalogue verdict, or
    ``same-or-refuse``."""
    if answer.get("ok"):
        if reference is None:
            return expected in ("yes", "unknown"), "" if expected in ("yes", "unknown") else \
                f"reads, the catalogue says {expected}"
        if not reference.get("ok"):
            return False, f"reads where the reference refuses ({reference.get('error_class')})"
        same = same_rows(answer, reference)
        if expected == "misreads":
            return not same, "" if not same else "reads the reference's rows, the catalogue says misreads"
        if not same:
            return False, "WRONG ROWS: differ from the reference's"
        if expected == "no":
            return False, "reads the right rows, the catalogue says no"
        return True, ""
    cls = answer.get("error_class")
    if expected in ("yes", "misreads"):
        if reference is not None and not reference.get("ok") and reference.get("error_class") == cls:
            return True, ""  # the table itself cannot be read (the reference fails the same way)
        return False, f"refuses ({cls}: {str(answer.get('error'))[:200]}), the catalogue says {expected}"
    if cls in PROTOCOL_REFUSALS:
        return True, ""
    if reference is not None and not reference.get("ok") and reference.get("error_class") == cls:
        return True, ""
    return False, f"unexpected exception {cls}: {str(answer.get('error'))[:300]}"


# --- preparing the states: the package's drop, truncate-history, the control ------------------------

def package_drop(path: Path, feature: str) -> str | None:
    """This package's fast drop; None when done, else the refusal's error class."""
    from delta_downgrade.errors import DeltaDowngradeError
    from delta_downgrade.operations.drop_feature import drop_feature

    try:
        outcome = drop_feature(str(path), feature)
    except DeltaDowngradeError as exc:
        return exc.error_class
    return "already_absent" if outcome.status == "already_absent" else None


def package_truncate(path: Path) -> str | None:
    """``truncate-history`` (dropping checkpointProtection) with the retention passed: a clock
    days ahead, as often as the package asks to wait (it may first write the checkpoint the
    truncation needs)."""
    from delta_downgrade.clock import ManualClock
    from delta_downgrade.errors import DeltaDowngradeError, RetentionWaitError
    from delta_downgrade.operations.drop_feature import drop_feature

    clock = ManualClock()
    for _ in range(4):
        clock.advance(days=3)
        try:
            drop_feature(str(path), "checkpointProtection", truncate_history=True, clock=clock)
            return None
        except RetentionWaitError:
            continue
        except DeltaDowngradeError as exc:
            return exc.error_class
    return "still waiting after 12 days"


def boundary_of(path: Path) -> int | None:
    from delta_downgrade.log.delta_log import DeltaLog

    return DeltaLog(str(path)).snapshot(check_read=False).boundary_version


def remove_protection(path: Path) -> list[str]:
    """The control: the table as a cleanup that ignores the RFC's rules (a) and (c) leaves it - the
    protected checkpoints (the boundary's and the barrier ones, as this package protects them)
    and the _last_checkpoint pointer deleted, and the commits before the boundary with them.
    Returns the removed names."""
    from delta_downgrade.log.delta_log import DeltaLog
    from delta_downgrade.drop.run import protected_checkpoint_paths

    boundary = boundary_of(path)
    if boundary is None:
        return []
    protected = {Path(p).name for p in protected_checkpoint_paths(DeltaLog(str(path)), boundary)}
    log = path / "_delta_log"
    removed = [n for n in sorted(os.listdir(log))
               if n in protected or n == "_last_checkpoint"
               or (n.endswith(".json") and len(n) == 25 and n[:20].isdigit() and int(n[:20]) < boundary)]
    for n in removed:
        (log / n).unlink()
    return removed


@dataclass
class Case:
    table: str
    source: Path
    feature: str
    states: dict[str, Path] = field(default_factory=dict)
    refusal: str | None = None


def prepare_case(table: str, source: Path, feature: str, workdir: Path, *, control: bool = False) -> Case:
    case = Case(table, source, feature)
    dropped = copy_table(source, workdir / f"{table}--{feature}--dropped")
    case.refusal = package_drop(dropped, feature)
    if case.refusal:
        return case
    case.states["dropped"] = dropped
    from delta_downgrade.log.delta_log import DeltaLog

    protocol = DeltaLog(str(dropped)).snapshot(check_read=False).protocol
    if "checkpointProtection" in protocol.features:
        truncated = copy_table(dropped, workdir / f"{table}--{feature}--truncated")
        why = package_truncate(truncated)
        if why is None:
            case.states["truncated"] = truncated
        else:
            case.refusal = f"truncate-history: {why}"
        if control:
            unprotected = copy_table(dropped, workdir / f"{table}--{feature}--control")
            if remove_protection(unprotected):
                case.states["control"] = unprotected
    return case


def droppable_features(path: Path) -> list[str]:
    """The features of the table's protocol this package's drop-feature takes."""
    from delta_downgrade.errors import DeltaDowngradeError
    from delta_downgrade.features import REMOVABLE
    from delta_downgrade.log.delta_log import DeltaLog

    try:
        protocol = DeltaLog(str(path)).snapshot(check_read=False).protocol
    except DeltaDowngradeError:
        return []
    return sorted(f for f in protocol.features if f in REMOVABLE and f != "checkpointProtection")


# --- part 1: the RFC's promise to older Spark clients ------------------------------------------------

def read_requests(path: Path, versions: Iterable[int | None]) -> list[dict[str, Any]]:
    return [{"op": "read", "path": str(path), "version": v, "via": "spark"} for v in versions]


def versions_read(path: Path) -> list[int | None]:
    """The versions the RFC part reads a table state at: the latest (None), then every commit."""
    return [None, *commit_versions(path)]


def rfc_reader_cells(case: Case, reference: Runner, clients: dict[ClientSpec, Runner],
                     reference_path: Path | None = None) -> list[Cell]:
    """``reference_path``: read the reference's rows there (the control: the intact table)."""
    cells: list[Cell] = []
    for state, path in case.states.items():
        versions = versions_read(path)
        ref_answers = reference.run(read_requests(reference_path or path, versions))
        for spec, runner in clients.items():
            read_expected, _ = verdicts(spec.catalogue_id, path)
            answers = runner.run(read_requests(path, versions))
            for version, answer, ref in zip(versions, answers, ref_answers):
                expected = read_expected if version is None else "same-or-refuse"
                if state == "control":
                    expected = "same-or-refuse"
                ok, problem = judge_read(answer, ref, expected)
                known = None if ok or answer.get("ok") else known_behaviour(spec.name, case.table, answer)
                if known is not None and expected == "same-or-refuse":
                    ok, problem = True, "known: " + known  # a refusal of its own: no rows read
                cells.append(Cell("rfc", spec.name, spec.catalogue_id, case.table, case.feature, state,
                                  "read latest" if version is None else f"read v{version}",
                                  expected, observed(answer, ref), ok, problem))
    return cells


def knows_checkpoint_protection(spec: ClientSpec) -> bool:
    features = _catalogue().client(spec.catalogue_id).write_features() or frozenset()
    return "checkpointProtection" in features


def _features(path: Path) -> frozenset[str]:
    from delta_downgrade.log.delta_log import DeltaLog

    return DeltaLog(str(path)).snapshot(check_read=False).protocol.features


def package_files(path: Path) -> tuple[int, list[str]]:
    from delta_downgrade.log.delta_log import DeltaLog

    from urllib.parse import unquote

    snapshot = DeltaLog(str(path)).snapshot(check_read=False)
    return snapshot.version, sorted(unquote(a.path) for a in snapshot.state().files.values())


@dataclass
class ReadBack:
    """A table a writer appended to, checkpointed and cleaned up after truncate-history: the
    current delta-spark must read it as the writer does, and this package the same files."""

    case: Case
    spec: ClientSpec
    path: Path


def rfc_writer_cells(case: Case, reference: Runner, spec: ClientSpec, runner: Runner, workdir: Path,
                     read_back: list[ReadBack] | None = None) -> list[Cell]:
    """Appends while checkpointProtection is present (refused by a client that does not know it,
    kept safe by one that does) and after truncate-history. ``read_back``: the reads after the
    writes are left there for `read_back_cells` (asked of the reference for many tables at once,
    when one JVM at a time runs), else asked now."""
    cells: list[Cell] = []

    def cell(state: str, action: str, expected: str, answer: dict[str, Any], ok: bool, problem: str = "") -> None:
        cells.append(Cell("rfc-writer", spec.name, spec.catalogue_id, case.table, case.feature, state, action,
                          expected, observed(answer), ok, problem))

    if "dropped" in case.states and "checkpointProtection" in _features(case.states["dropped"]):
        protected = copy_table(case.states["dropped"], workdir / f"{case.table}--{case.feature}--w-{spec.name.replace(' ', '_')}")
        boundary = boundary_of(protected)
        _, write_expected = verdicts(spec.catalogue_id, protected)
        answer = runner.run([{"op": "append", "path": str(protected)}])[0]
        if knows_checkpoint_protection(spec):
            ok = answer.get("ok") is True or write_expected != "yes"
            cell("dropped", "append", write_expected, answer, ok, "" if ok else str(answer.get("error"))[:300])
            if answer.get("ok"):
                cells.extend(_protected_cleanup_cells(case, spec, runner, protected, boundary))
        else:
            ok = not answer.get("ok") and answer.get("error_class") in PROTOCOL_REFUSALS
            problem = "" if ok else f"a writer that does not know checkpointProtection must refuse: {answer}"
            known = None if ok or answer.get("ok") else known_behaviour(spec.name, case.table, answer)
            if known is not None:
                ok, problem = True, "known: " + known
            cell("dropped", "append", "no", answer, ok, problem)
    if "truncated" in case.states:
        path = copy_table(case.states["truncated"], workdir / f"{case.table}--{case.feature}--wt-{spec.name.replace(' ', '_')}")
        _, write_expected = verdicts(spec.catalogue_id, path)
        answers = runner.run([{"op": "append", "path": str(path)}, {"op": "checkpoint", "path": str(path)},
                              {"op": "cleanup", "path": str(path), "backdate_days": 40}])
        for action, answer in zip(("append", "checkpoint", "cleanup"), answers):
            expected = write_expected if action == "append" else ("yes" if write_expected == "yes" else "n/a")
            ok = (answer.get("ok") is True) if expected == "yes" else \
                (not answer.get("ok") if expected == "no" else True)
            if expected == "no" and not answer.get("ok") and answer.get("error_class") not in PROTOCOL_REFUSALS:
                ok = False
            problem = "" if ok else str(answer.get("error"))[:300]
            known = None if ok or answer.get("ok") else known_behaviour(spec.name, case.table, answer)
            if known is not None and expected != "yes":
                ok, problem = True, "known: " + known
            cell("truncated", action, expected, answer, ok, problem)
        if write_expected == "yes" and all(a.get("ok") for a in answers):
            pending = ReadBack(case, spec, path)
            if read_back is None:
                cells.extend(read_back_cells([pending], reference, runner))
            else:
                read_back.append(pending)
    return cells


def read_back_cells(pending: list[ReadBack], reference: Runner, runner: Runner) -> list[Cell]:
    """The reads after a writer's writes (`rfc_writer_cells`), for every table of ``pending`` (one
    writer's): the writer's reads first, then the reference's, so that with one JVM at a time
    each starts once."""
    if not pending:
        return []
    latest = [r for p in pending for r in read_requests(p.path, [None])]
    mine = runner.run(latest)
    refs = reference.run(latest)
    files_refs = reference.run([{"op": "files", "path": str(p.path)} for p in pending])
    cells: list[Cell] = []
    for p, answer, ref, files_ref in zip(pending, mine, refs, files_refs):
        same = ref.get("ok") is True and same_rows(ref, answer)
        version, files = package_files(p.path)
        same_files = bool(files_ref.get("ok") and files_ref.get("files") == files)
        for action, observed_as, ok, problem in (
                ("read after its writes", observed(answer), same,
                 "" if same else "the current delta-spark reads other rows than the writer"),
                ("package reads the same files", observed(files_ref), same_files,
                 "" if same_files else f"package: v{version} {files[:5]}..., delta-spark: {str(files_ref)[:300]}")):
            cells.append(Cell("rfc-writer", p.spec.name, p.spec.catalogue_id, p.case.table, p.case.feature,
                              "truncated", action, "yes", observed_as, ok, problem))
    return cells


def _protected_cleanup_cells(case: Case, spec: ClientSpec, runner: Runner, path: Path, boundary: int | None) -> list[Cell]:
    """delta-spark >= 3.3's own writer on a protected table: checkpoint, then its metadata cleanup
    with the log retention expired; the protected checkpoints and the boundary must survive."""
    from delta_downgrade.log.delta_log import DeltaLog
    from delta_downgrade.drop.run import protected_checkpoint_paths

    before = protected_checkpoint_paths(DeltaLog(str(path)), boundary or 0)
    # The history before the oldest protected checkpoint expired, the protected part not yet:
    # the cleanup may remove the expired commits, never a protected checkpoint (rule (a)) nor
    # part of what it protects.
    oldest = min((int(Path(p).name[:20]) for p in before), default=0)
    answers = runner.run([{"op": "checkpoint", "path": str(path)},
                          {"op": "cleanup", "path": str(path), "backdate_days": 40, "backdate_before": oldest}])
    cells = [Cell("rfc-writer", spec.name, spec.catalogue_id, case.table, case.feature, "dropped", action, "yes",
                  observed(a), bool(a.get("ok")), "" if a.get("ok") else str(a.get("error"))[:300])
             for action, a in zip(("checkpoint", "cleanup (retention expired)"), answers)]
    code, problems = run_verify_task(path, boundary, before)
    cells.append(Cell("rfc-writer", spec.name, spec.catalogue_id, case.table, case.feature, "dropped",
                      "protected checkpoints and boundary kept (verify_task)", "yes",
                      "kept" if code == 0 else "lost", code == 0, problems))
    return cells


# --- an older client's own DROP FEATURE on a table this package dropped a feature from ----------------

#: The first delta-spark release with ``ALTER TABLE ... DROP FEATURE`` (Delta's "Drop Delta table
#: features" documentation: "You must use Delta Lake 3.0.0 or above"); which features a release
#: drops is its own matter, recorded as it answers.
OWN_DROP_SINCE = (3, 0)

#: Delta's refusal of a reader-writer feature's first drop: the traces are removed, the history
#: still holds the feature, ``DROP FEATURE ... TRUNCATE HISTORY`` after the retention period.
DROP_WAIT = "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"


def spark_release(spec: ClientSpec) -> tuple[int, ...] | None:
    """A delta-spark client's release from its name (``delta-spark 3.1.0`` -> (3, 1, 0))."""
    head, _, version = spec.name.partition(" ")
    if head != "delta-spark" or not spec.is_spark:
        return None
    try:
        return tuple(int(x) for x in version.split("."))
    except ValueError:
        return None


def own_drop_cells(case: Case, reference: Runner, spec: ClientSpec, runner: Runner, workdir: Path) -> list[Cell]:
    """On the table this package dropped ``case.feature`` from (after truncate-history, or
    right after the drop when it left no checkpointProtection), the older client drops each other
    feature this package could drop, with its own ``ALTER TABLE ... DROP FEATURE`` (a
    reader-writer feature in Delta's two steps: the drop, then ``TRUNCATE HISTORY`` with the
    retention period passed - the log backdated). Either it refuses with a Delta error class of
    its own, or the feature is gone and the table reads as before: the client's and the current
    delta-spark's rows equal the rows before its drop, and the package's ``verify_task`` passes
    with the feature absent and reads the same data files as the current delta-spark."""
    release = spark_release(spec)
    if release is None or release < OWN_DROP_SINCE:
        return []
    state = "truncated" if "truncated" in case.states else "dropped"
    source = case.states.get(state)
    if source is None or "checkpointProtection" in _features(source):
        return []
    cells: list[Cell] = []
    before = reference.run(read_requests(source, [None]))[0]
    for other in droppable_features(source):
        if other == case.feature:
            continue
        label = f"{case.feature}, then its own {other}"
        path = copy_table(source, workdir / f"{case.table}--{case.feature}--own-{spec.name.replace(' ', '_')}--{other}")

        def cell(action: str, expected: str, observed_: str, ok: bool, problem: str = "", label: str = label) -> None:
            cells.append(Cell("own-drop", spec.name, spec.catalogue_id, case.table, label, state, action,
                              expected, observed_, ok, problem))

        answer = runner.run([{"op": "drop_feature", "path": str(path), "feature": other}])[0]
        steps = [("DROP FEATURE", answer)]
        if not answer.get("ok") and answer.get("error_class") == DROP_WAIT:
            # Delta's retention for TRUNCATE HISTORY (24 hours by default) passed: the log 3 days older
            answer = runner.run([{"op": "drop_feature", "path": str(path), "feature": other, "truncate": True,
                                  "backdate_days": 3}])[0]
            steps.append(("DROP FEATURE ... TRUNCATE HISTORY", answer))
        for action, a in steps:
            cls = str(a.get("error_class") or "")
            if a.get("ok"):
                cell(action, "dropped or its own refusal", "dropped", True)
            elif (action == "DROP FEATURE" and cls == DROP_WAIT) or cls.startswith("DELTA_"):
                cell(action, "dropped or its own refusal", f"refused: {cls}", True)
            else:
                cell(action, "dropped or its own refusal", f"refused: {cls}", False,
                     f"not a Delta error class of its own: {str(a.get('error'))[:300]}")
        if not answer.get("ok"):
            continue
        mine = runner.run(read_requests(path, [None]))[0]
        ok = bool(before.get("ok")) and same_rows(mine, before)
        cell("client reads the rows of before its drop", "yes", observed(mine, before), ok,
             "" if ok else f"the client's rows differ from the rows before its drop: {str(mine)[:300]}")
        ref = reference.run(read_requests(path, [None]))[0]
        ok = bool(before.get("ok")) and same_rows(ref, before)
        cell("current delta-spark reads the rows of before", "yes", observed(ref, before), ok,
             "" if ok else f"the current delta-spark's rows differ: {str(ref)[:300]}")
        code, problems = run_verify_task(path, None, (), absent=other)
        version, files = package_files(path)
        files_ref = reference.run([{"op": "files", "path": str(path)}])[0]
        same_files = bool(files_ref.get("ok")) and files_ref.get("files") == files
        ok = code == 0 and same_files
        cell("package verify, the same files as the current delta-spark", "yes",
             "verified" if ok else "differs", ok,
             "" if ok else f"verify_task exit {code} {problems}; package v{version} {files[:5]} vs "
                           f"delta-spark {str(files_ref)[:300]}")
    return cells


#: Tables made for the own-drop part alone, each from a golden or corpus table: (that table, the
#: SQL the current delta-spark runs on a copy, ``{t}`` the table). Every golden and corpus table with a
#: feature delta-spark 3.1 or 3.2 can drop itself holds no second feature this package drops, so
#: the part never asked them for a drop they perform: their releases' RemovableFeature classes
#: are v2Checkpoint (3.1), and v2Checkpoint, typeWidening-preview and inCommitTimestamp-preview
#: (3.2); deletionVectors, columnMapping and checkConstraints they refuse
#: (DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE). Deletion vectors enabled (and one written) give
#: this package a feature to drop first: the client then drops the golden table's own feature on
#: the table this package dropped deletionVectors from and truncated.
OWN_DROP_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "v2_checkpoint_json_sidecars+deletionVectors": ("v2_checkpoint_json_sidecars", (
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        # a file with ids 4 and 8: a deletion vector, not a rewrite
        "DELETE FROM {t} WHERE id = 4")),
    # Its schema records int to long changes (Delta 4.0's): delta-spark 3.2 and 3.3 refuse to
    # operate on it at all (a known behaviour); their own drop is asked on the corpus's table
    "type_widening_preview_nested+deletionVectors": ("type_widening_preview_nested", (
        # one row per data file: a DELETE would remove a whole file, no deletion vector
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",)),
    "corpus-type_widening_preview+deletionVectors": ("corpus-type_widening_preview", (
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",)),
}

#: The feature this package drops from an `OWN_DROP_TABLES` table before the client's own drop.
OWN_DROP_PACKAGE_DROPS = "deletionVectors"


def own_drop_tables(workdir: Path, current_spark: Runner,
                    table_names: Callable[[str], bool] = lambda name: True) -> list[tuple[str, Path]]:
    """(name, path) of the `OWN_DROP_TABLES` chosen by ``table_names``, built under ``workdir``
    by ``current_spark`` (the current delta-spark as a client: its SQL on a copy of the golden or
    corpus table); none for a table that is not here."""
    sources = {n: p for n, p in tables()} if any(table_names(n) for n in OWN_DROP_TABLES) else {}
    out = []
    for name, (base, statements) in OWN_DROP_TABLES.items():
        if not table_names(name) or base not in sources:
            continue
        dest = copy_table(sources[base], workdir / name)
        answer = current_spark.run([{"op": "sql", "path": str(dest), "statements": list(statements)}])[0]
        if not answer.get("ok"):
            raise RuntimeError(f"the current delta-spark could not make {name}: "
                               f"{answer.get('error_class')}: {answer.get('error')}")
        out.append((name, dest))
    return out


def run_verify_task(path: Path, boundary: int | None, protected: Iterable[str],
                    absent: str | None = None) -> tuple[int, str]:
    """The package's ``verify_task`` (the job's entry point) on ``path``, expecting the boundary,
    the protected checkpoints and the feature ``absent`` gone: its exit code and the checks it
    reports FAILED."""
    import contextlib
    import io

    from delta_downgrade.app.tasks.entrypoints import verify_task

    argv = [f"--table={path}"]
    if boundary is not None:
        argv.append(f"--expect_boundary_version={boundary}")
    if absent is not None:
        argv.append(f"--expect_absent_feature={absent}")
    protected = list(protected)
    if protected:
        argv.append(f"--expect_protected_checkpoints={','.join(protected)}")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = verify_task(argv)
    failed = [line for line in err.getvalue().splitlines() if "FAILED" in line or "error" in line.lower()]
    return code, "; ".join(failed)[:600]


# --- part 2: every catalogue entry against its client ------------------------------------------------

def catalogue_cells(spec: ClientSpec, runner: Runner, table: str, path: Path, state: str,
                    reference: dict[str, Any] | None, workdir: Path, feature: str = "-") -> list[Cell]:
    """The entry's read and write verdicts on ``path``'s latest version against the client."""
    read_expected, write_expected = verdicts(spec.catalogue_id, path)
    cells = []
    if read_expected == "refused-by-package":
        return cells
    if spec.read_via is not None:
        answer = runner.run([{"op": "read", "path": str(path), "version": None, "via": spec.read_via}])[0]
        ok, problem = judge_read(answer, reference, read_expected) if read_expected != "unknown" else (True, "")
        known = known_behaviour(spec.name, table, answer, problem)
        if known is not None:
            ok, problem = True, "known: " + known
        cells.append(Cell("catalogue", spec.name, spec.catalogue_id, table, feature, state, "read latest",
                          read_expected, observed(answer, reference), ok, problem))
    if spec.write_engine is not None and write_expected not in ("n/a", "unknown"):
        target = copy_table(path, workdir / f"{table}--{state}--{feature}--{spec.name.replace(' ', '_').replace('/', '_')}")
        answer = runner.run([{"op": "append", "path": str(target), "engine": spec.write_engine}])[0]
        known = known_behaviour(spec.name, table, answer)
        if known is not None:
            ok, problem = True, "known: " + known
        elif write_expected == "yes":
            ok, problem = bool(answer.get("ok")), "" if answer.get("ok") else \
                f"refuses ({answer.get('error_class')}: {str(answer.get('error'))[:200]})"
            if not ok and reference is not None and not reference.get("ok") \
                    and reference.get("error_class") == answer.get("error_class"):
                # the table itself cannot be operated on: the reference refuses to read it alike
                ok, problem = True, f"the reference refuses alike ({reference.get('error_class')})"
        else:
            ok = not answer.get("ok")
            problem = "" if ok else "appends, the catalogue says no"
        cells.append(Cell("catalogue", spec.name, spec.catalogue_id, table, feature, state, "append",
                          write_expected, observed(answer), ok, problem))
        shutil.rmtree(target, ignore_errors=True)
    return cells


def drop_for(path: Path, entry: str) -> str | None:
    """``drop-feature --for`` the entry; None when done, else why not."""
    from delta_downgrade.errors import DeltaDowngradeError
    from delta_downgrade.operations.drop_for_client import drop_for_client

    try:
        drop_for_client(str(path), _catalogue().client(entry))
    except DeltaDowngradeError as exc:
        return exc.error_class
    return None


def plan_features(path: Path, entry: str) -> tuple[str, ...] | None:
    """The features ``drop-feature --for entry`` drops (None: it refuses; () nothing to drop)."""
    from delta_downgrade.compat.verdict import client_verdict
    from delta_downgrade.errors import DeltaDowngradeError
    from delta_downgrade.log.delta_log import DeltaLog

    try:
        snapshot = DeltaLog(str(path)).snapshot(check_read=False)
    except DeltaDowngradeError:
        return None
    verdict = client_verdict(_catalogue().client(entry), snapshot.protocol, snapshot.schema)
    if verdict.plan is None:
        return ()
    if not verdict.plan.possible:
        return None
    return tuple(s.feature for s in verdict.plan.steps)


# --- the report ------------------------------------------------------------------------------------

def summary(cells: list[Cell]) -> dict[tuple[str, str, str, str], tuple[int, int]]:
    """(client, feature, state, action kind) -> (ok, total)."""
    out: dict[tuple[str, str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for c in cells:
        kind = "time travel" if c.action.startswith("read v") else c.action
        key = (c.client, c.feature if c.part != "catalogue" else "(catalogue)", c.state, kind)
        out[key][1] += 1
        out[key][0] += int(c.ok)
    return {k: (v[0], v[1]) for k, v in out.items()}


def entry_rows(cells: list[Cell]) -> list[dict[str, Any]]:
    """Every catalogue entry: whether it is ``verified`` (the catalogue's flag), the clients that
    ran it in these cells and their (ok, total) - an entry no cell ran rests on its sources."""
    ran: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for c in cells:
        if c.part != "control" and c.entry not in ("-", ""):
            ran[c.entry][c.client][0] += int(c.ok)
            ran[c.entry][c.client][1] += 1
    rows = []
    for entry in _catalogue().clients:
        clients = ran.get(entry.id, {})
        rows.append({"id": entry.id, "verified": entry.verified, "tested_here": entry.tested_here,
                     "clients": {k: (v[0], v[1]) for k, v in sorted(clients.items())}})
    return rows


def counts(cells: list[Cell]) -> dict[str, int]:
    """The matrix's size: cells passed / failed (the control apart), the control's cells and how
    many of them fail, catalogue entries run here and entries resting on their sources."""
    judged = [c for c in cells if c.part != "control"]
    control = [c for c in cells if c.part == "control"]
    entries = entry_rows(cells)
    return {"cells": len(judged), "passed": sum(c.ok for c in judged),
            "failed": sum(not c.ok for c in judged), "control": len(control),
            "control_failed": sum(not c.ok for c in control),
            "entries_run": sum(1 for e in entries if e["clients"] or e["id"] == CURRENT_SPARK.catalogue_id),
            "entries_verified": sum(1 for e in entries if e["verified"]),
            "entries_source_only": sum(1 for e in entries
                                       if not e["clients"] and e["id"] != CURRENT_SPARK.catalogue_id)}


def _entry_cell(e: dict[str, Any]) -> str:
    if not e["clients"] and e["id"] == CURRENT_SPARK.catalogue_id:
        return f"{CURRENT_SPARK.name}: the reference every Spark client's rows are compared with"
    if not e["clients"]:
        return "not run here: rests on its sources"
    return "; ".join(f"{name} {ok}/{total}" for name, (ok, total) in e["clients"].items())


def _control_by_client(cells: list[Cell]) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for c in cells:
        if c.part == "control":
            out[c.client][0] += int(not c.ok)
            out[c.client][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def _own_drop_lines(cells: list[Cell]) -> list[str]:
    """The own-drop part's cells, one row per client x table x drops, its steps' outcomes."""
    rows: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    bad: dict[tuple[str, str, str], bool] = defaultdict(bool)
    for c in cells:
        if c.part == "own-drop":
            key = (c.client, c.table, c.feature)
            rows[key].append(f"{c.action}: {c.observed}")
            bad[key] |= not c.ok
    if not rows:
        return ["Not run in these cells."]
    return ["| client | table | package dropped, then the client's own drop | what happened | ok |",
            "|---|---|---|---|---|",
            *[f"| {client} | {table} | {feature} | {'; '.join(steps)} | {'NO' if bad[(client, table, feature)] else 'yes'} |"
              for (client, table, feature), steps in sorted(rows.items())]]


def render_markdown(all_cells: list[Cell], meta: dict[str, Any]) -> str:
    cells = [c for c in all_cells if c.part != "control"]
    n = counts(all_cells)
    lines = ["# Client compatibility matrix, verified with the real clients", "",
             f"Generated by `{meta['command']}` on {meta['when']} ({meta['seconds']:.0f} s, scope "
             f"`{meta['scope']}`): {n['cells']} cells over {meta['tables']} tables, {n['passed']} "
             f"passed, {n['failed']} failed; {n['entries_run']} catalogue entries run here, "
             f"{n['entries_source_only']} resting on their sources alone.", "",
             "Each cell is one thing a real client did, run here (tools/src/delta_downgrade_tools/"
             "older_clients.py); `expected` is the catalogue's verdict (src/delta_downgrade/compat/"
             "clients.toml) or, at a retained version, `same-or-refuse` (the current delta-spark's "
             "rows or the client's protocol error). Entries not listed here rest on their sources "
             "(`verified = false` in the catalogue).", "",
             "## Catalogue entries: verified here or resting on sources", "",
             "`verified` is the catalogue's flag (`verified = true`: compared with the real client by "
             "this matrix); `run here` the clients that ran the entry in these cells (ok / cells). "
             "An entry not run here (Databricks runtimes, Trino, Snowflake, BigQuery, Athena, Fabric, "
             "Sharing servers: none can run on this machine) rests on its cited sources alone.", "",
             "| entry | verified | run here (ok / cells) |", "|---|---|---|",
             *[f"| {e['id']} | {'yes' if e['verified'] else 'no'} | {_entry_cell(e)} |"
               for e in entry_rows(all_cells)],
             "",
             "## The control: without the protected checkpoints", "",
             f"The same reads on a copy of each dropped table from which the protected checkpoints "
             f"(the boundary's and the barriers) and the commits before the boundary were removed, "
             f"the rows compared with the intact table's: {n['control_failed']} of {n['control']} "
             f"cells fail (an older reader then reads other rows or fails), which shows the checks "
             f"above can fail. Not counted in the matrix.", "",
             *[f"- {client}: {bad} of {total} control cells fail" for client, (bad, total)
               in sorted(_control_by_client(all_cells).items())],
             "",
             "## An older client's own DROP FEATURE", "",
             "On a table this package dropped a feature from (after truncate-history), a delta-spark "
             ">= 3.0 drops another feature with its own `ALTER TABLE ... DROP FEATURE` (a reader-writer "
             "feature in Delta's two steps, the log backdated past the retention period between them): "
             "it refuses with a Delta error class of its own, or the feature is gone and the client, "
             "the current delta-spark and this package's `verify_task` read the table as before. "
             "A table named `<table>+deletionVectors` is made for this part alone "
             "(`clients_matrix.OWN_DROP_TABLES`: a golden or corpus table, deletion vectors enabled by the "
             "current delta-spark): no golden or corpus table holds, next to a feature delta-spark "
             "3.1 or 3.2 can drop itself (v2Checkpoint; typeWidening-preview), a second one this "
             "package drops first.", "",
             *_own_drop_lines(cells),
             "",
             "## Summary (ok / cells)", "",
             "| client | feature dropped | state | action | ok / cells |",
             "|---|---|---|---|---|"]
    for (client, feature, state, kind), (ok, total) in sorted(summary(cells).items()):
        mark = "" if ok == total else " **FAILED**"
        lines.append(f"| {client} | {feature} | {state} | {kind} | {ok} / {total}{mark} |")
    failed = [c for c in cells if not c.ok]
    lines += ["", f"## Failed cells ({len(failed)})", ""]
    if failed:
        lines += ["| part | client | table | feature | state | action | expected | observed | problem |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for c in failed:
            lines.append(f"| {c.part} | {c.client} | {c.table} | {c.feature} | {c.state} | {c.action} | "
                         f"{c.expected} | {c.observed} | {c.problem.replace('|', '/')} |")
    else:
        lines.append("None.")
    known = [c for c in cells if c.problem.startswith("known: ")]
    lines += ["", f"## Known client behaviours accepted ({len(known)} cells)", "",
              "Passed cells where the client's answer shows a behaviour listed in "
              "`clients_matrix.KNOWN_BEHAVIOURS`: a client defect or a matter no table feature "
              "decides, observed here (a client that stops showing it fails the cell).", ""]
    if known:
        lines += ["| client | table | feature | state | action | expected | observed | why |",
                  "|---|---|---|---|---|---|---|---|"]
        for c in known:
            lines.append(f"| {c.client} | {c.table} | {c.feature} | {c.state} | {c.action} | {c.expected} | "
                         f"{c.observed} | {c.problem[len('known: '):].replace('|', '/')} |")
    else:
        lines.append("None.")
    lines += ["", "## Every cell", "",
              "| part | client | table | feature | state | action | expected | observed | ok |",
              "|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        lines.append(f"| {c.part} | {c.client} | {c.table} | {c.feature} | {c.state} | {c.action} | "
                     f"{c.expected} | {c.observed} | {'yes' if c.ok else 'NO'} |")
    return "\n".join(lines) + "\n"


def render_html(all_cells: list[Cell], meta: dict[str, Any]) -> str:
    cells = [c for c in all_cells if c.part != "control"]
    def e(x: Any) -> str:
        return html.escape(str(x))

    rows = []
    for (client, feature, state, kind), (ok, total) in sorted(summary(cells).items()):
        cls = "ok" if ok == total else "bad"
        rows.append(f"<tr class='{cls}'><td>{e(client)}</td><td>{e(feature)}</td><td>{e(state)}</td>"
                    f"<td>{e(kind)}</td><td>{ok} / {total}</td></tr>")
    n = counts(all_cells)
    entry_html = "".join(
        f"<tr class='{'ok' if x['clients'] else 'src'}'><td>{e(x['id'])}</td><td>{'yes' if x['verified'] else 'no'}</td>"
        f"<td>{e(_entry_cell(x))}</td></tr>" for x in entry_rows(all_cells))
    control_html = "".join(f"<li>{e(client)}: {bad} of {total} control cells fail</li>"
                           for client, (bad, total) in sorted(_control_by_client(all_cells).items()))
    known = [c for c in cells if c.problem.startswith("known: ")]
    known_rows = "".join(
        f"<tr><td>{e(c.client)}</td><td>{e(c.table)}</td><td>{e(c.feature)}</td><td>{e(c.state)}</td>"
        f"<td>{e(c.action)}</td><td>{e(c.expected)}</td><td>{e(c.observed)}</td>"
        f"<td>{e(c.problem[len('known: '):])}</td></tr>" for c in known)
    own: dict[tuple[str, str, str], list[Cell]] = defaultdict(list)
    for c in cells:
        if c.part == "own-drop":
            own[(c.client, c.table, c.feature)].append(c)
    own_rows = "".join(
        f"<tr class='{'ok' if all(x.ok for x in group) else 'bad'}'><td>{e(k[0])}</td><td>{e(k[1])}</td>"
        f"<td>{e(k[2])}</td><td>{e('; '.join(f'{x.action}: {x.observed}' for x in group))}</td>"
        f"<td>{'yes' if all(x.ok for x in group) else 'NO'}</td></tr>" for k, group in sorted(own.items()))
    failed = [c for c in cells if not c.ok]
    fail_rows = "".join(
        f"<tr class='bad'><td>{e(c.part)}</td><td>{e(c.client)}</td><td>{e(c.table)}</td><td>{e(c.feature)}</td>"
        f"<td>{e(c.state)}</td><td>{e(c.action)}</td><td>{e(c.expected)}</td><td>{e(c.observed)}</td>"
        f"<td>{e(c.problem)}</td></tr>" for c in failed)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Client compatibility matrix</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; margin-bottom: 2em; }}
td, th {{ border: 1px solid #ccc; padding: 2px 8px; font-size: 13px; }}
tr.ok td:last-child {{ background: #dfd; }} tr.bad td {{ background: #fdd; }} tr.src td {{ color: #666; }}
</style></head><body>
<h1>Client compatibility matrix, verified with the real clients</h1>
<p>Generated by <code>{e(meta['command'])}</code> on {e(meta['when'])} ({meta['seconds']:.0f} s, scope
<code>{e(meta['scope'])}</code>): {n['cells']} cells over {meta['tables']} tables, {n['passed']} passed,
{n['failed']} failed; {n['entries_run']} catalogue entries run here, {n['entries_source_only']} resting on
their sources alone.</p>
<h2>Catalogue entries: verified here or resting on sources</h2>
<p><code>verified</code> is the catalogue's flag; an entry not run here (Databricks runtimes, Trino,
Snowflake, BigQuery, Athena, Fabric, Sharing servers) rests on its cited sources alone.</p>
<table><tr><th>entry</th><th>verified</th><th>run here (ok / cells)</th></tr>
{entry_html}</table>
<h2>The control: without the protected checkpoints</h2>
<p>The same reads on a copy without the protected checkpoints and the commits before the boundary,
compared with the intact table's rows: {n['control_failed']} of {n['control']} cells fail (not counted
in the matrix).</p>
<ul>{control_html}</ul>
<h2>An older client's own DROP FEATURE</h2>
<p>On a table this package dropped a feature from (after truncate-history), a delta-spark &gt;= 3.0
drops another feature with its own <code>ALTER TABLE ... DROP FEATURE</code>: it refuses with a Delta
error class of its own, or the feature is gone and the client, the current delta-spark and this
package's <code>verify_task</code> read the table as before. A table named
<code>&lt;table&gt;+deletionVectors</code> is made for this part alone
(<code>clients_matrix.OWN_DROP_TABLES</code>: a golden or corpus table, deletion vectors enabled by the current
delta-spark): no golden or corpus table holds, next to a feature delta-spark 3.1 or 3.2 can drop
itself (v2Checkpoint; typeWidening-preview), a second one this package drops first.</p>
<table><tr><th>client</th><th>table</th><th>package dropped, then the client's own drop</th><th>what happened</th><th>ok</th></tr>
{own_rows}</table>
<h2>Summary</h2>
<table><tr><th>client</th><th>feature dropped</th><th>state</th><th>action</th><th>ok / cells</th></tr>
{''.join(rows)}</table>
<h2>Known client behaviours accepted ({len(known)} cells)</h2>
<table><tr><th>client</th><th>table</th><th>feature</th><th>state</th><th>action</th><th>expected</th><th>observed</th><th>why</th></tr>
{known_rows}</table>
<h2>Failed cells ({len(failed)})</h2>
<table><tr><th>part</th><th>client</th><th>table</th><th>feature</th><th>state</th><th>action</th><th>expected</th><th>observed</th><th>problem</th></tr>
{fail_rows}</table>
</body></html>
"""


# --- the command -------------------------------------------------------------------------------------

#: ``sample``: what ``make test`` runs (one case of the RFC part, every Python client on every
#: table before any drop); ``all``: every table x droppable feature, every client, before and after.
SAMPLE_CASES = (("vacuum_protocol_check", "vacuumProtocolCheck"),)


class ClientPool:
    """The client processes of a run, at most ``jvms`` delta-spark JVMs alive at once (None: no
    limit): before a Spark client that is not running answers, the least recently used running
    one is closed (it starts again when it is asked again). The Python clients start no JVM."""

    def __init__(self, log_dir: Path | None = None, jvms: int | None = None,
                 start: Callable[[ClientSpec, Path | None], Any] = lambda spec, log_dir: ClientProcess(spec, log_dir=log_dir)) -> None:
        """``start``: a client's process (not yet running: it starts on its first request)."""
        if jvms is not None and jvms < 1:
            raise ValueError("at least one JVM")
        self.log_dir = log_dir
        self.jvms = jvms
        self.start = start
        self.processes: dict[str, ClientProcess] = {}
        self.used: list[str] = []  # least recently used first

    def __call__(self, spec: ClientSpec) -> "PooledClient":
        if spec.name not in self.processes:
            self.processes[spec.name] = self.start(spec, self.log_dir)
        return PooledClient(self, self.processes[spec.name])

    def running_jvms(self) -> list[str]:
        return [n for n in self.used if self.processes[n].spec.is_spark and self.processes[n].proc is not None]

    def _before_run(self, process: ClientProcess) -> None:
        name = process.spec.name
        if name in self.used:
            self.used.remove(name)
        if self.jvms is not None and process.spec.is_spark and process.proc is None:
            running = self.running_jvms()
            while running and len(running) + 1 > self.jvms:
                self.processes[running.pop(0)].close()
        self.used.append(name)

    def close(self) -> None:
        for process in self.processes.values():
            process.close()


class PooledClient:
    """A client of a `ClientPool`: a `Runner` that makes room in the pool before it answers."""

    def __init__(self, pool: ClientPool, process: ClientProcess) -> None:
        self.pool = pool
        self.process = process
        self.spec = process.spec

    def run(self, requests: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        requests = list(requests)
        if not requests:
            return []
        self.pool._before_run(self.process)
        return self.process.run(requests)


class CachedReads:
    """A reference whose reads are asked once: the same read (table, version, path) is answered
    from memory, every other operation passes through. The reference's rows are read once per
    table state however many clients are compared with them."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.answers: dict[str, dict[str, Any]] = {}

    def run(self, requests: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        requests = list(requests)
        keys = [json.dumps(r, sort_keys=True) if r.get("op") == "read" else None for r in requests]
        missing = [r for r, k in zip(requests, keys) if k is None or k not in self.answers]
        fresh = iter(self.runner.run(missing) if missing else [])
        out = []
        for request, key in zip(requests, keys):
            if key is not None and key in self.answers:
                out.append(self.answers[key])
                continue
            answer = next(fresh)
            if key is not None and not str(answer.get("error_class") or "").startswith("CLIENT_"):
                self.answers[key] = answer  # a crash, a timeout, a failed start: asked again
            out.append(answer)
        return out


def stop_package_spark() -> None:
    """The package's own Spark stopped, its JVM too: a drop that rewrites data files (column
    mapping, deletion vectors) starts one in this process, idle once the tables are prepared; the
    clients' JVMs then run without it (`ClientPool`'s limit counts the clients' alone). A later
    drop starts it again."""
    from delta_downgrade.spark import active_session

    session = active_session()
    if session is not None:
        session.stop()
    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext

    gateway = getattr(SparkContext, "_gateway", None)
    if gateway is None:
        return
    gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    # Closing the gateway's connections leaves its JVM running: pyspark's gateway server exits
    # when its standard input reaches end of file (its parent gone), so close that pipe.
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.poll() is None:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_matrix(scope: str, workdir: Path, log_dir: Path | None = None,
               spark_clients: Iterable[ClientSpec] = SPARK_CLIENTS,
               python_clients: Iterable[ClientSpec] = PYTHON_CLIENTS,
               progress: Callable[[str], None] = lambda m: None,
               table_names: Callable[[str], bool] = lambda name: True,
               parts: frozenset[str] = frozenset({"rfc", "own-drop", "catalogue"}),
               sink: Callable[[list[Cell]], None] = lambda cells: None,
               jvms: int | None = None,
               feature_names: Callable[[str], bool] = lambda name: True) -> list[Cell]:
    """``table_names`` and ``parts`` choose a subset of the matrix: a slice that fits a time
    budget, the slices' cells merged afterwards (`render_from`). Parts: ``rfc`` (readers, writers
    and the control), ``rfc-writer`` (the writers alone), ``own-drop`` (an older client's own
    DROP FEATURE, `own_drop_cells`), ``catalogue``. ``sink`` gets the cells of each case and
    table as soon as they are done (a run stopped at its time budget keeps what it did).
    ``jvms``: at most that many delta-spark JVMs at once, the reference's included (`ClientPool`);
    the run then goes client by client, each client over every case, the reference's reads
    asked once (`CachedReads`)."""
    unknown = parts - PARTS
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)}: choose from {sorted(PARTS)}")
    spark_clients = [s for s in spark_clients if s.missing() is None]
    python_clients = [s for s in python_clients if s.missing() is None]
    pool = ClientPool(log_dir, jvms)
    cells: list[Cell] = []
    all_tables = [(n, p) for n, p in tables() if not n.startswith("bad_") and table_names(n)]
    try:
        reference = CachedReads(pool(CURRENT_SPARK))
        rfc_parts = parts & {"rfc", "rfc-writer", "own-drop"}
        cases = [(n, p, f) for n, p in all_tables for f in droppable_features(p) if feature_names(f)] \
            if rfc_parts else []
        if scope != "all":
            cases = [c for c in cases if (c[0], c[2]) in SAMPLE_CASES]
        own_drop_only: set[str] = set()
        if "own-drop" in parts and scope == "all" and feature_names(OWN_DROP_PACKAGE_DROPS):
            for name, path in own_drop_tables(workdir / "own-drop-sources", reference, table_names):
                cases.append((name, path, OWN_DROP_PACKAGE_DROPS))
                own_drop_only.add(name)
        prepared: list[tuple[Case, Path | None]] = []
        for i, (name, path, feature) in enumerate(cases):
            progress(f"[{i + 1}/{len(cases)}] {name} drop {feature}")
            case = prepare_case(name, path, feature, workdir, control="rfc" in parts and name not in own_drop_only)
            if case.refusal and not case.states:
                refused = [Cell("rfc", "delta-downgrade", "-", name, feature, "dropped", "drop",
                                "dropped or refused", f"refused: {case.refusal}", True)]
                cells += refused
                sink(refused)
                continue
            prepared.append((case, case.states.pop("control", None)))
        read_back: list[ReadBack] | None = None
        if jvms is not None:
            stop_package_spark()
            if "rfc" in parts and spark_clients:
                # One JVM at a time: the reference reads every state of every case now, in one
                # start, rather than once per case between the client's reads (`CachedReads`).
                reference.run(reference_reads([c for c, _ in prepared if c.table not in own_drop_only]))
            read_back = []
        for spec in spark_clients:
            runner = pool(spec)
            for j, (case, control) in enumerate(prepared):
                progress(f"{spec.name} [{j + 1}/{len(prepared)}] {case.table} drop {case.feature}")
                more: list[Cell] = []
                if "rfc" in parts and case.table not in own_drop_only:
                    more += rfc_reader_cells(case, reference, {spec: runner})
                if parts & {"rfc", "rfc-writer"} and case.table not in own_drop_only:
                    more += rfc_writer_cells(case, reference, spec, runner, workdir, read_back)
                if "own-drop" in parts:
                    more += own_drop_cells(case, reference, spec, runner, workdir)
                if control is not None and "rfc" in parts:
                    # Recorded, not judged as the matrix: a failing control shows the checks can fail.
                    ctl = Case(case.table, case.source, case.feature, {"control": control})
                    for c in rfc_reader_cells(ctl, reference, {spec: runner}, reference_path=case.states["dropped"]):
                        c.part = "control"
                        more.append(c)
                if read_back is not None and (len(read_back) >= READ_BACK_BATCH or j == len(prepared) - 1):
                    more += read_back_cells(read_back, reference, runner)
                    read_back.clear()
                cells += more
                sink(more)
        if "catalogue" in parts:
            cells += catalogue_part(all_tables, python_clients, spark_clients if scope == "all" else [],
                                    pool, workdir, scope, progress, sink, reference=reference)
    finally:
        pool.close()
    return cells


#: With one JVM at a time, the writers' tables read back (`read_back_cells`) after this many cases
#: at once: two JVM starts per batch rather than per case; a run stopped early loses at most the
#: read-back of a batch.
READ_BACK_BATCH = 6


def reference_reads(cases: Iterable[Case]) -> list[dict[str, Any]]:
    """The reference's reads of `rfc_reader_cells` for these cases: every state (the control's
    reference is the dropped state), the latest version and every commit."""
    return [r for case in cases for path in case.states.values()
            for r in read_requests(path, versions_read(path))]


#: The parts of the matrix a run can choose (`run_matrix`).
PARTS = frozenset({"rfc", "rfc-writer", "own-drop", "catalogue"})


def catalogue_part(all_tables, python_clients, spark_clients, process, workdir: Path, scope: str,
                   progress: Callable[[str], None],
                   sink: Callable[[list[Cell]], None] = lambda cells: None,
                   reference: Runner | None = None) -> list[Cell]:
    """Client by client, each over every table (a client's process starts once); the
    references' reads asked once per table."""
    cells: list[Cell] = []
    refs = [CachedReads(process(s)) for s in PYTHON_CLIENTS if s.name in PYTHON_REFERENCES]
    spark_ref = (reference or CachedReads(process(CURRENT_SPARK))) if spark_clients else None
    dropped_cache: dict[tuple[str, tuple[str, ...]], Path | str] = {}

    def python_reference(path: Path) -> dict[str, Any] | None:
        for r, via in zip(refs, ("rust", "duckdb")):
            answer = r.run([{"op": "read", "path": str(path), "via": via}])[0]
            if answer.get("ok"):
                return answer
        return None

    # The "original" state a client reads is a copy without Hadoop's hidden .crc files
    # (`copy_table`), as every other state is: a golden table whose commit was rewritten after
    # Spark wrote it keeps a stale one, and delta-spark < 4.0's log replay, reading through
    # Hadoop's checksummed local file system, fails on it (ChecksumException) - a property of the
    # test copy, not of the table's protocol.
    originals: dict[str, Path] = {}

    def original(name: str, path: Path) -> Path:
        if name not in originals:
            originals[name] = copy_table(path, workdir / f"{name}--original")
        return originals[name]

    clients = [*python_clients, *spark_clients]
    # Every drop-feature --for first (the package's own Spark, when a drop rewrites data, is
    # then stopped before the clients' JVMs start)
    plans: dict[tuple[str, str], tuple[str, ...] | None] = {}
    for spec in clients:
        for name, path in all_tables:
            features = plan_features(path, spec.catalogue_id)
            if scope != "all" and not spec.is_spark and features and any(
                    f in ("deletionVectors", "columnMapping", "typeWidening", "typeWidening-preview") for f in features):
                features = None  # a data rewrite: the full matrix only
            plans[(spec.name, name)] = features
            if features and (name, features) not in dropped_cache:
                progress(f"catalogue: {name} drop-feature --for {spec.catalogue_id}")
                target = copy_table(path, workdir / f"{name}--for--{len(dropped_cache)}")
                why = drop_for(target, spec.catalogue_id)
                dropped_cache[(name, features)] = why if why else target
    if getattr(process, "jvms", None) is not None:
        stop_package_spark()
    for spec in clients:
        runner = process(spec)
        for t, (name, path) in enumerate(all_tables):
            progress(f"catalogue {spec.name} [{t + 1}/{len(all_tables)}] {name}")
            more: list[Cell] = []
            source = original(name, path)
            if spec.is_spark:
                assert spark_ref is not None
                reference_answer = spark_ref.run(read_requests(source, [None]))[0]
            else:
                reference_answer = python_reference(source)
            more += catalogue_cells(spec, runner, name, source, "original", reference_answer, workdir)
            features = plans[(spec.name, name)]
            if features:
                after = dropped_cache[(name, features)]
                if isinstance(after, str):
                    more.append(Cell("catalogue", spec.name, spec.catalogue_id, name, "for:" + ",".join(features),
                                     "dropped-for", "drop-feature --for", "dropped", f"refused: {after}", True))
                else:
                    after_ref = (spark_ref.run(read_requests(after, [None]))[0] if spec.is_spark and spark_ref
                                 else python_reference(after))
                    more += catalogue_cells(spec, runner, name, after, "dropped-for", after_ref, workdir,
                                            "for:" + ",".join(features))
            cells += more
            sink(more)
    return cells


def _names(patterns: str | None) -> Callable[[str], bool]:
    """A name filter from comma-separated shell patterns (``corpus-*,dv_*``); None: every name."""
    import fnmatch

    if not patterns:
        return lambda name: True
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    return lambda name: any(fnmatch.fnmatchcase(name, p) for p in wanted)


class CellsFile:
    """Every cell (the control's too) as JSON lines, written as the run goes: a first line with
    the run's meta, one line per cell, a last line with the run's duration when it ends. The
    input of `render_from`; a run stopped early leaves a readable file (its duration then from
    the file's last write)."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path = path
        self.file = open(path, "w", encoding="utf-8")
        self._write({"meta": meta, "started": time.time()})

    def _write(self, record: dict[str, Any]) -> None:
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()

    def add(self, cells: list[Cell]) -> None:
        for c in cells:
            self._write({"cell": asdict(c)})

    def finish(self, seconds: float) -> None:
        self._write({"seconds": seconds})
        self.file.close()


def read_cells(path: Path) -> tuple[dict[str, Any], list[Cell]]:
    meta: dict[str, Any] = {}
    cells: list[Cell] = []
    started = None
    seconds = None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if "meta" in record:
            meta, started = dict(record["meta"]), record["started"]
        elif "cell" in record:
            cells.append(Cell(**record["cell"]))
        elif "seconds" in record:
            seconds = record["seconds"]
    if seconds is None:  # stopped before its end
        seconds = Path(path).stat().st_mtime - (started or 0)
        meta["scope"] = meta.get("scope", "") + " (stopped before its end)"
    meta["seconds"] = seconds
    return meta, cells


def render_from(files: list[Path], out: Path) -> list[Cell]:
    """The documents from the cells of one or more runs (slices of the matrix: their cells
    merged, a cell run again by a later file replacing the earlier one, their durations summed);
    returns the merged cells."""
    by_key: dict[tuple[str, ...], Cell] = {}
    metas = []
    for f in files:
        meta, more = read_cells(f)
        metas.append(meta)
        for c in more:
            # A later slice that ran the same cell again (after a fix) supersedes the earlier one
            key = (c.part, c.client, c.table, c.feature, c.state, c.action)
            by_key.pop(key, None)
            by_key[key] = c
    cells = list(by_key.values())
    meta = {"command": " + ".join(sorted({m["command"] for m in metas})),
            "scope": " + ".join(m["scope"] for m in metas),
            "when": max(m["when"] for m in metas),
            "seconds": sum(m["seconds"] for m in metas),
            "tables": len({c.table for c in cells})}
    write_documents(out, cells, meta)
    return cells


def write_documents(out: Path, cells: list[Cell], meta: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "clients-matrix.md").write_text(render_markdown(cells, meta), encoding="utf-8")
    (out / "clients-matrix.html").write_text(render_html(cells, meta), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m delta_downgrade_tools.clients_matrix")
    parser.add_argument("--out", default=str(REPO_ROOT / "docs"), help="where clients-matrix.md/.html go")
    parser.add_argument("--scope", choices=("sample", "all"), default="all")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (table copies, client logs)")
    parser.add_argument("--tables", help="only these tables: comma-separated shell patterns (corpus-*,dv_*)")
    parser.add_argument("--features", help="only the RFC cases dropping these features: comma-separated "
                        "shell patterns (columnMapping,deletionVectors)")
    parser.add_argument("--clients", help="only these clients (the current delta-spark is always the "
                        "reference): comma-separated shell patterns of their names ('delta-spark 3.*')")
    parser.add_argument("--parts", default="rfc,own-drop,catalogue",
                        help="comma-separated: rfc (readers, writers, control), rfc-writer (writers only), "
                             "own-drop (an older client's own DROP FEATURE), catalogue; default rfc,own-drop,catalogue")
    parser.add_argument("--jvms", type=int, default=None,
                        help="at most this many delta-spark JVMs at once, the reference's included (>= 2 "
                             "to compare a Spark client with it); the run then goes client by client")
    parser.add_argument("--cells", help="write every cell as JSON lines here, as the run goes")
    parser.add_argument("--render", nargs="+", metavar="CELLS_JSON",
                        help="run nothing: the documents from the cells of these runs (--cells), merged")
    args = parser.parse_args(argv)
    if args.render:
        cells = render_from([Path(f) for f in args.render], Path(args.out))
        return _conclude(cells, Path(args.out))
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="clients-matrix-"))
    chosen = _names(args.clients)
    parts = frozenset(p.strip() for p in args.parts.split(",") if p.strip())
    command = "make clients-matrix" if args.scope == "all" else \
        "python -m delta_downgrade_tools.clients_matrix --scope sample"
    subset = [f"--{k} {v!r}" for k, v in (("tables", args.tables), ("features", args.features),
                                          ("clients", args.clients)) if v]
    if parts != {"rfc", "own-drop", "catalogue"}:
        subset.append(f"--parts {','.join(sorted(parts))}")
    meta = {"command": command, "scope": args.scope + (" " + " ".join(subset) if subset else ""),
            "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    cells_file = CellsFile(Path(args.cells) if args.cells else workdir / "clients-matrix.jsonl", meta)
    try:
        cells = run_matrix(args.scope, workdir / "tables", log_dir=workdir / "logs",
                           spark_clients=[s for s in SPARK_CLIENTS if chosen(s.name)],
                           python_clients=[s for s in PYTHON_CLIENTS if chosen(s.name)],
                           progress=lambda m: print(time.strftime("%H:%M:%S"), m, file=sys.stderr, flush=True),
                           table_names=_names(args.tables), parts=parts, sink=cells_file.add,
                           jvms=args.jvms, feature_names=_names(args.features))
        cells_file.finish(time.monotonic() - started)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    meta.update(seconds=time.monotonic() - started, tables=len({c.table for c in cells}))
    out = Path(args.out)
    write_documents(out, cells, meta)
    if args.keep:
        print(f"every cell (the control's too): {cells_file.path}", file=sys.stderr)
    return _conclude(cells, out)


def _conclude(cells: list[Cell], out: Path) -> int:
    judged = [c for c in cells if c.part != "control"]
    control = [c for c in cells if c.part == "control"]
    failed = [c for c in judged if not c.ok]
    print(f"{len(judged)} cells, {len(failed)} failed; control: {sum(not c.ok for c in control)} of "
          f"{len(control)} cells fail without the protected checkpoints; {out}/clients-matrix.md", file=sys.stderr)
    for c in failed:
        print(f"FAILED {c.part} {c.client} {c.table} {c.feature} {c.state} {c.action}: {c.problem}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
