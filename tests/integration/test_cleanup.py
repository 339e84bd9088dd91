"""Metadata cleanup on real tables (operations/cleanup.py): Checkpoint Protection's cleanup
scenarios, plain PROTOCOL.md cleanup, dry runs, refusals, the truncation-time helpers and the CLI.

Setup of the scenarios (as in delta-spark's DeltaRetentionSuite): checkpointProtection and
V = ``delta.requireCheckpointProtectionBeforeVersion`` are set at commit 0; commits ``0..old-1``
are "old" (day 0), the rest "recent" (day 32); the clock is at day 33; retention is the default
30 days with DAY granularity, so the cutoff is midnight of day 3. Spark's automatic checkpoint at
10 is written explicitly. Every commit adds one data file, so version ``v`` has ``v + 1`` files.

An "unsupported" protocol is one naming a feature this package does not know
(``unknownReaderFeature`` in both lists, or ``unknownWriterFeature`` in writerFeatures only). The
package refuses to write such commits or checkpoints, so those are written as raw JSON / with the
low-level checkpoint writer, as a client that supports the feature (delta-spark) would.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_downgrade.protocol.actions import AnyAction, CheckpointMetadata, CommitInfo, Metadata, ProtocolAction, Sidecar, serialize_commit
from delta_downgrade.app.cli import main as cli_main
from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import UnsupportedFeaturesError
from delta_downgrade.log.checkpoint.classic_writer import write_checkpoint
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from tests.python_checkpoint_content import checkpoint_content
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import (
    classic_checkpoint_path, commit_path, compacted_path, crc_path, multipart_checkpoint_path,
    sidecar_path, staged_commit_path, v2_checkpoint_path,
)
from delta_downgrade.log.snapshot import BOUNDARY_PROPERTY
from delta_downgrade.operations.cleanup import (
    ALL_AT_ONCE, NO_CHECKPOINT, SKIPPED_PARTIAL, SKIPPED_UNSUPPORTED, SUPPORTED_RANGE, UNPROTECTED,
    cleanup_expired_logs, earliest_truncation_time_ms, execute_cleanup, history_truncated_before,
    plan_cleanup,
)
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.schema import schema_string
from delta_downgrade.protocol.table_config import DAY_MS, HOUR_MS, MINUTE_MS
from delta_downgrade_tools.builders import TableBuilder

T0 = 1_704_067_200_000            # 2024-01-01T00:00:00Z, "day 0" (a UTC midnight)
OLD_MS = T0 + HOUR_MS             # day 0
RECENT_MS = T0 + 32 * DAY_MS + HOUR_MS
NOW_MS = T0 + 33 * DAY_MS + HOUR_MS   # cutoff = truncate(now - 30 days, DAY) = T0 + 3 days
RETENTION_30D = 30 * DAY_MS

SCHEMA = pa.schema([("id", pa.int64())])
CP_FEATURES = frozenset({"appendOnly", "invariants", "checkpointProtection"})
BASE = Protocol(1, 7, None, CP_FEATURES)
U_RW = Protocol(3, 7, {"unknownReaderFeature"}, CP_FEATURES | {"unknownReaderFeature"})
U_W = Protocol(1, 7, None, CP_FEATURES | {"unknownWriterFeature"})
PLAIN = Protocol(1, 2)


def _supported(protocol: Protocol) -> bool:
    return not (protocol.unsupported_for_read() or protocol.unsupported_for_write())


def _raw_commit(b: TableBuilder, version: int, actions: Sequence[AnyAction]) -> None:
    info = CommitInfo(timestamp=b.clock.now_ms(), operation="WRITE")
    b.storage.put_if_absent(commit_path(version), serialize_commit([info, *actions]))
    b.log.refresh()


def write_checkpoint_at(b: TableBuilder, version: int, *, part_size: int | None = None) -> None:
    """Through the package's checkpoint path (rule (b) enforced) when the protocol at ``version`` is
    supported; with the low-level writer otherwise (as a client supporting the feature would)."""
    snapshot = b.log.refresh().snapshot(version, check_read=False)
    if _supported(snapshot.protocol):
        checkpoint_table(b.log, version, clock=b.clock, part_size=part_size)
    else:
        write_checkpoint(b.storage, version, checkpoint_content(snapshot, b.clock.now_ms()),
                         part_size=part_size, now_ms=b.clock.now_ms())
    b.log.refresh()


def write_crc(b: TableBuilder, version: int, protocol: Protocol | None = BASE, body: bytes | None = None) -> None:
    """A ``.crc`` file; by default one that claims ``protocol`` whatever the version's real one is."""
    if body is None:
        doc = {"tableSizeBytes": 0, "numFiles": version + 1, "numMetadata": 1, "numProtocol": 1}
        if protocol is not None:
            doc["protocol"] = protocol.to_action()
        body = json.dumps(doc).encode()
    b.storage.write_atomic(crc_path(version), body)


