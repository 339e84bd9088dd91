"""The clients matrix's RFC part with one delta-spark JVM at a time (a shared machine): the
reference reads every table state of the run at once and the writers' tables are read back in
batches, so that a client's cases do not start the reference's JVM and the client's again for
every case (each start costs tens of seconds); the cells are those of a run without the limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_downgrade_tools import clients_matrix as matrix
from delta_downgrade_tools.older_clients import CURRENT_SPARK, ClientSpec, client
from tests.unit.tools.client_process_doubles import StartedOnFirstRequest

#: Golden tables whose drop (and truncate-history) this package does on the log alone: no Spark
TABLES = ("vacuum_protocol_check", "domain_metadata_user_domains")


class Answers(StartedOnFirstRequest):
    """A client process that reads one row, appends, checkpoints and cleans up. ``files``: the
    package's own list, as the reference answers it."""

    def answer(self, request):
        if request["op"] == "files":
            return {"ok": True, "files": matrix.package_files(Path(request["path"]))[1]}
        return {"ok": True, "columns": ["id"], "rows": [[1]]}


def _run(monkeypatch, tmp_path, jvms):
    processes: dict[str, Answers] = {}

    def start(spec, log_dir=None):
        processes[spec.name] = Answers(spec, log_dir)
        return processes[spec.name]

    monkeypatch.setattr(matrix, "ClientProcess", start)
    # the processes are doubles: the run needs no installed client (`make test` runs this tier
    # before `make older-clients`, and the matrix leaves out clients it finds missing)
    monkeypatch.setattr(ClientSpec, "missing", lambda self: None)
    monkeypatch.setattr(matrix, "stop_package_spark", lambda: None)
    cells = matrix.run_matrix("all", tmp_path / "work", spark_clients=[client("delta-spark 3.3.2")],
                              python_clients=[], table_names=lambda n: n in TABLES,
                              parts=frozenset({"rfc"}), jvms=jvms)
    return cells, processes


def _key(c: matrix.Cell) -> tuple[str, ...]:
    return (c.part, c.client, c.table, c.feature, c.state, c.action, c.observed, str(c.ok))


@pytest.mark.usefixtures("golden_root")  # the cases are golden tables: skipped where they are absent
def test_with_one_jvm_the_client_and_the_reference_each_start_twice_at_most_for_all_cases(monkeypatch, tmp_path):
    cells, processes = _run(monkeypatch, tmp_path / "one", jvms=1)
    cases = {(c.table, c.feature) for c in cells if c.part == "rfc"}
    if len(cases) < 2:
        pytest.fail(f"the golden tables {TABLES} no longer give two cases: {cases}")
    assert [c for c in cells if c.action == "read after its writes"], "a truncated table read back after the writes"
    # the reference: once for every state's reads, once for the read-back; the client: once
    assert processes[CURRENT_SPARK.name].starts <= 2, processes[CURRENT_SPARK.name].starts
    assert processes["delta-spark 3.3.2"].starts == 1

    unlimited, _ = _run(monkeypatch, tmp_path / "all", jvms=None)
    assert sorted(map(_key, cells)) == sorted(map(_key, unlimited))


@pytest.mark.usefixtures("golden_root")  # the cases are golden tables: skipped where they are absent
def test_the_read_back_asks_the_writer_first_then_the_reference_for_every_table(tmp_path):
    pool = matrix.ClientPool(jvms=1, start=Answers)
    reference, writer = matrix.CachedReads(pool(CURRENT_SPARK)), pool(client("delta-spark 3.1.0"))
    source = matrix.golden_dir() / "vacuum_protocol_check"
    pending = [matrix.ReadBack(matrix.Case("t", source, "vacuumProtocolCheck"), writer.spec,
                               matrix.copy_table(source, tmp_path / f"t{i}")) for i in range(3)]
    cells = matrix.read_back_cells(pending, reference, writer)

    assert [(c.action, c.ok) for c in cells] == [("read after its writes", True),
                                                 ("package reads the same files", True)] * 3
    assert pool.processes[CURRENT_SPARK.name].starts == 1
    assert pool.processes["delta-spark 3.1.0"].starts == 1
    assert [r["op"] for r in pool.processes[CURRENT_SPARK.name].requests] == ["read"] * 3 + ["files"] * 3
