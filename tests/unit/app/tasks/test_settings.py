"""Task settings: environment, --k=v, --flag=true, unknown keys, config file, precedence, and bad
values giving exit 2 with one clear message."""

from __future__ import annotations

import json

import pytest

from delta_downgrade.errors import BadInputError
from delta_downgrade.app.tasks.settings import DropFeatureSettings, TruncateSettings
from delta_downgrade.app.tasks.entrypoints import drop_feature_task, verify_task
from delta_downgrade.app.tasks.settings import VerifySettings, load_settings, parse_cli_args
from tests.drop_support import run_task


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    import os

    for key in list(os.environ):
        if key.startswith("DELTA_DOWNGRADE_"):
            monkeypatch.delenv(key)


def test_key_value_form_and_flags():
    s = load_settings(DropFeatureSettings, ["--table=/t", "--feature=deletionVectors", "--truncate_history=true",
                                            "--dry-run=false"])
    assert (s.table, s.feature, s.truncate_history, s.dry_run) == ("/t", "deletionVectors", True, False)


def test_space_separated_and_bare_flags():
    s = load_settings(DropFeatureSettings, ["--table", "/t", "--feature", "v2Checkpoint", "--dry-run"])
    assert (s.table, s.feature, s.dry_run) == ("/t", "v2Checkpoint", True)


def test_value_keeps_everything_after_the_first_equals():
    assert parse_cli_args(["--table=delta.`/a=b/c`"]) == {"table": "delta.`/a=b/c`"}


def test_unknown_keys_are_ignored():
    s = load_settings(VerifySettings, ["--table=/t", "--catalog=main", "--feature=x", "--job_run_id=12"])
    assert s.table == "/t"


def test_empty_and_null_values_count_as_not_given(monkeypatch):
    monkeypatch.setenv("DELTA_DOWNGRADE_EXPECT_MIN_READER_VERSION", "1")
    s = load_settings(VerifySettings, ["--table=/t", "--expect_min_reader_version=", "--expect_boundary_version=null"])
    assert s.expect_min_reader_version == 1
    assert s.expect_boundary_version is None


def test_environment(monkeypatch):
    monkeypatch.setenv("DELTA_DOWNGRADE_TABLE", "/from-env")
    monkeypatch.setenv("DELTA_DOWNGRADE_DRY_RUN", "true")
    s = load_settings(TruncateSettings, [])
    assert (s.table, s.dry_run) == ("/from-env", True)


def test_config_file_and_precedence(tmp_path, monkeypatch):
    config = tmp_path / "drop.toml"
    config.write_text('table = "/from-file"\nfeature = "deletionVectors"\nparallelism = 2\n'
                      '[drop_feature_task]\nfeature = "v2Checkpoint"\n')
    s = load_settings(DropFeatureSettings, [f"--config={config}"])
    assert (s.table, s.feature, s.parallelism) == ("/from-file", "v2Checkpoint", 2)  # task table wins
    monkeypatch.setenv("DELTA_DOWNGRADE_TABLE", "/from-env")
    s = load_settings(DropFeatureSettings, [f"--config={config}"])
    assert s.table == "/from-env"  # env beats the file
    s = load_settings(DropFeatureSettings, [f"--config={config}", "--table=/from-cli"])
    assert s.table == "/from-cli"  # the command line beats everything


def test_tables_lists_and_file(tmp_path):
    listing = tmp_path / "tables.txt"
    # Only a line starting with '#' (after blanks) is a comment: '#' inside a line is part of the
    # table's path .
    listing.write_text("/a\n# a comment\n  # an indented comment\n/b\n/c#1\n\n/a\n")
    s = load_settings(VerifySettings, ["--tables=/x,/y", f"--tables_file={listing}", "--table=/a"])
    assert s.table_list() == ["/a", "/x", "/y", "/b", "/c#1"]
    s = load_settings(VerifySettings, ['--tables=["/p","/q"]'])
    assert s.table_list() == ["/p", "/q"]


