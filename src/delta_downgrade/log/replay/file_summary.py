"""Counts over the live files and tombstones of an :class:`~delta_downgrade.log.replay.arrow_replay.ArrowState`,
computed on its Arrow columns part by part (:meth:`ArrowState.file_parts`): what trace checks and
``inspect`` need to know about every file, without a Python object per file. pyarrow is imported
in the functions: the feature modules import this one, and a small table's ``inspect`` loads no
pyarrow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator

from msgspec import Struct

if TYPE_CHECKING:
    from delta_downgrade.log.replay.arrow_replay import ArrowState
    from delta_downgrade.protocol.actions import RemoveFile


def _total(values: Any) -> int:
    from delta_downgrade import arrow_compute as ac

    if len(values) == 0:
        return 0
    found = ac.sum(values).as_py()
    return int(found) if found is not None else 0


class FileCounts(Struct, frozen=True):
    """The live files, their bytes and deletion vectors, and the tombstones of one state."""

    live_files: int
    live_bytes: int
    files_with_deletion_vectors: int
    deleted_rows_in_deletion_vectors: int
    tombstones: int


def file_counts(state: ArrowState) -> FileCounts:
    from delta_downgrade import arrow_compute as ac

    from delta_downgrade.log.format.arrow_columns import chunked_field

    files = size = with_dv = deleted = tombstones = 0
    for adds, removes in state.file_parts():
        files += len(adds)
        tombstones += len(removes)
        if len(adds) == 0:
            continue
        size += _total(chunked_field(adds, "size"))
        dv = chunked_field(adds, "deletionVector")
        if dv.null_count != len(dv):
            with_dv += len(dv) - dv.null_count
            # a struct's child may hold values under null parents: only files with a DV count
            deleted += _total(chunked_field(ac.filter(dv, ac.is_valid(dv)), "cardinality"))
    return FileCounts(files, size, with_dv, deleted, tombstones)


def _parts_with_deletion_vectors(state: ArrowState) -> Iterator[tuple[Any, Any, Any]]:
    """(adds, their ``deletionVector`` column, its validity mask) of each part of the live file
    state in which some file carries a deletion vector."""
    from delta_downgrade import arrow_compute as ac

    from delta_downgrade.log.format.arrow_columns import chunked_field

    for adds, _ in state.file_parts():
        if len(adds) == 0:
            continue
        dv = chunked_field(adds, "deletionVector")
        if dv.null_count == len(dv):
            continue
        yield adds, dv, ac.is_valid(dv)


def deletion_vector_files(state: ArrowState) -> tuple[int, int]:
    """(count, bytes) of the live files that carry a deletion vector: what the DV purge rewrites
    (``rewrite/dv_purge_plan.files_to_purge`` selects the same files, ``add.deletionVector`` not
    null)."""
    from delta_downgrade import arrow_compute as ac
    from delta_downgrade.log.format.arrow_columns import chunked_field

    files = size = 0
    for adds, dv, with_dv in _parts_with_deletion_vectors(state):
        files += len(dv) - dv.null_count
        size += _total(ac.filter(chunked_field(adds, "size"), with_dv))
    return files, size


def live_paths_with_deletion_vectors(state: ArrowState) -> list[str]:
    """The ``path`` of every live file that carries a deletion vector, as the log spells it: the
    files the DV purge reads and rewrites."""
    from delta_downgrade import arrow_compute as ac
    from delta_downgrade.log.format.arrow_columns import chunked_field

    paths: list[str] = []
    for adds, _dv, with_dv in _parts_with_deletion_vectors(state):
        paths.extend(ac.filter(chunked_field(adds, "path"), with_dv).to_pylist())
    return paths


def deletion_vector_file_refs(state: ArrowState) -> list[tuple[str, str]]:
    """Each distinct (storageType, pathOrInlineDv) of the live files' on-disk deletion vectors
    (``u`` and ``p``; inline DVs have no file): DV files are shared by many data files, so this
    is far shorter than the file list."""
    import pyarrow as pa
    from delta_downgrade import arrow_compute as ac

    found: set[tuple[str, str]] = set()
    for _adds, dv, with_dv in _parts_with_deletion_vectors(state):
        dv = ac.filter(dv, with_dv)
        kind = ac.struct_field(dv, "storageType")
        where = ac.struct_field(dv, "pathOrInlineDv")
        on_disk = ac.is_in(kind, value_set=pa.array(["u", "p"]))
        pairs = pa.table({"k": ac.filter(kind, on_disk), "p": ac.filter(where, on_disk)}).group_by(["k", "p"]).aggregate([])
        found.update(zip(pairs.column("k").to_pylist(), pairs.column("p").to_pylist()))
    return sorted(found)


def live_files_with(state: ArrowState, *fields: str) -> int:
    """How many live files have a value in any of ``fields`` of ``add``."""
    from delta_downgrade import arrow_compute as ac

    from delta_downgrade.log.format.arrow_columns import chunked_field

    count = 0
    for adds, _ in state.file_parts():
        if len(adds) == 0:
            continue
        present = None
        for name in fields:
            valid = ac.is_valid(chunked_field(adds, name))
            present = valid if present is None else ac.or_(present, valid)
        count += _total(ac.cast(present, "int64")) if present is not None else 0
    return count


def tombstones_with_relative_dvs(state: ArrowState, cutoff_ms: int) -> list[RemoveFile]:
    """The tombstones within retention (``deletionTimestamp`` null or after ``cutoff_ms``) whose
    deletion vector is stored in a file named relative to the table (storage type ``u``,
    PROTOCOL.md "Deletion Vector Descriptor Schema"), as actions: only these few rows are built
    as Python objects."""
    from delta_downgrade import arrow_compute as ac

    from delta_downgrade.log.format.arrow_columns import chunked_field
    from delta_downgrade.log.replay.state_parts import tombstones_after
    from delta_downgrade.protocol.actions import RemoveFile

    out: list[RemoveFile] = []
    for _, removes in state.file_parts():
        kept = tombstones_after(removes, cutoff_ms)
        if len(kept) == 0:
            continue
        dv = chunked_field(kept, "deletionVector")
        if dv.null_count == len(dv):
            continue
        relative = ac.fill_null(ac.and_kleene(ac.is_valid(dv), ac.equal(chunked_field(dv, "storageType"), "u")),
                                False)
        out += [RemoveFile.from_obj(row) for row in ac.filter(kept, relative).to_pylist()]
    return out


def tombstone_paths(state: ArrowState, paths: Iterable[str]) -> set[str]:
    """Which of ``paths`` (URL-decoded) are the decoded path of a tombstone in ``state``, whatever
    its DV (only paths holding a ``%`` are decoded, in Python)."""
    from urllib.parse import unquote

    import pyarrow as pa
    from delta_downgrade import arrow_compute as ac

    from delta_downgrade.log.format.arrow_columns import chunked_field

    wanted = set(paths)
    needles = pa.array(sorted(wanted), pa.string())
    found: set[str] = set()
    for _, removes in state.file_parts():
        if len(removes) == 0:
            continue
        column = chunked_field(removes, "path")
        found.update(ac.filter(column, ac.is_in(column, value_set=needles)).to_pylist())
        escaped = ac.filter(column, ac.match_substring(column, "%")).to_pylist()
        found.update(p for p in map(unquote, escaped) if p in wanted)
    return found & wanted
