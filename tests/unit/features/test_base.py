"""features/base.py: the data rewrite a drop runs, its substitute, and the refusal without
PySpark."""

from __future__ import annotations

import sys
import types

import pytest

from delta_downgrade.errors import NotSupportedYetError
from delta_downgrade.features import REMOVABLE, RemovableFeature
from delta_downgrade.features.base import require_rewrite

PYSPARK_MISSING = ("dropping deletionVectors needs a Spark data rewrite (2 live file(s) carry deletion "
                   "vectors), but PySpark is not installed: on Databricks it comes with the runtime; "
                   "locally install delta-downgrade[local] (pyspark 4.2). Nothing was written")
NO_REWRITE = ("dropping deletionVectors needs a Spark data rewrite (2 live file(s) carry deletion "
              "vectors), but this installation has no Spark rewrite for it. Nothing was written")

RUN = types.SimpleNamespace(feature="deletionVectors", table="/t")


def without_pyspark(monkeypatch):
    for name in [m for m in sys.modules if m == "pyspark" or m.startswith("pyspark.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspark", None)  # makes `import pyspark` fail


def with_pyspark(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", types.ModuleType("pyspark"))


WITH_REWRITE = sorted(n for n, f in REMOVABLE.items() if f.rewrite is not None)


def test_the_features_with_a_data_rewrite():
    assert WITH_REWRITE == ["columnMapping", "deletionVectors", "typeWidening", "typeWidening-preview"]


@pytest.mark.parametrize("name, function", [
    ("deletionVectors", "delta_downgrade.rewrite.dv_purge.purge_deletion_vectors"),
    ("columnMapping", "delta_downgrade.rewrite.column_mapping.remove_column_mapping"),
    ("typeWidening", "delta_downgrade.rewrite.type_widening.rewrite_type_widening"),
    ("typeWidening-preview", "delta_downgrade.rewrite.type_widening.rewrite_type_widening"),
])
def test_dotted_paths_name_the_rewrites(monkeypatch, name, function):
    with_pyspark(monkeypatch)
    found = require_rewrite(RUN, REMOVABLE[name].rewrite, "why")  # type: ignore[arg-type]
    assert f"{found.__module__}.{found.__name__}" == function


def test_without_pyspark_the_drop_is_refused(monkeypatch):
    without_pyspark(monkeypatch)
    with pytest.raises(NotSupportedYetError) as caught:
        require_rewrite(RUN, REMOVABLE["deletionVectors"].rewrite,  # type: ignore[arg-type]
                        "2 live file(s) carry deletion vectors")
    assert caught.value.message == PYSPARK_MISSING
    assert caught.value.table == "/t" and caught.value.feature == "deletionVectors"


def test_a_rewrite_module_that_cannot_be_imported_is_refused(monkeypatch):
    with_pyspark(monkeypatch)
    with pytest.raises(NotSupportedYetError) as caught:
        require_rewrite(RUN, "delta_downgrade.no_such_rewrite:purge",  # type: ignore[arg-type]
                        "2 live file(s) carry deletion vectors")
    assert caught.value.message == NO_REWRITE


def test_no_rewrite_at_all_is_refused(monkeypatch):
    with_pyspark(monkeypatch)
    with pytest.raises(NotSupportedYetError, match="has no Spark rewrite"):
        require_rewrite(RUN, None, "why")  # type: ignore[arg-type]


def test_a_substitute_needs_no_pyspark(monkeypatch):
    without_pyspark(monkeypatch)

    def substitute(run):
        return True

    assert require_rewrite(RUN, substitute, "why") is substitute  # type: ignore[arg-type]


def test_with_rewrite_copies():
    original = REMOVABLE["deletionVectors"]

    def substitute(run):
        return True

    copy = original.with_rewrite(substitute)
    assert copy is not original and copy.rewrite is substitute and copy.name == original.name
    assert original.rewrite == "delta_downgrade.rewrite.dv_purge:purge_deletion_vectors"


def test_the_default_behaviour_does_nothing():
    feature = RemovableFeature("x")
    assert feature.name == "x" and repr(feature) == "RemovableFeature('x')"
    assert feature.property_updates(None) == {}  # type: ignore[arg-type]
    assert feature.remove_traces(None) is False  # type: ignore[arg-type]
    assert feature.traces(None) == []  # type: ignore[arg-type]
    assert feature.properties_to_remove() == ()
    assert feature.actions_at_downgrade(None) == []  # type: ignore[arg-type]
    assert feature.action_uses_feature(None) is False  # type: ignore[arg-type]
    assert feature.checkpoint_uses_feature(None) is False
