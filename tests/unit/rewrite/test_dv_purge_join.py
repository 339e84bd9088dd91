"""The DV purge's join keys and deleted-row masks (rewrite/dv_purge_join.py); no Spark."""

from __future__ import annotations

import json
import zlib

import pyarrow as pa

from delta_downgrade.protocol.actions import AddFile
from delta_downgrade.rewrite.dv_purge_join import deleted_masks, join_key, unique_residue_modulus
from delta_downgrade.rewrite.dv_purge_plan import PurgeFile, PurgeGroup

DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*", "offset": 1, "sizeInBytes": 36, "cardinality": 2}


def _file(path: str, size: int = 100, records: int = 10) -> PurgeFile:
    add = AddFile(path=path, partitionValues={}, size=size, stats=json.dumps({"numRecords": records}),
                  deletionVector=DV)
    return PurgeFile(add=add, dv=add.dv, spark_path="/t/" + path, out_dir=path.rpartition("/")[0],
                     num_records=records)


# --- join keys ----------------------------------------------------------------------------------------

def test_unique_residue_modulus():
    assert unique_residue_modulus([10, 11]) == 2
    assert unique_residue_modulus([4, 8, 12]) == 16
    assert unique_residue_modulus([5, 5]) is None
    assert unique_residue_modulus([]) is None
    k = unique_residue_modulus([1 << 40, 2 << 40, 3 << 40])
    assert k is None  # equal below bit 20: no modulus ≤ 2^20 separates them


def _group(files):
    return PurgeGroup(list(enumerate(files)), "", {})


def test_join_key_prefers_sizes_then_name_hashes_then_names():
    by_size = join_key(_group([_file("a.parquet", size=100), _file("b.parquet", size=101)]))
    assert by_size.mode == "size" and by_size.modulus == 2 and by_size.residues == {0: 0, 1: 1}
    same_size = join_key(_group([_file("a.parquet"), _file("b.parquet")]))
    assert same_size.mode == "crc"
    k = same_size.modulus
    assert same_size.residues == {0: zlib.crc32(b"a.parquet") & (k - 1), 1: zlib.crc32(b"b.parquet") & (k - 1)}
    odd_names = join_key(_group([_file("a%20b.parquet"), _file("c.parquet")]))
    assert odd_names.mode == "name" and odd_names.modulus is None
    assert odd_names.names[0] == "a b.parquet"
    assert join_key(_group([_file("a.parquet", size=1), _file("b.parquet", size=2)]), allow_packed=False).mode == "name"


def test_deleted_masks():
    values = pa.array([0, 1, 63, 64, 130, 2**40 + 5], pa.uint64())
    blocks, masks = deleted_masks(values)
    assert blocks.to_pylist() == [0, 1, 2, 2**34]
    assert masks.to_pylist()[0] == (1 | 2 | (1 << 63)) - (1 << 64)  # bit 63 makes it negative
    assert masks.to_pylist()[1:] == [1, 1 << 2, 1 << 5]
    full_blocks, full_masks = deleted_masks(pa.array(range(128), pa.uint64()))
    assert full_blocks.to_pylist() == [0, 1] and full_masks.to_pylist() == [-1, -1]
    empty = deleted_masks(pa.array([], pa.uint64()))
    assert len(empty[0]) == 0
