"""Deletion vector bytes (PROTOCOL.md "Deletion Vector Format", "Deletion Vector File Storage
Format"): the golden tables' DV files, round trips, a cross-check of our RoaringBitmapArray
framing against pyroaring's 64-bit bitmaps (CRoaring), and the errors a bad DV raises."""

from __future__ import annotations

import json
import random
import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pyroaring
import pytest

from delta_downgrade.protocol.actions import DeletionVectorDescriptor
from delta_downgrade.deletion_vectors import (
    MAGIC_NUMBER, DeletionVectorCardinalityError, DeletionVectorChecksumError, DeletionVectorError,
    DeletionVectorFormatError, DeletionVectorNotFoundError, DeletionVectorSizeError, DvFileReader,
    decode_inline, dv_data_cardinality, dv_file_bytes, encode_inline, inline_descriptor,
    parse_dv_data, parse_dv_runs, parse_portable_bitmap64, parse_roaring32, read_deletion_vector,
    row_index_list, serialize_bitmap, serialize_roaring32, write_dv_file,
)
from delta_downgrade.deletion_vectors import bitmap as dv_bitmap
from delta_downgrade.protocol.dv_paths import Z85_ALPHABET, dv_relative_path, z85_encode
from delta_downgrade.errors import CorruptLogError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.storage.local import LocalStorage

GOLDEN_DV_TABLES = ["dv_basic_no_checkpoint", "dv_partitioned_checkpoint", "dv_cm_name_checkpoint",
                    "dv_cdf_shared_dv_file_dbr"]


def roundtrip(values):
    return row_index_list(parse_dv_data(serialize_bitmap(values)))


# --- golden DV files ------------------------------------------------------------------------------

def _all_dv_actions(root: Path):
    """Every add/remove with a DV in every commit, plus the state (checkpointed DVs included)."""
    log = DeltaLog(str(root))
    snapshot = log.snapshot(check_read=False)
    found = {}
    state = snapshot.state()
    for action in [*state.files.values(), *state.tombstones.values()]:
        if action.dv is not None:
            found[(action.path, action.dv.unique_id)] = action
    for _version, actions in snapshot.iter_commit_actions():
        for action in actions:
            dv = getattr(action, "dv", None)
            if dv is not None:
                found[(action.path, dv.unique_id)] = action
    return list(found.values())


@pytest.mark.parametrize("name", GOLDEN_DV_TABLES)
def test_golden_dvs_decode_to_their_cardinality(golden_root, name):
    root = golden_root / name
    actions = _all_dv_actions(root)
    assert actions, f"{name} should reference deletion vectors"
    reader = DvFileReader(str(root))
    for action in actions:
        values = reader.read(action.dv, data_file=action.path)
        assert len(values) == action.dv.cardinality
        as_list = row_index_list(values)
        assert as_list == sorted(set(as_list))
        # The header-only count agrees without expanding the rows.
        data = reader.read_verified_bytes(action.dv, data_file=action.path)
        assert dv_data_cardinality(data) == action.dv.cardinality
        # Written again from its rows, the DV is the very bytes Delta wrote.
        assert serialize_bitmap(values) == bytes(data)
        # numRecords is the physical row count: every deleted index lies inside the file.
        stats = json.loads(action.stats) if action.stats else {}
        if "numRecords" in stats:
            assert as_list[-1] < stats["numRecords"]


def test_golden_basic_dv_deletes_rows_0_and_1(golden_root):
    # DELETE WHERE id < 2 on a file holding ids 0..4 in order.
    root = golden_root / "dv_basic_no_checkpoint"
    (add,) = [f for f in DeltaLog(str(root)).snapshot(check_read=False).state().files.values() if f.dv]
    assert row_index_list(read_deletion_vector(str(root), add.dv, data_file=add.path)) == [0, 1]


def test_golden_shared_dv_file_holds_two_dvs(golden_root):
    root = golden_root / "dv_cdf_shared_dv_file_dbr"
    by_file: dict[str, set[int]] = {}
    for action in _all_dv_actions(root):
        if action.dv.storageType == "u":
            by_file.setdefault(dv_relative_path(action.dv), set()).add(action.dv.offset)
    shared = {p: offs for p, offs in by_file.items() if len(offs) > 1}
    assert shared, "one DV file of this table holds two DVs"
    (path, offsets), = shared.items()
    assert offsets == {1, 43}
    raw = (root / path).read_bytes()
    assert raw[0] == 1  # format version
    for offset in offsets:
        size = struct.unpack(">I", raw[offset:offset + 4])[0]
        data = raw[offset + 4:offset + 4 + size]
        assert struct.unpack("<I", data[:4])[0] == MAGIC_NUMBER
        assert struct.unpack(">I", raw[offset + 4 + size:offset + 8 + size])[0] == zlib.crc32(data)


