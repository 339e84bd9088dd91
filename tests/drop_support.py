"""Test-only table features (as delta-spark's suites name them: ``RW-T``, ``W-T``) and helpers to build tables
that use them. ``RW-T`` and ``W-T`` are driven by a table property, as in delta-spark's suites."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any, Iterator

import pyarrow as pa

from delta_downgrade.protocol.actions import AnyAction, Metadata
from delta_downgrade.clock import ManualClock
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade import features
from delta_downgrade.features import RemovableFeature, TraceContext
from delta_downgrade.protocol import FeatureKind, Protocol, TableFeature
from delta_downgrade.protocol.features import registry_with, with_registry
from delta_downgrade_tools.builders import TableBuilder

RW_T = "testRemovableReaderWriter"
W_T = "testRemovableWriter"
LEGACY_W = "testRemovableLegacyWriter"
LEGACY_RW = "testRemovableLegacyReaderWriter"
W_HIST = "testRemovableWriterWithHistoryTruncation"
X_DEP = "testFeatureRequiresTestFeatures"

PROPERTY = {RW_T: "_123TestRemovableReaderWriter321_", W_T: "_123TestRemovableWriter321_",
            LEGACY_W: "_123TestRemovableLegacyWriter321_", LEGACY_RW: "_123TestRemovableLegacyReaderWriter321_",
            W_HIST: "_123TestRemovableWriterWithHistoryTruncation321_"}

TEST_FEATURES = (
    TableFeature(RW_T, FeatureKind.READER_WRITER, 3, 7, removable=True, requires_history_protection=True),
    TableFeature(W_T, FeatureKind.WRITER, 1, 7, removable=True, requires_history_protection=False),
    TableFeature(LEGACY_W, FeatureKind.WRITER, 1, 5, is_legacy=True, removable=True),
    TableFeature(LEGACY_RW, FeatureKind.READER_WRITER, 2, 5, is_legacy=True, removable=True,
                 requires_history_protection=True),
    TableFeature(W_HIST, FeatureKind.WRITER, 1, 7, removable=True, requires_history_protection=True),
    TableFeature(X_DEP, FeatureKind.WRITER, 1, 7, removable=True, required_features=frozenset({RW_T, W_T})),
)


class PropertyDrop(RemovableFeature):
    """A feature whose only trace is ``<property>=true`` (delta-spark's test features)."""

    def __init__(self, feature: str, prop: str) -> None:
        super().__init__(feature)
        self.prop = prop

    def remove_traces(self, run: Any) -> bool:
        metadata = run.latest().metadata
        if metadata.configuration.get(self.prop, "").lower() != "true":
            return False
        run.commit([metadata.with_configuration({self.prop: None})], "UNSET TBLPROPERTIES",
                   {"properties": [self.prop]})
        return True

    def traces(self, ctx: TraceContext) -> list[str]:
        value = ctx.configuration.get(self.prop, "")
        return [f"{self.prop}=true"] if value.lower() == "true" else []

    def action_uses_feature(self, action: AnyAction) -> bool:
        return isinstance(action, Metadata) and action.configuration.get(self.prop, "").lower() == "true"


@contextlib.contextmanager
def registered_test_features() -> Iterator[None]:
    """Register the test features and their drop behaviour for the duration of the block."""
    saved = dict(features.REMOVABLE)
    for name, prop in PROPERTY.items():
        features.REMOVABLE[name] = PropertyDrop(name, prop)
    try:
        with with_registry(registry_with(*TEST_FEATURES)):
            yield
    finally:
        features.REMOVABLE.clear()
        features.REMOVABLE.update(saved)


SCHEMA = pa.schema([("id", pa.int64()), ("value", pa.string())])


def rows(start: int, n: int) -> list[dict[str, Any]]:
    return [{"id": i, "value": f"v{i}"} for i in range(start, start + n)]


def build(path: str, protocol: Protocol, *, properties: dict[str, str] | None = None,
          appends: int = 2, clock: ManualClock | None = None) -> TableBuilder:
    """Version 0 creates the table with ``protocol``; then ``appends`` appends of 10 rows."""
    builder = TableBuilder(path, clock=clock or ManualClock())
    builder.create(SCHEMA, protocol=protocol, configuration=properties or {}, rows=rows(0, 10))
    for i in range(appends):
        builder.append(rows(10 * (i + 1), 10))
    return builder


def checkpoint_versions(path: str) -> list[int]:
    return sorted({c.version for c in DeltaLog(path).checkpoint_inventory() if c.complete})


def latest(path: str) -> Any:
    return DeltaLog(path).snapshot(check_read=False)


def commit_versions(path: str) -> list[int]:
    return sorted(DeltaLog(path).whole_listing().commits)


def run_task(task: Any, argv: list[str]) -> tuple[int, list[dict[str, Any]], str]:
    """Run a task entry point in-process; return its exit code, RESULT lines and stderr."""
    from delta_downgrade.app.render.result import parse_result_lines

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = task(argv)
    return code, parse_result_lines(out.getvalue()), err.getvalue()


def log_snapshot_files(path: str) -> dict[str, bytes]:
    """Every file of _delta_log with its bytes, to prove nothing changed."""
    import os

    log_dir = os.path.join(path, "_delta_log")
    found = {}
    for root, _dirs, files in os.walk(log_dir):
        for name in files:
            full = os.path.join(root, name)
            with open(full, "rb") as fh:
                found[os.path.relpath(full, log_dir)] = fh.read()
    return found


def protocol_json(p: Protocol) -> str:
    return json.dumps(p.to_action(), sort_keys=True)