def build_table(path: Path | str, *, versions: int = 16, old: int = 8, checkpoints: Sequence[int] = (),
                boundary: int | None = None, base: Protocol = BASE,
                changes: Mapping[int, Protocol] | None = None, multipart: Mapping[int, int] | None = None,
                crcs: bool = False, old_ms: int = OLD_MS, recent_ms: int = RECENT_MS) -> TableBuilder:
    """Versions ``0..versions-1``, one data file per commit. ``changes[v]`` is the protocol set at
    version ``v`` (``changes[0]`` replaces ``base``). ``multipart[v]`` = part size of the
    checkpoint at ``v``. Commits ``< old`` get ``old_ms`` as mtime, the others ``recent_ms``."""
    changes = dict(changes or {})
    clock = ManualClock(T0)
    b = TableBuilder(path, clock)
    b.arrow_schema = SCHEMA
    conf = {} if boundary is None else {BOUNDARY_PROPERTY: str(boundary)}
    current = changes.get(0, base)
    if _supported(current):
        b.create(SCHEMA, protocol=current, configuration=conf, rows=[{"id": 0}])
    else:
        metadata = Metadata(id=str(uuid.uuid4()), schemaString=schema_string(SCHEMA),
                            configuration=conf, createdTime=clock.now_ms())
        _raw_commit(b, 0, [ProtocolAction.of(current), metadata, *b.write_files([{"id": 0}])])
    for v in range(1, versions):
        new = changes.get(v)
        actions: list[AnyAction] = [ProtocolAction.of(new)] if new is not None else []
        actions += b.write_files([{"id": v}])
        if _supported(current) and (new is None or _supported(new)):
            b.commit(actions, "WRITE", {"mode": "Append"})
        else:
            _raw_commit(b, v, actions)
        current = new or current
    for v in checkpoints:
        write_checkpoint_at(b, v, part_size=(multipart or {}).get(v))
    if crcs:
        for v in range(versions):
            write_crc(b, v)
    for v in range(versions):
        b.age_commit(v, old_ms if v < old else recent_ms)
    b.log.refresh()
    return b


# --- observations -----------------------------------------------------------------------------------

def commit_versions(log: DeltaLog) -> list[int]:
    return sorted(log.refresh().whole_listing().commits)


def checkpoint_versions(log: DeltaLog) -> list[int]:
    return log.refresh().whole_listing().checkpoint_versions


def log_files(path: Path | str) -> set[str]:
    root = Path(path) / "_delta_log"
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def assert_time_travel(log: DeltaLog) -> None:
    """Every retained version reconstructs, with the data it had (version v has v + 1 files)."""
    log.refresh()
    for v in range(log.earliest_version(), log.latest_version() + 1):
        snapshot = log.snapshot(v, check_read=False)
        assert snapshot.protocol is not None
        assert len(snapshot.state().files) == v + 1, v


def run(log: DeltaLog, **kw):
    kw.setdefault("clock", ManualClock(NOW_MS))
    return cleanup_expired_logs(log, **kw)


# --- Checkpoint Protection cleanup scenarios ---------------------------------------------------------------------------------------

S = dict  # scenario spec

