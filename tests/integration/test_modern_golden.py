"""Every droppable feature of the golden tables that carry the modern features (V2 checkpoints
with sidecars, row tracking, liquid clustering), dropped through the CLI in several orders: each
order ends with exit 0, the features gone, and the rows of the original through deltalake 1.6.6
and DuckDB (and deltalake 0.18.2 when the protocol ends at reader version 1). While the table
tracks rows, every row keeps its stable row ID and commit version, read from the files.

The features to drop are the package's answer (``inspect``: removable features present), less
those a feature that stays requires (PROTOCOL.md "Table Features": a feature's dependencies must
stay supported). An order may name a feature before one that requires it: delta-spark refuses
that drop (DELTA_FEATURE_DROP_DEPENDENT_FEATURE, nothing written) and the test retries it after
the rest, as a user would. None of these drops rewrites data, so no Spark starts.
"""

from __future__ import annotations

import itertools
import subprocess

import pytest

from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.inspect import inspect_table
from delta_downgrade.protocol import CHECKPOINT_PROTECTION, Protocol
from tests.modern_support import age_history, cli, result_line
from tests.oracle import same_rows
from tests.process_support import run_cli, tree_hashes
from tests.row_tracking_support import TrackedRows, tracked_rows

GOLDEN = ["v2_checkpoint_json_sidecars", "v2_checkpoint_parquet_sidecars", "v2_checkpoint_dbr_identity",
          "row_tracking", "row_tracking_dv", "liquid_row_tracking_dbr"]
DEPENDENT = "[DELTA_FEATURE_DROP_DEPENDENT_FEATURE]"
MAX_ORDERS = 6


def droppable_features(path: str) -> list[str]:
    """The removable features of the protocol whose dependents (the present features that
    require them) can all be dropped too."""
    report = inspect_table(path, history=False)
    protocol = report.protocol
    droppable = set(report.droppable_features) - {CHECKPOINT_PROTECTION}
    while True:
        kept = {f for f in droppable if not protocol.dependents_of(f) <= droppable}
        if not kept:
            return sorted(droppable)
        droppable -= kept


def orders(features: list[str]) -> list[tuple[str, ...]]:
    """Every order of up to three features; of more, a few (sorted, reversed, and rotations)."""
    if len(features) <= 3:
        return list(itertools.permutations(features))
    rotations = [tuple(features[i:] + features[:i]) for i in range(len(features))]
    return list(dict.fromkeys([tuple(features), tuple(reversed(features)), *rotations]))[:MAX_ORDERS]


def drop(path: str, feature: str) -> subprocess.CompletedProcess[str]:
    return run_cli("drop-feature", path, feature, timeout=900)


def drop_all(path: str, order: tuple[str, ...], before: TrackedRows) -> Protocol:
    """Drop the features of ``order``; a drop refused because a feature still to be dropped
    requires it goes to the end of the queue, once. Returns the protocol at the end."""
    queue, deferred = list(order), set()
    while queue:
        feature = queue.pop(0)
        on_disk = tree_hashes(path)
        proc = drop(path, feature)
        if proc.returncode == 2 and DEPENDENT in proc.stderr and feature not in deferred:
            assert tree_hashes(path) == on_disk, f"the refused drop of {feature} wrote something"
            dependents = DeltaLog(path).snapshot().protocol.dependents_of(feature)
            assert dependents and dependents <= set(queue), (feature, dependents, queue)
            deferred.add(feature)
            queue.append(feature)
            continue
        assert proc.returncode == 0, f"drop-feature {feature} ({order}): {proc.stderr}"
        result = result_line(proc)
        assert result["status"] == "dropped" and result["feature"] == feature, result
        protocol = DeltaLog(path).snapshot().protocol
        assert feature not in protocol.features
        after = tracked_rows(path)
        if before.tracks_rows and "rowTracking" in protocol.features:
            assert same_rows(after.rows, before.rows), f"{order}: row IDs changed dropping {feature}"
        else:
            assert same_rows(after.data_rows(), before.data_rows()), f"{order}: rows changed dropping {feature}"
    return DeltaLog(path).snapshot().protocol


@pytest.mark.parametrize("name", GOLDEN)
def test_every_droppable_feature_in_several_orders(golden_table, oracle, duckdb_reader, oracle_018, name):
    first = golden_table(name)
    features = droppable_features(first)
    assert features, f"{name} has nothing to drop"
    expected = oracle.scan_rows(first).unwrap()
    assert same_rows(duckdb_reader.duckdb_rows(first), expected)
    for n, order in enumerate(orders(features)):
        path = first if n == 0 else golden_table(name)
        before = tracked_rows(path)
        assert same_rows(before.data_rows(), expected)
        protocol = drop_all(path, order, before)
        if CHECKPOINT_PROTECTION in protocol.features:
            age_history(path)
            result = result_line(cli("truncate-history", path, step=f"truncate-history after {order}"))
            assert result["status"] == "dropped", result
            protocol = DeltaLog(path).snapshot().protocol
        assert not protocol.features & {*features, CHECKPOINT_PROTECTION}, (order, protocol)
        assert same_rows(oracle.scan_rows(path), expected), f"{name} {order}: deltalake 1.6.6"
        assert same_rows(duckdb_reader.duckdb_rows(path), expected), f"{name} {order}: DuckDB"
        if n == 0 and protocol.min_reader_version == 1:  # the older client once per table (runtime)
            assert same_rows(oracle_018.pyarrow_rows(path), expected), f"{name} {order}: deltalake 0.18.2"
