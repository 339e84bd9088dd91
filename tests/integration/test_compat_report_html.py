"""The compat report opened in headless Chromium (Playwright driving the system's Chromium), for
the golden fleet (every golden table, real logs) and for a fleet of 1,000 tables (generated from
the golden tables' per-table results: the page is a pure function of the fleet document, so
1,000 copies under new names are what a 1,000-table fleet's page has to draw).

Each: no page error, no console error (a blocked load would be one: the page's
Content-Security-Policy allows nothing outside it), no request leaves the page, the matrix shows
each table's verdicts for each client, the page fits 1,600 px wide (per-table sections opened
too), its height grows with the tables and not with tables x clients, it is drawn in under 5 s,
and screenshots are kept in the test's directory (``$DELTA_DOWNGRADE_TEST_ARTIFACTS``: copied
there as well)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import time
from pathlib import Path


from delta_downgrade.app.compat_report import write_compat_report
from delta_downgrade.app.render.compat_html import VERDICT_STYLE
from delta_downgrade.compat.catalogue import packaged_catalogue
from delta_downgrade.operations.compat import fleet_compat

# The compat report reads logs only: the Spark Connect pass leaves it out.

MAX_WIDTH = 1600
VIEWPORT = {"width": MAX_WIDTH, "height": 1000}
#: The golden fleet's page as the f-string renderer drew it (measured in this Chromium at 1,400 px
#: wide): 67,157 px tall, 2,957 px wide. The page must now be at least five times shorter.
OLD_GOLDEN_HEIGHT = 67_157
RENDER_BUDGET_S = 5.0


def _launch_args() -> list[str]:
    # Chromium refuses its sandbox as root (CI containers); the page runs no script anyway.
    return ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []


def _keep(path: Path) -> None:
    target = os.environ.get("DELTA_DOWNGRADE_TEST_ARTIFACTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


def _golden_document(golden_root, directory: Path) -> tuple[dict, str]:
    tables = sorted(str(p) for p in golden_root.iterdir() if (p / "_delta_log").is_dir())
    paths = write_compat_report(fleet_compat(tables, packaged_catalogue()).to_json(), str(directory))
    return json.loads(Path(paths.json).read_text()), paths.html


def _open(chromium, html: str, shots: Path, name: str, *, full_page: bool = False) -> dict:
    """Load the page; what the checks need, measured by the browser."""
    from playwright.sync_api import sync_playwright

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
            started = time.monotonic()
            page.goto(Path(html).as_uri(), wait_until="load")
            # a layout of the whole page: what a person waits for before scrolling
            height = page.evaluate("() => document.documentElement.scrollHeight")
            elapsed = time.monotonic() - started
            width = page.evaluate("() => document.documentElement.scrollWidth")
            # the first block's header (each block of 100 rows repeats it)
            header = page.eval_on_selector("table.matrix", "t => Array.from(t.querySelectorAll('th.client'))"
                                           ".map(e => e.dataset.client)")
            rows = page.eval_on_selector_all(
                "table.matrix tr:has(th.table)",
                "rows => rows.map(r => [r.querySelector('th.table').title,"
                " Array.from(r.querySelectorAll('td.v')).map(td => td.textContent)])")
            top = page.eval_on_selector("table.matrix", "t => t.getBoundingClientRect().top")
            closed = page.eval_on_selector_all("details.table", "ds => ds.filter(d => !d.open).length")
            page.screenshot(path=str(shots / f"{name}-first-screen.png"))
            if full_page:
                page.screenshot(path=str(shots / f"{name}-full.png"), full_page=True)
            # every section opened: still within the width; the legends' items and the
            # timelines' labels inside their boxes
            page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
            opened_width = page.evaluate("() => document.documentElement.scrollWidth")
            outside = page.evaluate(
                """() => {
                    const bad = [];
                    for (const legend of document.querySelectorAll('.legend')) {
                        const box = legend.getBoundingClientRect();
                        for (const item of legend.children) {
                            const r = item.getBoundingClientRect();
                            if (r.right > box.right + 0.5 || r.left < box.left - 0.5) bad.push('legend: ' + item.textContent);
                        }
                    }
                    const svgs = Array.from(document.querySelectorAll('svg.timeline')).slice(0, 60);
                    for (const svg of svgs) {
                        const box = svg.getBoundingClientRect();
                        for (const text of svg.querySelectorAll('text')) {
                            const r = text.getBoundingClientRect();
                            if (r.right > box.right + 1 || r.left < box.left - 1) bad.push('timeline: ' + text.textContent);
                        }
                    }
                    return bad;
                }""")
            section = page.locator("details.table:has(svg.timeline)").first
            section.screenshot(path=str(shots / f"{name}-table-section.png"))
        finally:
            browser.close()
    for png in shots.glob(f"{name}-*.png"):
        _keep(png)
    return {"problems": problems, "requests": requests, "elapsed": elapsed, "width": width,
            "opened_width": opened_width, "height": height, "header": header, "rows": rows, "top": top,
            "closed": closed, "outside": outside}


def _check_common(seen: dict, doc: dict) -> None:
    assert seen["problems"] == []
    assert [u for u in seen["requests"] if not u.startswith("file://")] == []
    assert seen["elapsed"] < RENDER_BUDGET_S, seen["elapsed"]
    assert seen["width"] <= MAX_WIDTH and seen["opened_width"] <= MAX_WIDTH, (seen["width"], seen["opened_width"])
    assert seen["outside"] == []
    assert seen["closed"] == len(doc["tables"])  # per-table sections start collapsed
    # the matrix = the document: columns are the clients grouped by family, each cell the read
    # and the write verdict's symbols
    families: dict[str, list[str]] = {}
    for c in doc["clients"]:
        families.setdefault(c["family"], []).append(c["client"])
    order = [cid for members in families.values() for cid in members]
    assert seen["header"] == order and sorted(order) == sorted(c["client"] for c in doc["clients"])
    assert [r[0] for r in seen["rows"]] == [t["table"] for t in doc["tables"]]
    for (title, cells), table in zip(seen["rows"], doc["tables"]):
        by_id = {c["client"]: c for c in table["clients"]}
        expected = [VERDICT_STYLE[by_id[cid]["read"]["verdict"]][0] + VERDICT_STYLE[by_id[cid]["write"]["verdict"]][0]
                    for cid in order]
        assert cells == expected, title
    # the matrix starts within the first two screens: the views above it are short
    assert 0 < seen["top"] < 2 * VIEWPORT["height"]


def test_golden_fleet_report_in_chromium(golden_root, chromium, tmp_path):
    doc, html = _golden_document(golden_root, tmp_path / "report")
    seen = _open(chromium, html, tmp_path, "golden", full_page=True)
    _check_common(seen, doc)
    assert seen["height"] * 5 <= OLD_GOLDEN_HEIGHT, seen["height"]
    by_table = {Path(title).name: cells for title, cells in seen["rows"]}
    order = seen["header"]
    assert by_table["dv_basic_no_checkpoint"][order.index("deltalake-0.18-pyarrow")].startswith("\u2717")
    assert by_table["classic_checkpoint"][order.index("deltalake-0.18-pyarrow")].startswith("\u2713")
    png = (tmp_path / "golden-first-screen.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (
        VIEWPORT["width"], VIEWPORT["height"])
    assert len(png) > 50_000  # a page of text and coloured cells, not a blank one (about 5 KB)


def _generated_fleet(golden: dict, size: int) -> dict:
    """``size`` tables: the golden tables' results (verdicts, summary, timeline) under new names,
    in turn; the golden fleet's errors repeated under new names too."""
    tables, errors = [], []
    sources = golden["tables"]
    for i in range(size):
        t = copy.deepcopy(sources[i % len(sources)])
        t["table"] = f"s3://lake/warehouse/db_{i // 100:02d}/{Path(t['table']).name}_{i:04d}"
        tables.append(t)
    for i, e in enumerate(golden["errors"] * 3):
        errors.append({**e, "table": f"s3://lake/warehouse/broken/{Path(e['table']).name}_{i}"})
    return {"tables": tables, "errors": errors, "clients": golden["clients"]}


def test_thousand_table_report_in_chromium(golden_root, chromium, tmp_path):
    golden, _ = _golden_document(golden_root, tmp_path / "golden")
    fleet = _generated_fleet(golden, 1000)
    paths = write_compat_report(fleet, str(tmp_path / "report"))
    doc = json.loads(Path(paths.json).read_text())
    assert len(doc["tables"]) == 1000
    seen = _open(chromium, paths.html, tmp_path, "fleet-1000")
    _check_common(seen, doc)
    # the height grows with the tables (a matrix row and a collapsed section each), not with
    # tables x clients: under 60 px a table
    assert seen["height"] < 60 * len(doc["tables"]) + 3000, seen["height"]
    for path in (paths.json, paths.html):
        assert Path(path).stat().st_mode & 0o777 == 0o644
