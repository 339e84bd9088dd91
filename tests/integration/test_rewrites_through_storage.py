"""Data rewrites through the storage layer.

On a cluster Spark reads and writes ``s3a://``/``abfss://`` through its Hadoop connectors while the
driver reads DV slices, footers and listings, and deletes leftovers, through the table's storage.
Those connectors are not on this machine, so the same split is run on a ``file://`` URI table:

- ``local``: the default local storage;
- ``object_store``: the storage option ``DELTA_DOWNGRADE_STORAGE=object_store`` (obstore's
  LocalStore behind ``ObjectStoreStorage``): ``local_file()`` is None, so every footer, DV, listing
  and cleanup step takes the object-store code, while Spark reads the ``file://`` URIs through
  Hadoop's local file system;
- ``tripwire`` variants of both: real storages (registered through ``open_storage(...,
  implementation=)``) whose local-path shortcuts raise for table data, proving no step of a
  rewrite reaches the data files except through the storage interface (the log may still use
  fast local reads of ``_delta_log/``, which is not the rewrite's business).

Rows are compared row by row with what delta-rs read before the drop and with the source rows
minus the deleted ones; deltalake 0.18.2 (reader version 1 only) must read the result.
"""

from __future__ import annotations

import json
import os
from functools import partial

import pyarrow as pa
import pytest

from oracle import same_rows

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.rewrite.dv_purge import purge_deletion_vectors
from delta_downgrade.storage import open_storage
from delta_downgrade.storage.local import LocalStorage
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import create_dv_table, delete_rows

pytestmark = [pytest.mark.spark, pytest.mark.oracle]

OBJECT_STORE_OPTIONS = {"DELTA_DOWNGRADE_STORAGE": "object_store"}


def _object_store_class():
    try:
        from delta_downgrade.storage.object_store import ObjectStoreStorage
    except ImportError as exc:  # the object-store implementation lands with helper objstore
        pytest.skip(f"no ObjectStoreStorage here ({exc})")
    return ObjectStoreStorage


def _is_log(rel_path: str) -> bool:
    return rel_path == "_delta_log" or rel_path.startswith("_delta_log/")


class TableDataTripwire(AssertionError):
    pass


class LocalStorageWithTripwire(LocalStorage):
    """A real local storage whose local-path shortcuts raise for anything but the log."""

    def local_file(self, rel_path):
        if not _is_log(rel_path):
            raise TableDataTripwire(f"local_file({rel_path!r}): table data read around the storage")
        return super().local_file(rel_path)


def _object_store_tripwire():
    base = _object_store_class()

    class ObjectStoreStorageWithTripwire(base):  # type: ignore[misc, valid-type]
        """The object-store storage on a ``file://`` table, whose ``local_file`` (None there
        anyway) must not even be asked for table data."""

        def local_file(self, rel_path):
            if not _is_log(rel_path):
                raise TableDataTripwire(f"local_file({rel_path!r}) asked of an object store")
            return super().local_file(rel_path)

    globals()["ObjectStoreStorageWithTripwire"] = ObjectStoreStorageWithTripwire
    return ObjectStoreStorageWithTripwire


MODES = ["local", "object_store", "local_tripwire", "object_store_tripwire"]


def _log(uri: str, mode: str) -> DeltaLog:
    """The table's log with the storage of ``mode``."""
    if mode == "local":
        return DeltaLog(uri)
    if mode == "object_store":
        _object_store_class()
        log = DeltaLog(uri, storage_options=OBJECT_STORE_OPTIONS)
        assert log.storage.local_file("part.parquet") is None, "not the object-store code path"
        return log
    if mode == "local_tripwire":
        cls = LocalStorageWithTripwire
        options = None
    else:
        cls = _object_store_tripwire()
        options = OBJECT_STORE_OPTIONS
    storage = open_storage(uri, implementation=f"{__name__}:{cls.__name__}", options=options)
    assert type(storage) is cls
    return DeltaLog(uri, storage=storage)


# --- DV purge --------------------------------------------------------------------------------------

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string())])


def _rows(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()),
                     "name": pa.array([f"n{i:05d}" if i % 11 else None for i in range(n)], pa.string()),
                     "part": pa.array(["a" if i % 3 else "b c" for i in range(n)], pa.string())})


def _dv_table(path: str) -> tuple[str, list[dict]]:
    """A partitioned table (a partition directory needing URI escaping) whose DVs share one DV
    file at several offsets, plus an inline DV; returns its ``file://`` URI and the rows that
    must survive, computed from the source rows."""
    b = TableBuilder(path)
    create_dv_table(b, SCHEMA, _rows(3000), partition_columns=["part"], files=3)
    delete_rows(b, lambda r: r["id"] % 7 == 0, shared_file=True)
    delete_rows(b, lambda r: r["id"] > 2990, inline=True)
    expected = [r for r in _rows(3000).to_pylist() if r["id"] % 7 and r["id"] <= 2990]
    return "file://" + os.path.abspath(path), expected


def _reorg_added_records(path: str) -> int:
    return sum(json.loads(a.stats)["numRecords"] for a in DeltaLog(path).snapshot().state().files.values())


