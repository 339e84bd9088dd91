"""delta-spark as the oracle of every drop: for every golden table and every table of the
delta-spark corpus (tests/delta_spark_corpus.py), and every feature of its protocol, one copy is
dropped by delta-spark's own ``ALTER TABLE delta.`path` DROP FEATURE f`` and another by this
package's native drop, in this process, on the same warm session. Three modes:

- ``fast``: the drop without history truncation (delta-spark's fast path). When both sides end
  with ``checkpointProtection`` in the protocol, the log files of both are then aged past the
  retention (their modification times moved back, as delta-spark's own retention tests move its
  clock: metadata cleanup reads the files' times) and ``checkpointProtection`` is dropped with
  ``TRUNCATE HISTORY`` on both (mode ``checkpointProtection``): delta-spark's own command against
  this package's truncation of the history before the boundary.
- ``truncate``: ``DROP FEATURE f TRUNCATE HISTORY`` (the features this package can drop). When
  both sides answer that the retention must pass first, both logs are aged the same way and the
  drop is run again (mode ``truncate-retried``).

After each step both results are compared through delta-spark:

- ``outcome``: dropped, or the error class of the refusal (already absent counts as Delta's
  ``DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT``);
- ``unchanged``: a refusal left the table byte-identical (on each side), except the waits, which
  leave the traces removed;
- ``protocol``, ``properties``, ``boundary``: DESCRIBE DETAIL's protocol and table features, its
  properties, and the boundary property ``delta.requireCheckpointProtectionBeforeVersion``; when
  DESCRIBE DETAIL refuses on a side (``detail``: the refusal), the protocol and properties of
  delta-spark's snapshot of that side instead;
- ``operations``: DESCRIBE HISTORY's operation names of the commits the step wrote, in order;
- ``checkpoints``: the versions and kinds (classic, multipart, v2) of the checkpoints the step
  wrote (from the log listing); ``interval-checkpoint``: those delta-spark writes because a
  version is a multiple of ``delta.checkpointInterval``; ``v2-top-level-format``: the formats
  (json, parquet) of the top-level files of the V2 checkpoints the step wrote;
  ``v2-classic-compat-checkpoint``: the classic checkpoints written at the version of a V2 one
  (written in the step or before it), relative to the step's first commit;
- ``earliest``: after a truncation, the first version the log still has, relative to the step;
- ``read@latest``, ``read@<version>``: delta-spark reading the result at the latest version and
  time-travelling to every version the step wrote and the one before: the same rows, or the same
  refusal class; ``history-intact``: every file of the table before a step that keeps history is
  unchanged on each side, so that the older versions read the very same bytes on both.

Any difference not in tests/integration/delta_spark_differences.py (each with the rule that makes
it right) fails the test; every difference found is printed (``DIFF``), explained or not, and
every step compared says so (``COMPARED``). Corpus tables are named ``corpus/<name>`` there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from tests.delta_spark_corpus import CORPUS_CASES, CORPUS_NAMES
from tests.delta_spark_corpus import corpus_table, delta_spark_corpus  # noqa: F401 (fixtures)
from tests.delta_spark_support import condition
from tests.golden_cases import golden_cases
from tests.integration.delta_spark_differences import KNOWN_GAPS, explanation

# Once, on the classic session: the Connect pass would run the same Delta statements again.
pytestmark = pytest.mark.classic_spark("the oracle runs once, on the classic session")

BOUNDARY = "delta.requireCheckpointProtectionBeforeVersion"
NOT_PRESENT = "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"
CHECKPOINT_PROTECTION = "checkpointProtection"
#: The answers that mean "rerun after the retention": the traces are removed, history remains.
WAITS = {"DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD", "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST",
         "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"}
#: How far back the log files are moved to pass the history-truncation retention
#: (delta.dropFeatureTruncateHistory.retentionDuration, 24 hours by default): three days.
AGE_S = 3 * 24 * 3600
CORPUS_PREFIX = "corpus/"


def _cases(root: Path) -> list[tuple[str, str]]:
    """(table, feature) for every readable golden table and every feature its protocol names or
    implies (legacy versions): droppable or not, both sides must agree."""
    from delta_downgrade.log.delta_log import DeltaLog

    cases = []
    for table in sorted(p.name for p in root.iterdir() if (p / "_delta_log").is_dir()):
        if table.startswith("bad_"):
            continue
        try:
            protocol = DeltaLog(str(root / table)).snapshot(check_read=False).protocol
        except Exception:
            continue
        cases += [(table, feature) for feature in sorted(protocol.features)]
    return cases


def _truncate_cases(cases: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The cases whose history-truncating drop (``DROP FEATURE f TRUNCATE HISTORY``) is compared
    too: the removable features of this registry."""
    from delta_downgrade.features import REMOVABLE

    return [(t, f) for t, f in cases if f in REMOVABLE]


