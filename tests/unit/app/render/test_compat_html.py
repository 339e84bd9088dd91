"""The compat report's HTML page, from fleet documents of real tables (operations.compat on golden
copies): the matrix says what the document says, the family and feature views count what the
document says, every string is escaped (Jinja2's autoescaping), nothing is loaded from outside the
page, per-table sections are collapsed, and both files are readable by others (0644)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from delta_downgrade.app.compat_report import with_timelines, write_compat_report
from delta_downgrade.app.render.compat_html import VERDICT_STYLE, render_compat_html
from delta_downgrade.compat.catalogue import packaged_catalogue
from delta_downgrade.errors import ReportDirectoryError
from delta_downgrade.operations.compat import fleet_compat


class _Matrix(HTMLParser):
    """row title -> the symbols of each verdict cell (read, write), from every ``table.matrix``
    block."""

    def __init__(self) -> None:
        super().__init__()
        self.in_matrix = False
        self.row: list[str] | None = None
        self.row_title: str | None = None
        self.cells: dict[str, list[list[str]]] = {}
        self.in_cell = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("class") == "matrix":
            self.in_matrix = True
        elif self.in_matrix and tag == "tr":
            self.row, self.row_title = [], None
        elif self.in_matrix and tag == "th" and a.get("class") == "table":
            self.row_title = a.get("title")
        elif self.in_matrix and tag == "td" and (a.get("class") or "").split()[:1] == ["v"] and self.row is not None:
            self.row.append("")
            self.in_cell = True

    def handle_endtag(self, tag):
        if tag == "td":
            self.in_cell = False
        elif tag == "tr" and self.in_matrix and self.row_title is not None:
            self.cells[self.row_title] = [list(cell) for cell in self.row or []]
        elif tag == "table":
            self.in_matrix = False

    def handle_data(self, data):
        if self.in_cell and self.row is not None:
            self.row[-1] += data


def _fleet_document(paths):
    return fleet_compat(paths, packaged_catalogue()).to_json()


@pytest.fixture
def two_tables(golden_table):
    return [golden_table("dv_basic_no_checkpoint"), golden_table("classic_checkpoint")]


def _client_order(doc):
    """The matrix's column order: clients grouped by family, families in catalogue order."""
    families: dict[str, list[str]] = {}
    for c in doc["clients"]:
        families.setdefault(c["family"], []).append(c["client"])
    return [cid for members in families.values() for cid in members]


def test_matrix_cells_are_the_documents_verdicts(two_tables):
    doc = with_timelines(_fleet_document(two_tables))
    parser = _Matrix()
    parser.feed(render_compat_html(doc))
    order = _client_order(doc)
    for table in doc["tables"]:
        row = parser.cells[table["table"]]
        assert len(row) == len(doc["clients"])
        by_id = {e["client"]: e for e in table["clients"]}
        for cell, cid in zip(row, order):
            read, write = by_id[cid]["read"]["verdict"], by_id[cid]["write"]["verdict"]
            assert cell == [VERDICT_STYLE[read][0], VERDICT_STYLE[write][0]], cid
    # the DV table blocks deltalake 0.18 (reader version 3): a cross symbol, not only a colour
    dv = parser.cells[two_tables[0]]
    assert dv[order.index("deltalake-0.18-pyarrow")][0] == "\u2717"
    assert parser.cells[two_tables[1]][order.index("deltalake-0.18-pyarrow")][0] == "\u2713"


def test_every_string_is_escaped(two_tables):
    doc = with_timelines(_fleet_document(two_tables))
    evil = '/data/<script>alert("x")</script>/t'
    doc["tables"][0]["table"] = evil
    doc["tables"][0]["clients"][0]["read"]["blockers"][0]["reason"] = '<img src=x onerror="alert(1)">'
    doc["errors"] = [{"table": "<b>bad</b>", "error_class": "X<", "message": "</td><script>1</script>"}]
    page = render_compat_html(doc)
    assert "<script" not in page.lower() and "<img" not in page and "<b>bad" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page


def test_self_contained_no_outside_reference(two_tables):
    page = render_compat_html(with_timelines(_fleet_document(two_tables)))
    lowered = page.lower()
    for needle in ("<script", "<link", "<img", "<iframe", "@import", "url(", 'src="', "href=\"http"):
        assert needle not in lowered, needle
    assert "default-src 'none'" in page  # the page's own policy: no load of any kind


def test_timeline_drawn_and_a_drop_labelled(golden_table):
    from delta_downgrade.operations.drop_feature import drop_feature

    path = golden_table("dv_enabled_no_dvs")
    drop_feature(path, "deletionVectors")
    doc = with_timelines(_fleet_document([path]))
    tl = doc["tables"][0]["timeline"]
    assert [c["protected"] for c in tl["checkpoints"]] == [True, True, True, False]
    page = render_compat_html(doc)
    assert "boundary v4 (checkpointProtection)" in page
    assert "drop deletionVectors" in page and "+checkpointProtection \u2212deletionVectors" in page
    assert page.count("protected (Checkpoint Protection rule a)") == 3
    # protocol bands: before the drop (deletionVectors) and from it on, each with its readers; the
    # clients without deletion vectors read only the versions from the boundary on
    spans = tl["spans"]
    assert [s["to"] for s in spans][-1] == tl["latest_version"] and spans[-1]["from"] == 4
    assert set(spans[0]["readers"]) < set(spans[-1]["readers"])
    assert "deltalake-0.18-pyarrow" in spans[-1]["readers"] and "deltalake-0.18-pyarrow" not in spans[0]["readers"]
    assert f"read by {len(spans[-1]['readers'])}/{spans[-1]['judged']}" in page


