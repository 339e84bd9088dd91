"""compat's summary first: per table how many clients read / write it, the features that block
them and the one drop that unblocks the most; details only on request. The counts are checked
against the per-client verdicts of the same document, and the best drop against each client's
own plan (``unblock.read_after``), a second path through the verdicts."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.compat import packaged_catalogue
from delta_downgrade.operations.compat import table_compat

pytestmark = [pytest.mark.golden]

BLOCKING = ("no", "misreads")


def _readable(golden_root) -> list[str]:
    return sorted(str(p) for p in golden_root.iterdir()
                  if (p / "_delta_log").is_dir() and not p.name.startswith("bad_"))


def test_summary_counts_match_the_client_verdicts(golden_root):
    catalogue = packaged_catalogue()
    for table in _readable(golden_root):
        doc = table_compat(table, catalogue).to_json()
        s = doc["summary"]
        clients = doc["clients"]
        assert s["clients"] == len(clients)
        for side in ("read", "write"):
            verdicts = [c[side]["verdict"] for c in clients]
            assert s[side]["yes"] == verdicts.count("yes"), table
            assert s[side]["blocked"] == sum(v in BLOCKING for v in verdicts), table
            assert s[side]["unknown"] == verdicts.count("unknown"), table
            assert s[side]["n/a"] == verdicts.count("n/a"), table
        blamed = {b["feature"] for c in clients for side in ("read", "write")
                  if c[side]["verdict"] in BLOCKING for b in c[side]["blockers"] if b["feature"]}
        assert {b["feature"] for b in s["blocking_features"]} == blamed, table
        counts = [(b["blocks_read"], b["blocks_write"]) for b in s["blocking_features"]]
        assert counts == sorted(counts, key=lambda rw: (-rw[0], -rw[1]))


def test_best_drop_agrees_with_each_clients_own_plan(golden_root):
    catalogue = packaged_catalogue()
    checked = 0
    for table in _readable(golden_root):
        doc = table_compat(table, catalogue).to_json()
        best = doc["summary"]["best_drop"]
        if best is None:
            continue
        for c in doc["clients"]:
            plan = c["unblock"]
            # a client whose own plan is exactly the best drop: the summary's claim and the
            # client's read_after must agree
            if plan and plan["possible"] and [s["feature"] for s in plan["steps"]] == best["drops"]:
                after_read = plan["read_after"]["verdict"] if plan["read_after"] else None
                if c["read"]["verdict"] in BLOCKING:
                    assert (after_read == "yes") == (c["client"] in best["then_readable_by"]), (table, c["client"])
                    checked += 1
        for cid in best["then_readable_by"]:
            entry = next(c for c in doc["clients"] if c["client"] == cid)
            assert entry["read"]["verdict"] in BLOCKING
    assert checked >= 10


def _cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue()


def test_text_is_a_summary_unless_details_are_asked(golden_root):
    table = str(golden_root / "dv_cm_name_checkpoint")
    code, out = _cli("compat", table)
    assert code == 0
    text = out[:out.index("RESULT ")].splitlines()
    assert len(text) <= 8
    doc = table_compat(table, packaged_catalogue()).to_json()
    s = doc["summary"]
    assert text[1].strip().startswith(f"read by {s['read']['yes']} of {s['clients']} clients")
    assert any(line.strip().startswith("the drop that unblocks most: " + s["best_drop"]["drops"][0])
               for line in text)
    # no client line without --details
    assert not any(line.startswith("  deltalake-0.18-pyarrow ") for line in text)

    code, out = _cli("compat", table, "--details")
    detailed = out[:out.index("RESULT ")].splitlines()
    assert code == 0 and len(detailed) > len(doc["clients"])
    assert any(line.startswith("  deltalake-0.18-pyarrow ") for line in detailed)


def test_json_keeps_every_field_and_adds_the_summary(golden_root):
    table = str(golden_root / "dv_basic_no_checkpoint")
    code, out = _cli("compat", table, "--json")
    doc = json.loads(out)
    assert code == 0
    assert {"table", "version", "protocol", "clients", "blocked", "summary"} <= set(doc)
    assert doc["summary"]["best_drop"]["drops"] == ["deletionVectors"]


def test_fleet_text_stays_short(golden_root, tmp_path):
    tables = _readable(golden_root)
    tables_file = tmp_path / "tables.txt"
    tables_file.write_text("\n".join(tables) + "\n")
    code, out = _cli("compat", "--tables-file", str(tables_file))
    assert code == 0
    text = [line for line in out.splitlines() if not line.startswith("RESULT ")]
    # about seven lines a table, not one per client
    assert len(text) <= 9 * len(tables) + 5
    assert text[-4].startswith("fleet: ")
