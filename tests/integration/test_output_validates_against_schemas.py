"""The real output of every command and task validates against its model
(``delta_downgrade.app.schemas``) and its generated JSON Schema (``docs/schemas/``): every RESULT
line and every ``--json`` document, dry runs, errors, a wait, fleets, the compat report's
``compat.json``, and catalog names through the Delta SQL stand-in.

``validate_complete`` checks the types strictly and refuses any field the model does not declare,
so a field added to the output without its model (and schema) fails here. Each command runs in
this process (``run_cli``, the tasks' entry points) on copies of golden tables whose drops need
no Spark (``vacuumProtocolCheck``: metadata only)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from delta_downgrade.app.render.result import parse_result_lines
from delta_downgrade.app.schemas import SCHEMAS, compat, documents, results
from tests.output_schemas import validate_complete
from delta_downgrade.app.tasks.entrypoints import (
    drop_feature_task,
    truncate_task,
    verify_task,
)
from tests.drop_support import run_task
from tests.process_support import run_cli

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "schemas"
_SCHEMA_OF = {model: name for name, model in SCHEMAS.items()}
#: A client the golden vacuum_protocol_check table blocks from reading (vacuumProtocolCheck).
CLIENT = "deltalake-0.18-pyarrow"


def check(model: type[BaseModel], data: Any) -> Any:
    """``data`` validated by ``model`` (complete, strict) and by its committed JSON Schema."""
    document = validate_complete(model, data)
    plain = json.loads(data) if isinstance(data, str) else data
    schema = json.loads((SCHEMA_DIR / f"{_SCHEMA_OF[model]}.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(plain, schema)
    return document


def one_result(stdout: str) -> dict[str, Any]:
    """The one RESULT line, the last line of stdout (the output contract)."""
    lines = parse_result_lines(stdout)
    assert len(lines) == 1 and stdout.rstrip().splitlines()[-1].startswith("RESULT "), stdout
    return lines[0]


def cli(*args: str, code: int = 0) -> str:
    proc = run_cli(*args)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc.stdout


# --- drop-feature, truncate-history -----------------------------------------------------------------

def test_drop_and_truncate_results_and_json_validate(golden_table):
    table = golden_table("vacuum_protocol_check")
    planned = check(results.DropResult, cli("drop-feature", table, "vacuumProtocolCheck", "--dry-run", "--json"))
    assert planned.status == "planned" and planned.plan and planned.command == "drop-feature"
    check(results.DropResult, one_result(cli("drop-feature", table, "vacuumProtocolCheck", "--dry-run")))
    dropped = check(results.DropResult, one_result(cli("drop-feature", table, "vacuumProtocolCheck")))
    assert dropped.status == "dropped" and dropped.plan is None and dropped.commits
    again = check(results.DropResult, cli("drop-feature", table, "vacuumProtocolCheck", "--json"))
    assert again.status == "already_absent"
    # truncate-history inside the retention: a wait (exit 3), with and without --json, dry run too
    waiting = check(results.ErrorResult, cli("truncate-history", table, "--json", code=3))
    assert (waiting.status, waiting.command) == ("waiting", "truncate-history") and waiting.truncate_after
    check(results.ErrorResult, one_result(cli("truncate-history", table, code=3)))
    check(results.ErrorResult, one_result(cli("truncate-history", table, "--dry-run", code=3)))


def test_drop_for_a_client_validates_planned_done_and_already_compatible(golden_table):
    table = golden_table("vacuum_protocol_check")
    planned = check(results.ClientDropResult, cli("drop-feature", table, "--for", CLIENT, "--dry-run", "--json"))
    assert planned.status == "planned" and planned.plan and planned.features_planned == ["vacuumProtocolCheck"]
    dropped = check(results.ClientDropResult, one_result(cli("drop-feature", table, "--for", CLIENT)))
    assert dropped.status == "dropped" and dropped.feature == "vacuumProtocolCheck"
    again = check(results.ClientDropResult, cli("drop-feature", table, "--for", CLIENT, "--json"))
    assert again.status == "already_compatible" and again.feature is None


# --- inspect ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["vacuum_protocol_check", "v2_checkpoint_parquet_sidecars",
                                  "dv_basic_no_checkpoint", "legacy_1_1_delta_0_1_0"])
def test_inspect_json_and_result_validate(golden_table, name):
    table = golden_table(name)
    document = check(documents.InspectOutput, cli("inspect", table, "--json"))
    assert document.format_version == 1 and document.protocol_history is not None
    assert document.status == "inspected" and document.command == "inspect"
    assert check(documents.InspectOutput, cli("inspect", table, "--json", "--no-history")).protocol_history is None
    check(results.InspectResult, one_result(cli("inspect", table)))


def test_inspect_json_shows_sidecars_and_traces(golden_table):
    """The optional parts of the document appear on the tables that have them (and validate)."""
    v2 = check(documents.InspectOutput, cli("inspect", golden_table("v2_checkpoint_parquet_sidecars"), "--json"))
    assert any(c.sidecars for c in v2.checkpoints)
    dv = check(documents.InspectOutput, cli("inspect", golden_table("dv_basic_no_checkpoint"), "--json"))
    assert any(f.traces for f in dv.features) and dv.files.files_with_deletion_vectors > 0


# --- compat -----------------------------------------------------------------------------------------

def test_compat_table_json_result_and_report_validate(golden_table, tmp_path):
    table = golden_table("dv_basic_no_checkpoint")
    document = check(compat.CompatTableOutput, cli("compat", table, "--json", "--versions"))
    assert document.versions is not None and document.clients
    assert any(c.unblock and c.unblock.steps and c.unblock.steps[0].rewrite.needed for c in document.clients)
    check(results.CompatResult, one_result(cli("compat", table)))
    report = tmp_path / "report"
    result = check(results.CompatResult, one_result(cli("compat", table, "--client", "duckdb",
                                                        "--report", str(report))))
    assert result.compat_report is not None
    check(compat.CompatReportDocument, Path(result.compat_report.json_path).read_text(encoding="utf-8"))


def test_compat_fleet_json_results_summary_and_report_validate(golden_table, tmp_path):
    tables = [golden_table("vacuum_protocol_check"), golden_table("v2_checkpoint_parquet_sidecars"),
              golden_table("bad_no_protocol"), str(tmp_path / "missing")]
    listing = tmp_path / "tables.txt"
    listing.write_text("\n".join(tables) + "\n")
    fleet = check(compat.CompatFleetOutput, cli("compat", "--tables-file", str(listing), "--json", code=2))
    assert fleet.summary is True and len(fleet.tables) == 2 and len(fleet.errors) == 2
    report = tmp_path / "report"
    lines = parse_result_lines(cli("compat", "--tables-file", str(listing), "--report", str(report), code=2))
    *per_table, summary = lines
    for line in per_table:
        check(results.ErrorResult if line["status"] == "error" else results.CompatResult, line)
    assert [line["status"] for line in per_table].count("error") == 2
    assert check(results.CompatFleetSummary, summary).compat_report is not None
    timelines = check(compat.CompatReportDocument, (report / "compat.json").read_text(encoding="utf-8"))
    assert all(t.timeline is not None for t in timelines.tables)


def test_compat_list_clients_validates():
    listed = check(compat.ClientListOutput, cli("compat", "--list-clients", "--json"))
    assert listed.entries == len(listed.clients) > 0
    check(results.ClientListResult, one_result(cli("compat", "--list-clients")))


# --- cleanup, vacuum --------------------------------------------------------------------------------

def test_cleanup_and_vacuum_json_and_results_validate(golden_table):
    table = golden_table("dv_basic_no_checkpoint")
    stray = Path(table, "part-00000-stray.snappy.parquet")  # a file no version references
    stray.write_bytes(b"PAR1")
    os.utime(stray, (0, 0))
    planned = check(documents.CleanupOutput, cli("cleanup", table, "--dry-run", "--json", "--retention", "0 days"))
    assert planned.status == "planned" and planned.plan.decision
    check(results.CleanupResult, one_result(cli("cleanup", table, "--retention", "0 days")))
    vacuum_plan = check(documents.VacuumOutput, cli("vacuum", table, "--dry-run", "--json", "--retention-hours", "0",
                                                    "--override-retention-check"))
    assert vacuum_plan.status == "planned" and vacuum_plan.files_to_delete
    done = check(results.VacuumResult, one_result(cli("vacuum", table, "--retention-hours", "0",
                                                      "--override-retention-check")))
    assert done.status == "vacuumed" and done.deleted_count == len(vacuum_plan.files_to_delete)


# --- errors -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, command", [
    (["inspect", "{missing}"], "inspect"),
    (["inspect", "{bad}", "--json"], "inspect"),
    (["drop-feature", "{bad}", "vacuumProtocolCheck", "--json"], "drop-feature"),
    (["cleanup", "{missing}", "--json"], "cleanup"),
    (["vacuum", "{missing}"], "vacuum"),
    (["compat", "{missing}", "--json"], "compat"),
    (["drop-feature", "--json"], "drop-feature"),  # argparse refuses: no table
    (["no-such-command", "--json"], None),  # argparse refuses: no command
])
def test_error_results_validate(golden_table, tmp_path, argv, command):
    names = {"missing": str(tmp_path / "missing"), "bad": golden_table("bad_no_protocol")}
    proc = run_cli(*[a.format(**names) for a in argv])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    output = proc.stdout if "--json" in argv else one_result(proc.stdout)
    error = check(results.ErrorResult, output)
    assert (error.status, error.command, error.exit_code) == ("error", command, 2)


# --- tasks ------------------------------------------------------------------------------------------

def test_task_results_validate(golden_table, tmp_path):
    table = golden_table("vacuum_protocol_check")
    code, (planned,), _ = run_task(drop_feature_task, [f"--table={table}", "--feature=vacuumProtocolCheck",
                                                       "--dry_run=true"])
    assert code == 0 and check(results.DropResult, planned).command is None
    code, (dropped,), _ = run_task(drop_feature_task, [f"--table={table}", "--feature=vacuumProtocolCheck",
                                                       f"--waiting_dir={tmp_path / 'waiting'}"])
    assert code == 0 and check(results.DropResult, dropped).status == "dropped"
    code, (verified,), _ = run_task(verify_task, [f"--table={table}", "--expect_absent_feature=vacuumProtocolCheck",
                                                  f"--compat_report={tmp_path / 'report'}"])
    verified = check(results.VerifyResult, verified)
    assert code == 0 and verified.status == "verified" and verified.compat_report is not None
    check(compat.CompatReportDocument, Path(verified.compat_report.json_path).read_text(encoding="utf-8"))
    # a wait is a success in a task: status waiting, needs_truncate, exit 0
    code, (waiting,), _ = run_task(truncate_task, [f"--table={table}"])
    assert code == 0 and check(results.ErrorResult, waiting).needs_truncate is True
    # an expectation the table does not meet: failed, exit 1
    code, (failed,), _ = run_task(verify_task, [f"--table={table}", "--expect_min_reader_version=3"])
    assert code == 1 and check(results.VerifyResult, failed).failed_checks
    # a report that cannot be written: the verification stands, the report's error class is said
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, (unwritten,), _ = run_task(verify_task, [f"--table={table}", f"--compat_report={blocker / 'report'}"])
    unwritten = check(results.VerifyResult, unwritten)
    assert code == 2 and unwritten.compat_report is None and unwritten.compat_report_error
    # no table: the settings' error
    code, (refused,), _ = run_task(drop_feature_task, ["--feature=vacuumProtocolCheck"])
    assert code == 2 and check(results.ErrorResult, refused).table is None


def test_task_fleet_summaries_validate(golden_table, tmp_path):
    tables = [golden_table("vacuum_protocol_check"), golden_table("bad_no_protocol")]
    code, lines, _ = run_task(drop_feature_task, [f"--tables={','.join(tables)}", "--feature=vacuumProtocolCheck"])
    *per_table, summary = lines
    assert code == 2
    check(results.DropResult, per_table[0])
    check(results.ErrorResult, per_table[1])
    assert check(results.TaskFleetSummary, summary).failed_tables == [tables[1]]
    good = [golden_table("classic_checkpoint"), golden_table("timestamp_ntz")]
    code, lines, _ = run_task(verify_task, [f"--tables={','.join(good)}", f"--compat_report={tmp_path / 'report'}"])
    *per_table, summary = lines
    assert code == 0 and [check(results.VerifyResult, line).status for line in per_table] == ["verified"] * 2
    assert check(results.TaskFleetSummary, summary).compat_report is not None
    # the daily truncate job with nothing recorded as waiting
    (tmp_path / "nothing").mkdir()
    code, (summary,), _ = run_task(truncate_task, [f"--waiting_dir={tmp_path / 'nothing'}"])
    assert code == 0 and check(results.TaskFleetSummary, summary).waiting_dir == str(tmp_path / "nothing")


def test_drop_for_client_task_validates(golden_table):
    table = golden_table("vacuum_protocol_check")
    code, (result,), _ = run_task(drop_feature_task, [f"--table={table}", f"--for_client={CLIENT}", "--feature="])
    assert code == 0 and check(results.ClientDropResult, result).status == "dropped"


# --- catalog names (Delta SQL stand-in) -------------------------------------------------------------

NAME = "main.default.events"


@pytest.fixture
def catalog(golden_table, oracle, monkeypatch):
    """The Delta SQL stand-in (tests/delta_sql_session.py) as the active session, ``NAME`` a copy
    of the golden vacuum_protocol_check table."""
    from pyspark.sql import SparkSession

    from tests.delta_sql_session import DeltaSqlStandIn

    session = DeltaSqlStandIn({NAME: golden_table("vacuum_protocol_check")}, reader=oracle)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: session))
    return session


def test_catalog_name_outputs_validate(catalog):
    document = check(documents.CatalogInspectOutput, cli("inspect", NAME, "--json"))
    assert document.unavailable and document.format_version == 1
    check(results.CatalogInspectResult, one_result(cli("inspect", NAME)))
    dropped = check(results.DropResult, cli("drop-feature", NAME, "vacuumProtocolCheck", "--json"))
    assert dropped.status == "dropped" and dropped.unavailable
    _, (verified,), _ = run_task(verify_task, [f"--table={NAME}", "--expect_absent_feature=vacuumProtocolCheck"])
    verified = check(results.VerifyResult, verified)
    assert verified.drop_commits and verified.unavailable
    # compat through DESCRIBE DETAIL: no schema, no file counts (notes say so)
    described = check(compat.CompatTableOutput, cli("compat", NAME, "--json", "--client", "duckdb"))
    assert described.notes
