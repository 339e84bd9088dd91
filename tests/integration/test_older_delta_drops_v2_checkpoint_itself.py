"""delta-spark 3.1's own ``ALTER TABLE ... DROP FEATURE v2Checkpoint`` on a table this package
dropped deletionVectors from (the clients matrix's ``own-drop`` part on one of its
``OWN_DROP_TABLES``; ``make clients-matrix`` runs it for every delta-spark >= 3.0).

delta-spark 3.1 refuses to drop deletionVectors, columnMapping and checkConstraints itself
(DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE); v2Checkpoint is the one table feature of its protocol
it drops. The table: a golden V2-checkpoint table (JSON checkpoint with sidecars) on which the
current delta-spark enabled deletion vectors and deleted a row with one. This package drops
deletionVectors and truncates the history; then delta-spark 3.1 drops v2Checkpoint in Delta's two
steps (the drop, which writes a classic checkpoint and waits for the retention period; then
``TRUNCATE HISTORY`` once it passed): the feature is gone, delta-spark 3.1 and the current
delta-spark read the rows of before, and the package's ``verify_task`` passes with the feature
absent and reads the data files the current delta-spark reads."""

from __future__ import annotations


import pytest

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade_tools import clients_matrix as matrix
from delta_downgrade_tools.older_clients import client
from tests.older_client_support import cached_reference, client_process

pytestmark = pytest.mark.golden

TABLE, CLIENT_DROPS, CLIENT = "v2_checkpoint_json_sidecars+deletionVectors", "v2Checkpoint", "delta-spark 3.1.0"


@pytest.fixture
def reference(delta_spark):
    yield from cached_reference(delta_spark)


@pytest.mark.classic_spark("older Delta clients run classic Spark of their own")
def test_delta_spark_3_1_drops_v2_checkpoint_itself_after_the_package_dropped_deletion_vectors(
        golden_root, tmp_path, reference):
    [(name, source)] = matrix.own_drop_tables(tmp_path / "sources", reference, lambda n: n == TABLE)
    built = DeltaLog(str(source)).snapshot(check_read=False)
    assert {"v2Checkpoint", "deletionVectors"} <= built.protocol.features
    assert any(a.deletionVector is not None for a in built.state().files.values()), \
        "the DELETE wrote no deletion vector"

    case = matrix.prepare_case(name, source, matrix.OWN_DROP_PACKAGE_DROPS, tmp_path)
    assert case.refusal is None, case.refusal
    features = DeltaLog(str(case.states["truncated"])).snapshot(check_read=False).protocol.features
    assert CLIENT_DROPS in features and "deletionVectors" not in features and "checkpointProtection" not in features

    spec = client(CLIENT)
    process = client_process(spec)
    try:
        cells = matrix.own_drop_cells(case, reference, spec, process, tmp_path)
    finally:
        process.close()

    failed = [f"{c.action}: {c.observed}: {c.problem}" for c in cells if not c.ok]
    assert not failed, failed
    by_action = {c.action: c.observed for c in cells if c.feature.endswith(f"its own {CLIENT_DROPS}")}
    # Delta's two steps: the first drop removes the feature's traces and waits for the retention period
    assert by_action.get("DROP FEATURE") == f"refused: {matrix.DROP_WAIT}", by_action
    assert by_action.get("DROP FEATURE ... TRUNCATE HISTORY") == "dropped", by_action
    assert by_action.get("client reads the rows of before its drop") == "rows", by_action
    assert by_action.get("current delta-spark reads the rows of before") == "rows", by_action
    assert by_action.get("package verify, the same files as the current delta-spark") == "verified", by_action
    dropped = [p for p in tmp_path.iterdir() if p.name.endswith(f"--own-{spec.name.replace(' ', '_')}--{CLIENT_DROPS}")]
    assert len(dropped) == 1
    assert CLIENT_DROPS not in DeltaLog(str(dropped[0])).snapshot(check_read=False).protocol.features
