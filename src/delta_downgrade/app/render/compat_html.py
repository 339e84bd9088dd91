"""The compat report as one self-contained HTML page: which tables block which clients, for a fleet
of a few tables or of thousands.

Input: the fleet document of ``compat --tables-file F`` (README "compat"), each table carrying its
``timeline`` (:func:`~delta_downgrade.app.render.protocol_timeline.timeline_json`, or null, or an
``{"error_class", "message"}`` when the log cannot be drawn). The page is a pure function of that
document, so ``compat.json`` and ``compat.html`` always say the same.

What a person sees, top down (the page's height grows with the tables, never with tables x
clients: what is per table and per client sits in a collapsed ``<details>``):

1. the fleet in one sentence and a legend;
2. clients by family, their versions as columns: how many tables each cannot read or write;
3. feature -> the clients it blocks (by family) and the tables that carry it;
4. the matrix, tables x clients grouped by family: each cell the read and the write verdict as
   two symbols (colour-blind safe: Okabe-Ito colours, and the symbol alone tells the verdict);
5. the tables that could not be loaded;
6. one collapsed section per table: its protocol, the clients it blocks grouped by their plan, and
   the protocol / checkpoint timeline as inline SVG - protocol bands (each with how many clients
   read the versions in it: time travel per client), DROP FEATURE commits, the Checkpoint
   Protection boundary, protected checkpoints - under one legend that wraps to the page's width.

Self-contained: inline CSS and SVG only - no script, font, image or link outside the page, so it
opens offline from a file and cannot run anything. Rendered by Jinja2 templates
(``templates/``, shipped in the wheel) with autoescaping on: every string from the document is
escaped by the engine, none by hand.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, TypedDict

from jinja2 import Environment, PackageLoader, StrictUndefined

from delta_downgrade.app.render.compat import drops_text, plan_text
from delta_downgrade.app.render.protocol_timeline import TimelineErrorJson, TimelineJson
from delta_downgrade.operations.compat import ClientJson, TableCompatJson
from delta_downgrade.protocol.json_values import JsonObject

if TYPE_CHECKING:
    from delta_downgrade.operations.compat import ClientCompatJson
    from delta_downgrade.protocol.protocol import ProtocolJson

__all__ = ["CompatReportJson", "ReportTableJson", "VERDICT_STYLE", "render_compat_html", "report_context",
           "timeline_svg"]


class ReportTableJson(TableCompatJson):
    """A table of ``compat.json``: its compat document and its timeline (null: a catalog name,
    whose log this package does not read)."""

    timeline: TimelineJson | TimelineErrorJson | None


class CompatReportJson(TypedDict):
    """``compat.json`` (its pydantic model: app/schemas/compat.py ``CompatReportDocument``)."""

    tables: list[ReportTableJson]
    errors: list[JsonObject]
    clients: list[ClientJson]

#: verdict -> (symbol, css class, words). Okabe-Ito colours in the CSS; the symbol carries the
#: verdict without colour.
VERDICT_STYLE: dict[str, tuple[str, str, str]] = {
    "yes": ("\u2713", "v-yes", "yes"),
    "no": ("\u2717", "v-no", "no"),
    "misreads": ("\u26a0", "v-mis", "misreads: accepts the table and returns wrong data"),
    "unknown": ("?", "v-unk", "unknown: the catalogue has no source"),
    "n/a": ("\u2013", "v-na", "n/a: does not write Delta tables, or a read path only"),
}
_BLOCKING = ("no", "misreads")
#: verdict css class -> (background, text colour) of the matrix's cells (Okabe-Ito based), and the
#: one-letter code of each in the cell's class (a 1,000-table matrix has 50,000 cells: short markup).
_CELL_COLOURS = {"v-yes": ("#d3efe4", "#005c43"), "v-no": ("#f6c9a8", "#7a2d00"), "v-mis": ("#f1d0e3", "#6e1f4c"),
                 "v-unk": ("#e6e6e6", "#333"), "v-na": ("#ffffff", "#555")}
_CELL_CODE = {"v-yes": "y", "v-no": "n", "v-mis": "m", "v-unk": "u", "v-na": "a"}


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(loader=PackageLoader("delta_downgrade.app.render", "templates"),
                      autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env


def _verdict(value: str | None) -> dict[str, str]:
    symbol, css, words = VERDICT_STYLE.get(value or "unknown", VERDICT_STYLE["unknown"])
    return {"symbol": symbol, "css": css, "words": words, "value": value or "unknown"}


def render_compat_html(document: CompatReportJson, *, title: str = "Delta client compatibility") -> str:
    return _environment().get_template("compat_report.html.j2").render(**report_context(document, title=title))


def timeline_svg(timeline: TimelineJson) -> str:
    """One table's timeline picture, alone (the page draws it inside the table's section)."""
    return _environment().get_template("timeline.svg.j2").render(t=timeline_shapes(timeline))


# --- the view the templates draw ----------------------------------------------------------------

def _common_prefix(paths: Sequence[str]) -> str:
    """The directory part every table path shares (shown once), or ""."""
    if len(paths) < 2:
        return ""
    first, last = min(paths), max(paths)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:first.rfind("/", 0, n) + 1] if "/" in first[:n] else ""


def _short(path: str, prefix: str, limit: int = 44) -> str:
    name = path[len(prefix):] if prefix and path.startswith(prefix) else path
    return name if len(name) <= limit else "\u2026" + name[-(limit - 1):]


def _label(client: ClientJson) -> str:
    """The client's column label under its family: the id without the family's name."""
    cid, family = client["client"], client["family"]
    for prefix in (f"{family}-", "dbr-"):
        if cid.startswith(prefix) and len(cid) > len(prefix):
            return cid[len(prefix):]
    return cid


def _families(clients: Sequence[ClientJson]) -> dict[str, list[ClientJson]]:
    """The clients by family, families in the order they first appear."""
    order: dict[str, list[ClientJson]] = {}
    for c in clients:
        order.setdefault(c["family"], []).append(c)
    return order


def _by_family(ids: Iterable[str], family_of: Mapping[str, str], label_of: Mapping[str, str]) -> list[dict[str, Any]]:
    grouped: dict[str, list[str]] = {}
    for cid in ids:
        grouped.setdefault(family_of.get(cid, cid), []).append(label_of.get(cid, cid))
    return [{"family": f, "labels": labels} for f, labels in grouped.items()]


def _carried(protocol: ProtocolJson) -> frozenset[str]:
    """The features a protocol document has, listed or implied by legacy versions."""
    from delta_downgrade.protocol.protocol import Protocol

    try:
        return Protocol.from_action({k: v for k, v in protocol.items() if v is not None}).features
    except Exception:  # an invalid protocol the verdicts already flag: its listed names
        return frozenset([*(protocol["readerFeatures"] or ()), *(protocol["writerFeatures"] or ())])


def report_context(document: CompatReportJson, *, title: str = "Delta client compatibility") -> dict[str, Any]:
    """What the page's template draws (the view: Jinja2 reads it by name)."""
    tables, errors, clients = document["tables"], document["errors"], document["clients"]
    by_family = _families(clients)
    # the matrix's columns: clients grouped by family (families in the order they first appear)
    ids = [c["client"] for members in by_family.values() for c in members]
    family_of = {c["client"]: c["family"] for c in clients}
    label_of = {c["client"]: _label(c) for c in clients}
    prefix = _common_prefix([t["table"] for t in tables])

    cannot_read = {cid: 0 for cid in ids}
    cannot_write = {cid: 0 for cid in ids}
    unknown = {cid: 0 for cid in ids}
    blocked_by_feature: dict[str, dict[str, set[str]]] = {}
    tables_with_feature: dict[str, list[int]] = {}
    rows, sections = [], []
    for ti, table in enumerate(tables):
        entries = {e["client"]: e for e in table["clients"]}
        cells: list[dict[str, Any] | None] = []
        for cid in ids:
            e = entries.get(cid)
            if e is None:
                cells.append(None)
                continue
            read, write = e["read"], e["write"]
            rv, wv = read["verdict"], write["verdict"]
            cannot_read[cid] += rv in _BLOCKING
            cannot_write[cid] += wv in _BLOCKING
            unknown[cid] += "unknown" in (rv, wv)
            for side, access in (("read", read), ("write", write)):
                if access["verdict"] in _BLOCKING:
                    for b in access["blockers"]:
                        if feature := b["feature"]:
                            blocked_by_feature.setdefault(feature, {"read": set(), "write": set()})[side].add(cid)
            cells.append({"read": _verdict(rv), "write": _verdict(wv), "client": cid,
                          "css": _CELL_CODE[_verdict(rv)["css"]] + _CELL_CODE[_verdict(wv)["css"]]})
        for carried in _carried(table["protocol"]):
            tables_with_feature.setdefault(carried, []).append(ti)
        name = _short(table["table"], prefix)
        rows.append({"index": ti, "path": table["table"], "name": name, "cells": cells})
        sections.append(_table_section(ti, table, name, entries, family_of, label_of))

    families = [{"family": family, "clients": [
        {"id": c["client"], "label": label_of[c["client"]], "name": c["name"],
         "versions": c["versions"], "cannot_read": cannot_read[c["client"]],
         "cannot_write": cannot_write[c["client"]], "unknown": unknown[c["client"]]}
        for c in members]} for family, members in by_family.items()]
    columns = [{"id": c["client"], "label": label_of[c["client"]], "name": c["name"], "versions": c["versions"],
                "first": i == 0}
               for members in by_family.values() for i, c in enumerate(members)]
    features: list[dict[str, Any]] = []
    for feature, sides in blocked_by_feature.items():
        carrying = tables_with_feature.get(feature, [])
        features.append({
            "feature": feature,
            "read": _by_family([c for c in ids if c in sides["read"]], family_of, label_of),
            "write_only": _by_family([c for c in ids if c in sides["write"] and c not in sides["read"]],
                                     family_of, label_of),
            "clients": len(sides["read"] | sides["write"]),
            "tables": [{"index": i, "name": rows[i]["name"], "path": rows[i]["path"]} for i in carrying],
        })
    features.sort(key=lambda f: (-f["clients"], -len(f["tables"]), f["feature"]))
    blocked_tables = sum(1 for t in tables if t["blocked"]["read"] or t["blocked"]["write"])
    return {
        "title": title, "tables": rows, "sections": sections, "columns": columns, "errors": errors, "families": families,
        "features": features, "prefix": prefix, "client_count": len(clients), "table_count": len(tables),
        "blocked_tables": blocked_tables, "legend": [VERDICT_STYLE[k] + (k,) for k in VERDICT_STYLE],
        "cell_colours": [(_CELL_CODE[css], colours) for css, colours in _CELL_COLOURS.items()],
    }