#: ``all``: every case (``make test-delta-oracle``); otherwise (``make test``) a stratified sample
#: within the suite's budget: every feature once, on the corpus table with the fewest features that
#: carries it (where it is dropped alone), else the first golden table; the history-truncating drop of the
#: features in TRUNCATE_SAMPLE once; and every corpus table at least once (a refusal, the cheap
#: case, when its removable features are sampled on another table).
SCOPE_VARIABLE = "DELTA_DOWNGRADE_DELTA_ORACLE"
TRUNCATE_SAMPLE = ("deletionVectors", "vacuumProtocolCheck", "checkpointProtection")


def _in_scope(cases: list[tuple[str, str, bool]]) -> list[tuple[str, str, bool]]:
    if os.environ.get(SCOPE_VARIABLE, "").strip().lower() == "all":
        return cases
    from delta_downgrade.features import REMOVABLE

    # Corpus tables first, the table carrying the fewest features first (the feature alone).
    size = {}
    for table, _, _ in cases:
        size[table] = size.get(table, 0) + 1
    corpus_first = sorted(cases, key=lambda c: (not c[0].startswith(CORPUS_PREFIX), size[c[0]]))
    seen: set[tuple[str, bool]] = set()
    sample = []
    for table, feature, truncate in corpus_first:
        if (feature, truncate) in seen or (truncate and feature not in TRUNCATE_SAMPLE):
            continue
        seen.add((feature, truncate))
        sample.append((table, feature, truncate))
    covered = {t for t, _, _ in sample}
    for name in CORPUS_NAMES:
        own = [c for c in cases if c[0] == CORPUS_PREFIX + name and not c[2]]
        if own and CORPUS_PREFIX + name not in covered:
            sample.append(next((c for c in own if c[1] not in REMOVABLE), own[0]))
    return sample


_FAST = golden_cases(_cases) + [(CORPUS_PREFIX + t, f) for t, f in CORPUS_CASES]
CASES = _in_scope([(t, f, False) for t, f in _FAST] + [(t, f, True) for t, f in _truncate_cases(_FAST)])


# --- what delta-spark sees --------------------------------------------------------------------------

def _answer(call):
    """A statement's answer, or the class of its refusal (both are answers to compare)."""
    try:
        return call()
    except Exception as exc:
        return ("refused", condition(exc))


def _detail(spark, path: str) -> dict:
    row = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0].asDict()
    return {"protocol": (row["minReaderVersion"], row["minWriterVersion"],
                         tuple(sorted(row.get("tableFeatures") or ()))),
            "properties": dict(sorted((row.get("properties") or {}).items()))}


def _snapshot_detail(spark, path: str) -> dict:
    """What `_detail` gives, from delta-spark's snapshot of the table (its protocol and metadata
    actions): for a table whose DESCRIBE DETAIL refuses, so that protocol and properties are still
    compared. The refused DESCRIBE DETAIL has just brought delta-spark's snapshot up to date."""
    snapshot = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path) \
        .unsafeVolatileSnapshot()
    protocol = json.loads(snapshot.protocol().json())["protocol"]
    configuration = json.loads(snapshot.metadata().json())["metaData"].get("configuration") or {}
    features = set(protocol.get("readerFeatures") or ()) | set(protocol.get("writerFeatures") or ())
    return {"protocol": (protocol["minReaderVersion"], protocol["minWriterVersion"], tuple(sorted(features))),
            "properties": dict(sorted(configuration.items()))}


def _history(spark, path: str) -> list[tuple[int, str]]:
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation").collect()
    return sorted((r["version"], r["operation"]) for r in rows)


def _rows(spark, path: str, version: int | None):
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    try:
        return "rows", sorted(map(repr, (tuple(r) for r in reader.load(path).collect())))
    except Exception as exc:  # a refusal is an answer to compare
        return "refused", condition(exc)


_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10})|\.([0-9a-f-]{36}))?\.(parquet|json)$")