SCENARIOS = [
    # 50: old 0..7, recent 8..15, checkpoints {6, 8} + the automatic 10. C = 8.
    *[pytest.param(S(checkpoints=(6, 8, 10), boundary=v), 8, {8, 10}, ALL_AT_ONCE,
                   id=f"50-V{v}") for v in (2, 6, 7, 8)],
    # Spark (both checks off, as the suite runs 50-53): skipped, commits 0..15 and {6,8,10}.
    # Spark default (protocol check on): commits 8..15 and {8,10}: it deletes checkpoint 6 < V.
    # Ours: rule (c) lets the fully supported range 0..8 lose its commits; rule (a) keeps
    # checkpoint 6 because this cleanup does not remove every version < V.
    *[pytest.param(S(checkpoints=(6, 8, 10), boundary=v), 8, {6, 8, 10}, SUPPORTED_RANGE,
                   id=f"50-V{v}-ours") for v in (9, 20)],
    # The same with rule (c)'s supported-range exception off reproduces Spark's suite exactly.
    *[pytest.param(S(checkpoints=(6, 8, 10), boundary=v, partial=False), 0, {6, 8, 10}, SKIPPED_PARTIAL,
                   id=f"50-V{v}-strict") for v in (9, 20)],
    # 51: old 0..9, recent 10..19, V=9: C = 10 >= V. Same as Spark.
    pytest.param(S(versions=20, old=10, checkpoints=(6, 8, 10), boundary=9), 10, {10}, ALL_AT_ONCE,
                 id="51-V9"),
    # 52: checkpoints {6,8,10,12,14}; C = 8.
    pytest.param(S(checkpoints=(6, 8, 10, 12, 14), boundary=8), 8, {8, 10, 12, 14}, ALL_AT_ONCE, id="52-V8"),
    # Spark (checks off): skipped. Ours: commits go, checkpoint 6 stays (rules (c), (a)).
    pytest.param(S(checkpoints=(6, 8, 10, 12, 14), boundary=9), 8, {6, 8, 10, 12, 14}, SUPPORTED_RANGE,
                 id="52-V9-ours"),
    pytest.param(S(checkpoints=(6, 8, 10, 12, 14), boundary=9, partial=False), 0, {6, 8, 10, 12, 14},
                 SKIPPED_PARTIAL, id="52-V9-strict"),
    # 53: old {0}, recent 1..15, checkpoint {1} (+10); C = 1.
    pytest.param(S(old=1, checkpoints=(1, 10), boundary=0), 1, {1, 10}, UNPROTECTED, id="53-V0"),
    pytest.param(S(old=1, checkpoints=(1, 10), boundary=1), 1, {1, 10}, ALL_AT_ONCE, id="53-V1"),
    # Spark (checks off): skipped, commits 0..15. Ours: versions 0..1 are supported (rule (c)),
    # there is no checkpoint < 1 to protect, so commit 0 goes.
    pytest.param(S(old=1, checkpoints=(1, 10), boundary=2), 1, {1, 10}, SUPPORTED_RANGE, id="53-V2-ours"),
    pytest.param(S(old=1, checkpoints=(1, 10), boundary=2, partial=False), 0, {1, 10}, SKIPPED_PARTIAL,
                 id="53-V2-strict"),
    # old {0,1}, checkpoint {1}, V=3: Spark skipped; ours deletes commit 0 (rule (c)).
    pytest.param(S(old=2, checkpoints=(1, 10), boundary=3), 1, {1, 10}, SUPPORTED_RANGE, id="53-old01-V3-ours"),
    pytest.param(S(old=2, checkpoints=(1, 10), boundary=3, partial=False), 0, {1, 10}, SKIPPED_PARTIAL,
                 id="53-old01-V3-strict"),
    # 54 (Spark: existence check on, protocol check off): checkpoints {0,8}, V=10, unsupported
    # reader-writer feature from v8 (dropped at v10). Spark: ALLOWED, commits 8..15, {8,10}: its
    # shortcut "a checkpoint already exists at end+1 (8)" deletes checkpoint 0 < V without
    # removing all history < V. Ours: C = 8 < V, so rule (a) forbids deleting checkpoint 0, and
    # rule (c) forbids the partial cleanup because version 8 is unsupported: skipped.
    pytest.param(S(checkpoints=(0, 8, 10), boundary=10, changes={8: U_RW, 10: BASE}), 0, {0, 8, 10},
                 SKIPPED_UNSUPPORTED, id="54-differs-from-spark"),
    # 55 (protocol check on): checkpoint {8} (+10), V=10: allowed, commits 8..15, {8,10}. Same.
    pytest.param(S(checkpoints=(8, 10), boundary=10), 8, {8, 10}, SUPPORTED_RANGE, id="55-base"),
    pytest.param(S(checkpoints=(8, 10), boundary=10, changes={10: U_RW, 12: BASE}), 8, {8, 10},
                 SUPPORTED_RANGE, id="55-unsupported-at-v10"),
    pytest.param(S(checkpoints=(8, 10), boundary=10, changes={11: U_RW, 12: BASE}), 8, {8, 10},
                 SUPPORTED_RANGE, id="55-unsupported-at-v11"),
    # Checkpoints {0,8} with the unsupported feature from v9, and {1,8} / {0,8} with nothing
    # unsupported: Spark deletes checkpoint 0 / 1 (result {8,10}); rule (a) keeps it here.
    pytest.param(S(checkpoints=(0, 8, 10), boundary=10, changes={9: U_RW, 10: BASE}), 8, {0, 8, 10},
                 SUPPORTED_RANGE, id="55-ckpt0-unsupported-from-v9-ours"),
    pytest.param(S(checkpoints=(1, 8, 10), boundary=10), 8, {1, 8, 10}, SUPPORTED_RANGE,
                 id="55-ckpt1-ours"),
    pytest.param(S(checkpoints=(0, 8, 10), boundary=10), 8, {0, 8, 10}, SUPPORTED_RANGE,
                 id="55-ckpt0-ours"),
    # 56 (protocol check on), V=10: skipped when a version in 0..8 is unsupported. Same as Spark.
    pytest.param(S(checkpoints=(8, 10), boundary=10, changes={0: U_RW, 1: BASE}), 0, {8, 10},
                 SKIPPED_UNSUPPORTED, id="56-v0-dropped-at-v1"),
    pytest.param(S(checkpoints=(8, 10), boundary=10, changes={7: U_RW, 10: BASE}), 0, {8, 10},
                 SKIPPED_UNSUPPORTED, id="56-added-at-v7"),
    pytest.param(S(checkpoints=(8, 10), boundary=10, changes={4: U_RW, 7: BASE}), 0, {8, 10},
                 SKIPPED_UNSUPPORTED, id="56-v4-to-v7"),
    pytest.param(S(checkpoints=(8, 10), boundary=10, changes={4: U_RW, 8: BASE}), 0, {8, 10},
                 SKIPPED_UNSUPPORTED, id="56-v4-to-drop-at-v8"),
    pytest.param(S(checkpoints=(8, 10), boundary=10, changes={8: U_RW, 10: BASE}), 0, {8, 10},
                 SKIPPED_UNSUPPORTED, id="56-added-at-v8"),
    # A writer-only unsupported feature at v8: readable but not writable. Spark requires write
    # support only at end+1 = 8; we require it at every version of the range (the RFC's "the
    # writer supports"); both skip here.
    pytest.param(S(checkpoints=(8, 10), boundary=10, changes={8: U_W, 10: BASE}), 0, {8, 10},
                 SKIPPED_UNSUPPORTED, id="56-writer-only-at-v8"),
    pytest.param(S(checkpoints=(0, 8, 10), boundary=10, changes={4: U_RW, 8: BASE}), 0, {0, 8, 10},
                 SKIPPED_UNSUPPORTED, id="56-ckpt0-kept"),
    # Rule (c), all-at-once form: unsupported versions 4..7 before V = 8 do not matter when C >= V
    # (Spark's main invariant, same result).
    pytest.param(S(checkpoints=(8, 10), boundary=8, changes={4: U_RW, 8: BASE}), 8, {8, 10}, ALL_AT_ONCE,
                 id="all-at-once-over-unsupported"),
]


