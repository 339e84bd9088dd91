"""The clustering provider of the files the DV purge writes (rewrite/dv_purge._batch_actions;
PROTOCOL.md "Clustered Table": a file whose clusteringProvider is unset is unclustered, so a new
file made of rows of differently clustered files gets none)."""

from __future__ import annotations

from delta_downgrade.protocol.actions import AddFile, DeletionVectorDescriptor
from delta_downgrade.rewrite.dv_purge import NewFile, _Batch, _batch_actions
from delta_downgrade.rewrite.dv_purge_plan import PurgeFile, group_batch


def _file(name: str, provider: str | None, cardinality: int = 1) -> PurgeFile:
    dv = DeletionVectorDescriptor(storageType="i", pathOrInlineDv="x", offset=None, sizeInBytes=1,
                                  cardinality=cardinality)
    add = AddFile(path=name, partitionValues={}, size=10, modificationTime=1, dataChange=True,
                  stats='{"numRecords":4}', deletionVector=dv.to_obj(), clusteringProvider=provider)
    return PurgeFile(add=add, dv=dv, spark_path=name, out_dir="", num_records=4)


def _adds_of(files: list[PurgeFile]) -> list[AddFile]:
    batch = _Batch(files, group_batch(files))
    [group] = batch.groups
    batch.new_files = {group.dir_name: [NewFile(path=f"{group.dir_name}/n{i}.parquet", size=5, modification_time=2,
                                                num_records=3, stats='{"numRecords":3}') for i in range(2)]}
    return [a for a in _batch_actions(batch, 100) if isinstance(a, AddFile)]


def test_new_files_keep_a_common_provider():
    adds = _adds_of([_file("a.parquet", "liquid"), _file("b.parquet", "liquid")])
    assert [a.clusteringProvider for a in adds] == ["liquid", "liquid"]


def test_new_files_of_mixed_providers_get_none():
    for providers in (["liquid", None], ["liquid", "other"]):
        adds = _adds_of([_file(f"{i}.parquet", p) for i, p in enumerate(providers)])
        assert [a.clusteringProvider for a in adds] == [None, None]


def test_a_dv_deleting_nothing_keeps_the_file_and_its_provider():
    adds = _adds_of([_file("a.parquet", "liquid", cardinality=0), _file("b.parquet", "liquid")])
    same = [a for a in adds if a.path == "a.parquet"]
    assert len(same) == 1 and same[0].clusteringProvider == "liquid" and same[0].deletionVector is None
