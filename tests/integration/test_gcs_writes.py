"""Writes to Google Cloud Storage: the storage's writes and a drop, then its history truncation, on
a table in a bucket of fake-gcs-server (built from its Go module by ``make fake-gcs-server``),
reached through ``GcsXmlUploadFront`` (tests/object_stores.py): obstore uploads with GCS's XML
API, which the emulator does not serve; the front hands each upload to the emulator's JSON media
upload with the same bytes and the same condition, and the emulator stores the object and decides
``ifGenerationMatch=0`` (a create of an existing name is 412 there, as on GCS).

- the conditional create: eight threads create one commit file at once, exactly one wins and the
  others get ``CommitFileExistsError``; the bytes are the winner's; the endpoint probe finds the
  endpoint atomic; overwrite and delete;
- ``drop-feature vacuumProtocolCheck`` on a golden table uploaded to the bucket, then
  ``truncate-history`` with a clock past the retention: the protocol read back from the bucket,
  and the rows delta-rs reads there equal to those DuckDB's delta extension reads from the
  original (delta-rs refuses the original: vacuumProtocolCheck).

No Spark here: the rewrites need a Hadoop file system for ``gs://`` (the GCS connector), which is
not among the jars the tests fetch.
"""

from __future__ import annotations

import threading
from pathlib import Path

import obstore
import pytest

from delta_downgrade.errors import CommitFileExistsError
from delta_downgrade.storage import open_storage
from tests.object_stores import Endpoint, gcs_write_endpoint, gcs_write_server  # noqa: F401
from tests.oracle import same_rows
from tests.process_support import run_cli

pytestmark = pytest.mark.oracle


def _options(endpoint: Endpoint) -> list[str]:
    out = []
    for key, value in endpoint.storage_options.items():
        out += ["--storage-option", f"{key}={value}"]
    return out


def test_conditional_create_has_one_winner_on_gcs(gcs_write_endpoint: Endpoint) -> None:  # noqa: F811
    storage = open_storage(gcs_write_endpoint.location("tbl"), options=gcs_write_endpoint.storage_options)
    assert storage.atomic_put_if_absent, storage.not_atomic_reason
    name = "_delta_log/00000000000000000000.json"
    outcomes: dict[int, str] = {}
    barrier = threading.Barrier(8)

    def create(i: int) -> None:
        barrier.wait()
        try:
            storage.put_if_absent(name, b'{"commitInfo":{"writer":%d}}\n' % i)
            outcomes[i] = "won"
        except CommitFileExistsError:
            outcomes[i] = "exists"

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    winners = [i for i, o in outcomes.items() if o == "won"]
    assert len(outcomes) == 8 and len(winners) == 1, outcomes
    stored = bytes(obstore.get(gcs_write_endpoint.store("tbl"), name).bytes())
    assert stored == b'{"commitInfo":{"writer":%d}}\n' % winners[0]

    storage.write_atomic("_delta_log/_last_checkpoint", b'{"version":0}')
    storage.write_atomic("_delta_log/_last_checkpoint", b'{"version":1}')
    assert gcs_write_endpoint.read("tbl", "_delta_log/_last_checkpoint") == b'{"version":1}'
    assert storage.delete("_delta_log/_last_checkpoint")
    assert gcs_write_endpoint.keys("tbl") == [name]


def test_drop_then_truncate_on_gcs(gcs_write_endpoint: Endpoint, golden_root: Path, oracle,  # noqa: F811
                                   duckdb_reader) -> None:
    from delta_downgrade.clock import ManualClock
    from delta_downgrade.operations.drop_feature import drop_feature
    from delta_downgrade.operations.inspect import inspect_table

    uri = gcs_write_endpoint.upload(golden_root / "vacuum_protocol_check", "vpc")
    done = run_cli("drop-feature", uri, "vacuumProtocolCheck", *_options(gcs_write_endpoint))
    assert done.returncode == 0, done.stdout + done.stderr
    after = inspect_table(uri, history=False, storage_options=gcs_write_endpoint.storage_options).protocol
    assert "vacuumProtocolCheck" not in after.features and "checkpointProtection" in after.features, after
    waiting = run_cli("truncate-history", uri, *_options(gcs_write_endpoint))
    assert waiting.returncode == 3, waiting.stdout + waiting.stderr

    outcome = drop_feature(uri, "checkpointProtection", truncate_history=True, clock=ManualClock().advance(days=3),
                           storage_options=gcs_write_endpoint.storage_options)
    assert outcome.status == "dropped", outcome
    final = inspect_table(uri, history=False, storage_options=gcs_write_endpoint.storage_options).protocol
    assert (final.min_reader_version, final.min_writer_version, sorted(final.reader_features or []),
            sorted(final.writer_features or [])) == (1, 2, [], []), final
    expected = duckdb_reader.duckdb_rows(str(golden_root / "vacuum_protocol_check")).unwrap()
    got = oracle.scan_rows(uri, storage_options=gcs_write_endpoint.storage_options).unwrap()
    assert expected and same_rows(expected, got)
