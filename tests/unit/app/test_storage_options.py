"""Storage options at the entry points: ``--storage-option KEY=VALUE`` on every CLI command that
opens a table, ``storage_options`` in the task settings (TOML table, environment JSON, command-line
JSON and repeated items), kept as secrets: no repr, validation error or refusal shows a value."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from delta_downgrade.app import cli
from delta_downgrade.app.storage_options import parse_storage_option_items
from delta_downgrade.app.tasks.settings import (
    DropFeatureSettings, TruncateSettings, VerifySettings, load_settings, parse_cli_args,
)
from delta_downgrade.errors import EXIT_BAD_INPUT, BadStorageOptionError

SECRET = "S3cr3t+Value/With=Signs"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    import os

    for key in list(os.environ):
        if key.startswith("DELTA_DOWNGRADE_"):
            monkeypatch.delenv(key)


# --- parsing KEY=VALUE ------------------------------------------------------------------------------

def test_items_split_on_the_first_equals_and_keep_the_rest():
    assert parse_storage_option_items(["AWS_REGION=eu-west-1", f"AZURE_STORAGE_SAS_TOKEN={SECRET}"]) == {
        "AWS_REGION": "eu-west-1", "AZURE_STORAGE_SAS_TOKEN": SECRET}
    assert parse_storage_option_items(None) == {}
    assert parse_storage_option_items(["AWS_REGION=eu", "AWS_REGION=eu"]) == {"AWS_REGION": "eu"}


@pytest.mark.parametrize("item", [SECRET.replace("=", ""), "=" + SECRET, "   =" + SECRET])
def test_a_malformed_item_is_refused_without_showing_it(item):
    with pytest.raises(BadStorageOptionError) as caught:
        parse_storage_option_items(["AWS_REGION=eu", item])
    message = str(caught.value)
    assert "item 2" in message and "KEY=VALUE" in message
    assert item.strip("= ") not in message
    assert caught.value.exit_code == EXIT_BAD_INPUT


def test_a_key_given_twice_with_different_values_is_refused():
    with pytest.raises(BadStorageOptionError, match="AWS_SECRET_ACCESS_KEY is given twice") as caught:
        parse_storage_option_items(["AWS_SECRET_ACCESS_KEY=a" + SECRET, "AWS_SECRET_ACCESS_KEY=b" + SECRET])
    assert SECRET not in str(caught.value)


# --- the CLI ------------------------------------------------------------------------------------------

COMMANDS = [["inspect", "T"], ["cleanup", "T"], ["vacuum", "T"], ["drop-feature", "T", "v2Checkpoint"],
            ["truncate-history", "T"]]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0])
def test_every_table_command_takes_repeated_storage_options(argv):
    args = cli.build_parser(argv).parse_args(
        [*argv, "--storage-option", "AWS_REGION=eu", "--storage-option", f"AWS_SECRET_ACCESS_KEY={SECRET}"])
    assert args.storage_option_items == ["AWS_REGION=eu", f"AWS_SECRET_ACCESS_KEY={SECRET}"]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0])
def test_a_malformed_storage_option_exits_2_with_its_error_class_before_the_table_is_opened(tmp_path, argv):
    argv = [tmp_path / "missing" if a == "T" else a for a in argv]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main([str(a) for a in argv] + ["--storage-option", SECRET.replace("=", "")])
    assert code == EXIT_BAD_INPUT
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and "DELTA_DOWNGRADE_BAD_STORAGE_OPTION" in lines[0], lines
    assert SECRET.replace("=", "") not in err.getvalue()
    assert not (tmp_path / "missing").exists()


# --- task settings ------------------------------------------------------------------------------------

def test_settings_take_a_json_object_and_repeated_items_which_win(monkeypatch):
    s = load_settings(DropFeatureSettings, [
        "--table=/t", '--storage_options={"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIA"}',
        "--storage-option", "AWS_REGION=eu-west-1", f"--storage_option=AWS_SECRET_ACCESS_KEY={SECRET}"])
    assert s.storage_option_values() == {"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIA",
                                         "AWS_SECRET_ACCESS_KEY": SECRET}


def test_repeated_items_are_kept_in_order_by_the_argument_parser():
    assert parse_cli_args(["--storage_option=A=1", "--storage-option", "B=2", "--table=x"]) == {
        "storage_option": ["A=1", "B=2"], "table": "x"}


def test_settings_take_the_environment_json(monkeypatch):
    monkeypatch.setenv("DELTA_DOWNGRADE_STORAGE_OPTIONS", json.dumps({"AWS_SECRET_ACCESS_KEY": SECRET}))
    s = load_settings(VerifySettings, ["--table=/t"])
    assert s.storage_option_values() == {"AWS_SECRET_ACCESS_KEY": SECRET}
    # The command line replaces the environment's object, as for every other setting.
    s = load_settings(VerifySettings, ["--table=/t", '--storage_options={"AWS_REGION": "eu"}'])
    assert s.storage_option_values() == {"AWS_REGION": "eu"}


def test_settings_take_a_toml_table_top_level_or_the_tasks_own(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(f'table = "/t"\n[storage_options]\nAWS_SECRET_ACCESS_KEY = "{SECRET}"\n'
                      f'AWS_ALLOW_HTTP = true\n'
                      f'[truncate_task.storage_options]\nAWS_REGION = "eu-west-1"\n')
    s = load_settings(DropFeatureSettings, [f"--config={config}"])
    assert s.storage_option_values() == {"AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ALLOW_HTTP": "true"}
    # The task's own table replaces the top-level one, as a task's key replaces a top-level key.
    s = load_settings(TruncateSettings, [f"--config={config}"])
    assert s.storage_option_values() == {"AWS_REGION": "eu-west-1"}


def test_no_repr_or_dump_of_the_settings_shows_a_value():
    s = load_settings(DropFeatureSettings, ["--table=/t", f"--storage_option=AWS_SECRET_ACCESS_KEY={SECRET}"])
    for text in (repr(s), str(s), s.model_dump_json(), repr(s.model_dump())):
        assert SECRET not in text
        assert "AWS_SECRET_ACCESS_KEY" in text  # keys are not secret: they say what was given


@pytest.mark.parametrize("given, env", [
    ([f'--storage_options={{"AWS_SECRET_ACCESS_KEY": "{SECRET}"']  , None),   # unclosed JSON
    ([f'--storage_options=["{SECRET}"]'], None),
    ([f'--storage_options={{"AWS_SECRET_ACCESS_KEY": {{"v": "{SECRET}"}}}}'], None),
    ([], f'{{"AWS_SECRET_ACCESS_KEY": {SECRET}}}'),                          # not JSON in the environment
    ([f"--storage_option={SECRET.replace('=', '')}"], None),
], ids=["unclosed-json", "json-array", "nested-value", "env-not-json", "item-without-equals"])
def test_bad_storage_options_are_one_error_that_shows_no_value(monkeypatch, capsys, given, env):
    from delta_downgrade.app.tasks.entrypoints import drop_feature_task

    if env is not None:
        monkeypatch.setenv("DELTA_DOWNGRADE_STORAGE_OPTIONS", env)
    code = drop_feature_task(["--table=/t", "--feature=v2Checkpoint", *given])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT
    assert "DELTA_DOWNGRADE_BAD_STORAGE_OPTION" in err and "Traceback" not in err
    assert SECRET not in err + out and SECRET.replace("=", "") not in err + out
