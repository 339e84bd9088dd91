"""``verify_task --compat_report=DIR``: the verified fleet's client compatibility report
(compat.json + compat.html), its paths in the fleet summary and the task values; a directory
that cannot be written is exit 2 with the verification's RESULT lines still printed."""

from __future__ import annotations

import json
from pathlib import Path

from delta_downgrade.app.tasks.entrypoints import verify_task
from delta_downgrade.app.tasks.task_values import read_task_values
from tests.drop_support import log_snapshot_files, run_task


def test_fleet_verify_writes_the_compat_report(golden_table, tmp_path, monkeypatch):
    paths = [golden_table(n) for n in ("classic_checkpoint", "dv_basic_no_checkpoint", "bad_no_protocol")]
    before = {p: log_snapshot_files(p) for p in paths}
    report, values_dir = tmp_path / "report", tmp_path / "values"
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_VALUES_DIR", str(values_dir))  # as the job runner sets it
    code, results, err = run_task(verify_task, [f"--tables={','.join(paths)}", f"--compat_report={report}"])
    assert code == 2  # bad_no_protocol fails its verification, as without the report
    [summary] = [r for r in results if r.get("summary")]
    written = summary["compat_report"]
    assert written == {"json": str((report / "compat.json").resolve()), "html": str((report / "compat.html").resolve())}
    doc = json.loads(Path(written["json"]).read_text())
    assert [t["table"] for t in doc["tables"]] == paths[:2]
    assert [(e["table"], e["error_class"]) for e in doc["errors"]] == [(paths[2], "DELTA_STATE_RECOVER_ERROR")]
    dv = doc["tables"][1]
    assert "deltalake-0.18-pyarrow" in dv["blocked"]["read"] and dv["timeline"]["latest_version"] == 1
    assert paths[1] in Path(written["html"]).read_text()
    assert read_task_values(values_dir, "verify")["compat_report"] == written
    assert f"compat report: {written['html']}" in err
    assert {p: log_snapshot_files(p) for p in paths} == before  # a report reads, never writes


def test_single_table_verify_report_in_its_result_line(golden_table, tmp_path):
    path = golden_table("classic_checkpoint")
    code, [result], _ = run_task(verify_task, [f"--table={path}", f"--compat_report={tmp_path / 'r'}"])
    assert code == 0 and result["status"] == "verified"
    assert Path(result["compat_report"]["html"]).is_file()


def test_report_directory_not_writable_is_exit_2(golden_table, tmp_path):
    paths = [golden_table(n) for n in ("classic_checkpoint", "timestamp_ntz")]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, results, err = run_task(verify_task, [f"--tables={','.join(paths)}",
                                                f"--compat_report={blocker / 'report'}"])
    assert code == 2
    per_table = [r for r in results if not r.get("summary")]
    assert [r["status"] for r in per_table] == ["verified", "verified"]
    [summary] = [r for r in results if r.get("summary")]
    assert summary["compat_report"] is None
    assert summary["compat_report_error"] == "DELTA_DOWNGRADE_BAD_REPORT_DIRECTORY" and summary["exit_code"] == 2
    assert "[DELTA_DOWNGRADE_BAD_REPORT_DIRECTORY]" in err


def test_help_names_the_setting():
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert verify_task(["--help"]) == 0
    assert "--compat_report=" in out.getvalue() and "compat.html" in out.getvalue()