@pytest.mark.parametrize("mode", MODES)
def test_dv_purge_on_a_file_uri_table(tmp_path, mode, spark, oracle, oracle_018):
    path = str(tmp_path / "t")
    uri, expected = _dv_table(path)
    before = oracle.scan_rows(path).unwrap()
    assert same_rows(before, expected)
    log = _log(uri, mode)
    rewrites = {"deletionVectors": partial(purge_deletion_vectors, spark=spark)}
    outcome = drop_feature(uri, "deletionVectors", log=log, rewrites=rewrites)
    assert outcome.status == "dropped"
    # Row by row: the older reader (no DVs) reads exactly the rows that were not deleted.
    assert same_rows(oracle_018.pyarrow_rows(path).unwrap(), expected)
    assert same_rows(oracle.pyarrow_rows(path).unwrap(), expected)
    snapshot = DeltaLog(path).snapshot()
    assert "deletionVectors" not in snapshot.protocol.features
    assert all(f.deletionVector is None for f in snapshot.state().files.values())
    assert _reorg_added_records(path) == len(expected)
    # Nothing of the purge is left outside the committed files: no Spark work area, no empty file.
    committed = {f.decoded_path for f in snapshot.state().files.values()}
    for status in LocalStorage(path).walk_files(""):
        name = status.path.rsplit("/", 1)[-1]
        if name.endswith(".parquet") and "dv-purge-" in status.path:
            assert status.path in committed, status.path
        assert "_temporary" not in status.path.split("/")


def test_dv_purge_gives_the_same_table_in_both_modes(tmp_path, spark, oracle):
    """The local and the object-store code paths write the same table: same rows per partition,
    same file count, same statistics apart from the file names."""
    _object_store_class()
    results = {}
    for mode in ("local", "object_store"):
        path = str(tmp_path / mode)
        uri, expected = _dv_table(path)
        drop_feature(uri, "deletionVectors", log=_log(uri, mode),
                     rewrites={"deletionVectors": partial(purge_deletion_vectors, spark=spark)})
        files = DeltaLog(path).snapshot().state().files.values()
        results[mode] = (sorted((tuple(sorted(f.partitionValues.items())), f.stats) for f in files),
                         oracle.pyarrow_rows(path).unwrap())
    assert results["local"][0] == results["object_store"][0]
    assert same_rows(results["local"][1], results["object_store"][1])


def test_dv_slice_reads_go_through_the_object_store(tmp_path):
    """Without Spark: every DV is verified (size, checksum, cardinality) through the object-store
    storage's ranged reads, before anything would be written."""
    from delta_downgrade.rewrite.dv_purge import verify_deletion_vectors

    path = str(tmp_path / "t")
    uri, _expected = _dv_table(path)
    log = _log(uri, "object_store_tripwire")
    snapshot = log.snapshot()
    with_dvs = [f for f in snapshot.state().files.values() if f.deletionVector is not None]
    assert len(with_dvs) == 6  # 3 files in each of 2 partitions
    assert verify_deletion_vectors(snapshot) == len(with_dvs)


# --- column-mapping removal and type widening -------------------------------------------------------

def _cm_table(path: str) -> None:
    """Name mode with physical names unlike the logical ones: every file needs a rewrite."""
    def field(name, type_, physical, cid):
        return {"name": name, "type": type_, "nullable": True,
                "metadata": {"delta.columnMapping.id": cid, "delta.columnMapping.physicalName": physical}}

    from delta_downgrade.protocol import Protocol

    b = TableBuilder(path)
    schema = {"type": "struct", "fields": [field("id", "long", "col-1", 1), field("v", "string", "col-2", 2)]}
    arrow = pa.schema([("col-1", pa.int64()), ("col-2", pa.string())])
    b.create(arrow, protocol=Protocol(2, 5), delta_schema=schema,
             configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"},
             rows=[{"col-1": i, "col-2": f"v{i}"} for i in range(40)], files=2)


@pytest.mark.parametrize("mode", ["local_tripwire", "object_store_tripwire"])
def test_column_mapping_removal_on_a_file_uri_table(tmp_path, mode, spark, oracle, oracle_018):
    path = str(tmp_path / "t")
    _cm_table(path)
    before = oracle.scan_rows(path).unwrap()
    assert sorted(r["id"] for r in before) == list(range(40))
    uri = "file://" + os.path.abspath(path)
    outcome = drop_feature(uri, "columnMapping", log=_log(uri, mode))
    assert outcome.status == "dropped"
    assert same_rows(oracle_018.pyarrow_rows(path).unwrap(), before)
    files = DeltaLog(path).snapshot().state().files.values()
    assert len(files) == 2 and all("/rewrite-" in "/" + f.decoded_path for f in files)
    assert all(json.loads(f.stats)["numRecords"] == 20 for f in files)


@pytest.mark.parametrize("mode", ["local_tripwire", "object_store_tripwire"])
def test_type_widening_rewrite_on_a_file_uri_table(tmp_path, mode, spark, oracle):
    from tests.integration.test_type_widening_drop import _stable_table, expected_rows

    path = str(tmp_path / "t")
    _stable_table(path, old_files=2, new_files=1)
    expected = expected_rows(path)
    uri = "file://" + os.path.abspath(path)
    outcome = drop_feature(uri, "typeWidening", log=_log(uri, mode))
    assert outcome.status == "dropped"
    assert same_rows(expected, oracle.pyarrow_rows(path).unwrap())
    rewritten = [f for f in DeltaLog(path).snapshot().state().files.values() if "rewrite-" in f.decoded_path]
    assert len(rewritten) == 2
    assert all(isinstance(json.loads(f.stats)["minValues"]["x"], int) for f in rewritten)
