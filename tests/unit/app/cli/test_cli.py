"""The ``delta-downgrade`` parser: one module per subcommand, registered in ``--help`` order, then
the entry-point group; ``--help`` imports no operation; errors become one line and an exit code."""

from __future__ import annotations

import argparse
import json

import pytest

from delta_downgrade.app import cli
from delta_downgrade.app.cli import cleanup, drop, inspect, vacuum
from delta_downgrade.app.render.result import parse_result_lines


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


def test_builtin_subcommands_come_first_in_help_order():
    names = _subcommands(cli.build_parser())
    assert names[:6] == ["inspect", "compat", "cleanup", "vacuum", "drop-feature", "truncate-history"]
    installed = names[6:]
    assert installed == sorted(installed)   # the entry-point group, by name


def test_a_builtin_command_line_does_not_look_up_installed_commands(monkeypatch):
    def refuse():
        raise AssertionError("entry points looked up for a built-in command")
    monkeypatch.setattr(cli, "_installed_commands", refuse)
    args = cli.build_parser(["inspect", "/t", "--json"]).parse_args(["inspect", "/t", "--json"])
    assert args.command == "inspect"


def test_other_command_lines_and_help_see_the_installed_commands(monkeypatch):
    calls = []

    def installed():
        calls.append(1)
        return []
    monkeypatch.setattr(cli, "_installed_commands", installed)
    cli.build_parser(["run-job", "x"])
    cli.build_parser(["--help"])
    cli.build_parser()
    assert len(calls) == 3


@pytest.mark.parametrize("module, commands", [(inspect, ["inspect"]), (cleanup, ["cleanup"]),
                                              (vacuum, ["vacuum"]), (drop, ["drop-feature", "truncate-history"])])
def test_each_module_registers_its_own_commands(module, commands):
    parser = argparse.ArgumentParser()
    registered: dict = {}
    module.register(parser.add_subparsers(dest="command"), registered)
    assert list(registered) == commands and all(callable(run) for run in registered.values())


def test_truncate_history_is_a_drop_of_checkpoint_protection_with_truncation():
    args = cli.build_parser().parse_args(["truncate-history", "/t", "--dry-run"])
    assert (args.feature, args.truncate_history, args.dry_run) == ("checkpointProtection", True, True)


@pytest.mark.parametrize("argv, error_class", [
    (["vacuum", "{dir}", "--dry-run"], "DELTA_MISSING_DELTA_TABLE"),
    (["inspect", "{dir}/missing", "--json"], "DELTA_TABLE_NOT_FOUND"),
    (["cleanup", "{dir}/missing", "--retention", "one week"], "DELTA_DOWNGRADE_BAD_DURATION"),
])
def test_error_is_one_line_with_its_class_and_exit_code(tmp_path, capsys, argv, error_class):
    """One error line on stderr; on stdout the error's RESULT (before, stdout was empty
    and a script had no status to read), or with --json the one document of the same fields."""
    argv = [a.format(dir=tmp_path) for a in argv]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    assert err.startswith(f"error: [{error_class}] ") and err.count("\n") == 1
    if "--json" in argv:
        result = json.loads(out)
    else:
        [result] = parse_result_lines(out)
        assert out.count("\n") == 1
    assert (result["command"], result["status"], result["error_class"], result["exit_code"]) == \
        (argv[0], "error", error_class, 2)
    assert result["table"] == argv[1] and result["message"] in err
