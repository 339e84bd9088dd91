"""``drop-feature --for CLIENT`` proven with the real clients installed here: deltalake 0.18.2
(pyarrow path), DuckDB's delta extension and deltalake 1.6.6's pyarrow path, each in a subprocess.

For every golden table and each of them that the catalogue says cannot read it (``no``) or reads it
wrongly (``misreads``): run ``drop-feature --for`` that client on a copy, then the catalogue's read
verdict on the new state must equal what the client does, and ``yes`` means its rows equal the
original table's rows as the reference reader (deltalake 1.6.6's scan, else DuckDB) read them
before any drop. Where the catalogue's plan is impossible, the command refuses with exit 2 and the
table is byte-identical.

Grouped per table: one copy, the reference read once, the refusals first (on the original state),
then the drops one client after the other (a later client's run often finds nothing left to do:
``already_compatible``, the rerun path). Refusals and drops without a data rewrite go through the
CLI in a subprocess; drops with one run in-process on the ``spark`` fixture's session (classic or
Connect)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_downgrade.compat import Verdict, packaged_catalogue, read_verdict
from delta_downgrade.compat.verdict import client_verdict
from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_for_client import (
    STATUS_ALREADY_COMPATIBLE,
    drop_for_client,
)
from tests.golden_cases import golden_cases
from tests.oracle import OracleResult, same_rows
from tests.process_support import run_cli

pytestmark = [pytest.mark.golden, pytest.mark.oracle]

# client id -> (fixture, read call)
CLIENTS = {
    "deltalake-0.18-pyarrow": ("oracle_018", "pyarrow_rows"),
    "duckdb-delta-1.5": ("duckdb_reader", "duckdb_rows"),
    "deltalake-1.6.6-pyarrow": ("oracle", "pyarrow_rows"),
}
_BLOCKED = (Verdict.NO, Verdict.MISREADS)
_REPO = Path(__file__).resolve().parents[2]


def _blocked_tables(root: Path) -> list[str]:
    """Golden tables that at least one of CLIENTS cannot read (or misreads), by the catalogue."""
    catalogue = packaged_catalogue()
    out = []
    for table in sorted(p.name for p in root.iterdir() if (p / "_delta_log").is_dir()):
        try:
            snapshot = DeltaLog(str(root / table)).snapshot(check_read=False)
        except DeltaDowngradeError:
            continue  # the package refuses the log: nothing to drop (test_compat_catalogue)
        if any(read_verdict(catalogue.client(c), snapshot.protocol, snapshot.schema).verdict in _BLOCKED
               for c in CLIENTS):
            out.append(table)
    return out


def _files(path: str) -> dict[str, bytes]:
    root = Path(path)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _cli(*args: str) -> tuple[int, dict]:
    proc = run_cli(*args, "--json", "--quiet")
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {"stderr": proc.stderr}


def _reference(path: str, oracle, duckdb_reader) -> OracleResult | None:
    for read in (lambda: oracle.scan_rows(path), lambda: duckdb_reader.duckdb_rows(path)):
        result = read()
        if result.ok:
            return result
    return None


@pytest.mark.parametrize("table", golden_cases(_blocked_tables))
def test_drop_for_client_makes_the_real_client_read_the_original_rows(table, golden_table, request, oracle,
                                                                      duckdb_reader):
    path = golden_table(table)
    catalogue = packaged_catalogue()
    snapshot = DeltaLog(path).snapshot(check_read=False)
    verdicts = {c: client_verdict(catalogue.client(c), snapshot.protocol, snapshot.schema) for c in CLIENTS}
    blocked = [c for c, v in verdicts.items() if v.read.verdict in _BLOCKED]
    assert blocked
    reference = _reference(path, oracle, duckdb_reader)

    impossible = [c for c in blocked if verdicts[c].plan is None or not verdicts[c].plan.possible
                  or any(n.startswith("no feature drop removes") for n in verdicts[c].plan.notes)]
    for client in impossible:  # on the original state, before any drop
        before = _files(path)
        code, document = _cli("drop-feature", path, "--for", client)
        assert code == 2, (client, document)
        assert document["error_class"] == "DELTA_DOWNGRADE_CLIENT_CANNOT_BE_UNBLOCKED", document
        assert _files(path) == before, f"--for {client} refused but changed {table}"

    droppable = [c for c in blocked if c not in impossible]
    if droppable and reference is None:
        # No reader gives the original rows: a damaged table (a deletion vector that does not
        # resolve). The run must refuse before its first write rather than resurrect deleted
        # rows: exit 2, the table byte-identical, so the verdicts still hold (checked below).
        request.getfixturevalue("spark")
        for client in droppable:
            before = _files(path)
            with pytest.raises(DeltaDowngradeError) as info:
                drop_for_client(path, catalogue.client(client))
            assert info.value.exit_code == 2, (client, info.value)
            assert _files(path) == before, f"--for {client} refused but changed {table}"
        after = DeltaLog(path).snapshot(check_read=False)
        assert set(verdicts[droppable[0]].read.blocking_features) & after.protocol.features, after.protocol
        droppable = []
    for client in droppable:
        plan = verdicts[client].plan
        assert plan is not None
        if any(step.may_rewrite_data for step in plan.steps):
            request.getfixturevalue("spark")  # the rewrites run on this session
            outcome = drop_for_client(path, catalogue.client(client))
            status, dropped = outcome.status, outcome.features_dropped
        else:
            code, document = _cli("drop-feature", path, "--for", client)
            assert code == 0, (client, document)
            status, dropped = document["status"], document["features_dropped"]
        assert status in ("dropped", STATUS_ALREADY_COMPATIBLE), (client, status)
        after = DeltaLog(path).snapshot(check_read=False)
        assert not set(dropped) & after.protocol.features, (client, dropped, after.protocol)
        verdict = read_verdict(catalogue.client(client), after.protocol, after.schema)
        # The plan promised a reader: the catalogue must now say yes, and the client must agree.
        assert verdict.verdict is Verdict.YES, (client, table, after.protocol, verdict)
        fixture, call = CLIENTS[client]
        result = getattr(request.getfixturevalue(fixture), call)(path)
        assert result.ok, f"after --for {client}, {client} cannot read {table}: {result.error}"
        assert same_rows(result, reference), f"after --for {client}, {client} reads other rows of {table}"

    # Every tested client, blocked or not, still gets a verdict equal to what it does now.
    after = DeltaLog(path).snapshot(check_read=False)
    for client, (fixture, call) in CLIENTS.items():
        verdict = read_verdict(catalogue.client(client), after.protocol, after.schema).verdict
        result = getattr(request.getfixturevalue(fixture), call)(path)
        if verdict is Verdict.NO:
            assert not result.ok, (client, table, "reads, but the catalogue says no")
        elif verdict is Verdict.YES and reference is not None:
            assert result.ok and same_rows(result, reference), (client, table, result.error)
