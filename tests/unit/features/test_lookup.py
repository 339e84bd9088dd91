"""features/__init__.py: one behaviour object per removable feature of the registry, found by
one lookup."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from delta_downgrade import features
from delta_downgrade.features import REMOVABLE, RemovableFeature, TraceContext, feature_traces, removable
from delta_downgrade.protocol import FEATURES, FeatureKind, TableFeature
from delta_downgrade.protocol.features import registry_with, with_registry

REMOVABLE_NAMES = sorted(n for n, f in FEATURES.items() if f.removable)
NON_REMOVABLE_NAMES = sorted(n for n, f in FEATURES.items() if not f.removable)
FEATURE_MODULES = sorted(m.name for m in pkgutil.iter_modules(features.__path__) if m.name != "base")


def _objects_by_module() -> dict[str, list[RemovableFeature]]:
    """The behaviour objects each feature module defines at module level."""
    out = {}
    for name in FEATURE_MODULES:
        module = importlib.import_module(f"delta_downgrade.features.{name}")
        out[name] = [v for v in vars(module).values() if isinstance(v, RemovableFeature)]
    return out


def test_every_removable_feature_has_exactly_one_object():
    names = sorted(f.name for objects in _objects_by_module().values() for f in objects)
    assert names == REMOVABLE_NAMES  # sorted lists: a duplicate shows up as well as a gap


def test_every_feature_module_defines_objects_and_all_are_registered():
    for module, objects in _objects_by_module().items():
        assert objects, f"features/{module}.py defines no removable feature"
        for obj in objects:
            assert REMOVABLE[obj.name] is obj


def test_lookup_covers_exactly_the_removable_features():
    assert sorted(REMOVABLE) == REMOVABLE_NAMES
    for name, obj in REMOVABLE.items():
        assert obj.name == name
        assert obj.spec is FEATURES[name]
        assert removable(name) is obj


@pytest.mark.parametrize("name", NON_REMOVABLE_NAMES)
def test_no_object_for_a_non_removable_feature(name):
    assert name not in REMOVABLE
    with pytest.raises(KeyError):
        removable(name)


@pytest.mark.parametrize("name", ["noSuchFeature", "DeletionVectors", "deletionvectors", ""])
def test_lookup_is_exact(name):
    with pytest.raises(KeyError):
        removable(name)


def test_a_production_feature_never_falls_back_to_the_default(monkeypatch):
    # The default behaviour exists for test registries only: a removable production feature
    # without its object is an error, not a drop that skips its pre-downgrade.
    monkeypatch.delitem(REMOVABLE, "rowTracking")
    with pytest.raises(KeyError):
        removable("rowTracking")


def test_a_test_only_feature_gets_the_default_behaviour():
    extra = TableFeature("testRemovableWriter", FeatureKind.WRITER, 1, 7, removable=True)
    with with_registry(registry_with(extra)):
        found = removable("testRemovableWriter")
        assert type(found) is RemovableFeature and found.name == "testRemovableWriter"
        assert found.spec is extra
        assert found.rewrite is None
    with pytest.raises(KeyError):
        removable("testRemovableWriter")


def test_rewrites_replace_the_rewrite_of_the_named_feature_only():
    def substitute(run):
        return True

    original = REMOVABLE["typeWidening"].rewrite
    found = removable("typeWidening", rewrites={"typeWidening": substitute})
    assert found.rewrite is substitute and found.name == "typeWidening"
    assert type(found) is type(REMOVABLE["typeWidening"])
    assert REMOVABLE["typeWidening"].rewrite == original  # the registered object is untouched
    assert removable("typeWidening-preview", rewrites={"typeWidening": substitute}) is REMOVABLE["typeWidening-preview"]
    assert removable("columnMapping", rewrites={}) is REMOVABLE["columnMapping"]


def test_feature_traces_is_empty_for_features_without_behaviour():
    ctx = TraceContext(snapshot=None)  # type: ignore[arg-type] - never read for these names
    assert feature_traces("appendOnly", ctx) == []
    assert feature_traces("noSuchFeature", ctx) == []