@pytest.mark.parametrize("spec, first_commit, expected_checkpoints, decision", SCENARIOS)
def test_group_f(tmp_path, spec, first_commit, expected_checkpoints, decision):
    spec = dict(spec)
    partial = spec.pop("partial", True)
    b = build_table(tmp_path / "t", **spec)
    versions = spec.get("versions", 16)
    before = log_files(tmp_path / "t")

    result = run(b.log, partial_when_supported=partial)

    plan = result.plan
    assert plan.decision == decision, plan.reason
    assert commit_versions(b.log) == list(range(first_commit, versions))
    assert checkpoint_versions(b.log) == sorted(expected_checkpoints)
    if decision.startswith("skipped"):
        assert not plan.allowed and result.deleted == [] and log_files(tmp_path / "t") == before
        assert "rule (c)" in plan.reason
        assert plan.truncates_before is None
    else:
        assert plan.allowed and plan.truncates_before == plan.cutoff_checkpoint
        gone = before - log_files(tmp_path / "t")
        assert set(result.deleted) == {f"_delta_log/{p}" for p in gone}
        assert len(result.deleted) == plan.num_deletions
    if decision == SUPPORTED_RANGE:
        assert plan.delete_checkpoints == () and "rule (a)" in plan.reason
    if decision == ALL_AT_ONCE:
        assert "rules (a) and (c)" in plan.reason
    assert b.log.refresh().earliest_version() == first_commit
    assert_time_travel(b.log)


def test_scenario_50_cutoff_arithmetic(tmp_path):
    """The cutoff is midnight of day 3; commit 7 (day 0) expired, commit 9 (day 32) not, so the
    cutoff checkpoint is 8 (10's predecessor is recent)."""
    b = build_table(tmp_path / "t", checkpoints=(6, 8, 10), boundary=2)
    plan = plan_cleanup(b.log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS))
    assert plan.cutoff_ms == T0 + 3 * DAY_MS
    assert plan.cutoff_checkpoint == 8
    assert [int(Path(p).name.split(".")[0]) for p in plan.delete_commits] == list(range(8))
    assert plan.delete_checkpoints == (classic_checkpoint_path(6),)
    # One day earlier nothing has expired yet: commit 7 is at day 0 + 1 h, the cutoff at day 0.
    early = plan_cleanup(b.log, retention_ms=RETENTION_30D, clock=ManualClock(T0 + 31 * DAY_MS - 1))
    assert early.cutoff_checkpoint is None and early.decision == NO_CHECKPOINT
    assert early.num_deletions == 0


# --- scenario 57: .crc files are not read --------------------------------------------------------

def test_57_missing_or_garbled_crc_changes_nothing(tmp_path):
    """Spark skips cleanup when a .crc in the range is missing, garbled or lacks a protocol
    (scenario 57): it takes protocols from .crc files. We take them from the commits, so a broken
    .crc changes nothing: the result equals scenario 55 (commits 8..15, checkpoints {8, 10})."""
    b = build_table(tmp_path / "t", checkpoints=(8, 10), boundary=10, crcs=True)
    write_crc(b, 3, protocol=None)                       # a .crc without protocol/metadata
    write_crc(b, 4, body=b"{ not json")                  # garbled
    b.storage.delete(crc_path(5))                        # missing
    result = run(b.log)
    assert result.plan.decision == SUPPORTED_RANGE
    assert commit_versions(b.log) == list(range(8, 16))
    assert checkpoint_versions(b.log) == [8, 10]
    assert sorted(b.log.whole_listing().crcs) == list(range(8, 16))   # the .crc files < C went too
    assert_time_travel(b.log)


def test_crc_claiming_a_supported_protocol_does_not_hide_an_unsupported_commit(tmp_path):
    """Every .crc claims the supported base protocol, but versions 4..7 really have an unsupported
    one: the commits decide, and the cleanup is skipped (scenario 56)."""
    b = build_table(tmp_path / "t", checkpoints=(8, 10), boundary=10, changes={4: U_RW, 8: BASE}, crcs=True)
    result = run(b.log)
    assert not result.plan.allowed and result.plan.decision == SKIPPED_UNSUPPORTED
    assert "version 4" in result.plan.reason and "unknownReaderFeature" in result.plan.reason
    assert commit_versions(b.log) == list(range(16))
    assert sorted(b.log.whole_listing().crcs) == list(range(16))


