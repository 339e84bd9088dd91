"""``delta-downgrade compat`` end to end: every golden table reported from its log alone (the copy's
data files and deletion-vector files are deleted first, and the document must equal the one of the
intact table), the document's shape, ``--client`` by alias and family, an unknown client, a fleet
with a missing table, and a catalog name through real Delta SQL (a name in Spark's session
catalog)."""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.app.render.result import parse_result_lines
from delta_downgrade.compat import packaged_catalogue
from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.compat import table_compat
from tests.conftest import _golden_dir

# compat is log-only (a test asserts it imports no pyspark): the Spark Connect pass leaves it out.
pytestmark = [pytest.mark.golden]

VERDICTS = {"yes", "no", "misreads", "unknown"}


def _tables() -> list[str]:
    root = _golden_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "_delta_log").is_dir())


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _without_data(path: str) -> int:
    """Delete every file outside ``_delta_log`` (data files, deletion vectors); how many."""
    removed = 0
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        for name in files:
            os.remove(os.path.join(root, name))
            removed += 1
    return removed


def _check_protocol(p: dict) -> None:
    assert set(p) == {"minReaderVersion", "minWriterVersion", "readerFeatures", "writerFeatures"}
    assert isinstance(p["minReaderVersion"], int) and isinstance(p["minWriterVersion"], int)
    for key in ("readerFeatures", "writerFeatures"):
        assert p[key] is None or (isinstance(p[key], list) and p[key] == sorted(p[key]))


def _check_access(a: dict, allowed: set[str]) -> None:
    assert set(a) == {"verdict", "blockers", "notes"} and a["verdict"] in allowed
    for b in a["blockers"]:
        assert set(b) == {"kind", "feature", "reason"} and b["reason"]
    assert all(isinstance(n, str) for n in a["notes"])


def check_document(doc: dict) -> None:
    """The compat document's shape (README "compat")."""
    assert isinstance(doc["table"], str) and isinstance(doc["version"], int)
    _check_protocol(doc["protocol"])
    ids = []
    for c in doc["clients"]:
        assert {"client", "name", "family", "versions", "read", "write", "unblock", "sources"} <= set(c)
        ids.append(c["client"])
        _check_access(c["read"], VERDICTS)
        _check_access(c["write"], VERDICTS | {"n/a"})
        assert c["sources"] and all(set(s) == {"url", "states"} for s in c["sources"])
        u = c["unblock"]
        if u is None:
            continue
        assert {"possible", "steps", "undroppable", "protocol_after", "read_after", "write_after",
                "truncate_history_before_write", "notes"} <= set(u)
        assert u["possible"] == (not u["undroppable"])
        for step in u["steps"]:
            assert set(step) >= {"feature", "required_by", "checkpoint_protection", "rewrite"}
            r = step["rewrite"]
            assert set(r) >= {"needed", "files", "bytes"}
            assert r["needed"] == (r["files"] > 0) and r["bytes"] >= 0
        if u["protocol_after"] is not None:
            _check_protocol(u["protocol_after"])
            _check_access(u["read_after"], VERDICTS)
            _check_access(u["write_after"], VERDICTS | {"n/a"})
            # the plan removes every feature it drops
            dropped = {s["feature"] for s in u["steps"]}
            after = set(u["protocol_after"]["readerFeatures"] or ()) | set(u["protocol_after"]["writerFeatures"] or ())
            assert not dropped & after
        for x in u["undroppable"]:
            assert set(x) == {"feature", "reason"} and x["reason"]
    assert ids == [c.id for c in packaged_catalogue().clients]
    by_id = {c["client"]: c for c in doc["clients"]}
    assert doc["blocked"]["read"] == [i for i in ids if by_id[i]["read"]["verdict"] in ("no", "misreads")]
    assert doc["blocked"]["write"] == [i for i in ids if by_id[i]["write"]["verdict"] in ("no", "misreads")]
    # a client that writes no Delta table (writer max_version 0) is n/a for writes, never blocked
    non_writers = {c.id for c in packaged_catalogue().clients if c.write is not None and c.write.max_version == 0}
    assert all(by_id[i]["write"]["verdict"] == "n/a" for i in non_writers)


