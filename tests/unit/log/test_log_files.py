"""Log file names (delta_downgrade.log.format.file_names): format, parse, round trip, tolerance."""

from __future__ import annotations

import pytest

from delta_downgrade.log.format import file_names as f
from delta_downgrade.log.format.file_names import LogFile, classify, parse_log_file

V = "00000000000000000042"


def test_constants():
    assert f.LOG_DIR == "_delta_log"
    assert f.LAST_CHECKPOINT == "_delta_log/_last_checkpoint"
    assert f.SIDECAR_DIR == "_delta_log/_sidecars"
    assert f.STAGED_COMMITS_DIR == "_delta_log/_staged_commits"


def test_format_names():
    assert f.commit_path(3) == "_delta_log/00000000000000000003.json"
    assert f.classic_checkpoint_path(10) == "_delta_log/00000000000000000010.checkpoint.parquet"
    assert (f.multipart_checkpoint_path(10, 2, 3)
            == "_delta_log/00000000000000000010.checkpoint.0000000002.0000000003.parquet")
    assert f.multipart_checkpoint_paths(10, 2) == [
        "_delta_log/00000000000000000010.checkpoint.0000000001.0000000002.parquet",
        "_delta_log/00000000000000000010.checkpoint.0000000002.0000000002.parquet",
    ]
    uuid = "80a083e8-7026-4e79-81be-64bd76c43a11"
    assert (f.v2_checkpoint_path(10, uuid)
            == f"_delta_log/00000000000000000010.checkpoint.{uuid}.json")
    assert (f.v2_checkpoint_path(10, uuid, "parquet")
            == f"_delta_log/00000000000000000010.checkpoint.{uuid}.parquet")
    assert f.crc_path(7) == "_delta_log/00000000000000000007.crc"
    assert (f.compacted_path(4, 6)
            == "_delta_log/00000000000000000004.00000000000000000006.compacted.json")
    assert (f.staged_commit_path(1, uuid)
            == f"_delta_log/_staged_commits/00000000000000000001.{uuid}.json")
    assert f.sidecar_path(f"{uuid}.parquet") == f"_delta_log/_sidecars/{uuid}.parquet"
    assert f.listing_prefix(5) == "_delta_log/00000000000000000005"
    # the largest version Delta can have (a Java long) still has 20 digits
    assert f.commit_path(2**63 - 1) == "_delta_log/09223372036854775807.json"