# --- round trips ----------------------------------------------------------------------------------

@pytest.mark.parametrize("values", [
    [],
    [0],
    [5, 3, 3, 1],                                      # unsorted, duplicates
    list(range(100)),                                  # one run
    list(range(0, 20000, 3)),                          # > 4096 values in one container: bitmap
    list(range(65530, 65545)),                         # crosses a container boundary
    [1, 70000, 140000, 2**20 + 7],                     # many containers
    [2**32 - 1, 2**32, 2**32 + 1, 2**40 + 12345],      # several buckets
    [2**63 - 1],                                       # the largest row index Delta allows
    list(range(10)) + list(range(50000, 120000)) + [2**33],
])
def test_roundtrip(values):
    assert roundtrip(values) == sorted(set(values))


def test_roundtrip_accepts_arrow_arrays():
    arr = pa.array([9, 2, 2, 7], pa.uint64())
    assert roundtrip(arr) == [2, 7, 9]


@pytest.mark.parametrize("bad", [[-1], [2**63], [2**64 + 3]])
def test_out_of_range_row_indexes_are_refused(bad):
    with pytest.raises(ValueError):
        serialize_bitmap(bad)


def test_run_containers_are_chosen_when_smaller():
    dense = list(range(0, 60000))
    with_runs = serialize_bitmap(dense)
    without = serialize_bitmap(dense, use_runs=False)
    assert len(with_runs) < 40 < len(without)
    assert roundtrip(dense) == dense
    assert row_index_list(parse_dv_data(without)) == dense


def test_layout_of_a_small_bitmap_matches_the_spec():
    # without runs: whether three values become a run or an array is the Roaring library's choice
    data = serialize_bitmap([1, 2, 3], use_runs=False)
    magic, buckets, key = struct.unpack_from("<IQI", data)
    assert (magic, buckets, key) == (MAGIC_NUMBER, 1, 0)
    cookie, size = struct.unpack_from("<II", data, 16)
    assert (cookie, size) == (12346, 1)  # no run container: cookie + container count
    container_key, card_minus_one, offset = struct.unpack_from("<HHI", data, 24)
    assert (container_key, card_minus_one, offset) == (0, 2, 16)
    assert struct.unpack_from("<3H", data, 32) == (1, 2, 3)


def test_run_cookie_bitmaps_without_offsets():
    # Fewer than 4 containers with a run container: no offset header (RoaringFormatSpec).
    values = list(range(0, 1000)) + [70000]
    body = serialize_roaring32(values)
    cookie = struct.unpack_from("<I", body)[0]
    assert cookie & 0xFFFF == 12347 and (cookie >> 16) + 1 == 2
    containers, end = parse_roaring32(body)
    assert end == len(body)
    assert [k for k, _ in containers] == [0, 1]


# --- cross-check against CRoaring (pyroaring) --------------------------------------------------------

def _random_set(rng: random.Random) -> list[int]:
    out: set[int] = set()
    for _ in range(rng.randint(1, 6)):
        kind = rng.choice(["sparse", "dense", "run", "far"])
        base = rng.choice([0, 65536 * rng.randint(0, 40), 2**32 * rng.randint(1, 3), 2**62])
        if kind == "sparse":
            out.update(base + rng.randrange(0, 1 << 18) for _ in range(rng.randint(1, 3000)))
        elif kind == "dense":
            out.update(base + rng.randrange(0, 1 << 16) for _ in range(rng.randint(5000, 30000)))
        elif kind == "run":
            start = base + rng.randrange(0, 1 << 17)
            out.update(range(start, start + rng.randint(1, 150000)))
        else:
            out.add(base + rng.randrange(0, 1 << 31))
    return sorted(out)


@pytest.mark.parametrize("seed", range(12))
def test_cross_check_with_pyroaring(seed):
    rng = random.Random(seed)
    values = _random_set(rng)
    ours = serialize_bitmap(values)
    # Our bytes, read by CRoaring.
    theirs = pyroaring.BitMap64.deserialize(ours[4:])
    assert list(theirs) == values
    # CRoaring's bytes (plain and run-optimized), read by us.
    ref = pyroaring.BitMap64(values)
    assert row_index_list(parse_portable_bitmap64(ref.serialize())[0]) == values
    ref.run_optimize()
    assert row_index_list(parse_portable_bitmap64(ref.serialize())[0]) == values
    # Both libraries pick the same containers (a run container when it is smaller): same bytes.
    assert serialize_bitmap(values)[4:] == ref.serialize()


