"""Which tests use Spark, recorded by the classic pass and read by the Spark Connect pass.

The Connect pass (``pytest --spark-connect``) exists for the tests whose outcome can differ on a
Spark Connect session: those that used a Spark session, in the test process or in a child process
(a CLI run, a task, ``spark-submit``). Which ones those are is observed, not listed by hand:

- in the test process: the test asked for the ``spark`` fixture, or the package asked
  ``delta_downgrade.spark.get_spark`` for a session while the test ran (the package imports it
  from that module at each use, so wrapping the module's function sees every call);
- in a child: every Spark JVM starts through ``spark-class``, which sources
  ``$SPARK_CONF_DIR/spark-env.sh``; during a recorded run ``SPARK_CONF_DIR`` names a folder whose
  ``spark-env.sh`` appends ``$DELTA_DOWNGRADE_TEST_NODEID`` (set for each test) to a file. Only the
  script is added: pyspark's pip package has no conf folder of its own, so nothing else changes.

``pytest --spark-record=DIR`` (classic pass) writes ``DIR/<worker>.json`` with every test that ran
and whether it used Spark; ``pytest --spark-connect --spark-record=DIR`` deselects the tests the
record says never used Spark. A test the record does not know (new, or not run by the classic
pass) runs under Connect: a new Spark test cannot miss the Connect pass. The unit tier never
reaches Spark (tests/unit_tier_guard.py), so under Connect it is left out whole.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

import pytest

NODEID_VARIABLE = "DELTA_DOWNGRADE_TEST_NODEID"


def add_options(parser: pytest.Parser) -> None:
    parser.addoption(
        "--spark-record", metavar="DIR", default=None,
        help="classic pass: record in DIR which tests used Spark (in process or in a child); with "
             "--spark-connect: run only the tests that DIR's record does not show as Spark-free")


class SparkUseRecorder:
    """Registered as a plugin for a classic pass with ``--spark-record``."""

    def __init__(self, record_dir: Path, worker: str) -> None:
        self.record_dir = record_dir
        self.worker = worker
        self.used: set[str] = set()
        self.ran: list[str] = []
        self.current: str | None = None
        self._conf_dir = Path(tempfile.mkdtemp(prefix="spark-use-conf-"))
        self._children_file = self._conf_dir / "children.txt"
        self._children_file.touch()
        (self._conf_dir / "spark-env.sh").write_text(
            "# Written by tests/spark_use.py: note which test started this Spark JVM.\n"
            f'printf "%s\\n" "${NODEID_VARIABLE}" >> {shlex.quote(str(self._children_file))}\n')
        self._saved_conf_dir = os.environ.get("SPARK_CONF_DIR")
        os.environ["SPARK_CONF_DIR"] = str(self._conf_dir)
        self._wrap_get_spark()

    def _wrap_get_spark(self) -> None:
        import delta_downgrade.spark as spark_module

        original = spark_module.get_spark
        recorder = self

        def get_spark(*args, **kwargs):
            if recorder.current is not None:
                recorder.used.add(recorder.current)
            return original(*args, **kwargs)

        get_spark.__wrapped__ = original  # type: ignore[attr-defined]
        spark_module.get_spark = get_spark

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        self.current = item.nodeid
        os.environ[NODEID_VARIABLE] = item.nodeid
        if "spark" in getattr(item, "fixturenames", ()):
            self.used.add(item.nodeid)
        try:
            return (yield)
        finally:
            self.ran.append(item.nodeid)
            self.current = None
            os.environ.pop(NODEID_VARIABLE, None)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        children = {line for line in self._children_file.read_text().splitlines() if line}
        used = self.used | children
        self.record_dir.mkdir(parents=True, exist_ok=True)
        document = {"used_spark": sorted(n for n in self.ran if n in used),
                    "spark_free": sorted(n for n in self.ran if n not in used)}
        (self.record_dir / f"{self.worker}.json").write_text(json.dumps(document, indent=0))
        if self._saved_conf_dir is None:
            os.environ.pop("SPARK_CONF_DIR", None)
        else:
            os.environ["SPARK_CONF_DIR"] = self._saved_conf_dir
        shutil.rmtree(self._conf_dir, ignore_errors=True)


def read_spark_free(record_dir: Path) -> tuple[set[str], set[str]]:
    """(tests recorded Spark-free, tests recorded as using Spark) over every worker's part."""
    free: set[str] = set()
    used: set[str] = set()
    for part in sorted(record_dir.glob("*.json")):
        document = json.loads(part.read_text())
        free.update(document.get("spark_free", ()))
        used.update(document.get("used_spark", ()))
    return free - used, used


def connect_deselection(items: Iterable[pytest.Item], unit_dir: str,
                        spark_free: set[str]) -> list[pytest.Item]:
    """The tests the Connect pass leaves out: unit tests that ask for no Spark (the unit tier
    reaches none), and tests the classic pass recorded as Spark-free. A test that asks for the
    ``spark`` fixture or carries the ``spark`` marker always stays."""
    out = []
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) or item.get_closest_marker("spark") is not None:
            continue
        if str(item.path).startswith(unit_dir) or item.nodeid in spark_free:
            out.append(item)
    return out


def configure(config: pytest.Config, connect: bool) -> None:
    """Register the recorder for a classic pass with ``--spark-record``."""
    record = config.getoption("--spark-record")
    if record is None or connect or config.option.collectonly:
        return
    record_dir = Path(record)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:  # this process starts the run: a record of an earlier run goes
        for stale in record_dir.glob("*.json"):
            stale.unlink()
        if _is_xdist_controller(config):
            return  # the workers run the tests and record them
    worker = worker or "main"
    config.pluginmanager.register(SparkUseRecorder(record_dir, worker), "spark-use-recorder")


def _is_xdist_controller(config: pytest.Config) -> bool:
    numprocesses = getattr(config.option, "numprocesses", None)
    return bool(numprocesses) and config.getoption("dist", "no") != "no"
