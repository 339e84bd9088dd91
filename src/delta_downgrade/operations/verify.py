"""``verify_task``: re-read a table from storage and prove the outcome of a drop.

Verification never trusts the engine that did the work: it builds a fresh :class:`DeltaLog`
from storage and checks each expectation independently. The result is a :class:`VerifyReport`;
the task renders it as its RESULT line.
"""

from __future__ import annotations

from typing import Mapping

from msgspec import Struct, field
from delta_downgrade.errors import DeltaDowngradeError, naming_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.drop.run import protected_checkpoint_paths
from delta_downgrade.features import TraceContext, feature_traces
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol, lookup_feature
from delta_downgrade.protocol.support import Operation, unsupported_features


class Expectations(Struct, frozen=True):
    absent_feature: str | None = None
    min_reader_version: int | None = None
    min_writer_version: int | None = None
    boundary_version: int | None = None
    protected_checkpoints: tuple[str, ...] = ()


class Check(Struct, frozen=True):
    name: str
    ok: bool
    detail: str


class VerifyReport(Struct, frozen=True):
    """Every check made on ``table`` at ``version``, and what the table's log says there."""

    table: str
    feature: str | None
    version: int
    protocol: Protocol
    boundary_version: int | None
    protected_checkpoints: list[str]
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def needs_truncate(self) -> bool:
        return CHECKPOINT_PROTECTION in self.protocol.features


def version_and_boundary_checks(expect: Expectations, protocol: Protocol, boundary: int | None) -> list[Check]:
    """The expected protocol versions and checkpoint-protection boundary against those read: the
    same checks whether the table was read from its log or described through SQL."""
    checks: list[Check] = []
    if expect.min_reader_version is not None:
        checks.append(Check("min_reader_version", protocol.min_reader_version == expect.min_reader_version,
                            f"expected {expect.min_reader_version}, found {protocol.min_reader_version}"))
    if expect.min_writer_version is not None:
        checks.append(Check("min_writer_version", protocol.min_writer_version == expect.min_writer_version,
                            f"expected {expect.min_writer_version}, found {protocol.min_writer_version}"))
    if expect.boundary_version is not None:
        checks.append(Check("boundary_version", boundary == expect.boundary_version,
                            f"expected {expect.boundary_version}, found {boundary}"))
    return checks


@naming_table("location")
def verify_table(location: str, expect: Expectations, *,
                 storage_options: Mapping[str, str] | None = None) -> VerifyReport:
    """Check every expectation against a fresh read of ``location``; bad input raises."""
    log = DeltaLog(location, storage_options=storage_options)
    snapshot = log.snapshot()
    protocol = snapshot.protocol
    checks: list[Check] = []

    def add(name: str, ok: bool, detail: str) -> None:
        checks.append(Check(name, ok, detail))

    add("readable", True, f"version {snapshot.version} reconstructs with protocol {protocol}")

    if expect.absent_feature:
        spec = lookup_feature(expect.absent_feature)
        name = spec.name if spec else expect.absent_feature
        present = name in protocol.features
        add("feature_absent_from_protocol", not present,
            f"{name} is {'still' if present else 'not'} in the protocol {protocol}")
        traces = feature_traces(name, TraceContext(snapshot)) if spec else []
        add("feature_traces_removed", not traces,
            "no traces left" if not traces else "traces left: " + "; ".join(traces))

    boundary = snapshot.boundary_version
    checks += version_and_boundary_checks(expect, protocol, boundary)
    if expect.protected_checkpoints:
        # A checkpoint's own files are listed; a V2 checkpoint's sidecars must be referenced by
        # a checkpoint of the log and exist (a dangling reference makes it unreadable).
        listed = {p for c in log.checkpoint_inventory() if c.complete for p in c.paths}
        referenced = {p for c in log.checkpoint_inventory() if c.complete and c.kind != "multipart"
                      for p in _sidecars_or_none(log, c)}
        missing = [p for p in expect.protected_checkpoints
                   if p not in listed and not (p in referenced and log.storage.exists(p))]
        add("protected_checkpoints_exist", not missing,
            "all present" if not missing else f"missing: {missing}")

    # The read gate's own decision, reported as a check rather than raised: a table this package
    # cannot read is a failed verification (exit 1), not bad input. (The snapshot above already
    # refused what no reader can interpret: an invalid protocol, unknown reader features.)
    unsupported = unsupported_features(protocol, Operation.READ)
    add("latest_version_readable_by_package", not unsupported,
        "every reader feature is supported" if not unsupported
        else f"unsupported reader features: {sorted(unsupported)}")

    return VerifyReport(location, expect.absent_feature, snapshot.version, protocol, boundary,
                        protected_checkpoint_paths(log, boundary), checks)


def _sidecars_or_none(log: DeltaLog, checkpoint: CheckpointInstance) -> list[str]:
    """The sidecars ``checkpoint`` references; none when its references cannot be read (then a
    protected sidecar of it counts as missing)."""
    try:
        return log.sidecars_of(checkpoint)
    except (DeltaDowngradeError, OSError):
        return []
