"""``compat``'s RESULT fields and its text: one line per client (read / write verdict, what blocks
it, the plan that unblocks it), or with ``--client`` the full detail and the sources. The JSON
documents are :meth:`TableCompat.to_json` / :meth:`FleetCompat.to_json` (README "compat")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from delta_downgrade.app.render.result import protocol_fields
from delta_downgrade.protocol.json_values import JsonObject

if TYPE_CHECKING:
    from delta_downgrade.operations.compat import (
        AccessJson,
        CatalogueEntryJson,
        CatalogueSideJson,
        ClientCompat,
        ClientCompatJson,
        FleetCompat,
        StepJson,
        TableCompat,
        TableCompatJson,
        UnblockJson,
    )
    from delta_downgrade.operations.version_access import VersionsJson
    from delta_downgrade.protocol.protocol import ProtocolJson

STATUS_COMPATIBLE = "compatible"
STATUS_BLOCKED = "blocked"


# --- RESULT --------------------------------------------------------------------------------------

def compat_result(report: TableCompat) -> JsonObject:
    """One table's RESULT: ``compatible`` when no selected client is blocked from reading or
    writing (a verdict ``no`` or ``misreads``), else ``blocked`` with the client ids. A blocked
    client is a finding, not a failure: exit 0 either way."""
    blocked_read, blocked_write = report.blocked_read, report.blocked_write
    return {"table": report.table, "status": STATUS_BLOCKED if blocked_read or blocked_write else STATUS_COMPATIBLE,
            "version": report.version, **protocol_fields(report.protocol),
            "clients": [c.client.id for c in report.clients],
            "blocked_read": blocked_read, "blocked_write": blocked_write}


def fleet_summary(fleet: FleetCompat) -> JsonObject:
    """The summary RESULT of ``compat --tables-file``: counts, the blocked tables per client, the
    tables that failed."""
    blocked = [t for t in fleet.tables if t.blocked_read or t.blocked_write]
    by_client: dict[str, dict[str, list[str]]] = {}
    for t in fleet.tables:
        for c in t.clients:
            if c.blocked_read or c.blocked_write:
                entry = by_client.setdefault(c.client.id, {"read": [], "write": []})
                if c.blocked_read:
                    entry["read"].append(t.table)
                if c.blocked_write:
                    entry["write"].append(t.table)
    return {"summary": True, "tables": len(fleet.tables) + len(fleet.errors),
            "status": "error" if fleet.errors else STATUS_BLOCKED if blocked else STATUS_COMPATIBLE,
            "blocked_tables": [t.table for t in blocked], "failed_tables": [e.table for e in fleet.errors],
            "blocked_by_client": by_client}


# --- text ----------------------------------------------------------------------------------------

def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


def _protocol_text(p: ProtocolJson) -> str:
    out = f"{p['minReaderVersion']},{p['minWriterVersion']}"
    reader, writer = p["readerFeatures"], p["writerFeatures"]
    if reader is not None:
        out += " reader[" + ", ".join(reader) + "]"
    if writer is not None:
        out += " writer[" + ", ".join(writer) + "]"
    return out


def _step_text(step: StepJson) -> str:
    r = step["rewrite"]
    text = step["feature"]
    if r["needed"]:
        if r["files"] is None or r["bytes"] is None:
            text += " (rewrites data files; counting them needs the log, which a catalog name does not reach)"
        else:
            bound = "" if r["exact"] else "up to "
            text += f" (rewrites {bound}{r['files']} file(s), {human_bytes(r['bytes'])})"
    return text


def plan_text(unblock: UnblockJson | None) -> str:
    """'drop deletionVectors (rewrites 12 file(s), 3.4 MB), then columnMapping; truncate-history
    before this client may write', or why no plan exists."""
    if unblock is None:
        return ""
    if not unblock["possible"]:
        return "cannot unblock: " + "; ".join(f"{u['feature']} {u['reason']}" for u in unblock["undroppable"])
    parts = []
    if unblock["steps"]:
        parts.append("drop " + ", then ".join(_step_text(s) for s in unblock["steps"]))
    if unblock["truncate_history_before_write"]:
        parts.append("truncate-history before this client may write")
    after = [("read", unblock["read_after"]), ("write", unblock["write_after"])]
    still = [f"{side} {a['verdict']}" for side, a in after if a is not None and a["verdict"] not in ("yes", "n/a")]
    if still and not unblock["truncate_history_before_write"]:
        parts.append("afterwards still " + ", ".join(still))
    parts.extend(unblock["notes"])
    return "; ".join(parts)


