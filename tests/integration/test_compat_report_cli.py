"""``compat --tables-file F --report DIR`` (and ``compat TABLE --report DIR``): compat.json is the
``--json`` fleet document with each table's timeline, compat.html draws it, both paths are printed
(stderr) and in the summary RESULT; a report directory that cannot be written is exit 2 before any
table is looked at."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path


from delta_downgrade.app.cli import main
from delta_downgrade.app.render.compat_html import render_compat_html
from delta_downgrade.app.render.result import parse_result_lines

# The compat report reads logs only: the Spark Connect pass leaves it out.


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_fleet_report_files_and_paths(golden_table, tmp_path):
    tables = [golden_table("dv_basic_no_checkpoint"), golden_table("v2_checkpoint_json_sidecars"),
              str(tmp_path / "missing")]
    listing = tmp_path / "tables.txt"
    listing.write_text("\n".join(tables) + "\n")
    report = tmp_path / "report"
    code, json_out, _ = _cli("compat", "--tables-file", str(listing), "--json")
    code_r, out, err = _cli("compat", "--tables-file", str(listing), "--json", "--report", str(report))
    assert code == code_r == 2  # the missing table, as without --report
    printed = json.loads(out)
    paths = printed["compat_report"]
    assert paths == {"json": str((report / "compat.json").resolve()), "html": str((report / "compat.html").resolve())}
    assert f"compat report: {paths['html']}" in err
    written = json.loads(Path(paths["json"]).read_text())
    # compat.json is the --json document, each table with its timeline added
    plain = json.loads(json_out)
    assert [{k: v for k, v in t.items() if k != "timeline"} for t in written["tables"]] == plain["tables"]
    assert written["errors"] == plain["errors"] and written["clients"] == plain["clients"]
    v2 = written["tables"][1]["timeline"]
    assert [(c["version"], c["kind"], c["sidecars"]) for c in v2["checkpoints"]] == [(2, "v2", 2)]
    assert Path(paths["html"]).read_text() == render_compat_html(written)


def test_single_table_report_in_the_result_line(golden_table, tmp_path):
    table = golden_table("classic_checkpoint")
    code, out, _ = _cli("compat", table, "--report", str(tmp_path / "r"))
    assert code == 0
    [result] = parse_result_lines(out)
    doc = json.loads(Path(result["compat_report"]["json"]).read_text())
    assert [t["table"] for t in doc["tables"]] == [table] and doc["errors"] == []
    assert len(doc["clients"]) == len(doc["tables"][0]["clients"])


def test_unwritable_report_directory_is_exit_2_before_any_table(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    listing = tmp_path / "tables.txt"
    listing.write_text(str(tmp_path / "not-a-table") + "\n")  # never looked at
    code, out, err = _cli("compat", "--tables-file", str(listing), "--report", str(blocker / "r"))
    assert code == 2
    [result] = parse_result_lines(out)
    assert result["error_class"] == "DELTA_DOWNGRADE_BAD_REPORT_DIRECTORY"
    assert "not-a-table" not in out + err