def _checkpoints(path: str) -> list[tuple[int, str]]:
    """(version, kind) of every checkpoint file of the log: classic, multipart, v2-json, v2-parquet
    (a V2 checkpoint by the format of its top-level file)."""
    out = set()
    for name in os.listdir(os.path.join(path, "_delta_log")):
        m = _CHECKPOINT.match(name)
        if not m:
            continue
        kind = "multipart" if m.group(2) else (f"v2-{m.group(5)}" if m.group(4) else "classic")
        out.add((int(m.group(1)), kind))
    return sorted(out)


def _without_hadoop_checksums(path: str) -> str:
    """Remove Hadoop's hidden ``.<file>.crc`` checksum files of a copy: some golden tables carry
    stale ones (files edited after they were written), which Hadoop's local file system refuses
    to read past; they are no part of a Delta table."""
    for dirpath, _, files in os.walk(path):
        for name in files:
            if name.startswith(".") and name.endswith(".crc"):
                os.remove(os.path.join(dirpath, name))
    return path


def _actionless_commits(path: str, operation: str, since: int) -> list[int]:
    """Versions from ``since`` whose commit holds nothing but a commitInfo naming ``operation``."""
    out = []
    for version in (v for v in _commit_versions(path) if v >= since):
        with open(os.path.join(path, "_delta_log", f"{version:020d}.json"), encoding="utf-8") as fh:
            actions = [json.loads(line) for line in fh if line.strip()]
        if len(actions) == 1 and actions[0].get("commitInfo", {}).get("operation") == operation:
            out.append(version)
    return out


def _commit_versions(path: str) -> list[int]:
    """The versions of the log's published commit files."""
    return sorted(int(n[:20]) for n in os.listdir(os.path.join(path, "_delta_log"))
                  if re.fullmatch(r"\d{20}\.json", n))


def _fingerprint(path: str) -> dict[str, str]:
    digest = {}
    for dirpath, _, files in os.walk(path):
        for name in files:
            full = os.path.join(dirpath, name)
            with open(full, "rb") as fh:
                digest[os.path.relpath(full, path)] = hashlib.sha256(fh.read()).hexdigest()
    return digest


# --- the two drops ------------------------------------------------------------------------------------

def _delta_drop(spark, path: str, feature: str, truncate: bool) -> str:
    statement = f"ALTER TABLE delta.`{path}` DROP FEATURE `{feature}`"
    try:
        spark.sql(statement + (" TRUNCATE HISTORY" if truncate else "")).collect()
    except Exception as exc:
        return condition(exc)
    return "dropped"


def _native_drop(path: str, feature: str, truncate: bool) -> str:
    from delta_downgrade.errors import DeltaDowngradeError
    from delta_downgrade.operations.drop_feature import drop_feature

    try:
        outcome = drop_feature(path, feature, truncate_history=truncate)
    except DeltaDowngradeError as exc:
        return exc.error_class
    return NOT_PRESENT if outcome.status == "already_absent" else "dropped"


def _age_log(path: str, seconds: int = AGE_S) -> None:
    """Move the modification time of every log file (commits, checkpoints, sidecars) ``seconds``
    back: what metadata cleanup reads as a commit's time (PROTOCOL.md "Metadata Cleanup")."""
    for dirpath, _, files in os.walk(os.path.join(path, "_delta_log")):
        for name in files:
            full = os.path.join(dirpath, name)
            st = os.stat(full)
            os.utime(full, ns=(st.st_atime_ns, st.st_mtime_ns - seconds * 1_000_000_000))


def _protocol_features(path: str) -> frozenset[str]:
    from delta_downgrade.log.delta_log import DeltaLog

    return frozenset(DeltaLog(path).snapshot(check_read=False).protocol.features)


class _Before:
    """One side's table before a step: its files, versions and checkpoints."""

    def __init__(self, path: str):
        self.path = path
        self.files = _fingerprint(path)
        self.versions = _commit_versions(path)
        self.checkpoints = set(_checkpoints(path))

    @property
    def first_new(self) -> int:
        return max(self.versions) + 1