def _blocked_by(access: AccessJson) -> str:
    """The features to blame, then the reasons of blockers no feature owns (a protocol version)."""
    features = sorted({f for b in access["blockers"] if (f := b["feature"])})
    reasons = sorted({b["reason"] for b in access["blockers"] if not b["feature"]})
    return ", ".join([*features, *reasons])


def _client_line(doc: ClientCompatJson, width: int) -> str:
    read, write = doc["read"], doc["write"]
    line = f"  {doc['client']:<{width}}  read {read['verdict']:<8} write {write['verdict']:<8}"
    blocked = _blocked_by(read) or _blocked_by(write)
    if blocked:
        line += f" blocked: {blocked}"
    plan = plan_text(doc["unblock"])
    if plan:
        line += f"; {plan}"
    return line.rstrip()


def _families(ids: list[str], family_of: dict[str, str]) -> str:
    """'deltalake x6, trino x5': the blocked clients counted by family, most first."""
    counts: dict[str, int] = {}
    for cid in ids:
        counts[family_of.get(cid, cid)] = counts.get(family_of.get(cid, cid), 0) + 1
    return ", ".join(f"{f} \u00d7{n}" for f, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def drops_text(drops: list[str]) -> str:
    """The drops of a plan in order; checkpointProtection is named by the command that removes it
    (Checkpoint Protection RFC, "Dropping the feature": only by truncating history)."""
    return ", then ".join("truncate-history (checkpointProtection)" if d == "checkpointProtection" else d
                          for d in drops)


def summary_lines(doc: TableCompatJson, indent: str = "  ") -> list[str]:
    """The summary of one table's document: who can read / write it, what blocks them, and the
    one drop that unblocks the most."""
    s = doc["summary"]
    r, w = s["read"], s["write"]
    writers = s["clients"] - w["n/a"]
    line = (f"{indent}read by {r['yes']} of {s['clients']} clients ({r['blocked']} blocked"
            + (f", {r['unknown']} unknown" if r["unknown"] else "") + f"); written by {w['yes']} of "
            f"{writers} writing clients ({w['blocked']} blocked" + (f", {w['unknown']} unknown" if w["unknown"] else "")
            + ")")
    lines = [line]
    family_of = {c["client"]: c["family"] for c in doc["clients"]}
    blocked = doc["blocked"]
    if blocked["read"]:
        lines.append(f"{indent}cannot read: {_families(blocked['read'], family_of)}")
    if blocked["write"]:
        lines.append(f"{indent}cannot write: {_families(blocked['write'], family_of)}")
    if s["blocking_features"]:
        lines.append(f"{indent}blocking features: " + ", ".join(
            f"{b['feature']} (read {b['blocks_read']}, write {b['blocks_write']})" for b in s["blocking_features"]))
    best = s["best_drop"]
    if best is not None:
        drops = drops_text(best["drops"])
        lines.append(f"{indent}the drop that unblocks most: {drops} -> +{len(best['then_readable_by'])} "
                     f"reader(s), +{len(best['then_writable_by'])} writer(s)")
    elif s["blocking_features"]:
        lines.append(f"{indent}no single feature drop unblocks a client (see --details)")
    return lines


_HINT = "(--details: one line per client; --client NAME: its verdicts, plan and sources)"


def render_text(report: TableCompat, *, detail: bool = False, details: bool = False, hint: bool = True) -> str:
    """The summary of the table; then one line per client with ``details``, or each client's full
    verdicts, plan and sources with ``detail`` (``--client``)."""
    doc = report.to_json()
    lines = [f"{doc['table']} at version {doc['version']}: protocol {_protocol_text(doc['protocol'])}"]
    lines.extend(f"  note: {n}" for n in doc.get("notes", []))
    lines.extend(summary_lines(doc))
    if detail:
        for c in report.clients:
            lines.extend(_client_detail(c))
    elif details:
        width = max((len(c["client"]) for c in doc["clients"]), default=0)
        lines.extend(_client_line(c, width) for c in doc["clients"])
        blocked = doc["blocked"]
        lines.append("blocked from reading: " + (", ".join(blocked["read"]) or "none")
                     + "; from writing: " + (", ".join(blocked["write"]) or "none"))
    elif hint:
        lines.append(_HINT)
    return "\n".join(lines)


def _access_lines(label: str, access: AccessJson, indent: str) -> list[str]:
    out = [f"{indent}{label}: {access['verdict']}"]
    out.extend(f"{indent}  - {b['reason']}" for b in access["blockers"])
    out.extend(f"{indent}  note: {n}" for n in access["notes"])
    return out


def _client_detail(client: ClientCompat) -> list[str]:
    doc = client.to_json()
    lines = ["", f"{doc['client']}: {doc['name']} ({doc['family']} {doc['versions']})"]
    lines += _access_lines("read", doc["read"], "  ")
    lines += _access_lines("write", doc["write"], "  ")
    unblock = doc["unblock"]
    if unblock is not None:
        lines.append("  unblock: " + ("possible" if unblock["possible"] else "not possible"))
        for i, step in enumerate(unblock["steps"], 1):
            why = f" (required by {step['required_by']})" if step["required_by"] else ""
            protection = "; adds checkpointProtection" if step["checkpoint_protection"] else ""
            lines.append(f"    {i}. drop-feature {_step_text(step)}{why}{protection}")
        lines.extend(f"    cannot drop {u['feature']}: {u['reason']}" for u in unblock["undroppable"])
        if unblock["protocol_after"] is not None:
            lines.append(f"    protocol after: {_protocol_text(unblock['protocol_after'])}")
        for side, after in (("read", unblock["read_after"]), ("write", unblock["write_after"])):
            if after is not None:
                lines += _access_lines(f"{side} after", after, "    ")
        if unblock["truncate_history_before_write"]:
            lines.append("    then truncate-history: checkpointProtection stays until it runs, and this "
                         "client cannot write a table with it")
        lines.extend(f"    note: {n}" for n in unblock["notes"])
    lines.append("  sources:")
    lines.extend(f"    {s['url']} - {s['states']}" for s in doc["sources"])
    return lines


def render_fleet_text(fleet: FleetCompat, *, detail: bool = False, details: bool = False) -> str:
    """Each table's summary (and details, as :func:`render_text`), the tables that failed, and
    the fleet in three lines: how many tables block a client, the clients blocked by the most
    tables, the features that block in the most tables."""
    parts = [render_text(t, detail=detail, details=details, hint=False) for t in fleet.tables]
    parts.extend(f"{e.table}: error {e.error.error_class}: {e.error.message}" for e in fleet.errors)
    blocked = [t for t in fleet.tables if t.blocked_read or t.blocked_write]
    by_client: dict[str, int] = {}
    by_feature: dict[str, int] = {}
    for t in fleet.tables:
        for cid in dict.fromkeys([*t.blocked_read, *t.blocked_write]):
            by_client[cid] = by_client.get(cid, 0) + 1
        for b in t.summary["blocking_features"]:
            by_feature[b["feature"]] = by_feature.get(b["feature"], 0) + 1

    def top(counts: dict[str, int]) -> str:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        more = f", and {len(ranked) - 8} more" if len(ranked) > 8 else ""
        return ", ".join(f"{k} ({n})" for k, n in ranked[:8]) + more

    fleet_lines = [f"fleet: {len(fleet.tables) + len(fleet.errors)} table(s), {len(blocked)} block at least "
                   f"one client" + (f", {len(fleet.errors)} could not be read" if fleet.errors else "")]
    if by_client:
        fleet_lines.append(f"  clients blocked in the most tables: {top(by_client)}")
    if by_feature:
        fleet_lines.append(f"  features blocking in the most tables: {top(by_feature)}")
    if not (detail or details):
        fleet_lines.append(_HINT)
    parts.append("\n".join(fleet_lines))
    return "\n\n".join(parts)


# --- the catalogue -------------------------------------------------------------------------------

def _max(side: CatalogueSideJson | None) -> str:
    if side is None:
        return "-"
    return str(side["max_version"]) + (f" {side['versions']}" if side["versions"] else "")


def render_client_list(entries: Sequence[CatalogueEntryJson]) -> str:
    """``compat --list-clients``: one line per entry (id, how to name it with a version, read
    path, the highest reader / writer versions it accepts), its sources below it."""
    lines = []
    for e in entries:
        releases = e["releases"]
        spelled = e["product"] + " " + (
            (f">= {releases['from']}" if releases["from"] else "")
            + (", " if releases["from"] and releases["before"] else "")
            + (f"< {releases['before']}" if releases["before"] else "")) if releases else f"versions: {e['versions']}"
        path = f"  path {e['path']}" if e["path"] else ""
        aliases = f"  aliases {', '.join(e['aliases'])}" if e["aliases"] else ""
        lines.append(f"{e['client']}: {spelled}{path}  reader <= {_max(e['read'])}  writer <= "
                     f"{_max(e['write'])}{aliases}")
        urls = dict.fromkeys(s["url"] for side in (e["read"], e["write"]) if side for s in side["sources"])
        lines.extend(f"    source: {u}" for u in urls)
    lines.append(f"{len(entries)} entries. Name one by id, alias, family, or product and version "
                 "(deltalake==0.18.2, 'polars 1.41', 'trino 447', 'dbr 15.4'); a product whose "
                 "release has several read paths takes the path in brackets (deltalake[rust]==0.18.2).")
    return "\n".join(lines)


# --- time travel per client ----------------------------------------------------------------------

def _span(a: int, b: int) -> str:
    return f"v{a}" if a == b else f"v{a}-{b}"


def _ranges(ranges: list[list[int]]) -> str:
    return ", ".join(_span(a, b) for a, b in ranges) or "none"


def render_versions(doc: VersionsJson) -> str:
    """``--versions``: the protocol spans of the retained history, then per client the versions
    it reads and why not the others."""
    spans = doc["spans"]
    head = (f"time travel: versions {doc['earliest_version']} to {doc['latest_version']} retained; "
            "protocol " + "; ".join(f"{_span(s['from'], s['to'])} {_protocol_text(s['protocol'])}" for s in spans))
    if doc["boundary_version"] is not None:
        head += f"; checkpoint protection boundary v{doc['boundary_version']}"
    lines = [head]
    if doc["judged_from"] > doc["earliest_version"]:
        lines.append(f"  versions {doc['earliest_version']} to {doc['judged_from'] - 1}: older than the "
                     "protocol history read (not judged)")
    width = max((len(c["client"]) for c in doc["clients"]), default=0)
    every = [[spans[0]["from"], spans[-1]["to"]]]
    for c in doc["clients"]:
        reads = "every version" if c["readable"] == every else _ranges(c["readable"])
        others = [f"{_span(s['from'], s['to'])} {s['verdict']}" + (f" ({', '.join(s['features'])})" if s["features"] else "")
                  for s in c["spans"] if s["verdict"] != "yes"]
        lines.append(f"  {c['client']:<{width}}  reads {reads}" + (f"; not {'; '.join(others)}" if others else ""))
    lines.append("  (the schema checked at every version is the latest one's)")
    return "\n".join(lines)