# --- plain PROTOCOL.md cleanup -----------------------------------------------------------------------

def test_plain_cleanup_without_checkpoint_protection(tmp_path):
    b = build_table(tmp_path / "t", base=PLAIN, checkpoints=(3, 6, 8, 10, 12), multipart={6: 3}, crcs=True)
    st = b.storage
    # An incomplete multi-part checkpoint at 5 (1 of 2 parts): never a cutoff, but < C: deleted.
    st.write_atomic(multipart_checkpoint_path(5, 1, 2), st.read_bytes(classic_checkpoint_path(3)))
    # ... and one at 9 (> C): kept.
    st.write_atomic(multipart_checkpoint_path(9, 1, 2), st.read_bytes(classic_checkpoint_path(8)))
    # Compactions: [2,5] is wholly before C = 8 (deleted); [6,9] reaches into kept versions (kept).
    for start, end in ((2, 5), (6, 9)):
        st.write_atomic(compacted_path(start, end), serialize_commit([CommitInfo(timestamp=1)]))
    staged = [staged_commit_path(v, str(uuid.uuid4())) for v in (3, 8, 12)]
    for path in staged:
        st.write_atomic(path, serialize_commit([CommitInfo(timestamp=1)]))
    unknown = ["_delta_log/00000000000000000002.json.tmp", "_delta_log/notes.txt",
               "_delta_log/_sidecars/readme.md"]
    for path in unknown:
        st.write_atomic(path, b"x")
    for v in range(16):
        b.age_commit(v, OLD_MS if v < 8 else RECENT_MS)
    assert len([c for c in b.log.refresh().whole_listing().checkpoints if c.version == 6][0].files) == 3

    result = run(b.log)

    plan = result.plan
    assert plan.allowed and plan.decision == UNPROTECTED and plan.cutoff_checkpoint == 8
    assert commit_versions(b.log) == list(range(8, 16))
    assert checkpoint_versions(b.log) == [8, 10, 12]
    listing = b.log.whole_listing()
    assert {c.version for c in listing.checkpoints} == {8, 9, 10, 12}   # incomplete 9 untouched
    assert sorted(listing.crcs) == list(range(8, 16))
    assert [(lf.version, lf.end_version) for lf, _ in listing.compactions] == [(6, 9)]
    assert not st.exists(staged[0]) and not st.exists(staged[1]) and st.exists(staged[2])
    for path in unknown:
        assert st.exists(path)
    assert b.log.earliest_version() == 8
    assert_time_travel(b.log)
    # A second run has nothing left to do.
    again = run(b.log)
    assert again.deleted == [] and again.plan.num_deletions == 0


def test_version_zero_edge(tmp_path):
    """A checkpoint at 0 whose own commit expired is a valid cutoff; nothing is before it."""
    b = build_table(tmp_path / "t", base=PLAIN, checkpoints=(0,), old=16)
    plan = plan_cleanup(b.log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS))
    assert plan.cutoff_checkpoint == 0 and plan.num_deletions == 0 and plan.allowed


def test_no_checkpoint_no_cleanup(tmp_path):
    b = build_table(tmp_path / "t", base=PLAIN, old=16)
    before = log_files(tmp_path / "t")
    result = run(b.log)
    assert result.plan.decision == NO_CHECKPOINT and result.deleted == []
    assert log_files(tmp_path / "t") == before


def test_sidecars(tmp_path):
    """v2 checkpoint manifests: the one < C goes with the classic checkpoint; its sidecar, no longer
    referenced, goes after it; the kept manifest's sidecar and a young orphan stay."""
    b = build_table(tmp_path / "t", base=PLAIN, checkpoints=(6, 8, 10))
    st = b.storage
    names = {"a": "a.parquet", "b": "b.parquet", "orphan-old": "c.parquet", "orphan-young": "d.parquet"}
    # real (empty) parquet files: a sidecar is checked against its sidecar action before its
    # checkpoint can be the cutoff (checkpoint_integrity)
    sink = pa.BufferOutputStream()
    add = pa.struct([("path", pa.string()), ("partitionValues", pa.map_(pa.string(), pa.string())),
                     ("size", pa.int64()), ("modificationTime", pa.int64()), ("dataChange", pa.bool_())])
    pq.write_table(pa.table({"add": pa.array([], add)}), sink)
    sidecar_bytes = sink.getvalue().to_pybytes()
    for name in names.values():
        st.write_atomic(sidecar_path(name), sidecar_bytes)
    manifests = {}
    for version, sidecar in ((6, names["a"]), (8, names["b"])):
        snap = b.log.refresh().snapshot(version)
        # a V2 spec checkpoint holds exactly one checkpointMetadata (PROTOCOL.md "V2 Spec Checkpoints")
        actions = [CheckpointMetadata(version=version), ProtocolAction.of(snap.protocol), snap.metadata,
                   Sidecar(path=sidecar, sizeInBytes=len(sidecar_bytes), modificationTime=OLD_MS)]
        manifests[version] = v2_checkpoint_path(version, str(uuid.uuid4()))
        st.write_atomic(manifests[version], serialize_commit(actions))
    for name in ("a", "b", "orphan-old"):
        st.set_modification_time(sidecar_path(names[name]), OLD_MS)
    st.set_modification_time(sidecar_path(names["orphan-young"]), NOW_MS - HOUR_MS)

    result = run(b.log)

    plan = result.plan
    assert plan.cutoff_checkpoint == 8
    assert set(plan.delete_checkpoints) == {classic_checkpoint_path(6), manifests[6]}
    assert {sidecar_path(names["a"]), sidecar_path(names["orphan-old"])} <= set(plan.delete_other)
    order = plan.ordered_deletions()
    assert order.index(sidecar_path(names["a"])) > order.index(manifests[6])
    assert not st.exists(sidecar_path(names["a"])) and not st.exists(sidecar_path(names["orphan-old"]))
    assert st.exists(sidecar_path(names["b"])) and st.exists(sidecar_path(names["orphan-young"]))
    assert st.exists(manifests[8])
    assert_time_travel(b.log)