def test_cross_check_without_run_containers():
    # Values that never touch give no runs anywhere: array and bitmap containers only.
    rng = random.Random(7)
    values = sorted({2 * rng.randrange(0, 1 << 22) for _ in range(60000)} | {2**35 + 2 * i for i in range(9000)})
    assert serialize_bitmap(values, use_runs=False) == serialize_bitmap(values)
    assert serialize_bitmap(values)[4:] == pyroaring.BitMap64(values).serialize()


@pytest.mark.parametrize("seed", range(6))
def test_cross_check_32_bit_bitmaps(seed):
    rng = random.Random(100 + seed)
    values = sorted({rng.randrange(0, 1 << 20) for _ in range(rng.randint(1, 50000))}
                    | set(range(rng.randrange(0, 1 << 20), rng.randrange(1 << 20, 1 << 21))))
    ref = pyroaring.BitMap(values)
    ref.run_optimize()
    assert serialize_roaring32(values) == ref.serialize()
    containers, end = parse_roaring32(ref.serialize())
    assert end == len(ref.serialize())
    got = [k << 16 | v for k, low in containers for v in low.to_pylist()]
    assert got == values
    assert pyroaring.BitMap.deserialize(serialize_roaring32(values)) == pyroaring.BitMap(values)


def test_header_and_contents_that_disagree_are_refused():
    # A run container whose header claims 51 values while its runs cover 100: the header-only
    # count and the decoded rows would disagree, so the bitmap is malformed.
    data = bytearray(serialize_bitmap(range(100)))
    struct.pack_into("<H", data, 16 + 7, 50)  # cookie (4) + run flags (1) + key (2), then card - 1
    assert dv_data_cardinality(bytes(data)) == 51
    with pytest.raises(DeletionVectorFormatError, match="headers say 51"):
        parse_dv_data(bytes(data))
    with pytest.raises(DeletionVectorFormatError, match="headers say 51"):
        parse_dv_runs(bytes(data))


def test_unsorted_array_container_is_refused():
    data = bytearray(serialize_bitmap([1, 2, 3], use_runs=False))
    struct.pack_into("<H", data, 32, 9)  # the first value of the array container: 9, 2, 3
    with pytest.raises(DeletionVectorFormatError, match="not strictly increasing"):
        parse_dv_data(bytes(data))


def test_runs_are_merged_across_decoding_windows(monkeypatch):
    # A bucket is expanded a window of row indexes at a time; a run crossing windows is one run.
    monkeypatch.setattr(dv_bitmap, "_RUNS_WINDOW", 1 << 16)
    values = list(range(0, 100_000, 2)) + list(range(100_001, 300_000)) + [2**32 + 5]
    starts, ends = parse_dv_runs(serialize_bitmap(values))
    assert starts.to_pylist()[-3:] == [99_998, 100_001, 2**32 + 5]
    assert ends.to_pylist()[-3:] == [99_998, 299_999, 2**32 + 5]
    assert len(starts) == 50_000 + 2


def test_runs_of_values_far_apart_jump_over_empty_windows(monkeypatch):
    # Windows holding no value are skipped, not walked: 2^62 / 2^16 steps would never end.
    monkeypatch.setattr(dv_bitmap, "_RUNS_WINDOW", 1 << 16)
    values = [*range(70_000), 2**40, 2**40 + 1, 2**62]
    starts, ends = parse_dv_runs(serialize_bitmap(values))
    assert starts.to_pylist() == [0, 2**40, 2**62]
    assert ends.to_pylist() == [69_999, 2**40 + 1, 2**62]


def test_large_bitmap_decodes_quickly():
    # A million scattered indexes (bitmap containers): Arrow expands them, not a Python loop.
    import time

    values = list(range(0, 4_000_000, 4))
    data = serialize_bitmap(values, use_runs=False)
    start = time.perf_counter()
    decoded = parse_dv_data(data)
    assert time.perf_counter() - start < 2.0
    assert len(decoded) == len(values) and decoded[-1].as_py() == values[-1]


# --- DV files ------------------------------------------------------------------------------------------

