"""`delta-downgrade inspect --json` on every golden table, checked against values obtained
independently: delta-rs (in a subprocess) where it loads the table, values read by hand from the
table files otherwise. Bad tables must fail with their own named error and exit 2."""

from __future__ import annotations

import json

import pytest

from delta_downgrade.app.cli import main
from tests.process_support import run_cli

# Checkpoint inventory, read by hand from each table's _delta_log: version -> (kind, parts).
CHECKPOINTS: dict[str, dict[int, tuple[str, int]]] = {
    "classic_checkpoint": {2: ("classic", 1)},
    "domain_metadata_user_domains": {3: ("classic", 1)},
    "dv_cm_name_checkpoint": {10: ("classic", 1)},
    "dv_partitioned_checkpoint": {10: ("classic", 1)},
    "history_truncated_no_replay": {2: ("classic", 1), 4: ("classic", 1)},
    "legacy_1_1_delta_0_1_0": {3: ("classic", 1)},
    "multipart_checkpoint": {1: ("multipart", 2)},
    "v2_checkpoint_dbr_identity": {6: ("v2", 1), 8: ("v2", 1)},
    "v2_checkpoint_json_sidecars": {2: ("v2", 1)},
    "v2_checkpoint_parquet_sidecars": {2: ("v2", 1)},
}
SIDECARS = {"v2_checkpoint_json_sidecars": 2, "v2_checkpoint_parquet_sidecars": 2, "v2_checkpoint_dbr_identity": 1}

# Tables delta-rs refuses to load: latest protocol and properties by hand (MANIFEST.md and the
# commit files).
BY_HAND = {
    "type_widening_preview": {
        "protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                     "readerFeatures": ["timestampNtz", "typeWidening-preview"],
                     "writerFeatures": ["appendOnly", "invariants", "timestampNtz", "typeWidening-preview"]},
        "properties": {"delta.enableTypeWidening": "true"}},
    "type_widening_preview_nested": {
        "protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                     "readerFeatures": ["typeWidening-preview"],
                     "writerFeatures": ["appendOnly", "invariants", "typeWidening-preview"]},
        "properties": {"delta.enableTypeWidening": "true"}},
    "vacuum_protocol_check": {
        "protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                     "readerFeatures": ["vacuumProtocolCheck"],
                     "writerFeatures": ["appendOnly", "invariants", "vacuumProtocolCheck"]},
        "properties": {}},
    "catalog_managed_ict": {
        "protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["catalogManaged"],
                     "writerFeatures": ["appendOnly", "catalogManaged", "inCommitTimestamp", "invariants"]},
        "properties": None},  # checked separately: ICT enablement
}

# Protocols at older versions where the table changed protocol, from the commit files by hand.
OLDER = {
    ("type_widening_preview", 0): {"minReaderVersion": 1, "minWriterVersion": 2},
    ("type_widening_preview_nested", 0): {"minReaderVersion": 1, "minWriterVersion": 2},
    ("v2_checkpoint_json_sidecars", 0): {"minReaderVersion": 1, "minWriterVersion": 2},
    ("v2_checkpoint_parquet_sidecars", 0): {"minReaderVersion": 1, "minWriterVersion": 2},
    ("legacy_upgraded_to_3_7", 0): {"minReaderVersion": 1, "minWriterVersion": 2},
    ("vacuum_protocol_check", 0): {"minReaderVersion": 1, "minWriterVersion": 2},
    ("check_constraints_legacy_1_3", 0): {"minReaderVersion": 1, "minWriterVersion": 2},
}

BAD = {
    "bad_no_protocol": "DELTA_STATE_RECOVER_ERROR",
    "bad_reader_version_99": "DELTA_INVALID_PROTOCOL_VERSION",
    "bad_unknown_features": "DELTA_INVALID_PROTOCOL_VERSION",
    "bad_versions_not_contiguous": "DELTA_VERSIONS_NOT_CONTIGUOUS",
    "bad_checkpoint_missing_protocol": "DELTA_STATE_RECOVER_ERROR",
}
# Bad tables that must still read: the fallback to a listing is the right behaviour.
READS_FINE = {"bad_empty_last_checkpoint", "bad_dv_file_unresolvable"}