# --- dry run and refusals ---------------------------------------------------------------------------

def test_dry_run_deletes_nothing(tmp_path):
    b = build_table(tmp_path / "t", checkpoints=(6, 8, 10), boundary=2, crcs=True)
    before = log_files(tmp_path / "t")
    result = run(b.log, dry_run=True)
    assert result.deleted == []
    assert result.plan.allowed and result.plan.num_deletions == 8 + 1 + 8
    assert log_files(tmp_path / "t") == before


def test_refused_plan_executes_nothing(tmp_path):
    b = build_table(tmp_path / "t", checkpoints=(8, 10), boundary=10, changes={4: U_RW, 8: BASE})
    plan = plan_cleanup(b.log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS))
    assert not plan.allowed and plan.ordered_deletions() == []
    before = log_files(tmp_path / "t")
    assert execute_cleanup(b.log, plan).deleted == []
    assert log_files(tmp_path / "t") == before


@pytest.mark.parametrize("latest", [
    U_W,
    U_RW,
    Protocol(3, 7, {"catalogManaged", "vacuumProtocolCheck"},
             {"catalogManaged", "vacuumProtocolCheck", "inCommitTimestamp"}),
], ids=["unknown-writer-feature", "unknown-reader-writer-feature", "catalogManaged"])
@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_unsupported_latest_protocol_is_refused(tmp_path, latest, dry_run):
    """Cleanup is a write: a table whose latest protocol the package cannot write is refused (like
    VACUUM and VACUUM DRY RUN, VACUUM Protocol Check RFC), and nothing is deleted."""
    b = build_table(tmp_path / "t", checkpoints=(6, 8), boundary=2, changes={12: latest})
    before = log_files(tmp_path / "t")
    with pytest.raises(UnsupportedFeaturesError) as exc:
        run(b.log, dry_run=dry_run)
    assert exc.value.error_class == "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE"
    assert log_files(tmp_path / "t") == before


def test_stale_plan_is_refused_when_the_boundary_moved(tmp_path):
    """A DROP FEATURE between planning and execution may raise V; the plan's gate decision would no
    longer hold (rule (a)), so execution refuses and deletes nothing."""
    from delta_downgrade.errors import ConcurrentWriteError

    b = build_table(tmp_path / "t", checkpoints=(6, 8, 10), boundary=2)
    plan = plan_cleanup(b.log, retention_ms=RETENTION_30D, clock=ManualClock(NOW_MS))
    assert plan.allowed and plan.decision == ALL_AT_ONCE
    b.set_properties({BOUNDARY_PROPERTY: "16"})
    b.age_commit(16, RECENT_MS)
    before = log_files(tmp_path / "t")
    with pytest.raises(ConcurrentWriteError):
        execute_cleanup(b.log, plan)
    assert log_files(tmp_path / "t") == before


# --- truncation-time helpers ---------------------------------------------------------------------------------------

