"""The compat report of every golden table, opened in headless Chromium (Playwright driving the
system's Chromium): no page error, no console error (a blocked load would be one: the page's
Content-Security-Policy allows nothing outside it), no request leaves the page, the matrix shows
each table's verdicts for each client, and a screenshot of what a person sees first is taken."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from delta_downgrade.app.compat_report import write_compat_report
from delta_downgrade.app.render.compat_html import VERDICT_STYLE
from delta_downgrade.compat.catalogue import packaged_catalogue
from delta_downgrade.operations.compat import fleet_compat

# The compat report reads logs only: the Spark Connect pass leaves it out.
pytestmark = [pytest.mark.no_spark]

VIEWPORT = {"width": 1400, "height": 1000}


def _launch_args() -> list[str]:
    # Chromium refuses its sandbox as root (CI containers); the page runs no script anyway.
    return ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []


def test_golden_fleet_report_renders_in_chromium(golden_root, chromium, tmp_path):
    from playwright.sync_api import sync_playwright

    tables = sorted(str(p) for p in golden_root.iterdir() if (p / "_delta_log").is_dir())
    paths = write_compat_report(fleet_compat(tables, packaged_catalogue()).to_json(), str(tmp_path / "report"))
    doc = json.loads(Path(paths.json).read_text())
    client_ids = [c["client"] for c in doc["clients"]]

    problems: list[str] = []
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=_launch_args())
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
            page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
                    if msg.type in ("error", "warning") else None)
            page.on("request", lambda req: requests.append(req.url))
            page.goto(Path(paths.html).as_uri(), wait_until="load")

            # the matrix, as the browser lays it out: the header's client ids, then per table row
            # the text of its verdict cells
            header = page.eval_on_selector_all("table.matrix th.client", "els => els.map(e => e.textContent)")
            rows = page.eval_on_selector_all(
                "table.matrix tr:has(th.table)",
                "rows => rows.map(r => [r.querySelector('th.table').title,"
                " Array.from(r.querySelectorAll('td.v')).map(td => td.textContent)])")
            top = page.eval_on_selector("table.matrix tr:has(th.table)", "r => r.getBoundingClientRect().top")
            shot = tmp_path / "compat-report.png"
            page.screenshot(path=str(shot))
        finally:
            browser.close()

    assert problems == []
    assert [u for u in requests if not u.startswith("file://")] == []
    assert header == client_ids
    assert [r[0] for r in rows] == [t["table"] for t in doc["tables"]]
    for (title, cells), table in zip(rows, doc["tables"]):
        expected = ["R" + VERDICT_STYLE[c["read"]["verdict"]][0] + "W" + VERDICT_STYLE[c["write"]["verdict"]][0]
                    for c in table["clients"]]
        assert cells == expected, title
    # a table every pre-3.0 reader is refused by, and one every client reads: both visible
    by_table = {Path(title).name: dict(zip(client_ids, cells)) for title, cells in rows}
    assert by_table["dv_basic_no_checkpoint"]["deltalake-0.18-pyarrow"].startswith("R\u2717")
    assert by_table["classic_checkpoint"]["deltalake-0.18-pyarrow"].startswith("R\u2713")
    # the matrix starts within the first screen: what blocks what is seen without scrolling
    assert 0 < top < VIEWPORT["height"] / 2

    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (VIEWPORT["width"], VIEWPORT["height"])
    assert len(png) > 50_000  # a page of text and coloured cells, not a blank one (about 5 KB)
