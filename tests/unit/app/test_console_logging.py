"""The drop logs its steps on ``delta_downgrade.drop``; the entry points print them (CLI:
``"  step"``, tasks: ``"[table] step"``), --quiet hides them, --verbose adds DEBUG, and nothing
stays configured after an entry point returns."""

from __future__ import annotations

import contextlib
import io
import logging

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.app.console_logging import (
    CLI_STEP_FORMAT, DEFAULT, DROP_LOGGER, QUIET, VERBOSE, console_logging, level_for,
)
from delta_downgrade.app.tasks.entrypoints import drop_feature_task
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.drop.run import LOGGER, DropRun
from delta_downgrade.protocol import Protocol
from tests.drop_support import build
from tests.logging_support import drop_steps

VPC = "vacuumProtocolCheck"
VPC_PROTOCOL = Protocol(3, 7, frozenset({VPC}), frozenset({VPC}))
# vacuumProtocolCheck has no traces to remove and needs history protection: 3 barriers, the
# downgrade commit and its checkpoint, 8 steps.
STEPS = ["committed v3: Empty Commit", "checkpoint at v3: _delta_log/00000000000000000003.checkpoint.parquet",
         "committed v4: Empty Commit", "checkpoint at v4: _delta_log/00000000000000000004.checkpoint.parquet",
         "committed v5: Empty Commit", "checkpoint at v5: _delta_log/00000000000000000005.checkpoint.parquet",
         "committed v6: DROP FEATURE", "checkpoint at v6: _delta_log/00000000000000000006.checkpoint.parquet"]


def _table(tmp_path, name: str = "t") -> str:
    path = str(tmp_path / name)
    build(path, VPC_PROTOCOL)
    return path


def _stderr(fn, *args) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = fn(*args)
    return code, err.getvalue()


@pytest.fixture(autouse=True)
def _unconfigured():
    """Every test starts, and must leave, the drop logger as the library leaves it."""
    before = (LOGGER.level, LOGGER.propagate, list(LOGGER.handlers), list(logging.getLogger("delta_downgrade").handlers))
    yield
    after = (LOGGER.level, LOGGER.propagate, list(LOGGER.handlers), list(logging.getLogger("delta_downgrade").handlers))
    assert after == before


def test_the_drop_run_logs_on_the_logger_the_entry_points_configure():
    assert LOGGER.name == DROP_LOGGER
    assert (level_for(), level_for(quiet=True), level_for(verbose=True)) == (DEFAULT, QUIET, VERBOSE)


def test_cli_prints_each_step_indented_before_the_summary(tmp_path):
    path = _table(tmp_path)
    code, err = _stderr(main, ["drop-feature", path, VPC])
    assert code == 0
    lines = err.splitlines()
    assert lines[:len(STEPS)] == [f"  {step}" for step in STEPS]
    assert lines[len(STEPS)] == f"{VPC}: dropped on {path}"


def test_cli_quiet_prints_the_summary_only(tmp_path):
    path = _table(tmp_path)
    code, err = _stderr(main, ["drop-feature", path, VPC, "--quiet"])
    assert code == 0
    assert err.splitlines()[0] == f"{VPC}: dropped on {path}"
    assert not any(step in err for step in STEPS)


def test_cli_twice_in_one_process_prints_each_step_once(tmp_path):
    first, second = _table(tmp_path, "a"), _table(tmp_path, "b")
    _stderr(main, ["drop-feature", first, VPC])
    _, err = _stderr(main, ["drop-feature", second, VPC, "--dry-run"])
    assert err.splitlines()[0] == "  commit v3: Empty Commit (0 action(s))"
    assert err.count("  commit v3: Empty Commit (0 action(s))\n") == 1


def test_task_prefixes_each_step_with_its_table(tmp_path):
    a, b = _table(tmp_path, "a"), _table(tmp_path, "b")
    code, err = _stderr(drop_feature_task, [f"--tables={a},{b}", f"--feature={VPC}", "--parallelism=2"])
    assert code == 0
    for path in (a, b):
        assert [line for line in err.splitlines() if line.startswith(f"[{path}] ")] == \
            [f"[{path}] {step}" for step in STEPS]


def test_a_run_nobody_announced_logs_at_debug_only(tmp_path):
    run = DropRun(DeltaLog(_table(tmp_path)), VPC)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        with console_logging(CLI_STEP_FORMAT, DEFAULT):
            run.progress("rehearsed step")
        assert err.getvalue() == ""
        with console_logging(CLI_STEP_FORMAT, VERBOSE):
            run.progress("rehearsed step")
            logging.getLogger("delta_downgrade.log.checkpoint.on_driver").debug("a detail")
            DropRun(run.log, VPC, announce=True).progress("a step")
    assert err.getvalue().splitlines() == ["DEBUG delta_downgrade.drop: rehearsed step",
                                           "DEBUG delta_downgrade.log.checkpoint.on_driver: a detail",
                                           "  a step"]


def test_a_step_handler_that_raises_stops_the_drop_right_after_that_step(tmp_path):
    path = _table(tmp_path)

    def stop(message: str) -> None:
        if message.startswith("committed v4"):
            raise KeyboardInterrupt(message)

    with pytest.raises(KeyboardInterrupt), drop_steps(stop) as steps:
        drop_feature(path, VPC)
    assert steps == STEPS[:3]
    assert DeltaLog(path).latest_version() == 4