def test_history_truncated_before_and_earliest_truncation_time(tmp_path):
    """V = 10, checkpoints {8, 10}; commits 0..7 at day -5, 8..9 at day 0 + 1 h, 10..15 at day 32.
    All of history < 10 can go once commit 9 (the one before checkpoint 10) is past the retention,
    truncated to the day: at ceil_day(day 0 + 1 h + 1 ms) + 30 days = day 31."""
    b = build_table(tmp_path / "t", checkpoints=(8, 10), boundary=10, old=10)
    for v in range(8):
        b.age_commit(v, T0 - 5 * DAY_MS + v)
    log = b.log.refresh()
    assert history_truncated_before(log, 0) and history_truncated_before(log, -1)
    assert not history_truncated_before(log, 10)
    when = earliest_truncation_time_ms(log, 10, RETENTION_30D, "day")
    assert when == T0 + 31 * DAY_MS
    # Minute granularity (TRUNCATE HISTORY) and 24 hours: the next minute after commit 9, + 24 h.
    # (Commit mtimes are made monotonic: commit 9, written with the same mtime as 8, counts as
    # day 0 + 1 h + 1 ms.)
    assert earliest_truncation_time_ms(log, 10, DAY_MS, "minute") == OLD_MS + MINUTE_MS + DAY_MS
    assert earliest_truncation_time_ms(log, 10, DAY_MS, "hour") == OLD_MS + HOUR_MS + DAY_MS
    assert earliest_truncation_time_ms(log, 20, RETENTION_30D, "day") is None   # no checkpoint >= 20

    # One millisecond early: the cutoff checkpoint is still before V (C = 8 < 10), a partial
    # cleanup at most; history < 10 is not truncated.
    early = run(log, clock=ManualClock(when - 1))
    assert early.plan.cutoff_checkpoint == 8 and early.plan.decision == SUPPORTED_RANGE
    assert not history_truncated_before(log.refresh(), 10)
    # At that time: all of it in one go.
    done = run(log, clock=ManualClock(when))
    assert done.plan.cutoff_checkpoint == 10 and done.plan.decision == ALL_AT_ONCE
    assert history_truncated_before(log.refresh(), 10)
    assert commit_versions(log) == list(range(10, 16)) and checkpoint_versions(log) == [10]
    assert earliest_truncation_time_ms(log, 10, RETENTION_30D, "day") == 0
    assert_time_travel(log)


def test_truncation_time_reads_checkpoints_up_to_the_first_sound_one(tmp_path, monkeypatch):
    """The cutoff is the first sound checkpoint at or after the boundary: a damaged one before it
    is skipped, and the ones after it are never read (a long-dropped table has many)."""
    from delta_downgrade.operations import cleanup

    build_table(tmp_path / "t", checkpoints=(8, 10, 12, 14), boundary=10, old=10)
    log_dir = tmp_path / "t" / "_delta_log"
    read: list[int] = []
    readable = cleanup._checkpoint_readable
    monkeypatch.setattr(cleanup, "_checkpoint_readable",
                        lambda log, listing, version: read.append(version) or readable(log, listing, version))

    def truncation_time() -> int | None:
        read.clear()
        return earliest_truncation_time_ms(DeltaLog(str(tmp_path / "t")), 10, DAY_MS, "minute")

    at_10 = truncation_time()
    assert at_10 is not None and at_10 > 0 and read == [10]
    (log_dir / f"{10:020d}.checkpoint.parquet").write_bytes(b"PAR1 not a checkpoint PAR1")
    at_12 = truncation_time()  # 10 damaged: 12 is the cutoff, 14 is not read
    assert at_12 is not None and at_12 > at_10 and read == [10, 12]
    (log_dir / f"{12:020d}.checkpoint.parquet").write_bytes(b"PAR1 not a checkpoint PAR1")
    (log_dir / f"{14:020d}.checkpoint.parquet").write_bytes(b"PAR1 not a checkpoint PAR1")
    assert truncation_time() is None and read == [10, 12, 14]


def test_a_checkpoint_written_through_the_log_is_not_read_back(tmp_path):
    """The log that wrote a checkpoint (a drop, asking when its history may go) takes its rows as
    written; any other log reads it. Shown by replacing the file behind the writer's back."""
    b = build_table(tmp_path / "t", checkpoints=(10,), boundary=10, old=10)
    fresh = DeltaLog(str(tmp_path / "t"))
    (ck,) = [c for c in fresh.listing().checkpoints_from(10) if c.version == 10]
    assert b.log.wrote_checkpoint(ck) and not fresh.wrote_checkpoint(ck)
    expected = earliest_truncation_time_ms(b.log, 10, DAY_MS, "minute")
    assert expected is not None and expected == earliest_truncation_time_ms(fresh, 10, DAY_MS, "minute")
    (tmp_path / "t" / "_delta_log" / f"{10:020d}.checkpoint.parquet").write_bytes(b"PAR1 not a checkpoint PAR1")
    assert earliest_truncation_time_ms(b.log, 10, DAY_MS, "minute") == expected
    assert earliest_truncation_time_ms(DeltaLog(str(tmp_path / "t")), 10, DAY_MS, "minute") is None


def test_history_not_truncated_while_a_commit_below_the_boundary_remains(tmp_path):
    b = build_table(tmp_path / "t", base=PLAIN, checkpoints=(10,))
    b.storage.delete(commit_path(0))   # reliable checkpoint 10, but commits 1..9 are still there
    assert not history_truncated_before(b.log.refresh(), 10)
    for v in range(1, 10):
        b.storage.delete(commit_path(v))
    assert history_truncated_before(b.log.refresh(), 10)
    assert not history_truncated_before(b.log, 11)    # earliest reliable checkpoint 10 < 11


# --- CLI -------------------------------------------------------------------------------------------

def _real_time_table(path: Path) -> TableBuilder:
    now = int(time.time() * 1000)
    return build_table(path, checkpoints=(6, 8, 10), boundary=2, crcs=True,
                       old_ms=now - 40 * DAY_MS, recent_ms=now - HOUR_MS)


