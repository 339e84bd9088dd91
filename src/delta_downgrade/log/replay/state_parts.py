"""The file actions of a reconciled state, held in parts: in memory (one part, a small table), or
spilled to Arrow IPC files on the driver's local disk, one pair of files (adds, removes) per hash
part of the path, so that a state larger than memory is read one part at a time.

A part is a hash partition of the URL-decoded path (:func:`part_ids`): every action of one logical
file ``(path, DV id)`` (PROTOCOL.md "Action Reconciliation") lands in the same part, so each part
is reconciled on its own. The hash is Spark's murmur3 of the decoded path
(:mod:`~delta_downgrade.log.checkpoint.spark_hash`), only for a good spread: a multi-part checkpoint's own
placement is decided by its writer from the path as written.

Spilled files live in a temporary directory of the local machine (``tempfile``; never inside the
table) that is removed by :meth:`SpilledParts.close` or, at the latest, when the object is garbage
collected (a ``weakref.finalize``, which also runs at interpreter exit). Reading a part maps its
file (zero copy); the mapping goes away with the last array that refers to it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from typing import Sequence
from urllib.parse import unquote

from msgspec import Struct
import pyarrow as pa
from delta_downgrade import arrow_compute as ac

from delta_downgrade.log.format.arrow_columns import any_true, chunked_field
from delta_downgrade.log.format.checkpoint_schema import ADD_TYPE, REMOVE_TYPE
from delta_downgrade.log.replay.memory_pool import MEMORY_POOL
from delta_downgrade.log.checkpoint.spark_hash import spark_partition_ids

_STR = pa.string()
_LONG = pa.int64()

#: Column names in a spilled file: the action, and (in a not yet reconciled spill) its rank.
ACTION = "a"
RANK = "r"


def decoded_paths(paths: pa.Array) -> pa.Array:
    """``unquote`` of every path (only the ones with a ``%`` need it): the path part of a logical
    file's key, as :func:`~delta_downgrade.log.replay.reconcile.file_key` decodes it."""
    has_escape = ac.match_substring(paths, "%")
    if not any_true(has_escape):
        return paths
    decoded = [unquote(p) for p in ac.filter(paths, has_escape).to_pylist()]
    return ac.replace_with_mask(paths, has_escape, pa.array(decoded, _STR))


def tombstones_after(removes: pa.ChunkedArray, cutoff_ms: int) -> pa.ChunkedArray:
    """The removes whose ``deletionTimestamp`` is null or later than ``cutoff_ms``: the tombstones
    a checkpoint keeps (PROTOCOL.md "Checkpoints": expired tombstones may be left out)."""
    if len(removes) == 0:
        return removes
    stamps = chunked_field(removes, "deletionTimestamp")
    keep = ac.or_kleene(ac.is_null(stamps), ac.greater(stamps, pa.scalar(cutoff_ms, _LONG)))
    if ac.all(keep).as_py():
        return removes
    return ac.filter(removes, keep)


class MemoryParts:
    """One part, in memory: the file actions of a state small enough to hold at once."""

    def __init__(self, adds: pa.ChunkedArray, removes: pa.ChunkedArray) -> None:
        self.adds, self.removes = adds, removes

    @property
    def count(self) -> int:
        return 1

    @property
    def num_adds(self) -> int:
        return len(self.adds)

    @property
    def num_removes(self) -> int:
        return len(self.removes)

    @property
    def sizes(self) -> list[tuple[int, int]]:
        """``(adds, removes)`` of each part."""
        return [(len(self.adds), len(self.removes))]

    def load(self, i: int) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
        return self.adds, self.removes

    def all(self) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
        return self.adds, self.removes

    def close(self) -> None:
        pass


def _read(path: str | None, typ: pa.DataType) -> pa.ChunkedArray:
    if path is None:
        return pa.chunked_array([], typ)
    with pa.memory_map(path) as source:
        column = pa.ipc.open_file(source).read_all().column(ACTION)
    return column if column.type == typ else ac.cast(column, typ)


class SpilledPart(Struct):
    adds_path: str | None      # None: no adds in this part
    removes_path: str | None
    num_adds: int
    num_removes: int


class SpilledParts:
    """Parts spilled to Arrow IPC files under a temporary directory this object owns."""

    def __init__(self, directory: str, parts: list[SpilledPart]) -> None:
        self.directory = directory
        self.parts = parts
        self._finalizer = weakref.finalize(self, shutil.rmtree, directory, True)

    @property
    def count(self) -> int:
        return len(self.parts)

    @property
    def num_adds(self) -> int:
        return sum(p.num_adds for p in self.parts)

    @property
    def num_removes(self) -> int:
        return sum(p.num_removes for p in self.parts)

    @property
    def sizes(self) -> list[tuple[int, int]]:
        """``(adds, removes)`` of each part, without reading it."""
        return [(p.num_adds, p.num_removes) for p in self.parts]

    def load(self, i: int) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
        part = self.parts[i]
        return _read(part.adds_path, ADD_TYPE), _read(part.removes_path, REMOVE_TYPE)

    def all(self) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
        """Every part at once (for small-table callers and tests: the memory of the whole)."""
        loaded = [self.load(i) for i in range(self.count)]
        return (pa.chunked_array([c for a, _ in loaded for c in a.chunks], ADD_TYPE),
                pa.chunked_array([c for _, r in loaded for c in r.chunks], REMOVE_TYPE))

    def close(self) -> None:
        """Remove the files now (arrays already loaded from them stay readable on POSIX: their
        mapping holds the data)."""
        self._finalizer()