@pytest.mark.parametrize("argv, fragment", [
    (["--table=/t", "--parallelism=many"], "--parallelism"),
    (["--table=/t", "--engine=spark"], "--engine"),
    (["--table=/t", "--dry_run=perhaps"], "--dry_run"),
])
def test_bad_values_are_one_clear_error(argv, fragment):
    with pytest.raises(BadInputError) as info:
        load_settings(DropFeatureSettings, argv)
    assert info.value.exit_code == 2
    assert fragment in info.value.message
    assert "\n" not in info.value.message


def test_bad_value_through_the_task_exits_2_with_one_line_and_its_result(capsys):
    """Settings that do not load are an outcome: one error line on stderr and one RESULT (issue
    14: before, the RESULT was missing and a job saw no status at all)."""
    code, results, err = run_task(drop_feature_task, ["--table=/t", "--parallelism=many"])
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "DELTA_DOWNGRADE_BAD_SETTINGS" in lines[0]
    [result] = results
    assert result["status"] == "error" and result["error_class"] == "DELTA_DOWNGRADE_BAD_SETTINGS"
    assert result["exit_code"] == 2 and result["table"] == "/t" and "--parallelism" in result["message"]


def test_missing_table_is_bad_input():
    code, results, err = run_task(verify_task, [])
    assert code == 2 and "--table" in err
    [result] = results
    assert (result["table"], result["status"], result["exit_code"]) == (None, "error", 2)
    assert result["error_class"] == "DELTA_DOWNGRADE_BAD_SETTINGS"


def test_a_settings_error_masks_the_storage_options_of_the_command_line(capsys):
    """The settings never loaded, so the secrets are read from argv to mask them wherever they
    appear (here the table argument quotes one; a malformed item beside it is the error)."""
    secret = "s3cr3t-value-123"
    code, results, err = run_task(drop_feature_task, [
        f"--table=s3://b/{secret}/t", f"--storage_option=AWS_SECRET_ACCESS_KEY={secret}",
        "--storage_option=oops"])
    [result] = results
    assert code == 2 and result["error_class"] == "DELTA_DOWNGRADE_BAD_STORAGE_OPTION"
    assert secret not in err and secret not in json.dumps(result)
    assert result["table"] == "s3://b/***/t"


def test_missing_config_file_is_bad_input(tmp_path):
    with pytest.raises(BadInputError) as info:
        load_settings(VerifySettings, [f"--config={tmp_path / 'missing.toml'}"])
    assert "does not exist" in info.value.message


# --- inputs the built-in CliSettingsSource / TomlConfigSettingsSource would take otherwise ------------

def test_command_line_inputs_argparse_would_refuse_or_read_otherwise():
    # --help and -h are unknown keys (not a request for help); `--table -x` takes -x as the value;
    # options after `--` still count; a repeated option keeps its last value, lists too.
    s = load_settings(VerifySettings, ["--help", "-h", "--", "--table", "-x", "--tables=/a", "--tables=/b,/c",
                                       "--TABLES_FILE=/f"])
    assert (s.table, s.tables, s.tables_file) == ("-x", ["/b", "/c"], "/f")
    assert parse_cli_args(["--dry-run", "--truncate_history=true", "--x=None"]) == \
        {"dry_run": "true", "truncate_history": "true"}


def test_config_file_keys_as_the_tasks_write_them(tmp_path):
    config = tmp_path / "drop.toml"
    # '-' in keys, a top-level table that is not the task's (ignored), the task's table winning.
    config.write_text('tables-file = "/f"\nfeature = "x"\n[table]\npath = "/nested"\n'
                      '[drop_feature_task]\ndry-run = true\nfeature = "v2Checkpoint"\n')
    s = load_settings(DropFeatureSettings, [f"--config={config}"])
    assert (s.table, s.tables_file, s.dry_run, s.feature) == (None, "/f", True, "v2Checkpoint")


def test_config_file_that_is_not_toml_is_one_bad_config_error(tmp_path):
    config = tmp_path / "drop.toml"
    config.write_text("table = \n")
    with pytest.raises(BadInputError) as info:
        load_settings(DropFeatureSettings, [f"--config={config}"])
    assert info.value.error_class == "DELTA_DOWNGRADE_BAD_CONFIG" and "not valid TOML" in info.value.message
