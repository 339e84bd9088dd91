"""A drop writes the table's metadata forward (and may rewrite every data file from it), so the
schema it carries must be one every reader can take (PROTOCOL.md "Schema Serialization Format":
a struct field has a name and a type; "Change Metadata": partitionColumns name columns of the
schema). A schema that is not - a field without a type, two fields of one struct whose names are
equal ignoring case (delta-spark's rule: names are case-preserving but case-insensitive),
a partition column the schema lacks - is refused with the Delta error class, exit 2, before
the first write, for every feature and for a dry run; never a KeyError or a Spark
AnalysisException half-way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_downgrade.drop.committer import PlanRecorder
from delta_downgrade.errors import BadInputError
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.operations.drop_feature import drop_feature
from tests.process_support import tree_hashes


def _field(name: str, typ: object = "string") -> dict[str, object]:
    return {"name": name, "type": typ, "nullable": True, "metadata": {}}


def _set_metadata(table: Path, **changes: object) -> None:
    """Change the table's (only) metaData action in place."""
    for commit in sorted((table / LOG_DIR).glob("*.json")):
        lines = commit.read_text().splitlines()
        out = []
        for line in lines:
            action = json.loads(line)
            if "metaData" in action:
                action["metaData"].update(changes)
            out.append(json.dumps(action))
        commit.write_text("\n".join(out) + "\n")


def _schema(*fields: dict[str, object]) -> str:
    return json.dumps({"type": "struct", "fields": list(fields)})


NO_TYPE = {"name": "a", "nullable": True, "metadata": {}}
DAMAGES = {
    "field without a type": dict(schemaString=_schema(_field("id", "long"), NO_TYPE)),
    "duplicate top-level names": dict(schemaString=_schema(_field("id", "long"), _field("a"), _field("a"))),
    "names equal ignoring case": dict(schemaString=_schema(_field("id", "long"), _field("a"), _field("A"))),
    "duplicate nested names": dict(schemaString=_schema(
        _field("id", "long"), _field("s", {"type": "struct", "fields": [_field("x"), _field("x")]}))),
    "nested field without a name": dict(schemaString=_schema(
        _field("id", "long"), _field("s", {"type": "array", "containsNull": True, "elementType": {
            "type": "struct", "fields": [{"type": "string", "nullable": True, "metadata": {}}]}}))),
    "partition column not in the schema": dict(partitionColumns=["ghost"]),
}


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_drop_refuses_a_malformed_schema_before_writing(golden_table, damage, dry_run):
    table = Path(golden_table("vacuum_protocol_check"))
    _set_metadata(table, **DAMAGES[damage])
    before = tree_hashes(table)
    with pytest.raises(BadInputError) as info:
        drop_feature(str(table), "vacuumProtocolCheck", committer=PlanRecorder() if dry_run else None)
    assert info.value.error_class in ("DELTA_STATE_RECOVER_ERROR", "DELTA_DUPLICATE_COLUMNS_FOUND")
    assert str(table) in str(info.value)
    assert tree_hashes(table) == before


def test_a_well_formed_unusual_schema_still_drops(golden_table):
    """Names that differ beyond case, a name with a space or a dot, nested structs reusing a
    top-level name, and a partition column whose name has a space: all legal."""
    table = Path(golden_table("vacuum_protocol_check"))
    nested = {"type": "struct", "fields": [_field("id", "long"), _field("a b")]}
    _set_metadata(table, schemaString=_schema(_field("id", "long"), _field("a b"), _field("a.b"), _field("ab"),
                                              _field("s", nested)),
                  partitionColumns=["a b"])
    before = tree_hashes(table)
    drop_feature(str(table), "vacuumProtocolCheck", committer=PlanRecorder())
    assert tree_hashes(table) == before  # planned only
    drop_feature(str(table), "vacuumProtocolCheck")
    assert tree_hashes(table) != before