class PartSpill:
    """Writes file actions with their ranks into per-part IPC files, appending in the order given
    (log order: the reconciliation of a part relies on it), then hands the files over."""

    def __init__(self, num_parts: int) -> None:
        self.num_parts = num_parts
        self.directory = tempfile.mkdtemp(prefix="delta_downgrade_state_")
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.directory, True)
        self._writers: dict[tuple[str, int], pa.ipc.RecordBatchFileWriter] = {}
        self._rows: dict[tuple[str, int], int] = {}

    def path(self, kind: str, part: int, suffix: str = "raw") -> str:
        return os.path.join(self.directory, f"{part:05d}.{kind}.{suffix}.arrow")

    def split(self, kind: str, actions: Sequence[pa.StructArray], ranks: Sequence[pa.Array]
              ) -> list[tuple[str, int, pa.RecordBatch]]:
        """``actions`` (of ``kind``, ``add`` or ``remove``, in log order) with their ranks, cut by
        part: ``(kind, part, rows)`` for :meth:`write` (a pure function of its input, for the
        parse threads to run)."""
        if not actions:
            return []
        typ = ADD_TYPE if kind == "add" else REMOVE_TYPE
        column = pa.chunked_array(actions, typ)
        ids = spark_partition_ids(decoded_paths(
            pa.chunked_array([a.field("path") for a in actions], _STR).combine_chunks()), self.num_parts)
        order = ac.sort_indices(ids)  # stable: log order stays within each part
        ids = ac.take(ids, order)
        rows = pa.table({ACTION: ac.take(column, order), RANK: ac.take(pa.chunked_array(ranks, _LONG), order)})
        counts = ac.value_counts(ids)
        out = []
        start = 0
        for value, n in sorted(zip(counts.field(0).to_pylist(), counts.field(1).to_pylist())):
            for batch in rows.slice(start, n).to_batches():
                out.append((kind, value, batch))
            start += n
        return out

    def write(self, kind: str, part: int, batch: pa.RecordBatch) -> None:
        key = (kind, part)
        writer = self._writers.get(key)
        if writer is None:
            writer = self._writers[key] = pa.ipc.new_file(self.path(kind, part), batch.schema)
        writer.write_batch(batch)
        self._rows[key] = self._rows.get(key, 0) + batch.num_rows

    def close_writers(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def raw(self, part: int) -> tuple[pa.Table | None, pa.Table | None]:
        """The not yet reconciled adds and removes of ``part`` (columns :data:`ACTION`,
        :data:`RANK`), mapped from their files; None for a kind without rows."""
        out: list[pa.Table | None] = []
        for kind in ("add", "remove"):
            if (kind, part) not in self._rows:
                out.append(None)
                continue
            with pa.memory_map(self.path(kind, part)) as source:
                out.append(pa.ipc.open_file(source).read_all())
        return out[0], out[1]

    def keep(self, part: int, adds: pa.ChunkedArray, removes: pa.ChunkedArray, unchanged: tuple[bool, bool]
             ) -> SpilledPart:
        """The reconciled ``part``: the raw file itself where reconciliation kept every row in
        place (``unchanged``; the usual append-only log), else a new file of the kept rows."""
        paths: list[str | None] = []
        for kind, column, same in (("add", adds, unchanged[0]), ("remove", removes, unchanged[1])):
            raw = self.path(kind, part)
            if len(column) == 0:
                paths.append(None)
            elif same:
                paths.append(raw)
                continue
            else:
                out = self.path(kind, part, "reconciled")
                table = pa.table({ACTION: column})
                with pa.ipc.new_file(out, table.schema) as writer:
                    writer.write_table(table)
                paths.append(out)
            if os.path.exists(raw):
                os.unlink(raw)
        return SpilledPart(paths[0], paths[1], len(adds), len(removes))

    def handover(self, parts: list[SpilledPart]) -> SpilledParts:
        """The reconciled parts, owning the directory from now on."""
        self._finalizer.detach()
        return SpilledParts(self.directory, parts)

    def abort(self) -> None:
        self.close_writers()
        self._finalizer()


def release_memory() -> None:
    """Give the pool's unused memory back to the system between parts (jemalloc keeps freed
    pages for reuse otherwise, and the peak RSS would follow the sum of the parts)."""
    try:
        MEMORY_POOL.release_unused()
    except (AttributeError, pa.ArrowException):
        pass