@pytest.mark.parametrize("call", [
    lambda: f.commit_path(-1),
    lambda: f.commit_path(True),
    lambda: f.commit_path(1.0),
    lambda: f.multipart_checkpoint_path(1, 0, 2),
    lambda: f.multipart_checkpoint_path(1, 3, 2),
    lambda: f.v2_checkpoint_path(1, "a.b"),
    lambda: f.v2_checkpoint_path(1, "abc", "avro"),
    lambda: f.compacted_path(5, 5),
    lambda: f.staged_commit_path(1, ""),
    lambda: f.sidecar_path("a/b.parquet"),
])
def test_format_rejects_bad_arguments(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("path, expected", [
    (f.commit_path(42), LogFile(f"_delta_log/{V}.json", 42, "commit", fmt="json")),
    (f.classic_checkpoint_path(42),
     LogFile(f"_delta_log/{V}.checkpoint.parquet", 42, "checkpoint", fmt="parquet")),
    (f.multipart_checkpoint_path(42, 2, 3),
     LogFile(f"_delta_log/{V}.checkpoint.0000000002.0000000003.parquet", 42, "checkpoint",
             part=2, num_parts=3, fmt="parquet")),
    (f.v2_checkpoint_path(42, "u-1", "parquet"),
     LogFile(f"_delta_log/{V}.checkpoint.u-1.parquet", 42, "checkpoint", uuid="u-1",
             fmt="parquet")),
    (f.crc_path(42), LogFile(f"_delta_log/{V}.crc", 42, "crc")),
    (f.compacted_path(42, 50),
     LogFile(f"_delta_log/{V}.00000000000000000050.compacted.json", 42, "compacted",
             end_version=50, fmt="json")),
    (f.staged_commit_path(42, "u-2"),
     LogFile(f"_delta_log/_staged_commits/{V}.u-2.json", 42, "staged_commit", uuid="u-2",
             fmt="json")),
    (f.sidecar_path("s.parquet"),
     LogFile("_delta_log/_sidecars/s.parquet", None, "sidecar", fmt="parquet")),
    (f.LAST_CHECKPOINT, LogFile("_delta_log/_last_checkpoint", None, "last_checkpoint")),
])
def test_round_trip(path, expected):
    assert parse_log_file(path) == expected
    assert classify(path) == expected


def test_a_bare_commit_name_is_the_same_frozen_log_file_as_any_other():
    """A bare commit name (the bulk of a listing) is made by LogFile.commit: equal, hashed and
    shown alike, and as frozen."""
    import msgspec.structs

    made = classify(f"{V}.json")
    expected = LogFile(f"_delta_log/{V}.json", 42, "commit", fmt="json")
    assert made == expected and hash(made) == hash(expected) and repr(made) == repr(expected)
    assert msgspec.structs.astuple(made) == msgspec.structs.astuple(expected)
    with pytest.raises(AttributeError):
        made.version = 43  # type: ignore[misc]  # frozen: the assignment is what is tested


def test_checkpoint_kind():
    assert parse_log_file(f.classic_checkpoint_path(1)).checkpoint_kind == "classic"
    assert parse_log_file(f.multipart_checkpoint_path(1, 1, 2)).checkpoint_kind == "multipart"
    assert parse_log_file(f.v2_checkpoint_path(1, "abc")).checkpoint_kind == "v2"
    assert parse_log_file(f.commit_path(1)).checkpoint_kind is None
    assert parse_log_file(f.commit_path(1)).is_checkpoint is False
    assert parse_log_file(f.v2_checkpoint_path(1, "abc")).is_checkpoint is True


@pytest.mark.parametrize("name", [
    f"{V}.json",                                   # bare file name
    f"_delta_log/{V}.json",                        # table-root relative
    f"/data/tables/t1/_delta_log/{V}.json",        # absolute path
    f"file:///data/t1/_delta_log/{V}.json",        # URI
    f"s3://bucket/t/_delta_log/{V}.json",
])
def test_accepted_spellings_of_a_commit(name):
    lf = parse_log_file(name)
    assert lf == LogFile(f"_delta_log/{V}.json", 42, "commit", fmt="json")
    assert lf.name == f"{V}.json"


def test_log_relative_spellings_of_subdirectories():
    assert parse_log_file(f"_staged_commits/{V}.abc.json").kind == "staged_commit"
    assert parse_log_file("_sidecars/x.parquet").path == "_delta_log/_sidecars/x.parquet"
    assert parse_log_file("/t/_delta_log/_sidecars/x.parquet").kind == "sidecar"


@pytest.mark.parametrize("name", [
    "3.json",                                                    # not zero padded
    "0000000000000000003.json",                                  # 19 digits
    "000000000000000000003.json",                                # 21 digits
    f".{V}.json.crc",                                            # Hadoop checksum file
    f".{V}.json.1b2c.tmp",                                       # temp file
    f"{V}.json.tmp",
    f"{V}.checkpoint.parquet.crc",
    f"{V}.checkpoint.1.2.parquet",                               # parts not padded to 10
    f"{V}.checkpoint.0000000003.0000000002.parquet",             # part > numParts
    f"{V}.checkpoint.0000000000.0000000002.parquet",             # part 0
    f"{V}.checkpoint.u.avro",
    f"{V}.00000000000000000042.compacted.json",                  # empty range
    f"{V}.00000000000000000041.compacted.json",                  # backwards range
    f"{V}.CRC",
    "_commits/00000000000000000001.json",
    "_delta_log/_sidecars/x.json",
    "_delta_log/_staged_commits/x.json",
    "_delta_log/_staged_commits/nested/00000000000000000001.a.json",
    "part-00000-1234.snappy.parquet/extra",
    "data/part-0000.parquet",
    "_last_checkpoint.tmp",
    "",
])
def test_unknown_names_are_tolerated(name):
    assert parse_log_file(name) is None
    lf = classify(name)
    assert lf.kind == "unknown" and lf.version is None


def test_classify_covers_all_kinds():
    kinds = {classify(p).kind for p in (
        f.commit_path(1), f.classic_checkpoint_path(1), f.crc_path(1), f.compacted_path(1, 2),
        f.staged_commit_path(1, "a"), f.sidecar_path("a.parquet"), f.LAST_CHECKPOINT, "junk/x")}
    assert kinds == f.KINDS


def test_lexicographic_order_is_version_order():
    names = [f.commit_path(v) for v in (0, 9, 10, 99, 100, 12345)]
    assert sorted(names) == names
    assert [parse_log_file(n).version for n in sorted(names)] == [0, 9, 10, 99, 100, 12345]


def test_golden_log_names_parse(golden_root):
    """Every name in every golden _delta_log is a known log file, a Hadoop checksum
    (``.<name>.crc``) or a file of another subdirectory (Databricks ``_autostats/``): readers
    ignore the latter two."""
    seen: dict[str, int] = {}
    for log_dir in sorted(golden_root.glob("*/_delta_log")):
        for p in log_dir.rglob("*"):
            if p.is_dir():
                continue
            rel = p.relative_to(log_dir.parent).as_posix()
            lf = parse_log_file(rel)
            if lf is None:
                assert p.name.startswith(".") or rel.startswith("_delta_log/_autostats/"), rel
                continue
            assert lf.path == rel
            key = lf.checkpoint_kind or lf.kind
            seen[key] = seen.get(key, 0) + 1
    for kind in ("commit", "classic", "multipart", "v2", "crc", "last_checkpoint", "sidecar"):
        assert seen.get(kind), f"no golden {kind} file parsed: {seen}"
