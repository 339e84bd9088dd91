"""The client catalogue against the real clients installed here: every golden table read by
deltalake 0.18.2 (pyarrow path), deltalake 1.6.6 (QueryBuilder scan path and pyarrow path) and
DuckDB's delta extension, each in a subprocess. The catalogue's read verdict must equal what the
client does:

- ``yes``: the client reads, and its rows equal the reference rows (deltalake 1.6.6's scan, else
  DuckDB's) - a verdict that says "reads" for a client returning wrong data is wrong;
- ``no``: the client fails;
- ``misreads``: the client returns rows, and they differ from the reference.

A disagreement means the catalogue (src/delta_downgrade/compat/clients.toml) is wrong: fix it,
with a source. Two kinds of failure are not about table features and are listed below with their
cause, asserted exactly (a client that starts reading such a table fails the test): damaged
tables, and client defects on valid logs.
"""

from __future__ import annotations

import pytest

from delta_downgrade.compat import Verdict, packaged_catalogue, read_verdict
from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.log.delta_log import DeltaLog
from tests.conftest import _golden_dir
from tests.oracle import OracleResult, same_rows

# Log-only verdicts and outside readers: no Spark, so the Spark Connect pass leaves it out.
pytestmark = [pytest.mark.golden, pytest.mark.oracle]

# client id -> (fixture, read call)
CLIENTS = {
    "deltalake-0.18-pyarrow": ("oracle_018", "pyarrow_rows"),
    "deltalake-1.6-rust": ("oracle", "scan_rows"),
    "deltalake-1.6.6-pyarrow": ("oracle", "pyarrow_rows"),
    "duckdb-delta-1.5": ("duckdb_reader", "duckdb_rows"),
}

# (client, table) -> (substring of the client's error, why it is not a table-feature matter)
NOT_ABOUT_FEATURES = {
    ("deltalake-0.18-pyarrow", "bad_empty_last_checkpoint"): (
        "EOF while parsing", "deltalake 0.18 cannot parse a 0-byte _last_checkpoint (later "
        "releases fall back to listing, as PROTOCOL.md 'Last Checkpoint File' allows)"),
    ("deltalake-0.18-pyarrow", "legacy_1_1_delta_0_1_0"): (
        "missing-column: createdTime", "deltalake 0.18 requires metaData.createdTime in the "
        "checkpoint, which Delta 0.1.0 did not write (the field is optional in PROTOCOL.md)"),
    ("deltalake-1.6-rust", "bad_dv_file_unresolvable"): (
        "File not found", "damaged table: its deletion vector file does not resolve"),
    ("duckdb-delta-1.5", "bad_dv_file_unresolvable"): (
        "File not found", "damaged table: its deletion vector file does not resolve"),
}


def _tables() -> list[str]:
    root = _golden_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "_delta_log").is_dir())


_REFERENCE: dict[str, OracleResult | None] = {}


def _reference(path: str, oracle, duckdb_reader) -> OracleResult | None:
    if path not in _REFERENCE:
        found = None
        for read in (lambda: oracle.scan_rows(path), lambda: duckdb_reader.duckdb_rows(path)):
            result = read()
            if result.ok:
                found = result
                break
        _REFERENCE[path] = found
    return _REFERENCE[path]


@pytest.mark.parametrize("client_id", sorted(CLIENTS))
@pytest.mark.parametrize("table", _tables())
def test_read_verdict_matches_the_real_client(table, client_id, golden_root, request, oracle, duckdb_reader):
    fixture, call = CLIENTS[client_id]
    reader = request.getfixturevalue(fixture)
    path = str(golden_root / table)
    result: OracleResult = getattr(reader, call)(path)

    try:
        snapshot = DeltaLog(path).snapshot(check_read=False)
        protocol, schema = snapshot.protocol, snapshot.schema
    except DeltaDowngradeError as exc:
        # The package refuses the log (no protocol, a gap, an invalid protocol): no verdict, and
        # no client may read it either.
        assert not result.ok, f"{client_id} reads {table}, which the package refuses: {exc}"
        return

    verdict = read_verdict(packaged_catalogue().client(client_id), protocol, schema)
    known = NOT_ABOUT_FEATURES.get((client_id, table))
    if known is not None:
        assert verdict.verdict is Verdict.YES, (client_id, table, verdict)
        assert not result.ok and known[0] in (result.error or ""), (
            f"{client_id} on {table}: expected the failure '{known[0]}' ({known[1]}), got {result}")
        return

    if verdict.verdict is Verdict.NO:
        assert not result.ok, (f"catalogue says {client_id} cannot read {table} ({verdict.blockers}) "
                               f"but it reads {len(result.value)} rows")
        return
    assert verdict.verdict in (Verdict.YES, Verdict.MISREADS), (
        f"the catalogue must know the clients tested here: {client_id} on {table} is {verdict}")
    assert result.ok, f"catalogue says {client_id} reads {table} ({protocol}) but it fails: {result.error}"
    reference = _reference(path, oracle, duckdb_reader)
    assert reference is not None, f"no reference reader reads {table}"
    if verdict.verdict is Verdict.YES:
        assert same_rows(result, reference), f"{client_id} reads {table} with different rows"
    else:
        assert not same_rows(result, reference), (
            f"catalogue says {client_id} misreads {table} ({verdict.blockers}), but its rows are right")
