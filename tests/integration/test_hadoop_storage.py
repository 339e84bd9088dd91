"""HadoopStorage through a real Spark JVM, on file:// (Hadoop's local file system): the log reads
the same as with LocalStorage, commits are put-if-absent, and non-atomic schemes refuse."""

from __future__ import annotations

import pytest

from delta_downgrade.errors import CommitFileExistsError, StorageNotAtomicError
from delta_downgrade.log.commit import commit
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.storage.hadoop import HadoopStorage, scheme_of

#: The JVM path itself: a Spark Connect session has no JVM here and refuses Hadoop storage
#: (tests/unit/storage/test_registry.py, test_hadoop_storage_refuses_a_connect_session below).
CLASSIC = pytest.mark.classic_spark(reason="Hadoop FileSystem storage lives in a classic session's JVM")


@CLASSIC
def test_reads_the_same_as_local_storage(spark, golden_table):
    path = golden_table("dv_partitioned_checkpoint")
    local = DeltaLog(path).snapshot()
    hadoop = DeltaLog(path, HadoopStorage(f"file://{path}", spark)).snapshot()
    assert hadoop.version == local.version and hadoop.protocol == local.protocol
    assert set(hadoop.state().files) == set(local.state().files)


@CLASSIC
def test_put_if_absent_and_commit(spark, golden_table):
    path = golden_table("classic_checkpoint")
    storage = HadoopStorage(f"file://{path}", spark)
    log = DeltaLog(path, storage)
    version = log.latest_version()
    assert commit(log, version, [], operation="Empty Commit") == version + 1
    with pytest.raises(CommitFileExistsError):
        storage.put_if_absent(f"_delta_log/{version + 1:020d}.json", b"{}\n")
    assert DeltaLog(path).latest_version() == version + 1


def test_s3_refuses_to_commit():
    assert scheme_of("s3a://bucket/t") == "s3a"

    class Fake(HadoopStorage):
        def __init__(self) -> None:  # no JVM needed for the refusal
            self.root = "s3a://bucket/t"
            self.atomic_put_if_absent = False

    with pytest.raises(StorageNotAtomicError):
        Fake().put_if_absent("_delta_log/00000000000000000001.json", b"{}")


@CLASSIC
def test_walk_files_matches_local(spark, golden_table):
    from delta_downgrade.storage.local import LocalStorage

    path = golden_table("dv_partitioned_checkpoint")
    ours = sorted(s.path for s in HadoopStorage(f"file://{path}", spark).walk_files())
    # Hadoop's local file system hides its own checksum companions (.name.crc).
    local = sorted(s.path for s in LocalStorage(path).walk_files()
                   if not (s.path.rsplit("/", 1)[-1].startswith(".") and s.path.endswith(".crc")))
    assert ours == local and len(ours) > 50


@CLASSIC
def test_v2_checkpoint_through_hadoop_storage(spark, golden_table):
    # Sidecars in _delta_log/_sidecars (a directory Hadoop creates on the first write), their
    # sizes and times from Hadoop's file status, then the top-level file and _last_checkpoint.
    from delta_downgrade.clock import ManualClock
    from delta_downgrade.log.checkpoint.on_driver import checkpoint_table

    path = golden_table("v2_checkpoint_json_sidecars")
    storage = HadoopStorage(f"file://{path}", spark)
    expected = set(DeltaLog(path).snapshot().state().files)
    result = checkpoint_table(DeltaLog(path, storage), clock=ManualClock(), part_size=2)
    assert result.checkpoint_kind == "v2" and len(result.sidecars) == 2
    for rel in result.paths:
        assert storage.status(rel).size > 0
    local = DeltaLog(path).snapshot()
    assert local.segment.checkpoint.paths == result.checkpoint_files
    assert set(local.state().files) == expected


@CLASSIC
def test_copy_file_through_hadoop_storage(spark, tmp_path):
    """A checkpoint part copied under another name replaces an old file; a source that is gone or
    of another size writes nothing."""
    (tmp_path / "_delta_log").mkdir()
    storage = HadoopStorage(f"file://{tmp_path}", spark)
    source = "_delta_log/00000000000000000003.checkpoint.parquet"
    target = "_delta_log/00000000000000000004.checkpoint.parquet"
    content = b"PAR1" + bytes(range(256)) * 16 + b"PAR1"
    storage.write_atomic(source, content)
    storage.write_atomic(target, b"older")
    assert storage.copy_file(source, target, len(content) + 1) is False
    assert storage.read_bytes(target) == b"older"
    assert storage.copy_file("_delta_log/00000000000000000002.checkpoint.parquet", target, len(content)) is False
    assert storage.copy_file(source, target, len(content)) is True
    assert storage.read_bytes(target) == content == storage.read_bytes(source)
    assert sorted(s.path for s in storage.list_dir("_delta_log")) == [source, target]
    # absent, as the Storage interface says it: what the copy above took for a file gone
    gone = "_delta_log/00000000000000000002.checkpoint.parquet"
    for absent in (lambda: storage.read_bytes(gone), lambda: storage.status(gone)):
        with pytest.raises(FileNotFoundError, match="00000000000000000002.checkpoint.parquet"):
            absent()


def test_hadoop_storage_refuses_a_connect_session(spark, golden_table):
    from delta_downgrade.errors import UnsupportedStorageError
    from delta_downgrade.spark import is_connect_session

    if not is_connect_session(spark):
        pytest.skip("the refusal is Spark Connect's (pytest --spark-connect)")
    path = golden_table("classic_checkpoint")
    with pytest.raises(UnsupportedStorageError) as info:
        HadoopStorage(f"file://{path}", spark)
    assert info.value.exit_code == 2 and "classic" in info.value.message
