"""The Checkpoint Protection RFC's promise and the client catalogue, proven with the real older
clients (``make older-clients``; tools/src/delta_downgrade_tools/older_clients.py and
clients_matrix.py, which also build the full matrix: ``make test-clients-matrix``).

Here, within the suite's budget, a sample:

- delta-spark 3.1 (does not know checkpointProtection) and 3.3 (the first that does), each one
  JVM of its own, on a golden table after this package's drop of vacuumProtocolCheck and again
  after ``truncate-history``: the latest version read iff the catalogue says so, with the current
  delta-spark's rows (the test session's); every retained version read with its rows or refused
  with the client's protocol error. 3.1 refuses to append while checkpointProtection is present,
  and appends, checkpoints and cleans up after truncate-history; 3.3 appends to the protected
  table, checkpoints and cleans up with the log retention expired, and ``verify_task`` finds the
  protected checkpoints and the boundary intact. A control run on a copy whose protected
  checkpoints (and the commits they cover) were removed must fail the same checks.
- every deltalake / Polars / DuckDB release installed here on every golden table: the catalogue's
  read and write verdicts equal what the client does (rows compared with deltalake 1.6.6's scan,
  else DuckDB's), before and after ``drop-feature --for`` that client where the drop is log-only
  (drops with a data rewrite: the full matrix).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from delta_downgrade_tools import clients_matrix as matrix
from tests.older_client_support import client_process
from delta_downgrade_tools.older_clients import (
    CURRENT_SPARK,
    PYTHON_CLIENTS,
    PYTHON_REFERENCES,
    SessionRunner,
    client,
)

pytestmark = pytest.mark.golden

SAMPLE_TABLE, SAMPLE_FEATURE = matrix.SAMPLE_CASES[0]


def _failed(cells: list[matrix.Cell]) -> str:
    return "\n".join(f"{c.client} {c.table} {c.feature} {c.state} {c.action}: expected {c.expected}, "
                     f"observed {c.observed}: {c.problem}" for c in cells if not c.ok)


@pytest.fixture
def reference(delta_spark):
    """The current delta-spark: the test session's, when this process runs in UTC as the
    clients do; else a process of its own."""
    if time.timezone == 0 and time.daylight == 0:
        yield SessionRunner(delta_spark)
        return
    process = client_process(CURRENT_SPARK)
    yield process
    process.close()


# The older clients run their own classic Spark, and the reference is the session's Delta SQL:
# nothing here depends on the session's kind, so the Spark Connect pass leaves it out.
@pytest.mark.classic_spark("older Delta clients run classic Spark of their own")
@pytest.mark.parametrize("name", ["delta-spark 3.1.0", "delta-spark 3.3.2"])
def test_older_delta_reads_and_writes_as_the_rfc_promises(name, golden_root, tmp_path, reference):
    spec = client(name)
    case = matrix.prepare_case(SAMPLE_TABLE, golden_root / SAMPLE_TABLE, SAMPLE_FEATURE, tmp_path, control=True)
    assert case.refusal is None, case.refusal
    assert set(case.states) == {"dropped", "truncated", "control"}
    control = case.states.pop("control")
    process = client_process(spec)
    try:
        cells = matrix.rfc_reader_cells(case, reference, {spec: process})
        cells += matrix.rfc_writer_cells(case, reference, spec, process, tmp_path)
        control_cells = matrix.rfc_reader_cells(matrix.Case(case.table, case.source, case.feature,
                                                            {"control": control}),
                                                reference, {spec: process}, reference_path=case.states["dropped"])
    finally:
        process.close()

    assert not _failed(cells), _failed(cells)
    actions = {(c.state, c.action) for c in cells}
    # Every state was read at its latest and retained versions, and the writes were exercised.
    assert ("dropped", "read latest") in actions and ("truncated", "read latest") in actions
    assert any(a.startswith("read v") for _, a in actions)
    assert ("truncated", "append") in actions and ("truncated", "cleanup") in actions
    if matrix.knows_checkpoint_protection(spec):
        assert ("dropped", "protected checkpoints and boundary kept (verify_task)") in actions
    else:
        refused = [c for c in cells if (c.state, c.action) == ("dropped", "append")]
        assert refused and refused[0].observed.startswith("refused: "), refused
    # Without the protected checkpoints the same checks fail: the older reader no longer finds
    # the rows the current delta-spark reads on the intact table.
    assert any(not c.ok for c in control_cells), [(c.action, c.observed) for c in control_cells]


@pytest.fixture(scope="module")
def python_references():
    processes = [client_process(s) for s in PYTHON_CLIENTS if s.name in PYTHON_REFERENCES]
    yield processes
    for p in processes:
        p.close()


def _python_reference(processes, path: Path) -> dict | None:
    for process, via in zip(processes, ("rust", "duckdb")):
        answer = process.one(op="read", path=str(path), via=via)
        if answer.get("ok"):
            return answer
    return None


@pytest.mark.parametrize("name", [s.name for s in PYTHON_CLIENTS])
def test_python_client_does_what_the_catalogue_says(name, golden_root, tmp_path, python_references):
    spec = client(name)
    process = client_process(spec)
    cells: list[matrix.Cell] = []
    try:
        for table, path in matrix.golden_tables():
            if table.startswith("bad_"):
                continue
            reference = _python_reference(python_references, path)
            cells += matrix.catalogue_cells(spec, process, table, path, "original", reference, tmp_path)
            features = matrix.plan_features(path, spec.catalogue_id)
            if not features or set(features) & {"deletionVectors", "columnMapping", "typeWidening",
                                                 "typeWidening-preview"}:
                continue  # nothing to drop, or a data rewrite (Spark): the full matrix
            after = matrix.copy_table(path, tmp_path / f"{table}--for")
            assert matrix.drop_for(after, spec.catalogue_id) is None
            cells += matrix.catalogue_cells(spec, process, table, after, "dropped-for",
                                            _python_reference(python_references, after), tmp_path,
                                            "for:" + ",".join(features))
    finally:
        process.close()
    assert cells
    assert not _failed(cells), _failed(cells)