def test_write_dv_file_with_several_dvs(tmp_path):
    lists = [[0, 1, 2], list(range(10, 5000, 2)), [2**33]]
    descriptors = write_dv_file(str(tmp_path), lists, prefix="ab")
    assert len({d.pathOrInlineDv for d in descriptors}) == 1
    assert descriptors[0].offset == 1
    assert [d.cardinality for d in descriptors] == [3, len(range(10, 5000, 2)), 1]
    rel = dv_relative_path(descriptors[0])
    assert rel.startswith("ab/deletion_vector_") and (tmp_path / rel).is_file()
    reader = DvFileReader(str(tmp_path))
    for d, expected in zip(descriptors, lists):
        assert row_index_list(reader.read(d)) == expected
    raw = (tmp_path / rel).read_bytes()
    assert raw[0] == 1
    end = descriptors[-1].offset + 4 + descriptors[-1].sizeInBytes + 4
    assert end == len(raw)


def test_dv_file_bytes_offsets():
    data = [serialize_bitmap([1]), serialize_bitmap([2, 3])]
    content, offsets = dv_file_bytes(data)
    assert offsets == [1, 1 + 4 + len(data[0]) + 4]
    assert len(content) == 1 + sum(8 + len(d) for d in data)


def _one_dv(tmp_path, rows=(3, 4, 5)):
    (desc,) = write_dv_file(str(tmp_path), [list(rows)])
    return desc, tmp_path / dv_relative_path(desc)


def test_missing_dv_file_names_data_file_and_dv(tmp_path):
    desc, path = _one_dv(tmp_path)
    path.unlink()
    with pytest.raises(DeletionVectorNotFoundError) as info:
        read_deletion_vector(str(tmp_path), desc, data_file="part-0.parquet")
    err = info.value
    assert isinstance(err, CorruptLogError)
    assert err.error_class == "DELTA_DOWNGRADE_DV_FILE_NOT_FOUND"
    assert "part-0.parquet" in str(err) and dv_relative_path(desc) in str(err)
    assert "nothing was committed" in str(err).lower()
    assert err.params["dataFile"] == "part-0.parquet"
    assert err.exit_code == 2


