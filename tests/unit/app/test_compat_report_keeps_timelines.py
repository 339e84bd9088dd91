"""The compat report adds a timeline to each table that has none; a table that already has one
(a report's ``compat.json`` drawn again, or tables whose log is elsewhere) keeps it as it is."""

from __future__ import annotations

from delta_downgrade.app.compat_report import with_timelines
from delta_downgrade.compat.catalogue import packaged_catalogue
from delta_downgrade.operations.compat import fleet_compat


def test_a_table_with_a_timeline_keeps_it(golden_table, tmp_path):
    path = golden_table("dv_enabled_no_dvs")
    report = with_timelines(fleet_compat([path], packaged_catalogue()).to_json())
    timeline = report["tables"][0]["timeline"]
    assert timeline is not None and "latest_version" in timeline
    moved = {**report, "tables": [{**report["tables"][0], "table": str(tmp_path / "elsewhere")}]}
    again = with_timelines(moved)  # the path has no log: a timeline read now would be an error
    assert again["tables"][0]["timeline"] == timeline
    assert list(again["tables"][0]) == list(report["tables"][0])
