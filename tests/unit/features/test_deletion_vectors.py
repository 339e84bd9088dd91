"""features/deletion_vectors.py through drop_feature: the purge it names, its substitute, and the
refusal before the first write when PySpark is absent (also in a dry run)."""

from __future__ import annotations

import os
import sys

import pytest

from delta_downgrade.drop.committer import LogCommitter, PlanRecorder
from delta_downgrade.errors import DeletionVectorNotFoundError, NotSupportedYetError
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import create_dv_table, delete_rows
from tests.drop_support import SCHEMA, rows
from tests.unit.features.test_base import without_pyspark


def _dv_table(path: str) -> None:
    builder = TableBuilder(path)
    create_dv_table(builder, SCHEMA, rows(0, 20))
    delete_rows(builder, lambda r: r["id"] < 3)


def _tree(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(root, f), path)
                  for root, _dirs, files in os.walk(path) for f in files)


@pytest.mark.parametrize("committer", [LogCommitter, PlanRecorder])
def test_without_pyspark_nothing_is_written(tmp_path, monkeypatch, committer):
    path = str(tmp_path / "t")
    _dv_table(path)
    before = _tree(path)
    without_pyspark(monkeypatch)
    with pytest.raises(NotSupportedYetError) as caught:
        drop_feature(path, "deletionVectors", committer=committer())
    assert caught.value.message == (
        "dropping deletionVectors needs a Spark data rewrite (1 live file(s) carry deletion vectors), "
        "but PySpark is not installed: on Databricks it comes with the runtime; locally install "
        "delta-downgrade[local] (pyspark 4.2). Nothing was written")
    assert _tree(path) == before
    assert sys.modules["pyspark"] is None


def test_a_substitute_purge_runs_once_in_the_plan_of_a_dry_run(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    _dv_table(path)
    before = _tree(path)
    without_pyspark(monkeypatch)  # a substitute needs no Spark
    calls = []

    def purge(run):
        calls.append(run.writes)
        return False

    outcome = drop_feature(path, "deletionVectors", committer=PlanRecorder(), rewrites={"deletionVectors": purge})
    assert outcome.status == "planned"
    assert calls == [False]  # the plan is the dry run: the purge runs once, on a run that writes nothing
    assert _tree(path) == before


@pytest.mark.parametrize("committer", [LogCommitter, PlanRecorder])
def test_a_missing_dv_file_refuses_before_anything_is_written(tmp_path, committer):
    # The check needs no purge to run (a substitute that would succeed): the DV file's absence is
    # found from the log and one status call, before the first write.
    path = str(tmp_path / "t")
    _dv_table(path)
    dv_files = [f for f in _tree(path) if f.endswith(".bin")]
    assert len(dv_files) == 1
    os.remove(os.path.join(path, dv_files[0]))
    before = _tree(path)
    with pytest.raises(DeletionVectorNotFoundError) as caught:
        drop_feature(path, "deletionVectors", committer=committer(), rewrites={"deletionVectors": lambda run: False})
    assert caught.value.exit_code == 2
    assert caught.value.params["missing"] == dv_files
    assert "nothing was written" in caught.value.message
    assert _tree(path) == before


def test_present_dv_files_pass_the_check(tmp_path):
    path = str(tmp_path / "t")
    _dv_table(path)
    outcome = drop_feature(path, "deletionVectors", committer=PlanRecorder(), rewrites={"deletionVectors": lambda run: False})
    assert outcome.status == "planned"