def test_cli_dry_run_json(tmp_path, capsys):
    _real_time_table(tmp_path / "t")
    before = log_files(tmp_path / "t")
    assert cli_main(["cleanup", str(tmp_path / "t"), "--dry-run", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dry_run"] is True and doc["deleted"] == []
    plan = doc["plan"]
    assert plan["allowed"] and plan["cutoff_checkpoint"] == 8 and plan["decision"] == ALL_AT_ONCE
    assert len(plan["delete_commits"]) == 8 and plan["delete_checkpoints"] == [classic_checkpoint_path(6)]
    assert plan["ordered_deletions"][0] == commit_path(0)
    assert log_files(tmp_path / "t") == before


def test_cli_text_and_retention(tmp_path, capsys):
    _real_time_table(tmp_path / "t")
    # 50 days of retention: nothing has expired.
    assert cli_main(["cleanup", str(tmp_path / "t"), "--retention", "interval 50 days"]) == 0
    out = capsys.readouterr().out
    assert "cutoff checkpoint:  none" in out and "deleted:            0 files" in out
    assert commit_versions(DeltaLog(str(tmp_path / "t"))) == list(range(16))
    # The table's default (30 days): everything before checkpoint 8 goes.
    assert cli_main(["cleanup", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    assert "decision:           allowed" in out and "rules (a) and (c)" in out
    assert "delete commits:     8 (versions 0..7)" in out
    assert commit_versions(DeltaLog(str(tmp_path / "t"))) == list(range(8, 16))


def test_cli_bad_retention(tmp_path, capsys):
    _real_time_table(tmp_path / "t")
    assert cli_main(["cleanup", str(tmp_path / "t"), "--retention", "3 months"]) == 2
    assert "DELTA_DOWNGRADE_BAD_DURATION" in capsys.readouterr().err


# --- the same cases on S3 -------------------------------------------------------------------

def _upload_aged(b: TableBuilder, path: Path, endpoint, name: str = "t") -> DeltaLog:
    """The table built at ``path`` uploaded to the S3 endpoint, each object back-dated to its
    local modification time (S3 has no API to set one: the moto backend is set directly), and
    the table's log on S3."""
    location = endpoint.upload(path, name)
    root = Path(path)
    for file in root.rglob("*"):
        if file.is_file():
            endpoint.extras["backdate"](f"{name}/{file.relative_to(root).as_posix()}",
                                        int(file.stat().st_mtime * 1000))
    return DeltaLog(location, storage_options=endpoint.storage_options)


def _s3_log_files(endpoint, name: str = "t") -> set[str]:
    return {k[len("_delta_log/"):] for k in endpoint.keys(name) if k.startswith("_delta_log/")}


S3_SCENARIOS = ("50-V8", "50-V9-ours", "53-V0", "54-differs-from-spark", "56-writer-only-at-v8")


@pytest.mark.parametrize("spec, first_commit, expected_checkpoints, decision",
                         [p for p in SCENARIOS if p.id in S3_SCENARIOS])
def test_group_f_on_s3(tmp_path, s3_endpoint, spec, first_commit, expected_checkpoints, decision):
    """Rules (a)-(d) on S3 as on local disk: the same plans, the same files deleted (in rule
    (d)'s order), the same history left readable."""
    spec = dict(spec)
    partial = spec.pop("partial", True)
    build_table(tmp_path / "t", **spec)
    versions = spec.get("versions", 16)
    log = _upload_aged(TableBuilder(tmp_path / "t"), tmp_path / "t", s3_endpoint)
    before = _s3_log_files(s3_endpoint)

    result = run(log, partial_when_supported=partial)

    plan = result.plan
    assert plan.decision == decision, plan.reason
    assert commit_versions(log) == list(range(first_commit, versions))
    assert checkpoint_versions(log) == sorted(expected_checkpoints)
    if decision.startswith("skipped"):
        assert not plan.allowed and result.deleted == [] and _s3_log_files(s3_endpoint) == before
    else:
        gone = before - _s3_log_files(s3_endpoint)
        assert set(result.deleted) == {f"_delta_log/{p}" for p in gone}
        assert result.deleted == [p for p in plan.ordered_deletions() if p in result.deleted]  # rule (d)
    assert log.refresh().earliest_version() == first_commit
    assert_time_travel(log)


def test_unsupported_latest_protocol_is_refused_on_s3(tmp_path, s3_endpoint):
    """The write-protocol check on S3: nothing deleted, dry run or not."""
    build_table(tmp_path / "t", checkpoints=(6, 8), boundary=2, changes={12: U_W})
    log = _upload_aged(TableBuilder(tmp_path / "t"), tmp_path / "t", s3_endpoint)
    before = s3_endpoint.keys("t")
    for dry_run in (True, False):
        with pytest.raises(UnsupportedFeaturesError) as exc:
            run(log, dry_run=dry_run)
        assert exc.value.error_class == "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE"
    assert s3_endpoint.keys("t") == before
