"""This package's commands on a table delta-spark dropped a feature from, against the same commands
on a copy this package dropped the feature from itself.

For each case two copies of a golden table: delta-spark 4.4 runs ``ALTER TABLE … DROP FEATURE``
(its fast path) on one, this package's native drop on the other. Then, on both, in order:
``inspect --json``, ``verify_task`` (the feature absent), ``compat --json``, ``cleanup --dry-run
--json``, ``vacuum --dry-run --json``, ``truncate-history --json`` (before the truncate retention:
exit 3, waiting), then with the log older than every retention (commit files backdated) a real
``cleanup``, ``truncate-history`` and ``vacuum``. Every outcome must be the same on both copies:
the exit code and the RESULT values, except the values that name the table or count versions
(each side writes its own sequence of commits: `VERSIONED` says which, compared relative to the
boundary where they are versions); after the truncation the protocols, the table properties and
the rows delta-spark reads are the same.

Once, on the classic session: the Connect server the tests start has no Delta extension.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.delta_spark_support import (
    BOUNDARY, DAY_S, backdate_log, commit_versions, detail, read_rows, remove_hadoop_checksums
)
from tests.process_support import run_cli

pytestmark = pytest.mark.classic_spark("delta-spark's SQL runs on the classic session")

CASES = [
    ("dv_basic_no_checkpoint", "deletionVectors"),
    ("v2_checkpoint_parquet_sidecars", "v2Checkpoint"),
    ("vacuum_protocol_check", "vacuumProtocolCheck"),
]

#: ``DELTA_DOWNGRADE_INTEROP=all``: every case; otherwise (``make test``) the first.
if os.environ.get("DELTA_DOWNGRADE_INTEROP", "").strip().lower() != "all":
    CASES = CASES[:1]

#: RESULT keys whose values are the table itself, times, or versions and files of the log: each
#: side wrote its own commits (delta-spark's drop commits differ in number: see
#: tests/integration/delta_spark_differences.py), so these are compared by their shape only.
VERSIONED = {
    # the table and times
    "table", "timestamp", "truncate_after", "message", "delete_before_ms", "delete_before",
    # versions of the log
    "version", "latest_version", "earliest_version", "boundary_version", "protected_checkpoints",
    "protected_checkpoint_versions", "checkpoint_protection", "commits", "checkpoints_written",
    "checkpoints", "last_checkpoint", "protocol_history", "plan", "cutoff_checkpoint",
    # how many log files a cleanup removes: each drop wrote its own number of commits, checkpoints
    # and checksums before the boundary
    "deleted_count", "deletions_planned",
    # names of files (a rewrite names its files at random)
    "deleted", "files_to_delete", "checksum_companions",
}
EXPIRED_S = 40 * DAY_S


def _json(proc) -> dict:
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"not one JSON document (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n"
                             f"{proc.stderr[-2000:]}") from None


def _comparable(document: dict) -> dict:
    """The values both sides must share: everything but `VERSIONED` (those kept by type only)."""
    return {k: (type(v).__name__ if k in VERSIONED else v) for k, v in sorted(document.items())}


def _outcomes(path: str, feature: str) -> dict[str, tuple[int, dict]]:
    from delta_downgrade.app.tasks.entrypoints import verify_task
    from tests.drop_support import run_task

    out: dict[str, tuple[int, dict]] = {}
    for name, args in (("inspect", ["inspect", path, "--json"]),
                       ("compat", ["compat", path, "--json"]),
                       ("cleanup --dry-run", ["cleanup", path, "--dry-run", "--json"]),
                       ("vacuum --dry-run", ["vacuum", path, "--dry-run", "--json"]),
                       ("truncate-history", ["truncate-history", path, "--json"])):
        proc = run_cli(*args)
        out[name] = proc.returncode, _comparable(_json(proc))
    code, (result,), _err = run_task(verify_task, [f"--table={path}", f"--expect_absent_feature={feature}"])
    out["verify_task"] = code, _comparable(result)
    return out


def _after_retention(path: str) -> dict[str, tuple[int, dict]]:
    backdate_log(path, max(commit_versions(path)) + 1, EXPIRED_S)
    out = {}
    for name, args in (("cleanup", ["cleanup", path, "--json"]),
                       ("truncate-history", ["truncate-history", path, "--json"]),
                       ("vacuum", ["vacuum", path, "--json"])):
        proc = run_cli(*args)
        out[name] = proc.returncode, _comparable(_json(proc))
    return out


@pytest.mark.parametrize(("table", "feature"), CASES, ids=[f"{t}-{f}" for t, f in CASES])
def test_native_commands_answer_alike_after_either_drop(delta_spark, golden_table, table, feature):
    from delta_downgrade.operations.drop_feature import drop_feature

    spark = delta_spark
    theirs, ours = (remove_hadoop_checksums(golden_table(table)) for _ in range(2))
    spark.sql(f"ALTER TABLE delta.`{theirs}` DROP FEATURE `{feature}`").collect()
    assert drop_feature(ours, feature).status == "dropped"
    boundaries = [int(detail(spark, p)["properties"][BOUNDARY]) for p in (theirs, ours)]

    first = _outcomes(theirs, feature), _outcomes(ours, feature)
    for name in first[1]:
        assert first[0][name] == first[1][name], f"{name}: after delta-spark's drop {first[0][name]}, " \
                                                 f"after ours {first[1][name]}"
    assert first[1]["truncate-history"][0] == 3 and first[1]["verify_task"][0] == 0
    # The boundary each side reports is that side's own DROP FEATURE commit.
    for path, boundary in zip((theirs, ours), boundaries):
        proc = run_cli("inspect", path, "--json")
        assert _json(proc)["boundary_version"] == boundary

    later = _after_retention(theirs), _after_retention(ours)
    for name in later[1]:
        assert later[0][name] == later[1][name], f"{name}: after delta-spark's drop {later[0][name]}, " \
                                                 f"after ours {later[1][name]}"
    assert [code for code, _ in later[1].values()] == [0, 0, 0], later[1]
    final = detail(spark, theirs), detail(spark, ours)
    assert final[0] == final[1] and "checkpointProtection" not in final[1]["features"], final
    assert read_rows(spark, theirs) == read_rows(spark, ours)
