"""A drop killed after each of its steps in turn: the table stays readable by delta-rs at its
latest version, and a rerun completes with the same final protocol as an uninterrupted run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from tests.logging_support import drop_steps
from tests.oracle import same_rows

TABLE = "v2_checkpoint_parquet_sidecars"
FEATURE = "v2Checkpoint"


class Killed(BaseException):
    """Raised from the handler of a logged step: nothing in the drop may catch it."""


def _killer(after: int):
    steps = []

    def on_step(message: str) -> None:
        steps.append(message)
        if len(steps) == after:
            raise Killed(message)
    return on_step


def test_drop_killed_after_each_step(golden_table, oracle):
    reference = golden_table(TABLE)
    expected_rows = oracle.scan_rows(reference)
    assert expected_rows.ok, expected_rows.error
    with drop_steps() as steps:
        drop_feature(reference, FEATURE)
    reference_protocol = DeltaLog(reference).snapshot().protocol
    assert len(steps) >= 8  # pre-downgrade commit, 3 × (barrier + checkpoint), downgrade, checkpoint

    for k in range(1, len(steps) + 1):
        path = golden_table(TABLE)
        with pytest.raises(Killed), drop_steps(_killer(k)) as seen:
            drop_feature(path, FEATURE)
        assert len(seen) == k, f"killed after step {k}: the run logged {seen}"
        mid = oracle.scan_rows(path)
        assert mid.ok, f"killed after step {k} ({steps[k - 1]}): delta-rs cannot read: {mid.error}"
        assert same_rows(mid, expected_rows), f"rows changed after step {k}"

        outcome = drop_feature(path, FEATURE)
        snap = DeltaLog(path).snapshot()
        assert snap.protocol == reference_protocol, f"step {k}: {snap.protocol} != {reference_protocol}"
        assert outcome.status in ("dropped", "already_absent")
        # The boundary has its checkpoint, whether the rerun dropped or only completed the drop.
        assert any(c.version == snap.boundary_version for c in DeltaLog(path).checkpoint_inventory()), k
        assert same_rows(oracle.pyarrow_rows(path), expected_rows), f"step {k}: older reader differs"


def test_drop_process_killed_mid_run(golden_table, oracle):
    """A real process death (os._exit) after the first barrier checkpoint."""
    path = golden_table(TABLE)
    expected_rows = oracle.scan_rows(path)
    script = textwrap.dedent(f"""
        import logging
        import os
        from delta_downgrade.operations.drop_feature import drop_feature
        from delta_downgrade.drop.run import LOGGER
        count = []
        class ExitAfterThird(logging.Handler):
            def emit(self, record):
                count.append(record.getMessage())
                if len(count) == 3:
                    os._exit(9)
        LOGGER.setLevel(logging.INFO)
        LOGGER.addHandler(ExitAfterThird(logging.INFO))
        drop_feature({path!r}, {FEATURE!r})
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    assert same_rows(oracle.scan_rows(path), expected_rows)
    drop_feature(path, FEATURE)
    snap = DeltaLog(path).snapshot()
    assert FEATURE not in snap.protocol.features
    assert same_rows(oracle.pyarrow_rows(path), expected_rows)


def test_drop_under_v2_policy_killed_after_each_step(golden_table, oracle, duckdb_reader):
    """The same on a ``delta.checkpointPolicy=v2`` table whose barriers and boundary checkpoint
    are V2 checkpoints with sidecars (``deletionVectors``, supported but unused, is dropped):
    after every step each checkpoint in the log has all its sidecars, both readers read the
    rows, and a rerun finishes with V2 checkpoints."""
    from delta_downgrade_tools.builders import TableBuilder

    def prepared() -> str:
        path = golden_table(TABLE)
        builder = TableBuilder(path)
        builder.set_protocol(builder.log.snapshot().protocol.with_feature("deletionVectors"))
        return path

    reference = prepared()
    expected_rows = oracle.scan_rows(reference)
    assert expected_rows.ok, expected_rows.error
    with drop_steps() as steps:
        drop_feature(reference, "deletionVectors")
    reference_protocol = DeltaLog(reference).snapshot().protocol
    assert len(steps) == 8 and all("(v2)" in s for s in steps if s.startswith("checkpoint"))

    for k in range(1, len(steps) + 1):
        path = prepared()
        with pytest.raises(Killed), drop_steps(_killer(k)):
            drop_feature(path, "deletionVectors")
        log = DeltaLog(path)
        for checkpoint in log.checkpoint_inventory():
            assert all(os.path.isfile(os.path.join(path, s)) for s in log.sidecars_of(checkpoint)), k
        assert same_rows(oracle.scan_rows(path), expected_rows), f"delta-rs, killed after step {k}"
        assert same_rows(duckdb_reader.duckdb_rows(path), expected_rows), f"DuckDB, killed after step {k}"

        outcome = drop_feature(path, "deletionVectors")
        snap = DeltaLog(path).snapshot()
        assert snap.protocol == reference_protocol and outcome.status in ("dropped", "already_absent")
        boundary = [c for c in DeltaLog(path).checkpoint_inventory() if c.version == snap.boundary_version]
        assert [c.kind for c in boundary] == ["v2"], k
        assert same_rows(oracle.scan_rows(path), expected_rows)