def _compare_step(spark, before: tuple[_Before, _Before], outcomes: tuple[str, str], *,
                  keeps_history: bool, check) -> None:
    """Every aspect of one step (the module docstring), ``check(aspect, delta-spark's, ours)``."""
    theirs, ours = outcomes
    (tb, ob) = before
    theirs_path, ours_path = tb.path, ob.path
    check("outcome", theirs, ours)
    changed = (_fingerprint(theirs_path) != tb.files, _fingerprint(ours_path) != ob.files)
    if theirs != "dropped" or ours != "dropped":
        # A refusal writes nothing (validation before the first write); a wait has removed the
        # traces and so has written.
        check("unchanged", theirs in WAITS or theirs == "dropped" or not changed[0],
              ours in WAITS or ours == "dropped" or not changed[1])
    if not (changed[0] or changed[1]):
        return
    # delta-spark may commit "Deletion Vector Tombstones" with no tombstone in it: a commit
    # that changes nothing, its own aspect; the other aspects compare delta-spark's versions
    # with it left out (`aligned`).
    empty = _actionless_commits(theirs_path, "Deletion Vector Tombstones", tb.first_new)
    check("empty-dv-tombstone-commit", len(empty), 0)

    def aligned(version: int) -> int:
        return version - sum(1 for e in empty if e < version)

    detail = _answer(lambda: _detail(spark, theirs_path)), _answer(lambda: _detail(spark, ours_path))
    if any(isinstance(d, tuple) for d in detail):
        check("detail", detail[0], detail[1])
        # The protocol and properties are compared all the same, from delta-spark's snapshot.
        detail = tuple(_answer(lambda p=p: _snapshot_detail(spark, p)) if isinstance(d, tuple) else d
                       for d, p in zip(detail, (theirs_path, ours_path)))
    if any(isinstance(d, tuple) for d in detail):
        check("snapshot", detail[0], detail[1])
    else:
        check("protocol", detail[0]["protocol"], detail[1]["protocol"])
        props = [{k: v for k, v in d["properties"].items() if k != BOUNDARY} for d in detail]
        check("properties", props[0], props[1])
        bounds = [d["properties"].get(BOUNDARY) for d in detail]
        # The boundary is a version: compared relative to the first commit of the step.
        check("boundary", None if bounds[0] is None else aligned(int(bounds[0])) - tb.first_new,
              None if bounds[1] is None else int(bounds[1]) - ob.first_new)
    history = _answer(lambda: _history(spark, theirs_path)), _answer(lambda: _history(spark, ours_path))
    if any(isinstance(h, tuple) for h in history):
        check("history", history[0], history[1])
        history = ([], [])
    check("operations", [op for v, op in history[0] if v >= tb.first_new and v not in empty],
          [op for v, op in history[1] if v >= ob.first_new])
    new = ([(v, k) for v, k in _checkpoints(theirs_path) if (v, k) not in tb.checkpoints],
           [(v, k) for v, k in _checkpoints(ours_path) if (v, k) not in ob.checkpoints])
    # The format of a V2 checkpoint's top-level file is an aspect of its own; the checkpoints
    # are compared by version and kind.
    check("v2-top-level-format", *(sorted({k[3:] for _, k in side if k.startswith("v2-")}) for side in new))
    written = tuple(sorted({(v, "v2" if k.startswith("v2-") else k) for v, k in side}) for side in new)
    # A classic checkpoint written at the version of a V2 one - written in the step, or there
    # before it - is the backward-compatibility copy of a table with V2 checkpoints (metadata
    # cleanup writes one at the version of the checkpoint it starts from): its own aspect.
    v2_versions = tuple({v for v, k in [*b.checkpoints, *side] if k.startswith("v2")}
                        for b, side in zip((tb, ob), written))
    compat = tuple([(v, k) for v, k in side if k == "classic" and v in versions]
                   for side, versions in zip(written, v2_versions))
    check("v2-classic-compat-checkpoint", [aligned(v) - tb.first_new for v, _ in compat[0]],
          [v - ob.first_new for v, _ in compat[1]])
    written = tuple([c for c in side if c not in extra] for side, extra in zip(written, compat))
    # Delta also checkpoints every delta.checkpointInterval-th version it commits (its
    # post-commit hook): those of its checkpoints this package lacks are their own aspect.
    interval = 10 if isinstance(detail[0], tuple) else \
        int(detail[0]["properties"].get("delta.checkpointInterval", "10"))
    # A checkpoint at the version of one of delta-spark's empty tombstone commits (left out of
    # the alignment, so it would fall on the same version as its next checkpoint) is always one.
    on_interval = [(v, k) for v, k in written[0]
                   if v % interval == 0 and (v in empty or
                                             (aligned(v) - tb.first_new + ob.first_new, k) not in written[1])]
    check("interval-checkpoint", [(aligned(v) - tb.first_new, k) for v, k in on_interval], [])
    check("checkpoints", [(aligned(v) - tb.first_new, k) for v, k in written[0] if (v, k) not in on_interval],
          [(v - ob.first_new, k) for v, k in written[1]])
    check("read@latest", _rows(spark, theirs_path, None), _rows(spark, ours_path, None))
    if not keeps_history:
        # A truncation: the first version each log still has, relative to the step's start.
        check("earliest", min(_commit_versions(theirs_path)) - tb.first_new,
              min(_commit_versions(ours_path)) - ob.first_new)
        return
    # Time travel: every version both logs retain (the new commits align only when the commit
    # sequences do; the operations aspect reports that difference itself). A version before the
    # step is read from the same bytes on both sides as long as every file it had is intact and
    # no checkpoint was written at or before it: that is checked for all of them, and the newest
    # one is read as well.
    for side, b in (("delta-spark", tb), ("ours", ob)):
        now = _fingerprint(b.path)
        check(f"history-intact ({side})", [],
              sorted(f for f, digest in b.files.items()
                     if f != "_delta_log/_last_checkpoint" and now.get(f) != digest))
    ours_versions = {v for v, _ in history[1]}
    for version in sorted(v for v, _ in history[0] if v >= tb.first_new - 1 and v not in empty):
        ours_version = aligned(version) - tb.first_new + ob.first_new
        if ours_version in ours_versions:
            check(f"read@{ours_version - ob.first_new}", _rows(spark, theirs_path, version),
                  _rows(spark, ours_path, ours_version))