@pytest.mark.parametrize("table", _tables())
def test_every_golden_table_from_the_log_alone(table, golden_root, golden_table):
    original = str(golden_root / table)
    try:
        expected = table_compat(original, packaged_catalogue()).to_json()
    except DeltaDowngradeError as exc:
        expected = exc
    path = golden_table(table)
    _without_data(path)

    code, out, err = _cli("compat", path, "--json")
    doc = json.loads(out)  # one document on stdout
    if isinstance(expected, DeltaDowngradeError):
        # a log the package refuses (no protocol, a gap, an invalid protocol): exit 2 and why
        assert code == 2 and doc["status"] == "error", (code, doc)
        assert doc["error_class"] == expected.error_class and doc["table"] == path
        return
    assert code == 0, err
    check_document(doc)
    assert doc["command"] == "compat" and doc["exit_code"] == 0
    assert doc["status"] == ("blocked" if doc["blocked"]["read"] or doc["blocked"]["write"] else "compatible")
    # the same answer as on the intact table: nothing the report says came from a data file
    assert {k: v for k, v in doc.items() if k in expected and k != "table"} == \
        {k: v for k, v in expected.items() if k != "table"}
    assert doc["version"] == DeltaLog(original).snapshot(check_read=False).version


def test_rewrite_counts_and_text(golden_root):
    path = str(golden_root / "dv_cm_name_checkpoint")
    code, out, err = _cli("compat", path, "--client", "deltalake-0.18")
    assert code == 0, err
    (result,) = parse_result_lines(out)
    assert result["status"] == "blocked" and result["clients"] == ["deltalake-0.18-pyarrow"]
    assert result["blocked_read"] == ["deltalake-0.18-pyarrow"]
    text = out[:out.index("RESULT ")]
    # the plan, readable: DVs are on 2 live files (exact); column mapping: up to every live file
    snapshot = DeltaLog(path).snapshot()
    files = list(snapshot.state().files.values())
    with_dv = [f for f in files if f.dv is not None]
    assert f"drop-feature deletionVectors (rewrites {len(with_dv)} file(s)" in text
    assert f"drop-feature columnMapping (rewrites up to {len(files)} file(s)" in text
    assert "truncate-history" in text and "sources:" in text and "https://" in text

    code, out, _ = _cli("compat", path, "--client", "deltalake-0.18", "--json")
    (client,) = json.loads(out)["clients"]
    steps = {s["feature"]: s["rewrite"] for s in client["unblock"]["steps"]}
    assert steps["deletionVectors"] == {"needed": True, "files": len(with_dv),
                                        "bytes": sum(f.size for f in with_dv), "exact": True}
    assert steps["columnMapping"] == {"needed": True, "files": len(files),
                                      "bytes": sum(f.size for f in files), "exact": False}


def test_client_by_alias_and_by_family(golden_root):
    path = str(golden_root / "timestamp_ntz")
    code, out, _ = _cli("compat", path, "--client", "DELTA-RS-0.18", "--json")
    assert code == 0 and [c["client"] for c in json.loads(out)["clients"]] == ["deltalake-0.18-pyarrow"]
    code, out, _ = _cli("compat", path, "--client", "duckdb", "--json")
    family = [c.id for c in packaged_catalogue().clients if c.family == "duckdb"]
    assert code == 0 and family and [c["client"] for c in json.loads(out)["clients"]] == family


def test_unknown_client_is_bad_input_with_a_suggestion(golden_root):
    code, out, err = _cli("compat", str(golden_root / "timestamp_ntz"), "--client", "duckdv")
    assert code == 2
    (result,) = parse_result_lines(out)
    assert result["status"] == "error" and result["error_class"] == "DELTA_DOWNGRADE_UNKNOWN_CLIENT"
    assert "did you mean" in result["message"] and "duckdb" in result["message"]
    assert "DELTA_DOWNGRADE_UNKNOWN_CLIENT" in err


def test_missing_table_exit_2_with_its_error_class(tmp_path):
    code, out, _ = _cli("compat", str(tmp_path / "nope"))
    (result,) = parse_result_lines(out)
    assert code == 2 and result["status"] == "error" and result["error_class"].startswith("DELTA_")


def test_table_or_tables_file(tmp_path):
    code, out, _ = _cli("compat")
    assert code == 2 and parse_result_lines(out)[0]["error_class"] == "DELTA_DOWNGRADE_BAD_INPUT"
    code, out, _ = _cli("compat", str(tmp_path), "--tables-file", str(tmp_path / "f"))
    assert code == 2