def test_older_history_marker(tmp_path):
    import pyarrow as pa

    from delta_downgrade_tools.builders import TableBuilder

    b = TableBuilder(tmp_path / "t")
    b.create(pa.schema([("x", pa.int64())]), rows=[{"x": 0}])
    for i in range(5):
        b.append([{"x": i}])
    from delta_downgrade.app.render.compat_html import timeline_svg
    from delta_downgrade.app.render.protocol_timeline import timeline_json
    from delta_downgrade.operations.protocol_timeline import protocol_timeline

    svg = timeline_svg(timeline_json(protocol_timeline(str(tmp_path / "t"), max_commits=3)))
    assert "older history not drawn: versions 0 to 2" in svg


def test_a_table_whose_timeline_fails_keeps_its_verdicts(golden_table):
    # The verdicts need the latest snapshot (the v2 checkpoint and commit 3); the timeline reads
    # every commit from the earliest version on, and commit 1's commitInfo is damaged.
    path = golden_table("classic_checkpoint")
    Path(path, "_delta_log", "00000000000000000001.json").write_text('{"commitInfo": {not json}\n')
    doc = _fleet_document([path])
    assert [t["table"] for t in doc["tables"]] == [path]
    full = with_timelines(doc)
    timeline = full["tables"][0]["timeline"]
    assert set(timeline) == {"error_class", "message"} and timeline["error_class"] == "DELTA_STATE_RECOVER_ERROR"
    assert "no timeline: DELTA_STATE_RECOVER_ERROR" in render_compat_html(full)


def test_golden_fleet_report_stays_small_and_both_files_agree(golden_root, tmp_path):
    tables = sorted(str(p) for p in golden_root.iterdir() if (p / "_delta_log").is_dir())
    assert len(tables) >= 40
    paths = write_compat_report(_fleet_document(tables), str(tmp_path / "report"))
    html_size = Path(paths.html).stat().st_size
    doc = json.loads(Path(paths.json).read_text())
    # A matrix cell per pair (about 80 bytes), plan rows grouped per table: at most 250 bytes a
    # pair, about 450 KB for the golden fleet x 50 clients.
    pairs = len(tables) * len(doc["clients"])
    assert html_size < 250 * pairs, (html_size, pairs)
    assert len(doc["tables"]) + len(doc["errors"]) == len(tables)
    assert all("timeline" in t for t in doc["tables"])
    assert Path(paths.html).read_text() == render_compat_html(doc)


def test_report_directory_that_cannot_be_made_is_bad_input(tmp_path, two_tables):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ReportDirectoryError) as err:
        write_compat_report(_fleet_document(two_tables), str(blocker / "report"))
    assert err.value.exit_code == 2
    assert not (blocker.parent / "compat.json").exists()


def test_family_and_feature_views_count_what_the_document_says(two_tables):
    doc = with_timelines(_fleet_document(two_tables))
    page = render_compat_html(doc)
    blocking = ("no", "misreads")
    for client in doc["clients"]:
        cid = client["client"]
        entries = [next(e for e in t["clients"] if e["client"] == cid) for t in doc["tables"]]
        reads = sum(e["read"]["verdict"] in blocking for e in entries)
        writes = sum(e["write"]["verdict"] in blocking for e in entries)
        cell = page.split(f'<td data-client="{cid}">')[1].split("</td>")[0]
        assert f">{reads} / {writes}</span>" in cell, cid
    # deletionVectors keeps deltalake 0.18 from reading, and the DV table carries it
    features = page.split('<table class="features">')[1].split("</table>")[0]
    dv_row = features.split("<code>deletionVectors</code>")[1].split("</tr>")[0]
    assert "0.18-pyarrow" in dv_row and "1 table(s)" in dv_row and "dv_basic_no_checkpoint" in dv_row


def test_per_table_sections_are_collapsed_and_grouped_by_plan(two_tables):
    doc = with_timelines(_fleet_document(two_tables))
    page = render_compat_html(doc)
    sections = page.split('<details class="table"')[1:]
    assert len(sections) == 2 and not any(s.startswith(" open") for s in sections)
    dv = sections[0].split("</details>")[0]
    # one row per distinct plan, not one per client
    blocked = doc["tables"][0]["blocked"]
    assert dv.count("<tr>") - 1 < len(set(blocked["read"]) | set(blocked["write"]))
    assert "drop deletionVectors" in dv


def test_report_files_are_readable_by_others(tmp_path, two_tables):
    paths = write_compat_report(_fleet_document(two_tables), str(tmp_path / "report"))
    for path in (paths.json, paths.html):
        assert Path(path).stat().st_mode & 0o777 == 0o644
