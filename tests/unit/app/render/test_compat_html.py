"""The compat report's HTML page, from fleet documents of real tables (operations.compat on golden
copies): the matrix says what the document says, every string is escaped, nothing is loaded from
outside the page, and a fleet of 40 tables stays small."""

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
    """(row title, column index) -> the text of each verdict cell, from ``table.matrix``."""

    def __init__(self) -> None:
        super().__init__()
        self.in_matrix = False
        self.row: list[list[str]] | None = None
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
        elif self.in_matrix and tag == "td" and a.get("class") == "v" and self.row is not None:
            self.row.append([])
        elif self.in_matrix and tag == "span" and self.row:
            self.in_cell = True
            self.row[-1].append("")

    def handle_endtag(self, tag):
        if tag == "span":
            self.in_cell = False
        elif tag == "tr" and self.in_matrix and self.row_title is not None:
            self.cells[self.row_title] = self.row or []
        elif tag == "table":
            self.in_matrix = False

    def handle_data(self, data):
        if self.in_cell and self.row:
            self.row[-1][-1] += data


def _fleet_document(paths):
    return fleet_compat(paths, packaged_catalogue()).to_json()


@pytest.fixture
def two_tables(golden_table):
    return [golden_table("dv_basic_no_checkpoint"), golden_table("classic_checkpoint")]


def test_matrix_cells_are_the_documents_verdicts(two_tables):
    doc = with_timelines(_fleet_document(two_tables))
    parser = _Matrix()
    parser.feed(render_compat_html(doc))
    for table in doc["tables"]:
        row = parser.cells[table["table"]]
        assert len(row) == len(doc["clients"])
        for cell, entry in zip(row, table["clients"]):
            read, write = entry["read"]["verdict"], entry["write"]["verdict"]
            assert cell == ["R" + VERDICT_STYLE[read][0], "W" + VERDICT_STYLE[write][0]], entry["client"]
    # the DV table blocks deltalake 0.18 (reader version 3): a cross symbol, not only a colour
    dv = parser.cells[two_tables[0]]
    client_ids = [c["client"] for c in doc["clients"]]
    assert dv[client_ids.index("deltalake-0.18-pyarrow")][0] == "R\u2717"
    assert parser.cells[two_tables[1]][client_ids.index("deltalake-0.18-pyarrow")][0] == "R\u2713"


def test_every_string_is_escaped(two_tables):
    doc = with_timelines(_fleet_document(two_tables))
    evil = '/data/<script>alert("x")</script>/t'
    doc["tables"][0]["table"] = evil
    doc["tables"][0]["clients"][0]["read"]["blockers"][0]["reason"] = '<img src=x onerror="alert(1)">'
    doc["errors"] = [{"table": "<b>bad</b>", "error_class": "X<", "message": "</td><script>1</script>"}]
    page = render_compat_html(doc)
    assert "<script" not in page.lower() and "<img" not in page and "<b>bad" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page


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
    # The page grows with tables x clients (a matrix cell, and a plan line where the table blocks
    # the client): at most 400 bytes a pair, about 700 KB for the golden fleet x 50 clients.
    pairs = len(tables) * len(doc["clients"])
    assert html_size < 400 * pairs, (html_size, pairs)
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


def test_client_section_lists_blocked_tables_and_counts_unknown_ones(two_tables):
    doc = with_timelines(_fleet_document(two_tables))
    page = render_compat_html(doc)
    ids = [c["client"] for c in doc["clients"]]
    section = page.split(f'id="client-{ids.index("deltalake-0.18-pyarrow")}"')[1].split("<h3")[0]
    assert "1</span> of 2 table(s) block it" in section  # the DV table; classic_checkpoint is fine
    assert "dv_basic_no_checkpoint" in section and "classic_checkpoint" not in section
    unknown_client = next(c for c in doc["clients"]
                          if all(t["clients"][ids.index(c["client"])]["write"]["verdict"] == "unknown"
                                 and t["clients"][ids.index(c["client"])]["read"]["verdict"] not in ("no", "misreads")
                                 for t in doc["tables"]))
    section = page.split(f'id="client-{ids.index(unknown_client["client"])}"')[1].split("<h3")[0]
    assert "no table listed blocks it" in section and "W?</span> for 2:" in section
