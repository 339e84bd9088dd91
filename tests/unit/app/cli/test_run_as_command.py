"""``run_as_command``: the command's process exits with main's status, its objects frozen for the
interpreter's exit (that exit handlers still run: tests/integration/test_command_exit.py)."""

from __future__ import annotations

import gc

import pytest

from delta_downgrade.app import cli
from tests.collector_generations import in_generation


def test_the_command_exits_with_mains_status_with_every_object_frozen(monkeypatch) -> None:
    held = [[]]
    monkeypatch.setattr(cli, "main", lambda: 3)
    try:
        with pytest.raises(SystemExit) as exited:
            cli.run_as_command()
        assert exited.value.code == 3
        assert not in_generation(held) and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert in_generation(held)  # the check can see an object that is not frozen
