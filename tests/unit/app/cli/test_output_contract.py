"""One output contract for every command: stdout holds the RESULT line (last) or, with
``--json``, exactly one JSON document of the same fields; people's text goes to stderr (the reports
of inspect, cleanup and vacuum stay on stdout above the RESULT); every outcome, errors included,
has its RESULT with ``command``, ``table``, ``status`` and ``exit_code``; secrets masked."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.app.render.result import RESULT_PREFIX, parse_result_lines
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.protocol import Protocol
from tests.drop_support import build, log_snapshot_files

VPC = "vacuumProtocolCheck"


@pytest.fixture
def table(tmp_path) -> str:
    path = str(tmp_path / "t")
    build(path, Protocol(3, 7, frozenset({VPC}), frozenset({VPC})))
    return path


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _only_result(out: str) -> dict:
    """The RESULT of a run without --json: the last line of stdout, the only RESULT."""
    [result] = parse_result_lines(out)
    assert out.splitlines()[-1].startswith(RESULT_PREFIX)
    return result


def test_drop_feature_prints_one_result_line_and_its_summary_on_stderr(table):
    code, out, err = _run("drop-feature", table, VPC)
    assert code == 0 and out.count("\n") == 1
    result = _only_result(out)
    assert (result["command"], result["table"], result["feature"], result["status"], result["exit_code"]) == \
        ("drop-feature", table, VPC, "dropped", 0)
    assert f"{VPC}: dropped on {table}" in err


def test_drop_feature_json_is_one_document_of_the_result_fields(table):
    code, out, err = _run("drop-feature", table, VPC, "--json")
    doc = json.loads(out)  # the whole of stdout is one document
    assert code == 0 and RESULT_PREFIX not in out
    assert (doc["command"], doc["status"], doc["exit_code"], doc["min_reader_version"]) == \
        ("drop-feature", "dropped", 0, 1)
    assert doc["writer_features"] == ["checkpointProtection"] and doc["needs_truncate"] is True
    assert doc["protected_checkpoints"] and doc["boundary_version"] == DeltaLog(table).snapshot().version
    assert "protocol (3,7" in err  # the summary stays for the person


def test_a_wait_is_a_result_with_status_waiting_and_exit_3(table):
    assert _run("drop-feature", table, VPC, "--quiet")[0] == 0
    before = log_snapshot_files(table)
    code, out, err = _run("truncate-history", table)
    result = _only_result(out)
    assert code == 3 and result["status"] == "waiting" and result["exit_code"] == 3
    assert result["error_class"] == "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"
    assert result["truncate_after"] and result["feature"] == "checkpointProtection"
    assert err.startswith("error: [DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD]")
    code, out, _ = _run("truncate-history", table, "--json")
    assert code == 3 and json.loads(out)["status"] == "waiting"
    assert log_snapshot_files(table) == before


def test_a_refused_drop_is_a_result_with_its_error_class(table):
    before = log_snapshot_files(table)
    code, out, err = _run("drop-feature", table, "noSuchFeature", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["status"] == "error" and doc["exit_code"] == 2
    assert doc["error_class"] == "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE" and doc["table"] == table
    assert doc["feature"] == "noSuchFeature" and doc["message"] in err
    assert log_snapshot_files(table) == before


@pytest.mark.parametrize("argv, status, first_key", [
    (["inspect", "{t}"], "inspected", "format_version"),
    (["vacuum", "{t}", "--dry-run"], "planned", "table"),
    (["cleanup", "{t}", "--dry-run"], "planned", "table"),
])
def test_reports_keep_their_text_and_end_with_a_result(table, argv, status, first_key):
    code, out, _ = _run(*[a.format(t=table) for a in argv])
    result = _only_result(out)
    assert code == 0 and len(out.splitlines()) > 1  # the report, then the RESULT
    assert (result["command"], result["table"], result["status"], result["exit_code"]) == \
        (argv[0], table, status, 0)
    code, out, _ = _run(*[a.format(t=table) for a in argv], "--json")
    doc = json.loads(out)
    assert code == 0 and next(iter(doc)) == first_key  # the command's own document, keys first
    assert (doc["command"], doc["status"], doc["exit_code"]) == (argv[0], status, 0)
    assert {k: doc[k] for k in result} == result  # the document carries every RESULT field


def test_inspect_result_names_the_protocol_and_the_boundary(table):
    _run("drop-feature", table, VPC)
    result = _only_result(_run("inspect", table, "--no-history")[1])
    assert (result["min_reader_version"], result["min_writer_version"], result["writer_features"]) == \
        (1, 7, ["checkpointProtection"])
    assert result["boundary_version"] == result["version"] and result["protected_checkpoint_versions"]


@pytest.mark.parametrize("argv, fragment", [
    (["inspect"], "the following arguments are required: table"),
    (["drop-feature", "/t", "x", "--engine", "spark"], "invalid choice: 'spark'"),
    (["no-such-command"], "invalid choice: 'no-such-command'"),
])
def test_a_refused_command_line_is_bad_input_with_its_usage_and_result(argv, fragment):
    code, out, err = _run(*argv)
    result = _only_result(out)
    assert code == 2 and (result["status"], result["error_class"], result["exit_code"]) == \
        ("error", "DELTA_DOWNGRADE_BAD_INPUT", 2)
    assert fragment in result["message"] and err.startswith("usage: delta-downgrade")
    assert result["command"] == (argv[0] if argv[0] != "no-such-command" else None)
    code, out, _ = _run(*argv, "--json")
    assert code == 2 and json.loads(out)["error_class"] == "DELTA_DOWNGRADE_BAD_INPUT"


def test_help_and_version_are_no_outcome(capsys):
    for argv in (["--help"], ["--version"], ["inspect", "--help"]):
        with pytest.raises(SystemExit) as exit:
            main(argv)
        out = capsys.readouterr().out
        assert exit.value.code == 0 and parse_result_lines(out) == [] and out


def test_secrets_are_masked_in_the_error_document(tmp_path):
    secret = "Sup3r-Secret-Value"
    missing = str(tmp_path / secret)
    code, out, err = _run("inspect", missing, "--json", "--storage-option", f"AWS_SECRET_ACCESS_KEY={secret}")
    doc = json.loads(out)
    assert code == 2 and doc["error_class"] == "DELTA_TABLE_NOT_FOUND"
    assert secret not in out + err and doc["table"] == str(tmp_path / "***")
