"""Deletion-vector file resolution (PROTOCOL.md "Deletion Vector Descriptor Schema")."""

from __future__ import annotations

import os
import random
import uuid

import pytest

from delta_downgrade.protocol.actions import DeletionVectorDescriptor
from delta_downgrade.protocol.dv_paths import (
    Z85_ALPHABET, dv_absolute_path, dv_relative_path, encode_uuid_dv, split_uuid_dv,
    table_relative_path, z85_decode, z85_encode,
)
from delta_downgrade.log.delta_log import DeltaLog


def _u(payload: str, offset: int | None = 1) -> DeletionVectorDescriptor:
    return DeletionVectorDescriptor("u", payload, sizeInBytes=36, cardinality=2, offset=offset)


# --- Z85 -----------------------------------------------------------------------------------------

def test_z85_reference_vector():
    # The test vector of the Z85 specification (ZeroMQ RFC 32).
    data = bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])
    assert z85_encode(data) == "HelloWorld"
    assert z85_decode("HelloWorld") == data


def test_z85_alphabet_is_85_distinct_characters():
    assert len(Z85_ALPHABET) == 85 == len(set(Z85_ALPHABET))


@pytest.mark.parametrize("data", [b"", b"\x00\x00\x00\x00", b"\xff" * 4, random.Random(16).randbytes(16),
                                  random.Random(64).randbytes(64)], ids=["empty", "zeros", "ones", "16", "64"])
def test_z85_round_trip(data):
    encoded = z85_encode(data)
    assert len(encoded) == len(data) // 4 * 5
    assert z85_decode(encoded) == data


def test_z85_extremes():
    assert z85_encode(b"\x00" * 4) == "00000"
    assert z85_encode(b"\xff" * 4) == "%nSc0"


@pytest.mark.parametrize("bad", ["abcd", "abcdef", "ab~cd", "ab cd", "#####"])
def test_z85_decode_rejects_bad_input(bad):
    # wrong length, characters outside the alphabet, a group above 2**32 - 1
    with pytest.raises(ValueError):
        z85_decode(bad)


def test_z85_encode_rejects_partial_groups():
    with pytest.raises(ValueError):
        z85_encode(b"abc")


# --- 'u' descriptors ---------------------------------------------------------------------------------

def test_golden_descriptor_decodes_to_its_uuid():
    # dv_basic_no_checkpoint: this payload names deletion_vector_899cef78-….bin
    prefix, dv_uuid = split_uuid_dv("IjB3V2d3#qUP%s94R0WF")
    assert prefix == ""
    assert str(dv_uuid) == "899cef78-06b3-4c14-b024-03860e62cd40"
    assert dv_relative_path(_u("IjB3V2d3#qUP%s94R0WF")) == \
        "deletion_vector_899cef78-06b3-4c14-b024-03860e62cd40.bin"


def test_random_prefix_is_a_directory():
    dv_uuid = uuid.uuid4()
    payload = encode_uuid_dv(dv_uuid, prefix="ab")
    assert len(payload) == 22
    assert split_uuid_dv(payload) == ("ab", dv_uuid)
    assert dv_relative_path(_u(payload)) == f"ab/deletion_vector_{dv_uuid}.bin"
    assert dv_absolute_path("/tmp/t", _u(payload)) == f"/tmp/t/ab/deletion_vector_{dv_uuid}.bin"


def test_accepts_raw_descriptor_dicts():
    dv_uuid = uuid.uuid4()
    raw = {"storageType": "u", "pathOrInlineDv": encode_uuid_dv(dv_uuid), "offset": 1,
           "sizeInBytes": 34, "cardinality": 1}
    assert dv_relative_path(raw) == f"deletion_vector_{dv_uuid}.bin"


def test_short_uuid_payload_is_rejected():
    with pytest.raises(ValueError):
        dv_relative_path(_u("tooShort"))


# --- 'i' and 'p' descriptors, unknown types -------------------------------------------------------

def test_inline_has_no_file():
    inline = DeletionVectorDescriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
                                      sizeInBytes=40, cardinality=6)
    assert dv_relative_path(inline) is None
    assert dv_absolute_path("/tmp/t", inline) is None


def test_absolute_path_inside_and_outside_the_table(tmp_path):
    root = tmp_path / "table"
    inside = DeletionVectorDescriptor("p", f"file://{root}/sub/my%20dv.bin", sizeInBytes=1, cardinality=1)
    outside = DeletionVectorDescriptor("p", f"file://{tmp_path}/other/dv.bin", sizeInBytes=1, cardinality=1)
    remote = DeletionVectorDescriptor("p", "s3://bucket/t/dv.bin", sizeInBytes=1, cardinality=1)
    assert dv_relative_path(inside, str(root)) == "sub/my dv.bin"
    assert dv_relative_path(inside) is None  # no table root: cannot tell
    assert dv_relative_path(outside, str(root)) is None
    assert dv_relative_path(remote, str(root)) is None
    assert dv_absolute_path(str(root), inside) == f"{root}/sub/my dv.bin"
    assert dv_absolute_path(str(root), remote) is None