def test_fleet_with_a_missing_table(golden_root, tmp_path):
    good = [str(golden_root / "dv_basic_no_checkpoint"), str(golden_root / "timestamp_ntz")]
    missing = str(tmp_path / "missing")
    tables_file = tmp_path / "tables.txt"
    tables_file.write_text("# the fleet\n" + "\n".join([good[0], missing, good[1]]) + "\n\n")

    code, out, _ = _cli("compat", "--tables-file", str(tables_file))
    results = parse_result_lines(out)
    # one RESULT per table that was reported, one per error, then the summary
    assert [r.get("table") for r in results[:2]] == good
    assert results[2]["table"] == missing and results[2]["status"] == "error"
    summary = results[-1]
    assert summary["summary"] is True and summary["tables"] == 3 and summary["failed_tables"] == [missing]
    assert code == 2 == summary["exit_code"]  # the worst of the tables' outcomes (task contract)

    code, out, _ = _cli("compat", "--tables-file", str(tables_file), "--json")
    doc = json.loads(out)
    assert code == 2
    assert [t["table"] for t in doc["tables"]] == good
    for t in doc["tables"]:
        check_document(t)
    (error,) = doc["errors"]
    assert set(error) >= {"table", "error_class", "sqlstate", "message"} and error["table"] == missing
    # the plain message, as every error RESULT gives it (the class and table are fields of their own)
    assert not error["message"].startswith("[") and error["sqlstate"]
    assert [c["client"] for c in doc["clients"]] == [c.id for c in packaged_catalogue().clients]
    assert all(set(c) == {"client", "name", "family", "versions"} for c in doc["clients"])


def test_fleet_of_good_tables_exits_0(golden_root, tmp_path):
    tables_file = tmp_path / "tables.txt"
    tables_file.write_text(str(golden_root / "timestamp_ntz") + "\n")
    code, out, _ = _cli("compat", "--tables-file", str(tables_file), "--client", "deltalake-1.6-rust")
    results = parse_result_lines(out)
    assert code == 0 and results[0]["status"] == "compatible" and results[-1]["status"] == "compatible"


def test_no_pyspark_on_the_path_of_a_table(golden_root, tmp_path):
    import subprocess
    import sys

    src = str(Path(__file__).resolve().parents[2] / "src")
    code = ("import sys; from delta_downgrade.app.cli import main; rc = main(['compat', sys.argv[1], '--json']); "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'; sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, str(golden_root / "dv_cm_name_checkpoint")],
                          env={**os.environ, "PYTHONPATH": src}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.classic_spark("registers a table in the classic session's catalog")
def test_catalog_name_through_delta_sql(delta_spark, golden_table, monkeypatch):
    import uuid

    from tests.recording_session import activate

    path = golden_table("dv_basic_no_checkpoint")
    schema = f"spark_catalog.compat_{uuid.uuid4().hex[:12]}"
    name = f"{schema}.t"
    delta_spark.sql(f"CREATE SCHEMA {schema}")
    try:
        delta_spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{path}'")
        session = activate(delta_spark, monkeypatch)
        code, out, err = _cli("compat", name, "--json")
    finally:
        delta_spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")  # external: the files stay
    assert code == 0, err
    doc = json.loads(out)
    assert doc["table"] == name
    assert doc["version"] == DeltaLog(path).snapshot().version
    assert doc["protocol"] == table_compat(path, packaged_catalogue()).to_json()["protocol"]
    assert doc["notes"] and "DESCRIBE DETAIL" in doc["notes"][0]
    assert session.statements, "nothing ran through SQL"
    for statement in session.statements:
        assert "delta.`" not in statement and "/" not in statement, statement
    dv_steps = [s for c in doc["clients"] if c["unblock"] for s in c["unblock"]["steps"]
                if s["feature"] == "deletionVectors"]
    assert dv_steps and all(s["rewrite"] == {"needed": True, "files": None, "bytes": None, "exact": False}
                            for s in dv_steps)


def test_catalog_name_without_delta_sql_is_engine_unavailable(monkeypatch):
    from pyspark.sql import SparkSession

    monkeypatch.delenv("DELTA_DOWNGRADE_DELTA_JARS", raising=False)
    # No session (another test's may still be active in this process).
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    code, out, _ = _cli("compat", "main.default.t")
    (result,) = parse_result_lines(out)
    assert code == 2 and result["error_class"] == "DELTA_DOWNGRADE_ENGINE_UNAVAILABLE"
