"""Fleet mode: ten tables (two of them bad) in one task run, with bounded parallelism. One bad
table does not stop the others; the exit code is the worst outcome."""

from __future__ import annotations

from delta_downgrade.app.tasks.entrypoints import drop_feature_task, verify_task
from tests.drop_support import run_task

GOOD = ["vacuum_protocol_check", "classic_checkpoint", "multipart_checkpoint", "legacy_1_4_cdf",
        "dv_enabled_no_dvs", "timestamp_ntz", "legacy_upgraded_to_3_7", "history_truncated_no_replay"]
BAD = {"bad_no_protocol": "DELTA_STATE_RECOVER_ERROR", "bad_versions_not_contiguous": "DELTA_VERSIONS_NOT_CONTIGUOUS"}


def test_fleet_of_ten_with_two_bad_tables(golden_table, tmp_path):
    paths = {name: golden_table(name) for name in [*GOOD, *BAD]}
    listing = tmp_path / "tables.txt"
    listing.write_text("\n".join(paths.values()) + "\n")
    code, results, err = run_task(drop_feature_task, [f"--tables_file={listing}", "--feature=vacuumProtocolCheck",
                                                      "--parallelism=3"])
    per_table = [r for r in results if not r.get("summary")]
    summary = [r for r in results if r.get("summary")]
    assert code == 2
    assert len(per_table) == 10 and len(summary) == 1
    by_table = {r["table"]: r for r in per_table}
    for name in GOOD:
        assert by_table[paths[name]]["status"] in ("dropped", "already_absent"), by_table[paths[name]]
    assert by_table[paths["vacuum_protocol_check"]]["status"] == "dropped"
    for name, error_class in BAD.items():
        result = by_table[paths[name]]
        assert result["status"] == "error" and result["error_class"] == error_class
        assert result["exit_code"] == 2
        assert f"[{error_class}]" in err and paths[name] in err  # one clear error line each
    assert summary[0]["tables"] == 10 and summary[0]["exit_code"] == 2
    assert sorted(summary[0]["failed_tables"]) == sorted(paths[n] for n in BAD)


def test_fleet_verify_all_good_exits_0(golden_table):
    paths = [golden_table(n) for n in ("classic_checkpoint", "timestamp_ntz")]
    code, results, _ = run_task(verify_task, [f"--tables={','.join(paths)}"])
    assert code == 0
    assert [r["status"] for r in results if not r.get("summary")] == ["verified", "verified"]
