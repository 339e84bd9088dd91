"""The compat report as one self-contained HTML page: which tables block which clients.

Input: the fleet document of ``compat --tables-file F`` (README "compat"), each table carrying its
``timeline`` (:func:`~delta_downgrade.app.render.protocol_timeline.timeline_json`, or null, or an
``{"error_class", "message"}`` when the log cannot be drawn). The page is a pure function of that
document, so ``compat.json`` and ``compat.html`` always say the same.

What a person sees, top down:

1. a matrix, tables × clients: each cell the read and the write verdict, as a colour, a symbol
   and a letter (colour-blind safe: the Okabe-Ito palette, and the symbol alone tells the
   verdict), each table linking to its section;
2. the tables that could not be loaded;
3. one section per client: the tables it cannot read or write, with blockers and the plan;
4. one section per table: its protocol, features, and the protocol / checkpoint timeline as an
   inline SVG (commits as a line, checkpoints as marks, protected ones filled, protocol changes
   and DROP FEATURE commits labelled, the Checkpoint Protection boundary dashed).

Self-contained: inline CSS and SVG only - no script, font, image or link outside the page, so it
opens offline from a file and cannot run anything. Every string from the document (table paths,
reasons, feature names) is HTML-escaped where it is written (:func:`_e`).
"""

from __future__ import annotations

import html
from typing import Any, Iterable, Mapping, Sequence

from delta_downgrade.app.render.compat import human_bytes

__all__ = ["VERDICT_STYLE", "render_compat_html"]

