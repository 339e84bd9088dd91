"""The file summary of ``inspect`` (delta_downgrade.operations.inspect): from the Arrow replay's
columns for a segment of any size, from the Python state for a small one - the same numbers,
which are also counted here by hand on a synthetic log and compared on every good golden table
(at its latest version) between the two paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delta_downgrade.clock import ManualClock
from delta_downgrade.log.replay import choice as replay_choice
from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.format.file_names import LOG_DIR
from delta_downgrade.operations.inspect import FileSummary, inspect_table

T0 = 1_700_000_000_000
PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors", "domainMetadata"]}
SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})


def _dv(cardinality: int, offset: int) -> dict:
    return {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": offset,
            "sizeInBytes": 36, "cardinality": cardinality}


def _add(path: str, size: int, **kw: Any) -> dict:
    return {"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": T0,
                    "dataChange": True, **kw}}


def _remove(path: str, **kw: Any) -> dict:
    return {"remove": {"path": path, "deletionTimestamp": T0 + 5, "dataChange": True, **kw}}


def _domain(name: str, removed: bool) -> dict:
    return {"domainMetadata": {"domain": name, "configuration": "{}", "removed": removed}}


COMMITS: list[list[dict]] = [
    [{"protocol": PROTOCOL},
     {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                   "partitionColumns": [], "configuration": {"delta.enableDeletionVectors": "true"},
                   "createdTime": T0}},
     _add("a", 10), _add("b", 20), _add("c", 30), _add("d", 40), _domain("z.user", False)],
    # b gets a DV of 3 rows, c one of 5: the files without a DV become tombstones
    [_remove("b"), _add("b", 20, deletionVector=_dv(3, 1)), _remove("c"), _add("c", 30, deletionVector=_dv(5, 9)),
     _domain("a.user", False)],
    # b's DV grows to 4 rows (a new DV: the old logical file is a tombstone); d is removed
    [_remove("b", deletionVector=_dv(3, 1)), _add("b", 20, deletionVector=_dv(4, 17)), _remove("d"),
     _domain("z.user", True)],
    [_add("e", 7)],
]
EXPECTED = FileSummary(live_files=4, live_bytes=10 + 20 + 30 + 7, files_with_deletion_vectors=2,
                       deleted_rows_in_deletion_vectors=4 + 5, tombstones=4, domains=["a.user"])


def _table(root: Path) -> str:
    (root / LOG_DIR).mkdir(parents=True)
    for v, lines in enumerate(COMMITS):
        info = {"commitInfo": {"timestamp": T0 + v, "operation": "WRITE"}}
        (root / LOG_DIR / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in [info, *lines]) + "\n")
    return str(root)


def _both_paths(path: str, monkeypatch: pytest.MonkeyPatch) -> tuple[FileSummary, FileSummary]:
    """The summary with the Python path where the segment allows it, and with the Arrow path."""
    default = inspect_table(path, history=False).files
    with monkeypatch.context() as m:
        m.setattr(replay_choice, "PYTHON_REPLAY_MAX_COMMITS", -1)
        arrow = inspect_table(path, history=False).files
    return default, arrow


def test_the_summary_counted_by_hand_on_both_paths(tmp_path, monkeypatch):
    path = _table(tmp_path / "t")
    assert replay_choice.python_replay_fits(DeltaLog(path).segment())
    python, arrow = _both_paths(path, monkeypatch)
    assert python == EXPECTED
    assert arrow == EXPECTED


def test_the_summary_from_a_checkpoint_and_the_commits_after_it(tmp_path, monkeypatch):
    path = _table(tmp_path / "t")
    checkpoint_table(DeltaLog(path), 2, clock=ManualClock(T0 + 1000))
    assert DeltaLog(path).segment().checkpoint is not None  # the Arrow path
    python, arrow = _both_paths(path, monkeypatch)
    assert python == arrow == EXPECTED


def _counted(path: str) -> FileSummary:
    """The summary counted over the Python objects of Snapshot.state()."""
    state = DeltaLog(path).snapshot().state()
    files = list(state.files.values())
    return FileSummary(
        live_files=len(files), live_bytes=sum(f.size for f in files),
        files_with_deletion_vectors=sum(1 for f in files if f.dv is not None),
        deleted_rows_in_deletion_vectors=sum(f.dv.cardinality for f in files if f.dv is not None),
        tombstones=len(state.tombstones), domains=sorted(state.live_domains))


def test_both_paths_give_the_count_over_the_python_state_on_every_good_golden_table(golden_root, monkeypatch):
    compared = with_dvs = 0
    for table in sorted(golden_root.iterdir()):
        if table.name.startswith("bad_") or not (table / LOG_DIR).is_dir():
            continue
        try:
            expected: Any = _counted(str(table))
        except Exception as exc:  # noqa: BLE001 - a table that cannot be replayed is refused on both paths
            expected = (type(exc), str(exc))
        got: dict[str, Any] = {}
        for label, max_commits in (("python where it fits", 1 << 40), ("arrow", -1)):
            with monkeypatch.context() as m:
                m.setattr(replay_choice, "PYTHON_REPLAY_MAX_BYTES", 1 << 40)
                m.setattr(replay_choice, "PYTHON_REPLAY_MAX_COMMITS", max_commits)
                try:
                    got[label] = inspect_table(str(table), history=False).files
                except Exception as exc:  # noqa: BLE001
                    got[label] = (type(exc), str(exc))
        assert got == {"python where it fits": expected, "arrow": expected}, table.name
        compared += isinstance(expected, FileSummary)
        with_dvs += isinstance(expected, FileSummary) and expected.files_with_deletion_vectors > 0
    assert compared >= 30 and with_dvs >= 3
