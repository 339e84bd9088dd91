"""The Connect pass's selection (tests/spark_use.py): what the classic pass recorded decides, and
a test the record does not know runs under Connect."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tests.spark_use import connect_deselection, read_spark_free

UNIT = "/repo/tests/unit/"


@dataclass
class Item:
    """The parts of a pytest item the selection reads."""

    nodeid: str
    fixturenames: tuple[str, ...] = ()
    markers: dict = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return Path("/repo") / self.nodeid.split("::")[0]

    def get_closest_marker(self, name: str):
        return self.markers.get(name)


def _record(tmp_path: Path, **parts: dict) -> Path:
    for worker, document in parts.items():
        (tmp_path / f"{worker}.json").write_text(json.dumps(document))
    return tmp_path


def test_the_record_of_every_worker_is_read_and_a_test_that_used_spark_anywhere_counts_as_used(tmp_path):
    record = _record(tmp_path,
                     gw0={"used_spark": ["tests/integration/test_a.py::test_x"], "spark_free": ["tests/integration/test_b.py::test_y"]},
                     gw1={"used_spark": [], "spark_free": ["tests/integration/test_a.py::test_x", "tests/integration/test_c.py::test_z"]})
    free, used = read_spark_free(record)
    assert used == {"tests/integration/test_a.py::test_x"}
    assert free == {"tests/integration/test_b.py::test_y", "tests/integration/test_c.py::test_z"}


def test_only_tests_recorded_spark_free_and_unit_tests_are_left_out():
    recorded_free = {"tests/integration/test_log.py::test_free"}
    items = [
        Item("tests/integration/test_log.py::test_free"),
        Item("tests/integration/test_log.py::test_new_one_not_in_the_record"),
        Item("tests/integration/test_drop.py::test_rewrite"),
        Item("tests/unit/log/test_replay.py::test_pure"),
        Item("tests/integration/test_log.py::test_free_but_asks_for_spark", fixturenames=("spark",)),
    ]
    recorded_free.add("tests/integration/test_log.py::test_free_but_asks_for_spark")
    left_out = {i.nodeid for i in connect_deselection(items, UNIT, recorded_free)}
    assert left_out == {"tests/integration/test_log.py::test_free", "tests/unit/log/test_replay.py::test_pure"}


def test_without_a_record_every_integration_test_runs():
    items = [Item("tests/integration/test_log.py::test_a"), Item("tests/unit/test_b.py::test_b")]
    assert [i.nodeid for i in connect_deselection(items, UNIT, set())] == ["tests/unit/test_b.py::test_b"]