def _copies(request, table: str) -> tuple[str, str]:
    if table.startswith(CORPUS_PREFIX):
        corpus_table = request.getfixturevalue("corpus_table")
        return corpus_table(table[len(CORPUS_PREFIX):]), corpus_table(table[len(CORPUS_PREFIX):])
    golden_table = request.getfixturevalue("golden_table")
    return tuple(_without_hadoop_checksums(golden_table(table)) for _ in range(2))  # type: ignore[return-value]


#: Cases whose differences are found but not yet explained or fixed: each fails as expected
#: (strict: once it passes, the entry must go).
OPEN: dict[tuple[str, str, bool], str] = {}


def _param(table: str, feature: str, truncate: bool):
    why = OPEN.get((table, feature, truncate))
    marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
    return pytest.param(table, feature, truncate, marks=marks,
                        id=f"{table}-{feature}{'-truncate' if truncate else ''}")


@pytest.mark.parametrize(("table", "feature", "truncate"), [_param(*c) for c in CASES])
def test_native_drop_matches_delta_spark(delta_spark, request, table, feature, truncate):
    spark = delta_spark
    theirs_path, ours_path = _copies(request, table)
    differences: list[tuple[str, str, object, object]] = []

    def step(mode: str, drop_feature: str, truncate_history: bool, keeps_history: bool) -> tuple[str, str]:
        before = (_Before(theirs_path), _Before(ours_path))
        outcomes = (_delta_drop(spark, theirs_path, drop_feature, truncate_history),
                    _native_drop(ours_path, drop_feature, truncate_history))

        def check(aspect: str, a: object, b: object) -> None:
            if a != b:
                differences.append((mode, aspect, a, b))

        _compare_step(spark, before, outcomes, keeps_history=keeps_history, check=check)
        print(f"COMPARED {table} {feature} {mode}: {outcomes[0]} / {outcomes[1]}")
        return outcomes

    if truncate:
        outcomes = step("truncate", feature, True, keeps_history=False)
        if all(o in WAITS for o in outcomes):
            _age_log(theirs_path)
            _age_log(ours_path)
            step("truncate-retried", feature, True, keeps_history=False)
    else:
        outcomes = step("fast", feature, False, keeps_history=True)
        if outcomes == ("dropped", "dropped") and feature != CHECKPOINT_PROTECTION and all(
                CHECKPOINT_PROTECTION in _protocol_features(p) for p in (theirs_path, ours_path)):
            _age_log(theirs_path)
            _age_log(ours_path)
            step("checkpointProtection", CHECKPOINT_PROTECTION, True, keeps_history=False)

    unexplained = [d for d in differences if explanation(table, feature, d[0], d[1]) is None]
    for mode, aspect, a, b in differences:
        why = explanation(table, feature, mode, aspect)
        print(f"DIFF {table} {feature} {mode} {aspect}: delta-spark={a!r} ours={b!r}"
              f"{' (' + ('known gap' if why in KNOWN_GAPS else 'deliberate') + ': ' + why.why + ')' if why else ' UNEXPLAINED'}")
    print(f"RESULT {table} {feature} {'truncate' if truncate else 'fast'}: {len(differences)} differences, "
          f"{len(unexplained)} unexplained")
    assert not unexplained, "\n".join(f"{mode} {aspect}: delta-spark={a!r} ours={b!r}"
                                       for mode, aspect, a, b in unexplained)
