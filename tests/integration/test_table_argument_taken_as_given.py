"""A table argument names exactly one table, as given, and a tables file is a list of tables and
nothing else:

- ``"/x/t "`` (a trailing blank) is not ``/x/t``: the positional argument, ``--table=`` and a
  tables-file line are taken as given, so ``/x/t`` is never the table dropped;
- a tables file that is not a list of tables (``/proc/self/environ``, a passwd-like file, NUL
  bytes, a file far too large) is refused whole (exit 2, ``DELTA_DOWNGRADE_BAD_CONFIG``) before
  any table is touched, and none of its lines comes back in any output.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.app.render.result import parse_result_lines
from delta_downgrade.app.tasks.entrypoints import drop_feature_task, verify_task
from delta_downgrade.app.tasks.task_values import read_task_values
from tests.drop_support import run_task
from tests.process_support import tree_hashes

VPC = "vacuumProtocolCheck"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for key in list(os.environ):
        if key.startswith("DELTA_DOWNGRADE_"):
            monkeypatch.delenv(key)


@pytest.fixture
def table(golden_table) -> str:
    return golden_table("vacuum_protocol_check")


def test_the_positional_table_is_taken_as_given(table, capsys):
    before = tree_hashes(table)
    code = main(["drop-feature", table + " ", VPC])
    out, err = capsys.readouterr()
    [result] = parse_result_lines(out)
    assert code == 2 and result["error_class"] == "DELTA_TABLE_NOT_FOUND", (result, err)
    assert result["table"] == table + " "
    assert repr(table + " ") in err  # the blank is visible in the message
    assert tree_hashes(table) == before


@pytest.mark.parametrize("spelling", ["{t} ", " {t}", "{t}\t"])
def test_the_table_setting_is_taken_as_given(table, tmp_path, spelling, monkeypatch):
    monkeypatch.setenv("DELTA_DOWNGRADE_RUN_DIR", str(tmp_path / "run"))
    before = tree_hashes(table)
    code, results, err = run_task(drop_feature_task, [f"--table={spelling.format(t=table)}", f"--feature={VPC}"])
    assert code == 2, (results, err)
    assert [r["status"] for r in results] == ["error"]
    assert tree_hashes(table) == before


def test_a_tables_file_line_is_taken_as_given(table, tmp_path):
    listing = tmp_path / "tables.txt"
    listing.write_text(f"# the fleet\n{table} \n")
    before = tree_hashes(table)
    code, results, err = run_task(drop_feature_task, [f"--tables_file={listing}", f"--feature={VPC}"])
    assert code == 2, (results, err)
    assert [(r["table"], r["status"]) for r in results] == [(table + " ", "error")]
    assert tree_hashes(table) == before


PLANTED = "PlantedEnvironmentValue-93c1f0"


def _refused_whole(table: str, listing: str, tmp_path: Path, *hidden: str) -> None:
    run_dir = tmp_path / "run"
    os.environ["DELTA_DOWNGRADE_RUN_DIR"] = str(run_dir)
    before = tree_hashes(table)
    try:
        for task, extra in ((drop_feature_task, [f"--feature={VPC}"]), (verify_task, [])):
            code, results, err = run_task(task, [f"--table={table}", f"--tables_file={listing}", *extra])
            assert code == 2, (results, err)
            assert [r["error_class"] for r in results] == ["DELTA_DOWNGRADE_BAD_CONFIG"], results
            assert "Traceback" not in err
            values = read_task_values(run_dir, "drop_feature" if task is drop_feature_task else "verify")
            shown = repr(results) + err + repr(values)
            for text in hidden:
                assert text not in shown
    finally:
        del os.environ["DELTA_DOWNGRADE_RUN_DIR"]
    assert tree_hashes(table) == before  # not even the table named apart from the file


def test_the_environment_as_a_tables_file_is_refused_unread(table, tmp_path, monkeypatch):
    monkeypatch.setenv("PLANTED_FOR_THE_TEST", PLANTED)
    _refused_whole(table, "/proc/self/environ", tmp_path, PLANTED)


def test_a_passwd_like_file_is_refused_without_its_lines(table, tmp_path):
    listing = tmp_path / "passwd"
    lines = ["root:x:0:0:root:/root:/bin/bash", "svc-planted:x:999:999::/home/svc-planted:/bin/sh"]
    listing.write_text("\n".join(lines) + "\n")
    _refused_whole(table, str(listing), tmp_path, "svc-planted", "/bin/bash")


def test_nul_bytes_and_control_characters_are_refused(table, tmp_path):
    listing = tmp_path / "tables.txt"
    listing.write_bytes(f"{table}\n/data/a\x00secret-after-nul\n/data/b\x1bsecret-after-esc\n".encode())
    _refused_whole(table, str(listing), tmp_path, "secret-after-nul", "secret-after-esc")


def test_a_file_far_too_large_is_refused_after_a_bounded_read(table, tmp_path):
    listing = tmp_path / "huge.txt"
    with listing.open("wb") as handle:
        handle.write(f"{table}\n".encode())
        handle.truncate(64 * 1024 * 1024)  # sparse: NULs after the first line
    _refused_whole(table, str(listing), tmp_path)


def test_compat_reads_its_tables_file_the_same_way(table, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PLANTED_FOR_THE_TEST", PLANTED)
    code = main(["compat", "--tables-file", "/proc/self/environ"])
    out, err = capsys.readouterr()
    assert code == 2 and PLANTED not in out + err
    assert [r["error_class"] for r in parse_result_lines(out)] == ["DELTA_DOWNGRADE_BAD_CONFIG"]