def _table_section(ti: int, table: ReportTableJson, name: str, entries: Mapping[str, ClientCompatJson],
                   family_of: Mapping[str, str], label_of: Mapping[str, str]) -> dict[str, Any]:
    """One table's collapsed section: its summary line, the blocked clients grouped by what blocks
    them and the plan (one row per distinct plan, not per client), the timeline."""
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    for cid, e in entries.items():
        read, write = e["read"], e["write"]
        if read["verdict"] not in _BLOCKING and write["verdict"] not in _BLOCKING:
            continue
        reasons = list(dict.fromkeys(b["reason"] for side in (read, write) for b in side["blockers"]))
        plan = plan_text(e["unblock"]) or "no plan"
        key = (read["verdict"], write["verdict"], plan, *reasons)
        group = groups.setdefault(key, {"read": _verdict(read["verdict"]), "write": _verdict(write["verdict"]),
                                        "reasons": reasons, "plan": plan, "ids": []})
        group["ids"].append(cid)
    for g in groups.values():
        g["clients"] = _by_family(g["ids"], family_of, label_of)
    summary = table["summary"]
    best = summary["best_drop"]
    timeline = table["timeline"]
    # a timeline to draw; else None (no timeline, or the error that kept it from being read)
    drawn_timeline: TimelineJson | None = None
    timeline_error: TimelineErrorJson | None = None
    if timeline is not None:
        if "latest_version" in timeline:
            drawn_timeline = timeline
        else:
            timeline_error = timeline
    # time travel per client: each protocol span, and who cannot read its versions (by family)
    travel = []
    for span in (drawn_timeline.get("spans") or ()) if drawn_timeline is not None else ():
        readers = set(span["readers"])
        travel.append({"from": span["from"], "to": span["to"], "readers": len(readers),
                       "judged": span["judged"],
                       "protocol": span["protocol"],
                       "not": _by_family([c for c in entries if c not in readers], family_of, label_of)})
    return {
        "index": ti, "path": table["table"], "name": name, "version": table["version"],
        "protocol": table["protocol"], "summary": summary, "notes": table.get("notes") or (),
        "groups": list(groups.values()), "travel": travel,
        "best_drop": None if not best else {**best, "text": drops_text(best["drops"])},
        "timeline": timeline_shapes(drawn_timeline, list(entries)) if drawn_timeline is not None else None,
        "timeline_error": timeline_error,
    }


