"""The storage scheme registry: which implementation serves a location, lazy loading (the base
imports no implementation), unserved schemes refused as bad input, and explicit overrides."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import delta_downgrade.storage as storage_pkg
from delta_downgrade.errors import UnsupportedStorageError
from delta_downgrade.storage import SCHEMES, implementation_for, open_storage
from delta_downgrade.storage.hadoop import HadoopStorage
from delta_downgrade.storage.local import LocalStorage

IMPLEMENTATIONS = ("delta_downgrade.storage.local", "delta_downgrade.storage.hadoop",
                   "delta_downgrade.storage.object_store")


class InMemoryStorage:
    """A stand-in implementation: records the location it was opened for."""

    def __init__(self, location: str) -> None:
        self.root = location

    @classmethod
    def from_location(cls, location: str, options=None) -> InMemoryStorage:
        return cls(location)


IN_MEMORY = f"{__name__}:InMemoryStorage"


@pytest.mark.parametrize("location", ["/tmp/t", "relative/t", "file:///tmp/t", "file:/tmp/t",
                                      "FILE:///tmp/t"])
def test_local_paths_and_file_uris_are_local(location):
    assert implementation_for(location) is LocalStorage


@pytest.mark.parametrize("location,root", [("/tmp/t", "/tmp/t"), ("file:///tmp/t", "/tmp/t"),
                                           ("file:/tmp/t", "/tmp/t")])
def test_open_storage_local_root(location, root):
    storage = open_storage(location)
    assert isinstance(storage, LocalStorage) and storage.root == root


@pytest.mark.parametrize("scheme", ["hdfs", "viewfs", "wasb", "wasbs", "dbfs"])
def test_cluster_only_schemes_are_hadoop(scheme):
    assert SCHEMES[scheme] == "delta_downgrade.storage.hadoop:HadoopStorage"
    assert implementation_for(f"{scheme}://bucket/t") is HadoopStorage
    assert implementation_for(f"{scheme.upper()}://bucket/t") is HadoopStorage


def test_unknown_implementation_is_unsupported_storage():
    with pytest.raises(UnsupportedStorageError) as info:
        open_storage("/tmp/t", implementation="delta_downgrade.storage.nosuch:NoStorage")
    assert info.value.exit_code == 2
    assert "delta_downgrade.storage.nosuch:NoStorage" in info.value.message


def test_base_modules_never_import_an_implementation():
    # Every module of the package except the implementations themselves.
    package_dir = Path(storage_pkg.__file__).parent
    base_modules = [p for p in package_dir.glob("*.py") if p.stem not in ("local", "hadoop", "object_store")]
    assert {p.stem for p in base_modules} >= {"__init__", "base", "registry"}
    for path in base_modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n.startswith(IMPLEMENTATIONS) for n in names), (path.name, names)


def test_explicit_implementation_overrides_the_registry():
    storage = open_storage("s3://bucket/t", implementation=IN_MEMORY)
    assert isinstance(storage, InMemoryStorage) and storage.root == "s3://bucket/t"
    assert isinstance(open_storage("/tmp/t", implementation=IN_MEMORY), InMemoryStorage)


def test_a_registry_entry_adds_or_replaces_an_implementation(monkeypatch):
    monkeypatch.setitem(SCHEMES, "mem", IN_MEMORY)
    monkeypatch.setitem(SCHEMES, "gs", IN_MEMORY)
    assert isinstance(open_storage("mem://t"), InMemoryStorage)
    assert isinstance(open_storage("gs://bucket/t"), InMemoryStorage)
    assert implementation_for("hdfs://nn/t") is HadoopStorage


def test_hadoop_storage_under_spark_connect_is_refused_in_process(monkeypatch):
    # The same decision without a CLI: the kind of session get_spark would start.
    from delta_downgrade.storage import hadoop

    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    monkeypatch.setattr(hadoop, "active_session", lambda: None)
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:1")
    with pytest.raises(UnsupportedStorageError) as info:
        open_storage("hdfs://namenode:8020/t")
    assert info.value.exit_code == 2 and info.value.params["session"] == "connect"
    monkeypatch.delenv("SPARK_REMOTE")
    monkeypatch.delenv("DELTA_DOWNGRADE_SPARK_REMOTE", raising=False)
    assert hadoop._session_to_use() == "classic"
