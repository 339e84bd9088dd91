"""The delta-rs oracle works on golden copies, and a failed or crashed check is never a pass."""

from __future__ import annotations

from pathlib import Path

from tests.oracle import DeltaRsOracle, OracleResult, same_rows


def test_dv_table_scan_reads_deletion_vectors(oracle, golden_table):
    path = golden_table("dv_basic_no_checkpoint")

    proto = oracle.protocol(path).unwrap()
    assert proto == {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors"],
        "writerFeatures": ["deletionVectors"],
    }
    assert oracle.version(path).unwrap() == 1

    rows = oracle.scan_rows(path).unwrap()
    assert len(rows) == 8
    assert same_rows(rows, [{"id": i} for i in range(9, 1, -1)])
    # version 0 predates the DELETE that wrote the DV
    assert len(oracle.scan_rows(path, version=0).unwrap()) == 10


def test_dv_table_refused_by_pyarrow_path(oracle, golden_table):
    path = golden_table("dv_basic_no_checkpoint")
    res = oracle.pyarrow_rows(path)
    assert not res.ok
    assert "DeltaProtocolError" in res.error
    assert "deletionVectors" in res.error


def test_classic_checkpoint_protocol_and_both_read_paths_agree(oracle, golden_table):
    path = golden_table("classic_checkpoint")
    proto = oracle.protocol(path).unwrap()
    assert (proto["minReaderVersion"], proto["minWriterVersion"]) == (1, 2)
    assert proto["readerFeatures"] is None and proto["writerFeatures"] is None

    scanned = oracle.scan_rows(path)
    assert scanned.ok and len(scanned.value) == 5
    assert same_rows(scanned, oracle.pyarrow_rows(path))
    files = oracle.files(path).unwrap()
    assert files and all(f.endswith(".parquet") for f in files)
    assert isinstance(oracle.metadata_configuration(path).unwrap(), dict)


def test_create_checkpoint_on_copy(oracle, golden_table, golden_root):
    path = golden_table("dv_basic_no_checkpoint")
    assert oracle.create_checkpoint(path).unwrap() == 1
    assert (Path(path) / "_delta_log" / "00000000000000000001.checkpoint.parquet").exists()
    assert len(oracle.scan_rows(path).unwrap()) == 8
    # the golden original is untouched
    assert not list((golden_root / "dv_basic_no_checkpoint" / "_delta_log").glob("*.checkpoint*"))


def test_missing_table_is_a_failed_check(oracle, tmp_path):
    res = oracle.protocol(tmp_path / "does-not-exist")
    assert isinstance(res, OracleResult)
    assert not res.ok and res.value is None
    assert "TableNotFoundError" in res.error


def test_subprocess_crash_is_a_failed_check(tmp_path):
    # An interpreter that dies without printing a result (like an abort in delta-rs).
    crasher = tmp_path / "crash.sh"
    crasher.write_text("#!/bin/sh\necho 'fatal runtime error' >&2\nkill -ABRT $$\n")
    crasher.chmod(0o755)
    res = DeltaRsOracle(python=str(crasher)).version(tmp_path)
    assert not res.ok
    assert res.error.startswith("crash:") and "fatal runtime error" in res.error
    assert not same_rows(res, res)


def test_timeout_is_a_failed_check(tmp_path):
    sleeper = tmp_path / "sleep.sh"
    sleeper.write_text("#!/bin/sh\nexec sleep 30\n")
    sleeper.chmod(0o755)
    res = DeltaRsOracle(python=str(sleeper), timeout=0.5).version(tmp_path)
    assert not res.ok and res.error.startswith("timeout:")