def test_unknown_storage_type_is_rejected():
    with pytest.raises(ValueError):
        dv_relative_path(DeletionVectorDescriptor("x", "whatever", sizeInBytes=1, cardinality=1))


# --- paths of the log ----------------------------------------------------------------------------------

def test_table_relative_path(tmp_path):
    root = str(tmp_path / "t")
    assert table_relative_path(root, "part-0.parquet") == "part-0.parquet"
    assert table_relative_path(root, "p=a%20b/part-0.parquet") == "p=a b/part-0.parquet"
    assert table_relative_path(root, f"file://{root}/x/part-0.parquet") == "x/part-0.parquet"
    assert table_relative_path(root, f"{root}/x/part-0.parquet") == "x/part-0.parquet"
    assert table_relative_path(root, f"file://{tmp_path}/elsewhere.parquet") is None
    assert table_relative_path(root, f"file://{root}2/x.parquet") is None  # a sibling, not inside
    assert table_relative_path(root, "s3://bucket/t/part-0.parquet") is None
    assert table_relative_path(root, "../escape.parquet") is None


# --- golden tables ---------------------------------------------------------------------------------

def _referenced_dv_paths(table: str) -> set[str]:
    state = DeltaLog(table).snapshot().state()
    out = set()
    for action in [*state.files.values(), *state.tombstones.values()]:
        if action.dv is not None:
            relative = dv_relative_path(action.dv, table)
            if relative is not None:
                out.add(relative)
    return out


@pytest.mark.parametrize("name, count", [
    ("dv_basic_no_checkpoint", 1),
    ("dv_partitioned_checkpoint", 10),   # descriptors from a classic checkpoint too
    ("dv_cdf_shared_dv_file_dbr", 9),    # one .bin holds two DVs (offsets 1 and 43)
])
def test_golden_dv_files_resolve_and_exist(golden_root, name, count):
    table = str(golden_root / name)
    paths = _referenced_dv_paths(table)
    assert len(paths) == count
    for relative in paths:
        assert relative.startswith("deletion_vector_") and relative.endswith(".bin")
        assert os.path.isfile(os.path.join(table, relative)), relative


def test_golden_shared_dv_file_is_one_path_for_two_descriptors(golden_root):
    table = str(golden_root / "dv_cdf_shared_dv_file_dbr")
    state = DeltaLog(table).snapshot().state()
    by_path: dict[str, set[int | None]] = {}
    for action in [*state.files.values(), *state.tombstones.values()]:
        if action.dv is not None:
            by_path.setdefault(dv_relative_path(action.dv), set()).add(action.dv.offset)
    assert any(len(offsets) > 1 for offsets in by_path.values())


def test_golden_unresolvable_dv_does_not_resolve_to_its_test_prefixed_file(golden_root):
    table = golden_root / "bad_dv_file_unresolvable"
    paths = _referenced_dv_paths(str(table))
    assert paths == {"deletion_vector_b6a98cdd-7843-470d-8897-708cdffa38c5.bin"}
    (relative,) = paths
    assert not (table / relative).exists()
    # the file that is there carries delta-spark's test-only prefix, which the spec does not know
    assert (table / f"test%dv%prefix-{relative}").exists()


def test_absolute_paths_against_an_object_store_root():
    from delta_downgrade.protocol.dv_paths import parent_and_name, table_relative_path

    root = "s3://bucket/tables/t"
    assert table_relative_path(root, "s3://bucket/tables/t/p%3D1/dv%20a.bin") == "p=1/dv a.bin"
    assert table_relative_path(root + "/", "s3://bucket/tables/t/x.bin") == "x.bin"
    assert table_relative_path(root, "s3://bucket/tables/t2/x.bin") is None  # a sibling, not inside
    assert table_relative_path(root, "s3://other/tables/t/x.bin") is None
    assert table_relative_path(root, "abfss://bucket/tables/t/x.bin") is None
    assert table_relative_path(root, "s3://bucket/tables/t/../u/x.bin") is None
    assert table_relative_path("file:///data/t", "file:/data/t/a%20b.bin") == "a b.bin"
    assert parent_and_name("s3://b/other/dv%20x.bin") == ("s3://b/other", "dv x.bin")
    assert parent_and_name("file:/data/x/dv.bin") == ("file:/data/x", "dv.bin")
