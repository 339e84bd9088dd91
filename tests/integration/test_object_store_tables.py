"""Golden tables on real object-store endpoints (moto S3, Azurite, fake-gcs-server): what the
package reports and writes there equals what it does on local disk, and delta-rs reads the result
from the bucket.

- ``inspect`` of every golden table uploaded to each endpoint equals the local report but for the table's location and the latest commit's time (an upload gives
  every object a new modification time); a table the package refuses locally is refused there with
  the same error class.
- ``drop-feature vacuumProtocolCheck`` then ``truncate-history`` reach protocol (1,2) on S3 and on
  Azure, and deltalake 1.6.6 reads rows equal to the original's from the bucket.

On S3 the log is back-dated in moto's backend (S3 has no API to set a modification time); Azurite
has no such hook, so the Azure truncation runs the operation with a clock moved past the retention
(the same rule, the other side of the comparison).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from delta_downgrade.app.render.inspect import inspect_document
from delta_downgrade.clock import ManualClock
from delta_downgrade.errors import DeltaDowngradeError
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.operations.inspect import inspect_table
from tests.object_stores import Endpoint
from tests.oracle import same_rows
from tests.process_support import run_cli

pytestmark = pytest.mark.golden

def _golden_names(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if (p / "_delta_log").is_dir())


def _comparable(document: dict) -> dict:
    """The inspect document without what differs by location: the table's URI and the latest
    commit's modification time."""
    return {k: v for k, v in document.items() if k not in ("table", "timestamp")}


def _report(location: str, options: dict[str, str] | None = None) -> dict:
    """The inspect document, or the error class of a refusal."""
    try:
        return _comparable(inspect_document(inspect_table(location, storage_options=options)))
    except DeltaDowngradeError as exc:
        return {"error_class": exc.error_class}


def test_inspect_equals_local(object_store: Endpoint, golden_root: Path) -> None:
    names = _golden_names(golden_root)
    assert names, "no golden tables"
    differences = {}
    for name in names:
        local = _report(str(golden_root / name))
        uri = object_store.upload(golden_root / name, name)
        remote = _report(uri, object_store.storage_options)
        if remote != local:
            differences[name] = (local, remote)
    assert not differences, json.dumps(differences, indent=1, default=str)[:4000]


def _cli(*args: str, options: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    flags = [f for key, value in options.items() for f in ("--storage-option", f"{key}={value}")]
    return run_cli(*args, *flags, timeout=timeout)


def test_inspect_cli_json_on_the_bucket(object_store: Endpoint, golden_root: Path) -> None:
    name = "v2_checkpoint_parquet_sidecars"
    uri = object_store.upload(golden_root / name, name)
    done = _cli("inspect", uri, "--json", options=object_store.storage_options)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["table"] == uri
    # The CLI's document is inspect's with the RESULT fields added (the output contract).
    result = {k: document.pop(k) for k in ("command", "status", "exit_code", "min_reader_version",
                                           "min_writer_version", "reader_features", "writer_features",
                                           "boundary_version", "protected_checkpoint_versions")}
    assert (result["command"], result["status"], result["exit_code"]) == ("inspect", "inspected", 0)
    assert result["min_reader_version"] == document["protocol"]["minReaderVersion"]
    assert _comparable(document) == _report(str(golden_root / name))


def _protocol(uri: str, options: dict[str, str]) -> tuple:
    protocol = inspect_table(uri, history=False, storage_options=options).protocol
    return (protocol.min_reader_version, protocol.min_writer_version,
            sorted(protocol.reader_features or []), sorted(protocol.writer_features or []))


def _drop_vacuum_protocol_check(endpoint: Endpoint, golden_root: Path) -> str:
    uri = endpoint.upload(golden_root / "vacuum_protocol_check", "vpc")
    done = _cli("drop-feature", uri, "vacuumProtocolCheck", options=endpoint.storage_options)
    assert done.returncode == 0, done.stdout + done.stderr
    after = _protocol(uri, endpoint.storage_options)
    assert "vacuumProtocolCheck" not in after[2] + after[3]
    assert "checkpointProtection" in after[3], after
    return uri


@pytest.mark.slow
def test_drop_then_truncate_on_s3(s3_endpoint: Endpoint, golden_root: Path, oracle, duckdb_reader) -> None:
    uri = _drop_vacuum_protocol_check(s3_endpoint, golden_root)
    # Back-date the whole log past delta.dropFeatureTruncateHistory.retentionDuration (24 h).
    old = int(time.time() * 1000) - 3 * 86_400_000
    for key in s3_endpoint.keys("vpc"):
        if key.startswith("_delta_log/"):
            s3_endpoint.extras["backdate"](f"vpc/{key}", old)
    done = _cli("truncate-history", uri, options=s3_endpoint.storage_options)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _protocol(uri, s3_endpoint.storage_options) == (1, 2, [], [])
    _assert_rows_equal(oracle, duckdb_reader, s3_endpoint, uri, golden_root)


@pytest.mark.slow
def test_drop_then_truncate_on_azure(azure_endpoint: Endpoint, golden_root: Path, oracle,
                                     duckdb_reader) -> None:
    uri = _drop_vacuum_protocol_check(azure_endpoint, golden_root)
    later = ManualClock().advance(days=3)
    outcome = drop_feature(uri, "checkpointProtection", truncate_history=True, clock=later,
                           storage_options=azure_endpoint.storage_options)
    assert outcome.status == "dropped", outcome
    assert _protocol(uri, azure_endpoint.storage_options) == (1, 2, [], [])
    _assert_rows_equal(oracle, duckdb_reader, azure_endpoint, uri, golden_root)


def _assert_rows_equal(oracle, duckdb_reader, endpoint: Endpoint, uri: str, golden_root: Path) -> None:
    """deltalake 1.6.6 reads from the bucket the rows of the original table. delta-rs refuses the
    original (vacuumProtocolCheck), so the original's rows come from DuckDB's delta extension
    (delta-kernel-rs), normalised the same way."""
    expected = duckdb_reader.duckdb_rows(str(golden_root / "vacuum_protocol_check")).unwrap()
    got = oracle.scan_rows(uri, storage_options=endpoint.storage_options).unwrap()
    assert expected and same_rows(expected, got)
