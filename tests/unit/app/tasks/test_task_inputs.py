"""The task inputs that need no table: settings files and sections, ``#`` in a tables file, task
keys, task-value keys and the values file's temporary file. The SQL the delta-sql engine builds
is tested in
``tests/unit/app/engines/test_delta_sql_engine.py``."""

from __future__ import annotations

import json

import pytest

from delta_downgrade.errors import BadInputError
from delta_downgrade.app.tasks.settings import DropFeatureSettings
from delta_downgrade.app.tasks.settings import VerifySettings, load_settings
from delta_downgrade.app.tasks.task_values import LocalTaskValues, read_task_values


def _bad_input(exc_info, error_class: str) -> None:
    assert exc_info.value.exit_code == 2
    assert exc_info.value.error_class == error_class, exc_info.value


# --- settings files --------------------------------------------------------------------

def test_7_tables_file_not_utf8_is_bad_config(tmp_path):
    listing = tmp_path / "tables.txt"
    listing.write_bytes(b"/data/caf\xe9\n")  # Latin-1, not UTF-8
    settings = load_settings(VerifySettings, [f"--tables_file={listing}"])
    with pytest.raises(BadInputError) as info:
        settings.table_list()
    _bad_input(info, "DELTA_DOWNGRADE_BAD_CONFIG")
    assert "UTF-8" in info.value.message


@pytest.mark.parametrize("section", [
    "drop_feature_task = 3",
    'drop_feature_task = "deletionVectors"',
    "drop_feature_task = [1, 2]",
    '[[drop_feature_task]]\nfeature = "deletionVectors"',
])
def test_7_toml_task_section_that_is_not_a_table_is_bad_config(tmp_path, section):
    config = tmp_path / "drop.toml"
    config.write_text(f'table = "/t"\n{section}\n')
    with pytest.raises(BadInputError) as info:
        load_settings(DropFeatureSettings, [f"--config={config}"])
    _bad_input(info, "DELTA_DOWNGRADE_BAD_CONFIG")
    assert "[drop_feature_task] must be a table" in info.value.message


# --- '#' in a tables file ---------------------------------------------------------------

def test_10_hash_inside_a_line_is_part_of_the_table(tmp_path):
    listing = tmp_path / "tables.txt"
    listing.write_text("# fleet\n\n   \n/data/t#1\n  # /data/commented-out\n/data/u #2\n")
    settings = load_settings(VerifySettings, [f"--tables_file={listing}"])
    assert settings.table_list() == ["/data/t#1", "/data/u #2"]


# --- task keys, value keys, the temporary file ----------------------------------------------

@pytest.mark.parametrize("task_key", ["../../x", "/abs/x", "a/b", "..", "a.b", "", "x" * 101])
def test_12_task_key_that_is_not_a_databricks_key_is_refused(tmp_path, task_key):
    run_dir = tmp_path / "run"
    with pytest.raises(BadInputError) as info:
        LocalTaskValues(run_dir, task_key).set("status", "dropped")
    _bad_input(info, "DELTA_DOWNGRADE_BAD_TASK_VALUE")
    assert not any(p.is_file() for p in tmp_path.rglob("*"))  # nothing written anywhere


@pytest.mark.parametrize("key", ["../x", "a/b", "a b", ""])
def test_12_task_value_key_that_is_not_a_databricks_key_is_refused(tmp_path, key):
    with pytest.raises(BadInputError) as info:
        LocalTaskValues(tmp_path, "verify").set(key, 1)
    _bad_input(info, "DELTA_DOWNGRADE_BAD_TASK_VALUE")
    assert not (tmp_path / "task_values" / "verify.json").exists()


def test_12_reading_values_of_an_absolute_task_name_is_refused(tmp_path):
    secret = tmp_path / "secret"
    secret.with_suffix(".json").write_text(json.dumps({"k": "stolen"}))
    with pytest.raises(BadInputError) as info:
        read_task_values(tmp_path / "run", str(secret))
    _bad_input(info, "DELTA_DOWNGRADE_BAD_TASK_VALUE")


@pytest.mark.parametrize("planted", ["verify.tmp", "verify.json.tmp", ".verify.tmp", ".verify.json.tmp"])
def test_12_symlink_planted_at_a_predictable_temp_name_is_not_followed(tmp_path, planted):
    values_dir = tmp_path / "task_values"
    values_dir.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (values_dir / planted).symlink_to(victim)
    LocalTaskValues(tmp_path, "verify").set("status", "verified")
    assert victim.read_text() == "precious\n"
    assert read_task_values(tmp_path, "verify") == {"status": "verified"}
    assert (values_dir / planted).is_symlink()  # left alone, not replaced and not written through


def test_12_task_key_from_the_command_line_is_ignored(capsys):
    # Job parameters are pushed down to every task as --key=value; only the runner's environment
    # may name the task (and so the values file).
    s = load_settings(VerifySettings, ["--table=/t", "--task_key=../../x", "--task-values-dir=/tmp/elsewhere"])
    assert s.task_key is None and s.task_values_dir is None
    assert "--task_key" in capsys.readouterr().err


def test_12_task_key_from_the_environment_is_validated(monkeypatch):
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_KEY", "../../x")
    with pytest.raises(BadInputError) as info:
        load_settings(VerifySettings, ["--table=/t"])
    _bad_input(info, "DELTA_DOWNGRADE_BAD_SETTINGS")
    assert "DELTA_DOWNGRADE_TASK_KEY" in info.value.message
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_KEY", "verify_truncated")
    assert load_settings(VerifySettings, ["--table=/t"]).task_key == "verify_truncated"
