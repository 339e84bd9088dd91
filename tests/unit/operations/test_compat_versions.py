"""Time travel per client (``compat TABLE --versions``): which retained versions each client can
read. Checked against the table itself: the snapshot of every version, reconstructed from the
log, and the client's read verdict on its protocol, for every client of the catalogue."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.compat import Verdict, packaged_catalogue, read_verdict
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.protocol_timeline import protocol_timeline
from delta_downgrade.operations.version_access import client_versions, protocol_spans

pytestmark = [pytest.mark.golden]

# column mapping enabled at version 2 of a deletion-vector table; type widening from version 1
TABLES = ["cm_name_enabled_late_dbr", "type_widening_preview", "legacy_upgraded_to_3_7", "classic_checkpoint"]


def _cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue()


@pytest.mark.parametrize("name", TABLES)
def test_readable_versions_match_each_reconstructed_snapshot(golden_root, name):
    path = str(golden_root / name)
    log = DeltaLog(path)
    timeline = protocol_timeline(path)
    latest_schema = log.snapshot(check_read=False).schema
    catalogue = packaged_catalogue()
    per_client = {cv.client.id: cv for cv in client_versions(timeline, catalogue.clients)}
    snapshots = {v: log.snapshot(v, check_read=False)
                 for v in range(timeline.earliest_version, timeline.latest_version + 1)}
    for client in catalogue.clients:
        expected = [v for v, snap in snapshots.items()
                    if read_verdict(client, snap.protocol, latest_schema).verdict is Verdict.YES]
        got = [v for a, b in per_client[client.id].readable for v in range(a, b + 1)]
        assert got == expected, (name, client.id)


def test_a_feature_enabled_late_leaves_older_versions_readable(golden_root):
    path = str(golden_root / "cm_name_enabled_late_dbr")
    spans = protocol_spans(protocol_timeline(path))
    assert [(s.first, s.last) for s in spans] == [(0, 1), (2, 4)]
    code, out = _cli("compat", path, "--versions", "--json")
    assert code == 0
    versions = json.loads(out)["versions"]
    by_client = {c["client"]: c for c in versions["clients"]}
    # the readable ranges are the spans read "yes", adjacent ones joined
    for c in versions["clients"]:
        readable = {tuple(r) for r in c["readable"]}
        yes = {(s["from"], s["to"]) for s in c["spans"] if s["verdict"] == "yes"}
        joined = sorted(yes)
        if joined == [(0, 1), (2, 4)]:
            assert readable == {(0, 4)}
        else:
            assert readable == yes
    # at least one client reads the older versions only: the time travel answer differs per version
    assert any(c["readable"] == [[0, 1]] for c in by_client.values())

    code, out = _cli("compat", path, "--versions")
    text = out[:out.index("RESULT ")]
    assert "time travel: versions 0 to 4 retained" in text
    only_old = next(cid for cid, c in by_client.items() if c["readable"] == [[0, 1]])
    assert any(line.split() and line.split()[0] == only_old and "reads v0-1; not v2-4" in line
               for line in text.splitlines())


def test_versions_needs_one_table(tmp_path):
    tables_file = tmp_path / "t.txt"
    tables_file.write_text("x\n")
    code, _ = _cli("compat", "--tables-file", str(tables_file), "--versions")
    assert code == 2


def test_versions_of_a_catalog_name_is_refused_before_any_session():
    code, out = _cli("compat", "main.sales.events", "--versions")
    assert code == 2
    result = json.loads(out.strip().splitlines()[-1].removeprefix("RESULT "))
    assert result["error_class"] == "DELTA_DOWNGRADE_BAD_INPUT" and "catalog name" in result["message"]
