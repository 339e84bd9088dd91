"""An argument that names an existing directory is a path, whatever else it could read as; a
name-like one is taken as the directory with one note on stderr."""

from __future__ import annotations

import pytest

from delta_downgrade.app import table_ref
from delta_downgrade.app.table_ref import parse_table_ref


@pytest.fixture(autouse=True)
def _fresh_notes(monkeypatch):
    monkeypatch.setattr(table_ref, "_NOTED", set())


def test_a_one_part_name_that_is_a_directory_is_the_path_with_a_note(tmp_path, monkeypatch, capsys):
    (tmp_path / "events").mkdir()
    monkeypatch.chdir(tmp_path)
    ref = parse_table_ref("events")
    assert ref.path == "events" and not ref.is_name
    parse_table_ref("events")  # every layer parses it again: one note
    err = capsys.readouterr().err
    assert err.count("note:") == 1
    assert "events is taken as the directory ./events here" in err and "catalog.schema.events" in err


def test_a_dotted_directory_is_the_path_too(tmp_path, monkeypatch, capsys):
    (tmp_path / "main.sales.events").mkdir()
    monkeypatch.chdir(tmp_path)
    assert parse_table_ref("main.sales.events").path == "main.sales.events"
    assert "run where no such directory exists" in capsys.readouterr().err


def test_without_a_directory_a_name_stays_a_name_and_nothing_is_said(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "events.txt").write_text("a file, not a table directory")
    assert parse_table_ref("events").parts == ("events",)
    assert parse_table_ref("main.sales.events").parts == ("main", "sales", "events")
    assert capsys.readouterr().err == ""


def test_a_separator_makes_a_path_without_any_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert parse_table_ref("data/events").path == "data/events"
    assert capsys.readouterr().err == ""