# --- the timeline picture -------------------------------------------------------------------------

_W, _LEFT, _RIGHT = 960, 48, 56
_LINE_Y = 70
#: Protocol changes and drops labelled with text (the newest); older ones are marks only.
MAX_LABELS = 8
_BAND_FILLS = ("#e8f1f8", "#f6efe2")
#: The width of one character of the pictures' 11 px sans-serif text, rounded up (a label is
#: placed and shortened with it; the browser test checks that every label stays inside).
_CHAR_W = 6.5


def timeline_shapes(timeline: TimelineJson, clients: Sequence[str] = ()) -> dict[str, Any]:
    """The timeline's geometry: versions left to right on the commit line; protocol bands behind
    it (each span of one protocol, with how many clients read its versions); checkpoints as
    squares (multi-part: a double square; V2: a diamond), filled when Checkpoint Protection rule
    (a) keeps them; DROP FEATURE commits as triangles above; protocol changes as ticks below with
    the features added (+) and removed (-); the boundary as a dashed line; a break mark when older
    history is not drawn. Every mark carries its details as a tooltip (a band's: the clients of
    ``clients`` that cannot read its versions)."""
    first, last = timeline["drawn_from"], timeline["latest_version"]
    span = max(last - first, 1)
    width = _W - _LEFT - _RIGHT
    step = width / span if last > first else width

    def x(version: float) -> float:
        return round(_LEFT + (version - first) * width / span if last > first else _LEFT + width / 2, 1)

    def place(at: float, text: str) -> dict[str, Any]:
        """A label at ``at``: growing right, or left when it would pass the picture's right edge,
        shortened (with its full text as tooltip) when it fits neither way."""
        need = len(text) * _CHAR_W
        if at + need <= _W - 4:
            return {"x": at, "anchor": "start", "text": text, "full": text}
        if at - need >= 4:
            return {"x": at, "anchor": "end", "text": text, "full": text}
        room = max(at - 4, _W - 4 - at)
        keep = max(int(room / _CHAR_W) - 1, 4)
        right = at + need > _W - 4 and at - 4 > _W - 4 - at
        return {"x": at, "anchor": "end" if right else "start", "text": text[:keep] + "\u2026", "full": text}

    bands = []
    for i, s in enumerate(timeline.get("spans") or ()):
        x0 = max(_LEFT - 6, x(s["from"]) - step / 2) if last > first else _LEFT - 6
        x1 = min(_W - _RIGHT + 6, x(s["to"]) + step / 2) if last > first else _W - _RIGHT + 6
        proto = s["protocol"]
        features = sorted({*(proto["readerFeatures"] or ()), *(proto["writerFeatures"] or ())})
        readers = s["readers"]
        label = f"{proto['minReaderVersion']},{proto['minWriterVersion']}"
        bands.append({
            "x": round(x0, 1), "w": round(max(x1 - x0, 2), 1), "fill": _BAND_FILLS[i % 2],
            "label": label, "wide": x1 - x0 >= 90,
            # a narrow band's label grows leftwards from its right edge, one line lower
            "text_x": round(x0 + 4 if x1 - x0 >= 90 else x1 - 2, 1),
            "text_y": 15 if x1 - x0 >= 90 else 27, "anchor": "start" if x1 - x0 >= 90 else "end",
            "readers": len(readers), "judged": s["judged"],
            "title": (f"v{s['from']}-{s['to']}: protocol {label}" + (f" [{', '.join(features)}]" if features else "")
                      + (f"; read by {len(readers)} of {s['judged']} clients"
                         + (f"; not by: {', '.join(c for c in (clients or ()) if c not in readers)}"
                            if clients and len(readers) < len(clients) else ""))),
        })
    checkpoints = []
    for c in timeline["checkpoints"]:
        kind = c["kind"]
        what = (f"checkpoint v{c['version']}: {kind}"
                + (f", {c['parts']} part(s)" if kind == "multipart" else "")
                + (f", {c['sidecars']} sidecar(s)" if c["sidecars"] is not None else "")
                + (", protected (Checkpoint Protection rule a)" if c["protected"] else "")
                + (", at the boundary" if c["at_boundary"] else "")
                + ("" if c["complete"] else ", INCOMPLETE: a part is missing"))
        checkpoints.append({"x": x(c["version"]), "kind": kind, "protected": c["protected"],
                            "at_boundary": c["at_boundary"], "complete": c["complete"], "title": what})
    drops = timeline["drop_feature_commits"]
    drop_marks = [{"x": x(d["version"]),
                   "title": f"v{d['version']}: DROP FEATURE {d['feature'] or '?'}"
                            + (" (truncate history)" if d["truncate_history"] else "")} for d in drops]
    drop_labels = [{**place(x(d["version"]), f"drop {d['feature'] or '?'}"), "y": _LINE_Y - 26 - 11 * (i % 2)}
                   for i, d in enumerate(drops[-MAX_LABELS:])]
    changes = timeline["protocol_changes"]
    ticks = [x(c["version"]) for c in changes]
    change_labels = []
    for i, change in enumerate(changes[-MAX_LABELS:]):
        proto = change["protocol"]
        delta = " ".join([*(f"+{a}" for a in change["added"]), *(f"\u2212{r}" for r in change["removed"])])
        text = f"v{change['version']}: {proto['minReaderVersion']}/{proto['minWriterVersion']} {delta}".strip()
        change_labels.append({**place(x(change["version"]), text), "y": _LINE_Y + 26 + 13 * (i % 2)})
    boundary = timeline["boundary_version"]
    boundary_mark = None
    if boundary is not None and first <= boundary <= last:
        bx = x(boundary)
        boundary_label = place(bx, f"boundary v{boundary}"
                               + (" (checkpointProtection)" if timeline["checkpoint_protection"] else ""))
        boundary_mark = {**boundary_label, "x": bx,
                         "text_x": bx + (-4 if boundary_label["anchor"] == "end" else 4)}
    initial = timeline["initial_protocol"]
    height = _LINE_Y + 58
    return {
        "width": _W, "height": height, "line_y": _LINE_Y, "first": first, "last": last,
        "x_first": x(first), "x_last": x(last), "bands": bands, "checkpoints": checkpoints,
        "drop_marks": drop_marks, "drop_labels": drop_labels, "ticks": ticks, "change_labels": change_labels,
        "boundary": boundary_mark,
        "older": ({"earliest": timeline["earliest_version"], "to": first - 1,
                   "checkpoints": timeline["checkpoints_not_drawn"]}
                  if timeline["older_history_not_drawn"] else None),
        "no_change": None if changes else (f"no protocol change since v{first} (reader "
                                           f"{initial['minReaderVersion']}, writer {initial['minWriterVersion']})"),
    }
