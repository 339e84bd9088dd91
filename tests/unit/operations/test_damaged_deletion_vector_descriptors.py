"""A deletion vector descriptor that cannot name a file (PROTOCOL.md "Deletion Vector Descriptor
Schema": a ``u`` descriptor is an optional prefix and the 20-character Z85 encoding of a UUID) is
the table's damage: dropping deletionVectors refuses it with a Delta error class naming the table,
exit 2, before the first write - never a ValueError and exit 1 from deep in the DV reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_downgrade.deletion_vectors.reader import DvFileReader
from delta_downgrade.errors import BadInputError, DeletionVectorError
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol.actions import DeletionVectorDescriptor
from tests.process_support import tree_hashes


def _damage_dv_paths(table: Path, path_or_inline: str) -> None:
    """Set every ``u`` descriptor of the table's commits to ``path_or_inline``."""
    for commit in sorted((table / LOG_DIR).glob("*.json")):
        lines = commit.read_text().splitlines()
        out = []
        for line in lines:
            action = json.loads(line)
            dv = (action.get("add") or action.get("remove") or {}).get("deletionVector")
            if dv and dv.get("storageType") == "u":
                dv["pathOrInlineDv"] = path_or_inline
            out.append(json.dumps(action))
        commit.write_text("\n".join(out) + "\n")


@pytest.mark.parametrize("path_or_inline", ["short", "ab/short", ""])
def test_dropping_deletion_vectors_refuses_a_descriptor_that_names_no_file(golden_table, path_or_inline):
    table = Path(golden_table("dv_basic_no_checkpoint"))
    _damage_dv_paths(table, path_or_inline)
    before = tree_hashes(table)
    with pytest.raises(DeletionVectorError) as info:
        drop_feature(str(table), "deletionVectors")
    assert isinstance(info.value, BadInputError)  # exit 2
    assert str(table) in str(info.value)
    assert "deletion vector" in str(info.value)
    assert tree_hashes(table) == before


def test_the_reader_names_a_u_descriptor_too_short_for_a_uuid(tmp_path):
    reader = DvFileReader(str(tmp_path))
    dv = DeletionVectorDescriptor(storageType="u", pathOrInlineDv="short", sizeInBytes=0, cardinality=0)
    with pytest.raises(DeletionVectorError, match="short"):
        reader.file_exists(dv)
