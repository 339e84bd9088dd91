"""The clients matrix on a shared machine: at most N delta-spark JVMs at once (the least recently
used one closed first, started again when asked again), the Python clients never counted, and the
reference's reads asked once however many clients are compared with them."""

from __future__ import annotations

import pytest

from delta_downgrade_tools.clients_matrix import ClientPool, CachedReads, spark_release
from delta_downgrade_tools.older_clients import CURRENT_SPARK, PYTHON_CLIENTS, SPARK_CLIENTS, client
from tests.unit.tools.client_process_doubles import StartedOnFirstRequest


def test_at_most_two_jvms_run_at_once_the_least_recently_used_closed_first():
    pool = ClientPool(jvms=2, start=StartedOnFirstRequest)
    reference, old, older = pool(CURRENT_SPARK), pool(client("delta-spark 3.1.0")), pool(client("delta-spark 2.4.0"))
    reference.run([{"op": "read"}])
    old.run([{"op": "read"}])
    assert pool.running_jvms() == ["delta-spark 4.4.0", "delta-spark 3.1.0"]
    reference.run([{"op": "read"}])  # the reference now the most recently used
    older.run([{"op": "read"}])
    assert pool.running_jvms() == ["delta-spark 4.4.0", "delta-spark 2.4.0"]
    older.run([{"op": "read"}])  # running: no start, nothing closed
    old.run([{"op": "read"}])  # started again: the reference, now the least recently used, closed
    assert pool.running_jvms() == ["delta-spark 2.4.0", "delta-spark 3.1.0"]
    assert pool.processes["delta-spark 3.1.0"].starts == 2
    assert pool.processes["delta-spark 2.4.0"].starts == 1
    assert pool.processes["delta-spark 4.4.0"].starts == 1


def test_python_clients_start_no_jvm_and_are_not_counted():
    pool = ClientPool(jvms=1, start=StartedOnFirstRequest)
    pool(CURRENT_SPARK).run([{"op": "read"}])
    for spec in PYTHON_CLIENTS[:3]:
        pool(spec).run([{"op": "read"}])
    assert pool.running_jvms() == ["delta-spark 4.4.0"]
    assert all(pool.processes[s.name].proc is not None for s in PYTHON_CLIENTS[:3])


def test_without_a_limit_every_client_keeps_running():
    pool = ClientPool(start=StartedOnFirstRequest)
    for spec in SPARK_CLIENTS:
        pool(spec).run([{"op": "read"}])
    assert len(pool.running_jvms()) == len(SPARK_CLIENTS)
    pool.close()
    assert pool.running_jvms() == []


def test_a_limit_below_one_jvm_is_refused():
    with pytest.raises(ValueError):
        ClientPool(jvms=0, start=StartedOnFirstRequest)


def test_the_reference_reads_a_table_state_once_other_operations_each_time():
    process = StartedOnFirstRequest(CURRENT_SPARK, None)
    cached = CachedReads(process)
    read = {"op": "read", "path": "/t", "version": 1, "via": "spark"}
    first = cached.run([read, {"op": "files", "path": "/t"}])
    again = cached.run([{"op": "files", "path": "/t"}, dict(read), {**read, "version": 2}])
    assert again[1] == first[0]
    assert [r["op"] for r in process.requests] == ["read", "files", "files", "read"]
    assert process.requests[-1]["version"] == 2


def test_a_crashed_reference_read_is_asked_again():
    class CrashesOnce(StartedOnFirstRequest):
        def run(self, requests):
            answers = super().run(requests)
            return [{"ok": False, "error_class": "CLIENT_CRASHED"}] if len(self.requests) == 1 else answers

    process = CrashesOnce(CURRENT_SPARK, None)
    cached = CachedReads(process)
    read = {"op": "read", "path": "/t", "version": None}
    assert cached.run([read])[0]["error_class"] == "CLIENT_CRASHED"
    assert cached.run([read])[0]["ok"] is True
    assert len(process.requests) == 2


def test_an_own_drop_feature_is_asked_of_delta_spark_3_0_and_later_only():
    releases = {s.name: spark_release(s) for s in SPARK_CLIENTS}
    assert releases["delta-spark 2.4.0"] == (2, 4, 0) and releases["delta-spark 3.3.2"] == (3, 3, 2)
    assert spark_release(PYTHON_CLIENTS[0]) is None


def test_delta_spark_2_3_refusing_a_deletion_vector_table_write_is_a_known_behaviour_on_any_table():
    from delta_downgrade_tools.clients_matrix import known_behaviour

    refusal = {"ok": False, "error_class": "UnsupportedOperationException",
               "error": "java.lang.UnsupportedOperationException: Updates to tables with Deletion Vectors "
                        "feature enabled are not supported in this version of Delta Lake."}
    assert "2.4" in (known_behaviour("delta-spark 2.3.0", "cm_name_enabled_late_dbr", refusal) or "")
    assert known_behaviour("delta-spark 2.3.0", "corpus-dv_delete", refusal) is not None
    # another client, or another refusal of 2.3's: not known
    assert known_behaviour("delta-spark 2.4.0", "cm_name_enabled_late_dbr", refusal) is None
    other = {**refusal, "error": "java.lang.UnsupportedOperationException: something else"}
    assert known_behaviour("delta-spark 2.3.0", "cm_name_enabled_late_dbr", other) is None


def test_delta_spark_3_2_and_3_3_refusing_a_type_change_of_delta_4_0_is_a_known_behaviour():
    from delta_downgrade_tools.clients_matrix import known_behaviour

    for name, cls in (("delta-spark 3.2.1", "DELTA_UNSUPPORTED_TYPE_CHANGE_IN_SCHEMA"),
                      ("delta-spark 3.3.2", "DELTA_UNSUPPORTED_TYPE_CHANGE_IN_PREVIEW")):
        refusal = {"ok": False, "error_class": cls,
                   "error": f"[{cls}] Field byte_long was changed from TINYINT to BIGINT."}
        assert "byte to long" in (known_behaviour(name, "type_widening_preview", refusal) or "")
    # a read, or 3.1's refusal, is not that behaviour
    assert known_behaviour("delta-spark 3.2.1", "type_widening_preview", {"ok": True, "rows": []}) is None
    assert known_behaviour("delta-spark 3.1.0", "type_widening_preview",
                           {"ok": False, "error_class": "DELTA_UNSUPPORTED_TYPE_CHANGE_IN_SCHEMA"}) is None