def test_checksum_mismatch(tmp_path):
    desc, path = _one_dv(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[desc.offset + 4 + 10] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(DeletionVectorChecksumError) as info:
        read_deletion_vector(str(tmp_path), desc, data_file="f.parquet")
    assert info.value.error_class == "DELTA_DELETION_VECTOR_CHECKSUM_MISMATCH"
    assert "f.parquet" in str(info.value)


def test_size_mismatch_and_truncation(tmp_path):
    desc, path = _one_dv(tmp_path)
    wrong = DeletionVectorDescriptor(desc.storageType, desc.pathOrInlineDv, desc.sizeInBytes + 1,
                                     desc.cardinality, desc.offset)
    with pytest.raises(DeletionVectorSizeError) as info:
        read_deletion_vector(str(tmp_path), wrong)
    assert info.value.error_class == "DELTA_DELETION_VECTOR_SIZE_MISMATCH"
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(DeletionVectorSizeError):
        read_deletion_vector(str(tmp_path), desc)


def test_cardinality_mismatch(tmp_path):
    desc, _ = _one_dv(tmp_path)
    lying = DeletionVectorDescriptor(desc.storageType, desc.pathOrInlineDv, desc.sizeInBytes, 7, desc.offset)
    with pytest.raises(DeletionVectorCardinalityError):
        read_deletion_vector(str(tmp_path), lying)
    with pytest.raises(DeletionVectorCardinalityError):
        DvFileReader(str(tmp_path)).read_verified_bytes(lying)


def test_bad_version_byte_and_magic(tmp_path):
    desc, path = _one_dv(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[0] = 2
    path.write_bytes(bytes(raw))
    with pytest.raises(DeletionVectorError) as info:
        read_deletion_vector(str(tmp_path), desc)
    assert "version" in str(info.value)
    with pytest.raises(DeletionVectorFormatError):
        parse_dv_data(b"\x00\x00\x00\x00" + serialize_bitmap([1])[4:])


def test_absolute_path_dv(tmp_path):
    desc, path = _one_dv(tmp_path, rows=(8, 9))
    absolute = DeletionVectorDescriptor("p", path.as_uri(), desc.sizeInBytes, desc.cardinality, desc.offset)
    assert row_index_list(read_deletion_vector(str(tmp_path), absolute)) == [8, 9]
    outside = tmp_path.parent / f"outside-{tmp_path.name}.bin"
    outside.write_bytes(path.read_bytes())
    elsewhere = DeletionVectorDescriptor("p", outside.as_uri(), desc.sizeInBytes, desc.cardinality, desc.offset)
    assert row_index_list(read_deletion_vector(str(tmp_path), elsewhere)) == [8, 9]


class _RangeCountingStorage(LocalStorage):
    """A real local storage that records its ranged reads and refuses whole-file reads."""

    def __init__(self, root):
        super().__init__(root)
        self.ranges = []

    def read_range(self, rel_path, start, length):
        self.ranges.append((rel_path, start, length))
        return super().read_range(rel_path, start, length)

    def read_bytes(self, rel_path):
        raise AssertionError(f"{rel_path} read whole: a DV is read as its slice of the file")


def test_shared_dv_file_is_read_by_slices_once_each(tmp_path):
    """PROTOCOL.md "Deletion Vector Descriptor Schema": offset + sizeInBytes locate a DV in its
    file; only that slice is read (a ranged read on an object store), the version byte once per
    file, and a slice read again comes from the cache. (This test asserted one whole-file read
    before DVs were read through Storage.read_range.)"""
    descriptors = write_dv_file(str(tmp_path), [[1], [2], [3]])
    storage = _RangeCountingStorage(str(tmp_path))
    reader = DvFileReader(storage)
    assert [row_index_list(reader.read(d)) for d in descriptors] == [[1], [2], [3]]
    assert [row_index_list(reader.read(d)) for d in descriptors] == [[1], [2], [3]]
    rel = dv_relative_path(descriptors[0])
    first, second, third = descriptors
    assert storage.ranges == [
        (rel, 0, 1 + 4 + first.sizeInBytes + 4),  # the version byte and the first DV together
        (rel, second.offset, 4 + second.sizeInBytes + 4),
        (rel, third.offset, 4 + third.sizeInBytes + 4),
    ]


def test_dv_slice_past_the_end_of_its_file_is_a_size_error(tmp_path):
    (desc,) = write_dv_file(str(tmp_path), [[4, 5]])
    lying = DeletionVectorDescriptor("u", desc.pathOrInlineDv, desc.sizeInBytes, desc.cardinality, 500)
    with pytest.raises(DeletionVectorSizeError):
        DvFileReader(str(tmp_path)).read(lying)


# --- inline DVs ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("values", [[0], [1, 2, 3], list(range(7)), [2**40]])
def test_inline_descriptor_roundtrip(values):
    desc = inline_descriptor(values)
    assert desc.storageType == "i" and desc.offset is None
    assert desc.cardinality == len(values)
    assert len(desc.pathOrInlineDv) % 5 == 0
    assert desc.sizeInBytes == len(serialize_bitmap(values))
    assert row_index_list(read_deletion_vector("/nonexistent", desc)) == sorted(values)


def test_inline_kernel_example():
    # The inline example of delta-kernel-rs' tests (sizeInBytes 44, cardinality 6).
    desc = DeletionVectorDescriptor("i", "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 44, 6)
    assert row_index_list(read_deletion_vector("/nonexistent", desc)) == [3, 4, 7, 11, 18, 29]


def test_inline_partial_group_and_padding():
    data = serialize_bitmap([1, 2, 3], use_runs=False)
    assert len(data) % 4 == 2
    text = encode_inline(data)
    assert decode_inline(text, len(data)) == data
    # The "k + 1 characters for k trailing bytes" style of some Z85 libraries is accepted too.
    full = z85_encode(data[:len(data) - 2] + data[-2:] + b"\0\0")
    partial = full[:-5] + full[-5:-2]
    assert decode_inline(partial, len(data)) == data
    with pytest.raises(DeletionVectorError):
        read_deletion_vector("/x", DeletionVectorDescriptor("i", text, len(data) + 8, 3))
    assert Z85_ALPHABET[-1] == "#"


@pytest.mark.parametrize("values", [[], [5], [1, 2, 3, 7, 8, 65535, 65536, 65537, 2**33, 2**33 + 1],
                                    list(range(0, 200_000)) + list(range(300_000, 300_005, 2))])
def test_runs(values):
    starts, ends = parse_dv_runs(serialize_bitmap(values))
    expanded = [v for s, e in zip(starts.to_pylist(), ends.to_pylist()) for v in range(s, e + 1)]
    assert expanded == sorted(set(values))
    # Maximal runs, also across container boundaries.
    assert all(s > e_prev + 1 for s, e_prev in zip(starts.to_pylist()[1:], ends.to_pylist()))
