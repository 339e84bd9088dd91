"""An older delta-spark's own ``ALTER TABLE ... DROP FEATURE`` on a table this package dropped a
feature from (a sample of the clients matrix's ``own-drop`` part, clients_matrix.own_drop_cells;
``make clients-matrix`` runs it for every delta-spark >= 3.0 on every table x feature).

After the package's drop of deletionVectors from a golden table with column mapping and its
``truncate-history``, delta-spark 3.3 (the first release that drops columnMapping) drops
columnMapping itself, in Delta's two steps (the drop, then ``TRUNCATE HISTORY`` once the retention
period passed): the feature is gone, the client and the current delta-spark read the rows of
before, and the package's ``verify_task`` passes with the feature absent and reads the data files
the current delta-spark reads. (delta-spark 3.0-3.3 refuse to drop deletionVectors themselves
with DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE: the full matrix records it.)"""

from __future__ import annotations


import pytest

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade_tools import clients_matrix as matrix
from delta_downgrade_tools.older_clients import client
from tests.older_client_support import cached_reference, client_process

pytestmark = pytest.mark.golden

TABLE, PACKAGE_DROPS, CLIENT_DROPS, CLIENT = "dv_cm_name_checkpoint", "deletionVectors", "columnMapping", "delta-spark 3.3.2"


@pytest.fixture
def reference(delta_spark):
    yield from cached_reference(delta_spark)


@pytest.mark.classic_spark("older Delta clients run classic Spark of their own")
def test_older_delta_drops_another_feature_itself_after_the_package_drop(golden_root, tmp_path, reference):
    spec = client(CLIENT)
    case = matrix.prepare_case(TABLE, golden_root / TABLE, PACKAGE_DROPS, tmp_path)
    assert case.refusal is None, case.refusal
    truncated = case.states["truncated"]
    features = DeltaLog(str(truncated)).snapshot(check_read=False).protocol.features
    assert CLIENT_DROPS in features and PACKAGE_DROPS not in features and "checkpointProtection" not in features
    process = client_process(spec)
    try:
        cells = matrix.own_drop_cells(case, reference, spec, process, tmp_path)
    finally:
        process.close()

    failed = [f"{c.action}: {c.observed}: {c.problem}" for c in cells if not c.ok]
    assert not failed, failed
    assert {c.state for c in cells} == {"truncated"}
    by_action = {c.action: c.observed for c in cells if c.feature.endswith(f"its own {CLIENT_DROPS}")}
    # Delta's two steps: the first drop removes the feature's traces and waits for the retention period
    assert by_action.get("DROP FEATURE") == f"refused: {matrix.DROP_WAIT}", by_action
    assert by_action.get("DROP FEATURE ... TRUNCATE HISTORY") == "dropped", by_action
    assert by_action.get("client reads the rows of before its drop") == "rows", by_action
    assert by_action.get("current delta-spark reads the rows of before") == "rows", by_action
    assert by_action.get("package verify, the same files as the current delta-spark") == "verified", by_action
