"""The parts of a log segment the Arrow replay reads - file actions with their ranks, txns,
domains, protocol and metadata actions, in log order - and, for the Python view, where each file
action row comes from (:class:`RowSource`), to build it as the Python parser builds it."""

from __future__ import annotations

import itertools
from typing import Sequence

from msgspec import Struct, field
import pyarrow as pa
from delta_downgrade import arrow_compute as ac

from delta_downgrade.log.format.action_rows import checkpoint_file_actions, json_file_actions
from delta_downgrade.log.format.arrow_columns import arange
from delta_downgrade.log.format.checkpoint_columns import add_array, remove_array
from delta_downgrade.log.replay.reconcile import RANK_OFFSET, RANKS_PER_COMMIT
from delta_downgrade.protocol.actions import AddFile, DomainMetadata, Metadata, ProtocolAction, RemoveFile, Txn

_LONG = pa.int64()


class RowSource:
    """Rows of file actions, materialised as the Python parser builds them."""

    def actions(self, rows: list[int]) -> list[AddFile | RemoveFile]:
        raise NotImplementedError


class ObjectRows(RowSource):
    """Actions the Python parser built already."""

    def __init__(self, objects: Sequence[AddFile | RemoveFile]) -> None:
        self.objects = objects

    def actions(self, rows: list[int]) -> list[AddFile | RemoveFile]:
        return [self.objects[r] for r in rows]


class CheckpointRows(RowSource):
    """Checkpoint rows of a type :func:`is_exact_checkpoint_type` accepts, no path null."""

    def __init__(self, rows: pa.StructArray, cls: type[AddFile] | type[RemoveFile]) -> None:
        self.rows = rows
        self.cls = cls

    def actions(self, rows: list[int]) -> list[AddFile | RemoveFile]:
        return checkpoint_file_actions(take_rows(self.rows, rows), self.cls)


class JsonRows(RowSource):
    """Commit rows read by Arrow whose object ``json_file_actions`` rebuilds exactly."""

    def __init__(self, typed: pa.StructArray, cls: type[AddFile] | type[RemoveFile],
                 data_change: pa.Array | None, stats: pa.Array | None) -> None:
        self.typed, self.cls, self.data_change, self.stats = typed, cls, data_change, stats

    def actions(self, rows: list[int]) -> list[AddFile | RemoveFile]:
        return json_file_actions(take_rows(self.typed, rows), self.cls,
                                 None if self.data_change is None else take_rows(self.data_change, rows),
                                 None if self.stats is None else take_rows(self.stats, rows))


def take_rows(array: pa.Array, rows: list[int]) -> pa.Array:
    """``array.take(rows)``; the array itself when ``rows`` are all of it, in order (often: the
    files of a chunk of commits that nothing reconciled away)."""
    if len(rows) == len(array) and rows == list(range(len(array))):
        return array
    return ac.take(array, pa.array(rows, _LONG))
_SOURCE_IDS = itertools.count()
ROW_BITS = 32


def provenance(source_id: int, rows: pa.Array) -> pa.Array:
    """Row ``r`` of source ``source_id`` as one int64: ``source_id << 32 | r``."""
    return ac.add(ac.cast(rows, _LONG), pa.scalar(source_id << ROW_BITS, _LONG))


class Pieces(Struct):
    """File actions (with their ranks, and for the Python view where each row comes from), txns
    and domains of part of the segment, in order."""

    adds: list[pa.StructArray] = field(default_factory=list)
    add_ranks: list[pa.Array] = field(default_factory=list)
    add_rows: list[pa.Array] = field(default_factory=list)
    removes: list[pa.StructArray] = field(default_factory=list)
    remove_ranks: list[pa.Array] = field(default_factory=list)
    remove_rows: list[pa.Array] = field(default_factory=list)
    sources: dict[int, RowSource] = field(default_factory=dict)
    txns: list[tuple[tuple[int, int], Txn]] = field(default_factory=list)
    domains: list[tuple[tuple[int, int], DomainMetadata]] = field(default_factory=list)
    meta: list[tuple[tuple[int, int], ProtocolAction | Metadata]] = field(default_factory=list)
    python_commits: list[int] = field(default_factory=list)
    python_lines: int = 0

    def source(self, source: RowSource) -> int:
        source_id = next(_SOURCE_IDS)
        self.sources[source_id] = source
        return source_id

    def add(self, kind: str, actions: pa.StructArray, ranks: pa.Array, rows: pa.Array | None = None) -> None:
        """``actions`` with their ``ranks`` and, for the Python view, their ``rows``
        (:func:`provenance`)."""
        if len(actions):
            if kind == "add":
                self.adds.append(actions)
                self.add_ranks.append(ranks)
                if rows is not None:
                    self.add_rows.append(rows)
            else:
                self.removes.append(actions)
                self.remove_ranks.append(ranks)
                if rows is not None:
                    self.remove_rows.append(rows)

    def add_objects(self, kind: str, actions: Sequence[AddFile | RemoveFile], rank: int | pa.Array,
                    view: bool) -> None:
        """File actions the Python parser built, all of ``kind``."""
        if not actions:
            return
        array = (add_array if kind == "add" else remove_array)(actions)  # type: ignore[arg-type]  # all of ``kind``: AddFile objects for add_array, RemoveFile ones for remove_array
        ranks = repeated_rank(rank, len(actions)) if isinstance(rank, int) else rank
        rows = provenance(self.source(ObjectRows(actions)), arange(0, len(actions))) if view else None
        self.add(kind, array, ranks, rows)

    def extend(self, other: "Pieces") -> None:
        self.adds += other.adds
        self.add_ranks += other.add_ranks
        self.add_rows += other.add_rows
        self.removes += other.removes
        self.remove_ranks += other.remove_ranks
        self.remove_rows += other.remove_rows
        self.sources.update(other.sources)
        self.txns += other.txns
        self.domains += other.domains
        self.meta += other.meta
        self.python_commits += other.python_commits
        self.python_lines += other.python_lines


def repeated_rank(value: int, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, _LONG), n)


def commit_ranks(commit_of_row: pa.Array, kind: str) -> pa.Array:
    """:func:`~delta_downgrade.log.replay.reconcile.commit_rank` of every row's commit."""
    return ac.add(ac.multiply(commit_of_row, pa.scalar(RANKS_PER_COMMIT, _LONG)),
                  pa.scalar(RANK_OFFSET[kind], _LONG))