#: verdict -> (symbol, css class, words). Okabe-Ito colours in the CSS below; the symbol and the
#: letter carry the verdict without colour.
VERDICT_STYLE: dict[str, tuple[str, str, str]] = {
    "yes": ("\u2713", "v-yes", "yes"),
    "no": ("\u2717", "v-no", "no"),
    "misreads": ("\u26a0", "v-mis", "misreads: accepts the table and returns wrong data"),
    "unknown": ("?", "v-unk", "unknown: the catalogue has no source"),
    "n/a": ("\u2013", "v-na", "n/a: a read path only"),
}

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:16px 24px;color:#1a1a1a;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:2px solid #ddd}
h3{font-size:15px;margin:18px 0 6px}code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.sum{color:#444;margin:0 0 10px}.legend span.cell{margin-right:10px}
table{border-collapse:collapse}td,th{border:1px solid #d0d0d0;padding:3px 6px;vertical-align:top;overflow-wrap:anywhere}
table.matrix th.client{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;font-weight:600;
 font-size:12px;padding:6px 2px;text-align:left}
table.matrix td.v{padding:0;text-align:center;white-space:nowrap;overflow-wrap:normal}
table.matrix tr.count td{font-size:11px;text-align:center;color:#7a2d00;font-weight:700;white-space:nowrap;overflow-wrap:normal}
table.matrix th.table{overflow-wrap:normal;text-align:left;font-weight:normal;max-width:340px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.cell{display:inline-block;min-width:22px;padding:1px 2px;font-weight:700;font-size:12px;border-radius:2px}
.v-yes{background:#d3efe4;color:#005c43}.v-no{background:#f6c9a8;color:#7a2d00}
.v-mis{background:#f1d0e3;color:#6e1f4c}.v-unk{background:#e6e6e6;color:#333}.v-na{background:#fff;color:#888}
.blocked{font-weight:700;color:#7a2d00}.ok{color:#005c43}
.note{color:#555;font-size:12px}.err{background:#fff4e5}
ul{margin:2px 0 2px 18px;padding:0}li{margin:1px 0}
svg{display:block;margin:4px 0 10px;max-width:100%}
.kv td:first-child{color:#555;white-space:nowrap}
"""


def _e(value: Any) -> str:
    """Escaped text: every value from the document goes through here."""
    return html.escape("" if value is None else str(value), quote=True)


def _anchor(prefix: str, index: int) -> str:
    return f"{prefix}-{index}"


def _verdict_cell(side: str, verdict: str | None) -> str:
    symbol, css, words = VERDICT_STYLE.get(verdict or "unknown", VERDICT_STYLE["unknown"])
    letter = "R" if side == "read" else "W"
    return f'<span class="cell {css}" title="{_e(side)}: {_e(words)}">{letter}{symbol}</span>'


def render_compat_html(document: Mapping[str, Any], *, title: str = "Delta client compatibility") -> str:
    tables: Sequence[Mapping[str, Any]] = document.get("tables") or ()
    errors: Sequence[Mapping[str, Any]] = document.get("errors") or ()
    clients: Sequence[Mapping[str, Any]] = document.get("clients") or ()
    out: list[str] = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        # No network, no script: the page's own policy says so too.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
    ]
    blocked_tables = sum(1 for t in tables if (t.get("blocked") or {}).get("read") or (t.get("blocked") or {}).get("write"))
    out.append(f'<p class="sum">{len(tables)} table(s), {len(clients)} client(s); '
               f'{blocked_tables} table(s) block at least one client'
               + (f"; {len(errors)} table(s) could not be read" if errors else "") + ".</p>")
    out.append('<p class="legend">' + "".join(
        f'<span class="cell {css}">{symbol}</span> {_e(words.split(":")[0])} &nbsp; '
        for symbol, css, words in VERDICT_STYLE.values())
        + '<span class="note">R = read the latest version, W = write it.</span></p>')
    prefix = _common_prefix([str(t.get("table")) for t in tables])
    if prefix:
        out.append(f'<p class="note">table paths below are under <code>{_e(prefix)}</code></p>')
    out += _matrix(tables, clients, prefix)
    if errors:
        out.append('<h2 id="errors">Tables that could not be read</h2><table><tr><th>table</th>'
                   '<th>error class</th><th>message</th></tr>')
        for err in errors:
            out.append(f'<tr class="err"><td class="mono">{_e(err.get("table"))}</td>'
                       f'<td class="mono">{_e(err.get("error_class"))}</td><td>{_e(err.get("message"))}</td></tr>')
        out.append("</table>")
    out.append("<h2>By client</h2>")
    for ci, client in enumerate(clients):
        out += _client_section(ci, client, tables, prefix)
    out.append("<h2>By table</h2>")
    out.append(_TIMELINE_LEGEND)
    for ti, table in enumerate(tables):
        out += _table_section(ti, table)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# --- the matrix ---------------------------------------------------------------------------------

def _client_entry(table: Mapping[str, Any], client_id: str) -> Mapping[str, Any] | None:
    for entry in table.get("clients") or ():
        if entry.get("client") == client_id:
            return entry
    return None


def _common_prefix(paths: Sequence[str]) -> str:
    """The directory part every table path shares (shown once above the matrix), or ""."""
    if len(paths) < 2:
        return ""
    first, last = min(paths), max(paths)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:first.rfind("/", 0, n) + 1] if "/" in first[:n] else ""


def _name(path: str, prefix: str) -> str:
    return _short(path[len(prefix):] if prefix and path.startswith(prefix) else path)


def _matrix(tables: Sequence[Mapping[str, Any]], clients: Sequence[Mapping[str, Any]], prefix: str) -> list[str]:
    out = ['<table class="matrix"><tr><th>table \\ client</th>']
    for ci, client in enumerate(clients):
        out.append(f'<th class="client" title="{_e(client.get("name"))} ({_e(client.get("versions"))})">'
                   f'<a href="#{_anchor("client", ci)}">{_e(client.get("client"))}</a></th>')
    out.append("</tr>")
    # how many tables each client cannot read / write: the row a person reads first
    out.append('<tr class="count"><td class="note" title="tables the client cannot read (or misreads) / '
               'cannot write">blocked: read / write</td>')
    for client in clients:
        cid = str(client.get("client"))
        reads = sum(1 for t in tables if cid in ((t.get("blocked") or {}).get("read") or ()))
        writes = sum(1 for t in tables if cid in ((t.get("blocked") or {}).get("write") or ()))
        out.append(f"<td>{reads}/{writes}</td>")
    out.append("</tr>")
    for ti, table in enumerate(tables):
        path = str(table.get("table"))
        out.append(f'<tr><th class="table" title="{_e(path)}"><a href="#{_anchor("table", ti)}">'
                   f'{_e(_name(path, prefix))}</a></th>')
        for client in clients:
            entry = _client_entry(table, str(client.get("client")))
            if entry is None:
                out.append('<td class="v"></td>')
                continue
            out.append('<td class="v">' + _verdict_cell("read", (entry.get("read") or {}).get("verdict"))
                       + _verdict_cell("write", (entry.get("write") or {}).get("verdict")) + "</td>")
        out.append("</tr>")
    out.append("</table>")
    return out


def _short(path: str, limit: int = 48) -> str:
    """The end of a long path (the table's own name is what tells rows apart)."""
    return path if len(path) <= limit else "\u2026" + path[-(limit - 1):]


# --- per client ---------------------------------------------------------------------------------

def _blockers(access: Mapping[str, Any] | None) -> str:
    if not access:
        return ""
    # one line per distinct reason (a combination a client misreads blames each of its features)
    items = [_e(r) for r in dict.fromkeys(str(b.get("reason")) for b in access.get("blockers") or ())]
    items += [f'<span class="note">{_e(n)}</span>' for n in access.get("notes") or ()]
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>" if items else ""


def _write_blockers(read: Mapping[str, Any], write: Mapping[str, Any]) -> str:
    """The write side's blockers, or a pointer to the read side's when they are the same (a
    writer must read first): the page stays small for a large fleet."""
    if write.get("blockers") and write.get("blockers") == read.get("blockers"):
        return '<div class="note">as for reads</div>'
    return _blockers(write)


def _plan(unblock: Mapping[str, Any] | None) -> str:
    if not unblock:
        return '<span class="note">no plan: no table feature blocks it</span>'
    parts: list[str] = []
    steps = unblock.get("steps") or ()
    if steps:
        items = []
        for step in steps:
            text = f"drop <code>{_e(step.get('feature'))}</code>"
            if step.get("required_by"):
                text += f" (required by {_e(step.get('required_by'))})"
            rewrite = step.get("rewrite") or {}
            if rewrite.get("needed"):
                files, size = rewrite.get("files"), rewrite.get("bytes")
                text += (" - rewrites " + ("? files" if files is None else f"{_e(files)} file(s)")
                         + ("" if size is None else f", {_e(human_bytes(size))}"))
            if step.get("checkpoint_protection"):
                text += " - adds checkpointProtection"
            items.append(f"<li>{text}</li>")
        parts.append("<ol>" + "".join(items) + "</ol>")
    for u in unblock.get("undroppable") or ():
        parts.append(f'<div class="blocked">cannot drop <code>{_e(u.get("feature"))}</code>: {_e(u.get("reason"))}</div>')
    after = []
    for side in ("read", "write"):
        access = unblock.get(f"{side}_after")
        if access:
            after.append(_verdict_cell(side, access.get("verdict")))
    if after:
        parts.append('<div>after the plan: ' + " ".join(after) + "</div>")
    if unblock.get("truncate_history_before_write"):
        parts.append("<div>then <code>truncate-history</code> before this client may write</div>")
    for note in unblock.get("notes") or ():
        parts.append(f'<div class="note">{_e(note)}</div>')
    return "".join(parts)


_BLOCKING = ("no", "misreads")


def _client_section(ci: int, client: Mapping[str, Any], tables: Sequence[Mapping[str, Any]],
                    prefix: str) -> list[str]:
    """The tables this client cannot read or write (a ``no`` or ``misreads`` verdict), each with
    its blockers and plan; the tables the catalogue cannot decide for it (``unknown``) counted on
    one line with their reasons once, so that a client without sources does not fill the page."""
    cid = str(client.get("client"))
    out = [f'<h3 id="{_anchor("client", ci)}">{_e(cid)} <span class="note">{_e(client.get("name"))}; '
           f'versions {_e(client.get("versions"))}</span></h3>']
    rows = []
    unknown: dict[str, int] = {"read": 0, "write": 0}
    reasons: dict[str, None] = {}
    for ti, table in enumerate(tables):
        entry = _client_entry(table, cid)
        if entry is None:
            continue
        read = entry.get("read") or {}
        write = entry.get("write") or {}
        if read.get("verdict") in _BLOCKING or write.get("verdict") in _BLOCKING:
            rows.append(
                f'<tr><td class="mono"><a href="#{_anchor("table", ti)}">'
                f'{_e(_name(str(table.get("table")), prefix))}</a></td>'
                f'<td>{_verdict_cell("read", read.get("verdict"))}{_blockers(read)}</td>'
                f'<td>{_verdict_cell("write", write.get("verdict"))}{_write_blockers(read, write)}</td>'
                f'<td>{_plan(entry.get("unblock"))}</td></tr>')
            continue
        for side, access in (("read", read), ("write", write)):
            if access.get("verdict") == "unknown":
                unknown[side] += 1
                for text in [*(b.get("reason") for b in access.get("blockers") or ()), *(access.get("notes") or ())]:
                    reasons.setdefault(str(text), None)
    if rows:
        out.append(f'<p><span class="blocked">{len(rows)}</span> of {len(tables)} table(s) block it:</p>')
        out.append("<table><tr><th>table</th><th>read</th><th>write</th><th>plan that unblocks it</th></tr>")
        out += rows
        out.append("</table>")
    else:
        out.append('<p class="ok">\u2713 no table listed blocks it.</p>')
    if unknown["read"] or unknown["write"]:
        out.append(f'<p>{_verdict_cell("read", "unknown")} for {unknown["read"]} other table(s), '
                   f'{_verdict_cell("write", "unknown")} for {unknown["write"]}: '
                   + "; ".join(f'<span class="note">{_e(r)}</span>' for r in list(reasons)[:5]) + "</p>")
    return out


# --- per table ----------------------------------------------------------------------------------

def _features(protocol: Mapping[str, Any], key: str) -> str:
    names = protocol.get(key)
    if names is None:
        return '<span class="note">not listed (a legacy protocol version implies them)</span>'
    return ", ".join(f"<code>{_e(n)}</code>" for n in names) or '<span class="note">empty</span>'


def _table_section(ti: int, table: Mapping[str, Any]) -> list[str]:
    protocol = table.get("protocol") or {}
    blocked = table.get("blocked") or {}
    out = [f'<h3 id="{_anchor("table", ti)}" class="mono">{_e(table.get("table"))}</h3>',
           '<table class="kv">',
           f'<tr><td>version</td><td>{_e(table.get("version"))}</td></tr>',
           f'<tr><td>protocol</td><td>reader {_e(protocol.get("minReaderVersion"))}, '
           f'writer {_e(protocol.get("minWriterVersion"))}</td></tr>',
           f'<tr><td>reader features</td><td>{_features(protocol, "readerFeatures")}</td></tr>',
           f'<tr><td>writer features</td><td>{_features(protocol, "writerFeatures")}</td></tr>',
           f'<tr><td>cannot read</td><td>{_ids(blocked.get("read"))}</td></tr>',
           f'<tr><td>cannot write</td><td>{_ids(blocked.get("write"))}</td></tr>',
           "</table>"]
    for note in table.get("notes") or ():
        out.append(f'<div class="note">{_e(note)}</div>')
    timeline = table.get("timeline")
    if isinstance(timeline, Mapping) and "latest_version" in timeline:
        out.append(timeline_svg(timeline))
    elif isinstance(timeline, Mapping):
        out.append(f'<p class="note">no timeline: {_e(timeline.get("error_class"))} {_e(timeline.get("message"))}</p>')
    else:
        out.append('<p class="note">no timeline (the table was described through a catalog, not its log)</p>')
    return out


def _ids(ids: Iterable[str] | None) -> str:
    ids = list(ids or ())
    if not ids:
        return '<span class="ok">none</span>'
    return '<span class="blocked">' + ", ".join(_e(i) for i in ids) + "</span>"


# --- the timeline picture -------------------------------------------------------------------------

_W, _LEFT, _RIGHT = 960, 60, 60
_LINE_Y = 64
_LABEL_ROWS = 3
#: Protocol changes and drops labelled with text (the newest); older ones are marks only.
MAX_LABELS = 12
_BLUE, _ORANGE, _PURPLE = "#0072B2", "#D55E00", "#CC79A7"

_TIMELINE_LEGEND = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="820" height="26" role="img" '
    'font-family="system-ui,sans-serif" font-size="11"><title>timeline legend</title>'
    f'<rect x="4" y="8" width="10" height="10" fill="#fff" stroke="{_BLUE}" stroke-width="1.5"/>'
    '<text x="18" y="17">checkpoint</text>'
    f'<rect x="90" y="8" width="10" height="10" fill="{_BLUE}" stroke="{_BLUE}" stroke-width="1.5"/>'
    '<text x="104" y="17">protected (rule a)</text>'
    f'<path d="M215 7 l6 6 l-6 6 l-6 -6 z" fill="#fff" stroke="{_BLUE}" stroke-width="1.5"/>'
    '<text x="226" y="17">V2 checkpoint</text>'
    f'<rect x="315" y="10" width="10" height="10" fill="#fff" stroke="{_BLUE}"/>'
    f'<rect x="312" y="7" width="10" height="10" fill="#fff" stroke="{_BLUE}"/>'
    '<text x="330" y="17">multi-part</text>'
    f'<path d="M400 8 h12 l-6 9 z" fill="{_PURPLE}"/><text x="416" y="17">DROP FEATURE commit</text>'
    '<line x1="548" y1="6" x2="548" y2="20" stroke="#000" stroke-width="1.5"/>'
    '<text x="553" y="17">protocol change</text>'
    f'<line x1="660" y1="4" x2="660" y2="22" stroke="{_ORANGE}" stroke-width="1.5" stroke-dasharray="4,2"/>'
    '<text x="665" y="17">boundary (requireCheckpointProtectionBeforeVersion)</text></svg>')


def timeline_svg(timeline: Mapping[str, Any]) -> str:
    """The timeline as inline SVG: versions left to right on the commit line; checkpoints as
    squares (multi-part: a double square; V2: a diamond), filled when Checkpoint Protection rule
    (a) keeps them; DROP FEATURE commits as triangles above with the feature; protocol changes
    as ticks below with the features added (+) and removed (−); the boundary as a dashed line; a
    break mark and a note when older history is not drawn. Every mark has a ``<title>`` (its
    tooltip) with the details."""
    first, last = int(timeline["drawn_from"]), int(timeline["latest_version"])
    span = max(last - first, 1)
    width = _W - _LEFT - _RIGHT

    def x(version: int) -> float:
        return round(_LEFT + (version - first) * width / span if last > first else _LEFT + width / 2, 1)

    def anchor(at: float) -> str:
        # labels near the right end grow leftwards, so that none is cut at the picture's edge
        return "end" if at > _LEFT + width * 0.6 else "start"

    changes = list(timeline.get("protocol_changes") or ())
    drops = list(timeline.get("drop_feature_commits") or ())
    height = _LINE_Y + 24 + 15 * _LABEL_ROWS + 4
    p: list[str] = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
                    f'viewBox="0 0 {_W} {height}" role="img" font-family="system-ui,sans-serif" font-size="11">',
                    f"<title>protocol and checkpoint timeline, versions {first} to {last}</title>"]
    p.append(f'<line x1="{x(first)}" y1="{_LINE_Y}" x2="{x(last)}" y2="{_LINE_Y}" stroke="#555" stroke-width="2"/>')
    p.append(f'<text x="{x(first) - 8}" y="{_LINE_Y + 4}" text-anchor="end">v{first}</text>')
    if last != first:
        p.append(f'<text x="{x(last) + 8}" y="{_LINE_Y + 4}">v{last}</text>')
    if timeline.get("older_history_not_drawn"):
        earliest = timeline.get("earliest_version")
        not_drawn = timeline.get("checkpoints_not_drawn") or 0
        p.append(f'<path d="M{x(first) - 3} {_LINE_Y - 9} l4 5 l-4 6 l4 5" fill="none" stroke="#555"/>')
        p.append(f'<text x="4" y="12" fill="#7a2d00">older history not drawn: versions {_e(earliest)} to '
                 f"{first - 1} ({_e(not_drawn)} checkpoint(s))</text>")
    boundary = timeline.get("boundary_version")
    if boundary is not None and first <= int(boundary) <= last:
        bx = x(int(boundary))
        p.append(f'<line x1="{bx}" y1="{_LINE_Y - 20}" x2="{bx}" y2="{height - 2}" stroke="{_ORANGE}" '
                 f'stroke-width="1.5" stroke-dasharray="5,3"><title>boundary v{_e(boundary)}: '
                 f"delta.requireCheckpointProtectionBeforeVersion</title></line>")
        p.append(f'<text x="{bx + (-4 if anchor(bx) == "end" else 4)}" y="{height - 3}" '
                 f'text-anchor="{anchor(bx)}" fill="#7a2d00">boundary v{_e(boundary)}'
                 + (" (checkpointProtection)" if timeline.get("checkpoint_protection") else "") + "</text>")
    for c in timeline.get("checkpoints") or ():
        p.append(_checkpoint_mark(c, x(int(c["version"]))))
    for d in drops:
        dx = x(int(d["version"]))
        label = f"DROP FEATURE {d.get('feature') or '?'}" + (" (truncate history)" if d.get("truncate_history") else "")
        p.append(f'<path d="M{dx - 6} {_LINE_Y - 22} h12 l-6 9 z" fill="{_PURPLE}"><title>v{_e(d["version"])}: '
                 f"{_e(label)}</title></path>")
    for i, d in enumerate(drops[-MAX_LABELS:]):
        dx = x(int(d["version"]))
        p.append(f'<text x="{dx}" y="{_LINE_Y - 26 - 11 * (i % 2)}" text-anchor="{anchor(dx)}" '
                 f'fill="#6e1f4c">drop {_e(d.get("feature") or "?")}</text>')
    for c in changes:
        tx = x(int(c["version"]))
        p.append(f'<line x1="{tx}" y1="{_LINE_Y + 6}" x2="{tx}" y2="{_LINE_Y + 14}" stroke="#000" stroke-width="1.5"/>')
    for i, c in enumerate(changes[-MAX_LABELS:]):
        tx = x(int(c["version"]))
        proto = c.get("protocol") or {}
        delta = " ".join([*(f"+{a}" for a in c.get("added") or ()), *(f"\u2212{r}" for r in c.get("removed") or ())])
        label = f"v{c['version']}: {proto.get('minReaderVersion')}/{proto.get('minWriterVersion')} {delta}".strip()
        p.append(f'<text x="{tx}" y="{_LINE_Y + 26 + 15 * (i % _LABEL_ROWS)}" text-anchor="{anchor(tx)}">'
                 f"{_e(label)}</text>")
    if not changes:
        ip = timeline.get("initial_protocol") or {}
        p.append(f'<text x="{_LEFT}" y="{_LINE_Y + 26}" fill="#555">no protocol change since v{first} '
                 f"(reader {_e(ip.get('minReaderVersion'))}, writer {_e(ip.get('minWriterVersion'))})</text>")
    p.append("</svg>")
    return "".join(p)


def _checkpoint_mark(c: Mapping[str, Any], cx: float) -> str:
    kind = c.get("kind")
    fill = _BLUE if c.get("protected") else "#fff"
    stroke = _ORANGE if c.get("at_boundary") else _BLUE
    dash = "" if c.get("complete", True) else ' stroke-dasharray="2,2"'
    what = (f"checkpoint v{c['version']}: {kind}"
            + (f", {c.get('parts')} part(s)" if kind == "multipart" else "")
            + (f", {c.get('sidecars')} sidecar(s)" if c.get("sidecars") is not None else "")
            + (", protected (Checkpoint Protection rule a)" if c.get("protected") else "")
            + (", at the boundary" if c.get("at_boundary") else "")
            + ("" if c.get("complete", True) else ", INCOMPLETE: a part is missing"))
    title = f"<title>{_e(what)}</title>"
    if kind == "v2":
        return (f'<path d="M{cx} {_LINE_Y - 7} l7 7 l-7 7 l-7 -7 z" fill="{fill}" stroke="{stroke}" '
                f'stroke-width="1.5"{dash}>{title}</path>')
    back = (f'<rect x="{cx - 2}" y="{_LINE_Y - 8}" width="10" height="10" fill="#fff" stroke="{stroke}"/>'
            if kind == "multipart" else "")
    return (f'{back}<rect x="{cx - 5}" y="{_LINE_Y - 5}" width="10" height="10" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="1.5"{dash}>{title}</rect>')
