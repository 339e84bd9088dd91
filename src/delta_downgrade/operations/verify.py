"""``verify_task``: re-read a table from storage and prove the outcome of a drop.

Verification never trusts the engine that did the work: it builds a fresh :class:`DeltaLog`
from storage and checks each expectation independently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.app.render.result import protocol_fields
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_run import protected_checkpoint_paths
from delta_downgrade.operations.traces import TraceContext, feature_traces
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, lookup_feature


@dataclass(frozen=True)
class Expectations:
    absent_feature: str | None = None
    min_reader_version: int | None = None
    min_writer_version: int | None = None
    boundary_version: int | None = None
    protected_checkpoints: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class VerifyReport:
    table: str
    checks: list[Check] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def add(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append(Check(name, ok, detail))


def verify_table(location: str, expect: Expectations) -> VerifyReport:
    """Check every expectation against a fresh read of ``location``; bad input raises."""
    log = DeltaLog(location)
    snapshot = log.snapshot()
    protocol = snapshot.protocol
    report = VerifyReport(location)
    report.add("readable", True, f"version {snapshot.version} reconstructs with protocol {protocol}")

    if expect.absent_feature:
        spec = lookup_feature(expect.absent_feature)
        name = spec.name if spec else expect.absent_feature
        present = name in protocol.features
        report.add("feature_absent_from_protocol", not present,
                   f"{name} is {'still' if present else 'not'} in the protocol {protocol}")
        traces = feature_traces(name, TraceContext(snapshot)) if spec else []
        report.add("feature_traces_removed", not traces,
                   "no traces left" if not traces else "traces left: " + "; ".join(traces))

    if expect.min_reader_version is not None:
        report.add("min_reader_version", protocol.min_reader_version == expect.min_reader_version,
                   f"expected {expect.min_reader_version}, found {protocol.min_reader_version}")
    if expect.min_writer_version is not None:
        report.add("min_writer_version", protocol.min_writer_version == expect.min_writer_version,
                   f"expected {expect.min_writer_version}, found {protocol.min_writer_version}")

    boundary = snapshot.boundary_version
    if expect.boundary_version is not None:
        report.add("boundary_version", boundary == expect.boundary_version,
                   f"expected {expect.boundary_version}, found {boundary}")
    if expect.protected_checkpoints:
        present = {p for c in log.checkpoint_inventory() if c.complete for p in c.paths}
        missing = [p for p in expect.protected_checkpoints if p not in present]
        report.add("protected_checkpoints_exist", not missing,
                   "all present" if not missing else f"missing: {missing}")

    unsupported = protocol.unsupported_for_read()
    report.add("latest_version_readable_by_package", not unsupported,
               "every reader feature is supported" if not unsupported
               else f"unsupported reader features: {sorted(unsupported)}")

    report.result = {
        "table": location,
        "feature": expect.absent_feature,
        "status": "verified" if report.ok else "failed",
        "version": snapshot.version,
        **protocol_fields(protocol),
        "boundary_version": boundary,
        "protected_checkpoints": protected_checkpoint_paths(log, boundary),
        "needs_truncate": CHECKPOINT_PROTECTION in protocol.features,
        "checks": [c.to_dict() for c in report.checks],
        "failed_checks": [c.name for c in report.failures],
    }
    return report


def error_result(location: str, feature: str | None, error: DeltaDowngradeError) -> dict[str, Any]:
    return {"table": location, "feature": feature, "status": "error", **error.to_dict()}