def _inspect(path: str, *extra: str) -> dict:
    proc = run_cli("inspect", path, "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _same_protocol(ours: dict, theirs: dict) -> bool:
    """delta-rs reports an empty feature list as None; the log says []."""
    def norm(d: dict) -> dict:
        return {"minReaderVersion": d["minReaderVersion"], "minWriterVersion": d["minWriterVersion"],
                "readerFeatures": d.get("readerFeatures") or None,
                "writerFeatures": d.get("writerFeatures") or None}
    return norm(ours) == norm(theirs)


def _good_tables(golden_root) -> list[str]:
    return sorted(p.name for p in golden_root.iterdir() if p.is_dir() and not p.name.startswith("bad_"))


def test_every_good_table_matches_independent_values(golden_root, oracle):
    mismatches = []
    for name in _good_tables(golden_root):
        path = str(golden_root / name)
        doc = _inspect(path)
        if name in BY_HAND:
            expected = BY_HAND[name]
            if not _same_protocol(doc["protocol"], expected["protocol"]):
                mismatches.append((name, "protocol", doc["protocol"], expected["protocol"]))
            if expected["properties"] is not None and doc["properties"] != expected["properties"]:
                mismatches.append((name, "properties", doc["properties"], expected["properties"]))
        else:
            theirs = oracle.describe(path)
            assert theirs.ok, f"delta-rs could not describe {name}: {theirs.error}"
            if not _same_protocol(doc["protocol"], theirs.value["protocol"]):
                mismatches.append((name, "protocol", doc["protocol"], theirs.value["protocol"]))
            if doc["properties"] != theirs.value["configuration"]:
                mismatches.append((name, "properties", doc["properties"], theirs.value["configuration"]))
            if doc["version"] != theirs.value["version"]:
                mismatches.append((name, "version", doc["version"], theirs.value["version"]))
        inventory = {c["version"]: (c["kind"], c["parts"]) for c in doc["checkpoints"]}
        if inventory != CHECKPOINTS.get(name, {}):
            mismatches.append((name, "checkpoints", inventory, CHECKPOINTS.get(name, {})))
        for c in doc["checkpoints"]:
            if name in SIDECARS and len(c.get("sidecars", [])) != SIDECARS[name]:
                mismatches.append((name, "sidecars", c.get("sidecars"), SIDECARS[name]))
    assert not mismatches, "\n".join(map(str, mismatches))


def test_catalog_managed_is_described_but_flagged(golden_root):
    doc = _inspect(str(golden_root / "catalog_managed_ict"))
    assert doc["unsupported_features"]["read"] == ["catalogManaged"]
    assert doc["unsupported_features"]["write"] == ["catalogManaged"]
    assert doc["properties"]["delta.enableInCommitTimestamps"] == "true"


@pytest.mark.parametrize("key", sorted(OLDER), ids=lambda k: f"{k[0]}@v{k[1]}")
def test_protocol_at_older_versions(golden_root, key):
    name, version = key
    doc = _inspect(str(golden_root / name), "--version", str(version))
    assert doc["version"] == version
    assert _same_protocol(doc["protocol"], OLDER[key])


def test_protocol_history_spans_follow_the_commits(golden_root):
    doc = _inspect(str(golden_root / "vacuum_protocol_check"))
    spans = doc["protocol_history"]
    assert spans[0]["start_version"] == 0 and _same_protocol(spans[0]["protocol"], OLDER[("vacuum_protocol_check", 0)])
    assert spans[-1]["end_version"] == doc["version"]
    assert _same_protocol(spans[-1]["protocol"], BY_HAND["vacuum_protocol_check"]["protocol"])
    # Spans tile the retained versions without gaps.
    for a, b in zip(spans, spans[1:]):
        assert b["start_version"] == a["end_version"] + 1


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_tables_fail_with_their_own_error(golden_root, name, capsys):
    code = main(["inspect", str(golden_root / name), "--json"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"[{BAD[name]}]" in err
    assert str(golden_root / name) in err  # the error names the table
    assert "Traceback" not in err


def test_unknown_reader_feature_is_named(golden_root, capsys):
    assert main(["inspect", str(golden_root / "bad_unknown_features")]) == 2
    assert "blahabl" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(READS_FINE))
def test_bad_tables_that_fall_back_to_a_listing(golden_root, name, oracle):
    doc = _inspect(str(golden_root / name))
    theirs = oracle.describe(str(golden_root / name))
    assert theirs.ok, theirs.error
    assert doc["version"] == theirs.value["version"]
    assert _same_protocol(doc["protocol"], theirs.value["protocol"])


def test_missing_path_and_not_a_table(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "nope")]) == 2
    assert "DELTA_TABLE_NOT_FOUND" in capsys.readouterr().err
    assert main(["inspect", str(tmp_path)]) == 2
    assert "DELTA_MISSING_DELTA_TABLE" in capsys.readouterr().err
