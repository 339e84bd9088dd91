"""The one reconciliation of a log segment (PROTOCOL.md "Action Reconciliation"), with Arrow.

Parsing every commit line into a Python action object is most of the time a replay of a table of
a hundred thousand files takes; this module reads the file actions as Arrow arrays instead:

* **Checkpoint** - the segment's checkpoint (classic, multi-part, or v2 with JSON or parquet
  manifest and its sidecars): ``add``/``remove`` columns read from parquet as Arrow, ``txn`` and
  ``domainMetadata`` (small) through :class:`CheckpointReader`.
* **Commits** - in chunks of whole commits, each chunk read into one buffer (each commit behind
  a marker line ``{"<MARKER>": i}``) and parsed by ``pyarrow.json``, one thread per chunk. The
  marker column, filled forward, tags every row with its commit; rows keep line order. Only
  ``partitionValues`` is declared in the read schema, with the keys of the newest file action
  of the log, so that its values stay strings (``pyarrow.json`` reads ``"2024-01-01"`` as a
  timestamp); every other field is inferred, and its type checked before use. The add/remove
  rows are used in place: slices of the parsed columns, no copy.
* **Reconciliation** - the rules of :mod:`delta_downgrade.log.reconcile`, for all file actions
  at once: each gets its rank, and ``rank * N + position`` orders them in the log; a group-by on
  the logical file ``(URL-decoded path, DV unique id)`` finds the highest rank of each kind (which
  kind is live), the last action of the live kind (its value) and - for the Python view - the
  first one that no action of the other kind cancels (its place). When all paths are distinct,
  there is nothing to reconcile and the arrays are used as read.

Two results: :func:`replay_segment` gives the file actions as the columns of a checkpoint
(:class:`ArrowState`, for ``checkpoint_table``; a tombstone of a live file, possible only in an
invalid checkpoint, is left out there), :func:`replay_state` the Python view
(:class:`~delta_downgrade.log.reconcile.TableState`, for ``Snapshot.state``), whose objects are
those the Python parser builds: rows whose Arrow columns settle that are built from them
(:mod:`delta_downgrade.log.action_rows`), every other row is parsed from its line (or its
checkpoint row); and it refuses what the Python parser refuses (a malformed ``commitInfo`` or
``cdc`` line, a checkpoint row ``from_obj`` rejects), with the same error, in the same order
(the checkpoint, then the commits in order; in a commit, a line that does not parse before two
protocol or metaData actions).

**Exactness.** JSON has a difference Arrow cannot see: a field that is absent and a field that is
``null`` both read as null, yet :class:`AddFile` gives them different values (an absent
``partitionValues`` is ``{}``, an absent ``size`` is 0; a map with ``"k": null`` holds the key, a
map without ``"k"`` does not). A row with a null field in ``partitionValues``/``tags`` has its
line looked at: the keys whose value is ``null`` are read from the (flat) object there, the
other null fields are keys the object does not have (:func:`_null_keys`). Every row where that
is unsure, or where the difference matters otherwise - an add without ``partitionValues``/
``size``/``modificationTime``, a ``partitionValues``/``tags`` value that is not a JSON string, a
txn or domain with a null field, a line with more than one action - is parsed again from its
line by the Python parser (:attr:`ArrowState.python_lines` counts them); so are the few
protocol and metaData lines. A chunk that ``pyarrow.json`` cannot read (e.g. a field whose JSON
type changes between commits), or that is not valid UTF-8, is split in halves and retried; a
single commit that still fails is parsed line by line in Python
(:attr:`ArrowState.python_commits`), which raises the same :class:`CorruptLogError` for broken
JSON as :func:`~delta_downgrade.log.segment.read_commit_actions` does.
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import re
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from delta_downgrade.protocol.actions import (ACTION_TYPES, AddFile, DomainMetadata, Metadata, ProtocolAction,
                                              RemoveFile, Sidecar, Txn, parse_action, parse_commit)
from delta_downgrade.errors import CheckpointUnreadableError, CorruptLogError
from delta_downgrade.log.action_rows import (DV_REQUIRED, FIELDS, checkpoint_file_actions, is_exact_checkpoint_type,
                                             json_file_actions, rows_lacking)
from delta_downgrade.log.checkpoint_reader import (CheckpointReader, normalize_row, read_checkpoint_columns,
                                                   sidecar_rel_path)
from delta_downgrade.log.checkpoint_columns import add_array, remove_array
from delta_downgrade.log.checkpoint_schema import ADD_TYPE, DV_TYPE, REMOVE_TYPE
from delta_downgrade.log.memory_pool import MEMORY_POOL
from delta_downgrade.log.listing import CheckpointInstance
from delta_downgrade.log.reconcile import (CHECKPOINT_RANK, RANK_OFFSET, RANKS_PER_COMMIT, TableState, commit_rank,
                                           file_key)
from delta_downgrade.log.segment import (LogSegment, check_single_protocol_and_metadata, commit_parse_error,
                                        with_checkpoint_fallback)
from delta_downgrade.storage import FileStatus, Storage

#: Key of the marker line written before each commit in the parse buffer.
MARKER = "__delta_downgrade_commit__"
#: Chunks are whole commits of about this many bytes or more ...
CHUNK_MIN_BYTES = 4 << 20
#: ... and about this many per thread, so that threads finish close together.
CHUNKS_PER_THREAD = 2
#: Default parse threads per CPU: a thread reads its chunk's files before it parses them, and on a
#: busy machine more, smaller chunks keep the CPUs we get busy (measured: 2 per CPU beats 1).
THREADS_PER_CPU = 2

_STR = pa.string()
_LONG = pa.int64()
_INT = pa.int32()
_BOOL = pa.bool_()
_MAP = pa.map_(pa.string(), pa.string())
_EMPTY_STR = pa.array([], _STR)
_ARANGE: Callable[[int, int, int], pa.Array] | None = getattr(pa, "arange", None)


class _Irregular(Exception):
    """A chunk the Arrow path does not take as is (it is split, or parsed in Python)."""


# --- the commits, read in chunks ------------------------------------------------------------------

def _marker(i: int) -> bytes:
    return b'{"%s":%d}\n' % (MARKER.encode(), i)


class CommitBytes:
    """The commits of a segment, in chunks of whole commits (:func:`_plan_chunks`). A chunk is
    one buffer in which commit ``i`` is preceded by the line ``{"MARKER":i}`` and followed by a
    newline; it is read on first use (:meth:`load`), by the thread that parses it."""

    def __init__(self, storage: Storage, segment: LogSegment, ranges: Sequence[tuple[int, int]]) -> None:
        self.storage = storage
        self.segment = segment
        self.ranges = list(ranges)
        self._chunk_of = [k for k, (lo, hi) in enumerate(self.ranges) for _ in range(lo, hi)]
        self._buffers: dict[int, pa.Buffer] = {}
        self._spans: dict[int, tuple[int, int, int]] = {}  # commit -> (marker, start, end)
        self._lines: dict[int, list[bytes]] = {}

    def __len__(self) -> int:
        return len(self.segment.commits)

    def path(self, i: int) -> str:
        return self.segment.commits[i].path

    def version(self, i: int) -> int:
        return self.segment.start_version + i

    def load(self, k: int) -> pa.Buffer:
        """The buffer of chunk ``k`` (read now if it is not yet)."""
        if k not in self._buffers:
            lo, hi = self.ranges[k]
            buffer, spans = _read_chunk(self.storage, self.segment.commits, lo, hi)
            for i, span in zip(range(lo, hi), spans):
                self._spans[i] = span
            self._buffers[k] = buffer
        return self._buffers[k]

    def raw(self, i: int) -> bytes:
        """The bytes of commit ``i``, as stored."""
        buffer = self.load(self._chunk_of[i])
        _, start, end = self._spans[i]
        return buffer.slice(start, end - start).to_pybytes()

    def lines(self, i: int) -> list[bytes]:
        """The non-blank lines of commit ``i``: the rows ``pyarrow.json`` reads, in order."""
        if i not in self._lines:
            buffer = self.load(self._chunk_of[i])
            _, start, end = self._spans[i]
            text = buffer.slice(start, end - start).to_pybytes()
            self._lines[i] = [line for line in text.split(b"\n") if line.strip()]
        return self._lines[i]

    def release(self, k: int) -> None:
        """Forget chunk ``k``'s buffer (its memory goes back to the pool for the next chunk)."""
        self._buffers.pop(k, None)
        for i in range(*self.ranges[k]):
            self._lines.pop(i, None)

    def chunk(self, lo: int, hi: int) -> pa.Buffer:
        """Commits ``lo .. hi-1`` (within one chunk) with their markers."""
        buffer = self.load(self._chunk_of[lo])
        start = self._spans[lo][0]
        end = self._spans[hi - 1][2] + 1
        return buffer.slice(start, end - start)

    def newest_lines_with(self, needle: bytes) -> Iterator[bytes]:
        """The lines holding ``needle``, newest first. Reads back from the end of the newest
        chunk in growing windows, so that a match near the end costs little."""
        for k in reversed(range(len(self.ranges))):
            buffer = self.load(k)
            end = buffer.size  # always just after a newline (each commit ends with one)
            window = 1 << 16
            while end > 0:
                start = max(0, end - window)
                text = buffer.slice(start, end - start).to_pybytes()
                cut = 0
                if start > 0:  # leave out the first line: it may begin before the window
                    cut = text.find(b"\n") + 1
                    if cut == 0:
                        window *= 2
                        continue
                pos = text.rfind(needle, cut)
                while pos >= 0:
                    left = text.rfind(b"\n", cut, pos) + 1 or cut
                    yield text[left:text.find(b"\n", pos)]
                    pos = text.rfind(needle, cut, left)
                end = start + cut
                window *= 2


def _read_chunk(storage: Storage, statuses: Sequence[FileStatus], lo: int,
                hi: int) -> tuple[pa.Buffer, list[tuple[int, int, int]]]:
    """Commits ``lo .. hi-1`` in one buffer behind their markers, with each one's
    (marker start, content start, content end). On local storage, the files are read straight
    into a buffer of Arrow's memory pool (no copy, and few page faults: the pool maps large pages)."""
    local = getattr(storage, "local_path", None)
    if local is not None:
        markers = [_marker(i) for i in range(lo, hi)]
        buffer = pa.allocate_buffer(sum(len(m) + statuses[i].size + 1 for m, i in zip(markers, range(lo, hi))),
                                    memory_pool=MEMORY_POOL)
        view = memoryview(buffer).cast("B")
        spans = []
        pos = 0
        ok = True
        try:
            for m, i in zip(markers, range(lo, hi)):
                size = statuses[i].size
                view[pos:pos + len(m)] = m
                start = pos + len(m)
                with open(local(statuses[i].path), "rb", buffering=0) as fh:
                    got = 0
                    while got < size:
                        n = fh.readinto(view[start + got:start + size])
                        if not n:
                            break
                        got += n
                    if got != size or fh.read(1):
                        ok = False  # not the size the listing saw: read the plain way
                        break
                view[start + size] = 0x0A
                spans.append((pos, start, start + size))
                pos = start + size + 1
        except OSError:
            ok = False
        finally:
            view.release()
        if ok:
            return buffer, spans
    parts: list[bytes] = []
    spans = []
    pos = 0
    for i in range(lo, hi):
        data = storage.read_bytes(statuses[i].path)
        m = _marker(i)
        parts += [m, data, b"\n"]
        spans.append((pos, pos + len(m), pos + len(m) + len(data)))
        pos += len(m) + len(data) + 1
    return pa.py_buffer(b"".join(parts)), spans


def _plan_chunks(statuses: Sequence[FileStatus], threads: int) -> list[tuple[int, int]]:
    """Ranges of whole commits of about ``max(CHUNK_MIN_BYTES, total / (threads * k))`` bytes."""
    n = len(statuses)
    total = sum(st.size for st in statuses)
    target = max(CHUNK_MIN_BYTES, total // max(1, threads * CHUNKS_PER_THREAD))
    out = []
    lo, size = 0, 0
    for i, st in enumerate(statuses):
        size += st.size
        if size >= target:
            out.append((lo, i + 1))
            lo, size = i + 1, 0
    if lo < n:
        out.append((lo, n))
    return out


def _is_utf8(data: pa.Buffer) -> bool:
    offsets = pa.py_buffer(struct.pack("<qq", 0, data.size))
    try:
        pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, data]).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _parse_line(commits: CommitBytes, i: int, line: bytes) -> Any:
    """One line by the Python parser. When it fails, the error is the one ``read_commit_actions``
    raises for the commit (the whole file parsed again: decoded first, lines numbered)."""
    try:
        return parse_action(json.loads(line.decode("utf-8")))
    except (ValueError, UnicodeDecodeError) as exc:
        first = exc
    try:
        parse_commit(commits.raw(i).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise commit_parse_error(commits.storage, commits.path(i), exc) from exc
    raise commit_parse_error(commits.storage, commits.path(i), first) from first


def _protocol_and_metadata(storage: Storage, table: str, segment: LogSegment,
                           found: list[tuple[tuple[int, int], ProtocolAction | Metadata]]
                           ) -> tuple[ProtocolAction, Metadata]:
    """What ``Snapshot.protocol_action`` / ``Snapshot.metadata`` give: the newest of the commits'
    (by commit, then line), else the checkpoint's."""
    per_commit: dict[int, list[Any]] = {}
    for (c, _), action in found:
        per_commit.setdefault(c, []).append(action)
    for c, actions in sorted(per_commit.items()):
        if len(actions) > 1:  # at most one of each per commit, as read_commit_actions checks
            check_single_protocol_and_metadata(actions, segment.commits[c].path, getattr(storage, "root", None))
    protocol: ProtocolAction | None = None
    metadata: Metadata | None = None
    for _, action in sorted(found, key=lambda e: e[0]):
        if isinstance(action, ProtocolAction):
            protocol = action
        else:
            metadata = action
    return with_checkpoint_fallback(storage, table, segment, protocol, metadata)


# --- result ----------------------------------------------------------------------------------------

@dataclass
class ArrowState:
    """The reconciled state at ``version`` with its file actions as Arrow columns."""

    version: int
    protocol: ProtocolAction
    metadata: Metadata
    adds: pa.ChunkedArray                  # ADD_TYPE, the live files, dataChange false
    removes: pa.ChunkedArray               # REMOVE_TYPE, every tombstone, dataChange false
    txns: list[Txn] = field(default_factory=list)
    domains: list[DomainMetadata] = field(default_factory=list)  # removed ones included
    python_commits: tuple[int, ...] = ()   # commit versions parsed line by line in Python
    python_lines: int = 0                  # lines of the other commits parsed again in Python

    @property
    def live_domains(self) -> list[DomainMetadata]:
        return [d for d in self.domains if not d.removed]

    def tombstones_after(self, cutoff_ms: int) -> pa.ChunkedArray:
        """The removes whose ``deletionTimestamp`` is null or later than ``cutoff_ms``."""
        if len(self.removes) == 0:
            return self.removes
        stamps = pa.chunked_array([c.field("deletionTimestamp") for c in self.removes.chunks], _LONG)
        keep = pc.or_kleene(pc.is_null(stamps), pc.greater(stamps, pa.scalar(cutoff_ms, _LONG)))
        if pc.all(keep).as_py():
            return self.removes
        return self.removes.filter(keep)


# --- where each row of the Python view comes from --------------------------------------------------

class _Source:
    """Rows of file actions, materialised as the Python parser builds them."""

    def actions(self, rows: list[int]) -> list[AddFile | RemoveFile]:
        raise NotImplementedError


class _Objects(_Source):
    """Actions the Python parser built already."""

    def __init__(self, objects: Sequence[AddFile | RemoveFile]) -> None:
        self.objects = objects

    def actions(self, rows: list[int]) -> list[AddFile | RemoveFile]:
        return [self.objects[r] for r in rows]


class _CheckpointRows(_Source):
    """Checkpoint rows of a type :func:`is_exact_checkpoint_type` accepts, no path null."""

    def __init__(self, rows: pa.StructArray, cls: type[AddFile] | type[RemoveFile]) -> None:
        self.rows = rows
        self.cls = cls

    def actions(self, rows: list[int]) -> list[AddFile | RemoveFile]:
        return checkpoint_file_actions(_take(self.rows, rows), self.cls)


class _JsonRows(_Source):
    """Commit rows read by Arrow whose object ``json_file_actions`` rebuilds exactly."""

    def __init__(self, typed: pa.StructArray, cls: type[AddFile] | type[RemoveFile],
                 data_change: pa.Array | None, stats: pa.Array | None) -> None:
        self.typed, self.cls, self.data_change, self.stats = typed, cls, data_change, stats

    def actions(self, rows: list[int]) -> list[AddFile | RemoveFile]:
        return json_file_actions(_take(self.typed, rows), self.cls,
                                 None if self.data_change is None else _take(self.data_change, rows),
                                 None if self.stats is None else _take(self.stats, rows))


def _take(array: pa.Array, rows: list[int]) -> pa.Array:
    """``array.take(rows)``; the array itself when ``rows`` are all of it, in order (often: the
    files of a chunk of commits that nothing reconciled away)."""
    if len(rows) == len(array) and rows == list(range(len(array))):
        return array
    return array.take(pa.array(rows, _LONG))


_SOURCE_IDS = itertools.count()
_ROW_BITS = 32


def _provenance(source_id: int, rows: pa.Array) -> pa.Array:
    """Row ``r`` of source ``source_id`` as one int64: ``source_id << 32 | r``."""
    return pc.add(rows.cast(_LONG), pa.scalar(source_id << _ROW_BITS, _LONG))


@dataclass
class _Pieces:
    """File actions (with their ranks, and for the Python view where each row comes from), txns
    and domains of part of the segment, in order."""

    adds: list[pa.StructArray] = field(default_factory=list)
    add_ranks: list[pa.Array] = field(default_factory=list)
    add_rows: list[pa.Array] = field(default_factory=list)
    removes: list[pa.StructArray] = field(default_factory=list)
    remove_ranks: list[pa.Array] = field(default_factory=list)
    remove_rows: list[pa.Array] = field(default_factory=list)
    sources: dict[int, _Source] = field(default_factory=dict)
    txns: list[tuple[tuple[int, int], Txn]] = field(default_factory=list)
    domains: list[tuple[tuple[int, int], DomainMetadata]] = field(default_factory=list)
    meta: list[tuple[tuple[int, int], ProtocolAction | Metadata]] = field(default_factory=list)
    python_commits: list[int] = field(default_factory=list)
    python_lines: int = 0

    def source(self, source: _Source) -> int:
        source_id = next(_SOURCE_IDS)
        self.sources[source_id] = source
        return source_id

    def add(self, kind: str, actions: pa.StructArray, ranks: pa.Array, rows: pa.Array | None = None) -> None:
        """``actions`` with their ``ranks`` and, for the Python view, their ``rows``
        (:func:`_provenance`)."""
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
        array = (add_array if kind == "add" else remove_array)(actions)  # type: ignore[arg-type]
        ranks = _ranks(rank, len(actions)) if isinstance(rank, int) else rank
        rows = _provenance(self.source(_Objects(actions)), _arange(0, len(actions))) if view else None
        self.add(kind, array, ranks, rows)

    def extend(self, other: "_Pieces") -> None:
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


def _ranks(value: int, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, _LONG), n)


def _commit_ranks(commit_of_row: pa.Array, kind: str) -> pa.Array:
    """:func:`~delta_downgrade.log.reconcile.commit_rank` of every row's commit."""
    return pc.add(pc.multiply(commit_of_row, pa.scalar(RANKS_PER_COMMIT, _LONG)),
                  pa.scalar(RANK_OFFSET[kind], _LONG))


# --- Arrow helpers ---------------------------------------------------------------------------------

def _arange(start: int, stop: int, step: int = 1) -> pa.Array:
    if _ARANGE is not None:
        return _ARANGE(start, stop, step)
    n = max(0, -(-(stop - start) // step))
    if n == 0:
        return pa.array([], _LONG)
    ones = pc.cumulative_sum(pa.repeat(pa.scalar(step, _LONG), n))
    return pc.add(ones, pa.scalar(start - step, _LONG))


def _falses(n: int) -> pa.Array:
    return pa.repeat(pa.scalar(False, _BOOL), n)


def _any(mask: pa.Array | pa.ChunkedArray | None) -> bool:
    return mask is not None and len(mask) > 0 and bool(pc.any(mask).as_py())


def _or(a: pa.Array | None, b: pa.Array | None) -> pa.Array | None:
    if a is None:
        return b
    if b is None:
        return a
    return pc.or_(a, b)


def _field(s: pa.StructArray, name: str) -> pa.Array | None:
    index = s.type.get_field_index(name)
    return s.field(index) if index >= 0 else None


def _empty_maps(n: int, mask: pa.Array | None = None) -> pa.Array:
    offsets = pa.repeat(pa.scalar(0, _INT), n + 1)
    return pa.MapArray.from_arrays(offsets, _EMPTY_STR, _EMPTY_STR, type=_MAP, mask=mask)


def _struct_to_map(s: pa.StructArray, explicit: dict[int, Sequence[str]] | None = None) -> pa.Array:
    """A JSON object read as a struct -> ``map<string,string>`` holding, for every non-null row,
    its non-null fields, and the null fields ``explicit[row]`` names (keys whose value is
    ``null``). The caller has made sure that any other null field of a row it keeps is a key the
    row's object does not have, and that the rows it keeps have no value in a field pyarrow
    typed other than string."""
    n = len(s)
    names = [s.type.field(i).name for i in range(s.type.num_fields)]
    valid = s.is_valid() if s.null_count else None
    mask = pc.invert(valid) if valid is not None else None
    width = len(names)
    if width == 0 or n == 0:
        return _empty_maps(n, mask)
    children = [s.field(i) if pa.types.is_string(s.field(i).type) else pa.nulls(n, _STR)
                for i in range(width)]
    sparse = any(c.null_count for c in children)
    sizes = None
    if sparse:  # entries per row: its non-null fields, and its explicit nulls
        sizes = children[0].is_valid().cast(_LONG)
        for c in children[1:]:
            sizes = pc.add(sizes, c.is_valid().cast(_LONG))
        if explicit:
            rows = sorted(explicit)
            more = pc.add(sizes.take(pa.array(rows, _LONG)), pa.array([len(explicit[r]) for r in rows], _LONG))
            sizes = pc.replace_with_mask(sizes, _row_mask(rows, n), more)
    if valid is not None:
        rank = pc.subtract(pc.cumulative_sum(valid.cast(_LONG)), pa.scalar(1, _LONG))
        taken = pc.indices_nonzero(valid)
        children = [c.take(taken) for c in children]
        sizes = pc.if_else(valid, sizes if sizes is not None else pa.scalar(width, _LONG),
                           pa.scalar(0, _LONG))
    count = len(children[0])
    if sizes is None:
        offsets = _arange(0, (n + 1) * width, width).cast(_INT)
    else:
        offsets = pa.concat_arrays([pa.array([0], _LONG), pc.cumulative_sum(sizes)]).cast(_INT)
    if width == 1:
        keys = pa.repeat(pa.scalar(names[0], _STR), count)
        items = children[0]
    else:
        p = _arange(0, count * width)
        row = pc.divide(p, pa.scalar(width, _LONG))
        col = pc.subtract(p, pc.multiply(row, pa.scalar(width, _LONG)))
        keys = pa.array(names, _STR).take(col)
        items = pa.concat_arrays(children).take(
            pc.add(pc.multiply(col, pa.scalar(count, _LONG)), row))
    if sparse:
        present = items.is_valid()
        if explicit:
            rows = sorted(explicit)
            at = rows if valid is None else rank.take(pa.array(rows, _LONG)).to_pylist()
            index = {name: j for j, name in enumerate(names)}
            entries = [a * width + index[k] for r, a in zip(rows, at) for k in explicit[r]]
            present = pc.or_(present, _row_mask(entries, len(items)))
        keys, items = keys.filter(present), items.filter(present)
    return pa.MapArray.from_arrays(offsets, keys, items, type=_MAP, mask=mask)


def _dv_column(dv: pa.Array | None, n: int) -> pa.Array:
    """``deletionVector`` as :data:`DV_TYPE`; a DV without ``storageType`` is no DV (as
    ``DeletionVectorDescriptor.from_obj`` and the Python writer have it)."""
    if dv is None or pa.types.is_null(dv.type):
        return pa.nulls(n, DV_TYPE)
    if not pa.types.is_struct(dv.type):
        raise _Irregular("deletionVector is not an object")
    storage_type = _field(dv, "storageType")
    if storage_type is None:
        return pa.nulls(n, DV_TYPE)
    present = pc.and_(dv.is_valid(), storage_type.is_valid())
    if not _any(present):
        return pa.nulls(n, DV_TYPE)
    children = []
    for f in DV_TYPE:
        child = _field(dv, f.name)
        children.append(pa.nulls(n, f.type) if child is None else child.cast(f.type))
    mask = None if pc.all(present).as_py() else pc.invert(present)
    return pa.StructArray.from_arrays(children, fields=list(DV_TYPE), mask=mask)


def _file_actions(s: pa.StructArray, typ: pa.StructType,
                  maps: Callable[[str, pa.Array | None, int], pa.Array]) -> pa.StructArray:
    """Rows of an ``add``/``remove`` struct (all non-null) as exactly ``typ``, dataChange false.
    ``maps(name, child, n)`` turns ``partitionValues``/``tags`` into maps."""
    n = len(s)
    is_add = typ == ADD_TYPE
    children = []
    for f in typ:
        child = _field(s, f.name)
        if f.name == "dataChange":
            children.append(_falses(n))
        elif f.name in ("partitionValues", "tags"):
            children.append(maps(f.name, child, n))
        elif f.name == "deletionVector":
            children.append(_dv_column(child, n))
        elif child is None:
            zero = is_add and f.name in ("size", "modificationTime")  # AddFile's defaults
            children.append(pa.repeat(pa.scalar(0, _LONG), n) if zero else pa.nulls(n, f.type))
        else:
            children.append(child.cast(f.type))
    return pa.StructArray.from_arrays(children, fields=list(typ))


def _parquet_file_actions(s: pa.StructArray, typ: pa.StructType, source: str) -> pa.StructArray:
    """Checkpoint rows (non-null) as ``typ``. An absent field takes AddFile's default, a null
    stays null (the Python reader builds actions from the row dicts the same way)."""
    path = _field(s, "path")
    if path is None or path.null_count:
        raise CorruptLogError(f"checkpoint file {source} has a file action without a path")
    is_add = typ == ADD_TYPE

    def maps(name: str, child: pa.Array | None, n: int) -> pa.Array:
        if child is None:
            return _empty_maps(n) if is_add and name == "partitionValues" else pa.nulls(n, _MAP)
        if pa.types.is_null(child.type):
            return pa.nulls(n, _MAP)
        return child.cast(_MAP)

    return _file_actions(s, typ, maps)


# --- the checkpoint --------------------------------------------------------------------------------

def _read_parquet(storage: Storage, rel_path: str, columns: Sequence[str]) -> pa.Table:
    """Derived columns (``stats_parsed``...) are left out, INT96 read without overflow
    (:func:`read_checkpoint_columns`, shared with the Python reader)."""
    local = getattr(storage, "local_path", None)
    try:
        source: Any = local(rel_path) if local else pa.BufferReader(storage.read_bytes(rel_path))
    except OSError as exc:
        raise CheckpointUnreadableError(f"cannot read checkpoint file {rel_path}: {exc}") from exc
    return read_checkpoint_columns(source, columns, rel_path)


def _valid_rows(column: pa.ChunkedArray) -> pa.StructArray | None:
    if pa.types.is_null(column.type) or column.null_count == len(column):
        return None
    if column.null_count:
        column = column.filter(pc.is_valid(column))
    return column.combine_chunks()


def _python_checkpoint_actions(storage: Storage, checkpoint: CheckpointInstance, rows: pa.StructArray,
                               kind: str, source: str) -> list[AddFile | RemoveFile]:
    """The actions of checkpoint rows as :class:`CheckpointReader` builds them, with its errors."""
    try:
        values = rows.to_pylist()
    except (pa.ArrowException, ValueError, OverflowError) as exc:  # a value Python cannot hold
        raise CheckpointUnreadableError(f"cannot read the {kind} actions of checkpoint file "
                                        f"{source}: {exc}") from exc
    try:
        actions = [ACTION_TYPES[kind].from_obj(normalize_row(kind, r)) for r in values]
    except ValueError as exc:
        raise CorruptLogError(f"checkpoint {checkpoint.paths[0]}: {exc}",
                              table=getattr(storage, "root", None)) from exc
    for action in actions:
        file_key(action)  # type: ignore[arg-type]  # raises for a deletion vector it cannot read, as applying it would
    return actions  # type: ignore[return-value]


def _checkpoint_pieces(storage: Storage, checkpoint: CheckpointInstance, view: bool = False) -> _Pieces:
    """The checkpoint's adds and removes (rank :data:`CHECKPOINT_RANK` both: a checkpoint is
    already reconciled), txns and domains, in the order :meth:`CheckpointReader.rows` gives
    them: its files in part order, then the sidecars. With ``view``, what the Python view needs
    too, and the errors :class:`CheckpointReader` raises for rows it cannot take."""
    out = _Pieces()
    sidecars: list[str] = []
    if view:  # read first, as the Python view reads a checkpoint
        found = CheckpointReader(storage, checkpoint).actions(["txn", "domainMetadata"])

    def take_table(table: pa.Table, source: str) -> None:
        for kind, typ, cls in (("add", ADD_TYPE, AddFile), ("remove", REMOVE_TYPE, RemoveFile)):
            if kind not in table.column_names:
                continue
            rows = _valid_rows(table.column(kind))
            if rows is None:
                continue
            path = _field(rows, "path")
            if view and (not is_exact_checkpoint_type(rows.type, cls) or path is None or path.null_count
                         or rows_lacking(rows, "deletionVector", DV_REQUIRED) is not None):
                out.add_objects(kind, _python_checkpoint_actions(storage, checkpoint, rows, kind, source),
                                CHECKPOINT_RANK, view)
                continue
            try:
                arr = _parquet_file_actions(rows, typ, source)
            except (pa.ArrowException, _Irregular) as exc:
                raise CheckpointUnreadableError(
                    f"cannot read the {kind} actions of checkpoint file {source}: {exc}") from exc
            provenance = _provenance(out.source(_CheckpointRows(rows, cls)), _arange(0, len(arr))) if view else None
            out.add(kind, arr, _ranks(CHECKPOINT_RANK, len(arr)), provenance)

    for status in checkpoint.files:
        if status.path.endswith(".json"):
            try:
                actions = parse_commit(storage.read_bytes(status.path))
            except ValueError as exc:
                raise CheckpointUnreadableError(f"cannot parse checkpoint {status.path}: {exc}") from exc
            # the JSON manifest's actions go through to_obj/from_obj, as in CheckpointReader.rows
            adds = [AddFile.from_obj(a.to_obj()) for a in actions if isinstance(a, AddFile)]
            removes = [RemoveFile.from_obj(a.to_obj()) for a in actions if isinstance(a, RemoveFile)]
            if view:
                for action in (*adds, *removes):
                    file_key(action)  # type: ignore[arg-type]
            out.add_objects("add", adds, CHECKPOINT_RANK, view)  # type: ignore[arg-type]
            out.add_objects("remove", removes, CHECKPOINT_RANK, view)  # type: ignore[arg-type]
            sidecars += [a.path for a in actions if isinstance(a, Sidecar)]
            continue
        table = _read_parquet(storage, status.path, ["add", "remove", "sidecar"])
        take_table(table, status.path)
        if "sidecar" in table.column_names:
            rows = _valid_rows(table.column("sidecar"))
            if rows is not None:
                sidecars += [r["path"] for r in rows.to_pylist()]
    for path in sidecars:
        rel = sidecar_rel_path(path)
        take_table(_read_parquet(storage, rel, ["add", "remove"]), rel)

    if not view:
        found = CheckpointReader(storage, checkpoint).actions(["txn", "domainMetadata"])
    out.txns = [((-1, k), t) for k, t in enumerate(found.get("txn", []))]  # type: ignore[misc]
    out.domains = [((-1, k), d) for k, d in enumerate(found.get("domainMetadata", []))]  # type: ignore[misc]
    return out


# --- the commits -----------------------------------------------------------------------------------

def _partition_keys(commits: CommitBytes) -> list[str]:
    """The ``partitionValues`` keys of the newest file action that has them: the keys of the
    table's files (if the partitioning changed within the segment, the rows with other keys are
    checked line by line). Taken from the log itself rather than from the metadata, which is
    only known after the parse."""
    for tries, line in enumerate(commits.newest_lines_with(b'"partitionValues"')):
        if tries == 16:
            break
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        for body in (obj.values() if isinstance(obj, dict) else ()):
            values = body.get("partitionValues") if isinstance(body, dict) else None
            if isinstance(values, dict):
                return [key for key in values if isinstance(key, str)]
    return []


def _json_schema(partition_keys: Sequence[str]) -> pa.Schema:
    """What the commits' lines are read as: only ``partitionValues`` is declared (its values
    must stay strings: ``pyarrow.json`` would read ``"2024-01-01"`` as a timestamp), the rest is
    inferred and its types checked after the read (:data:`_EXPECTED`). Declaring more fields
    makes the read slower: each declared field is filled in for every row that lacks it."""
    values = pa.struct([(k, _STR) for k in partition_keys])
    return pa.schema([(MARKER, _LONG), ("add", pa.struct([("partitionValues", values)])),
                      ("remove", pa.struct([("partitionValues", values)]))])


def _is_str(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_null(t)


def _is_long(t: pa.DataType) -> bool:
    return pa.types.is_int64(t) or pa.types.is_null(t)


def _is_bool(t: pa.DataType) -> bool:
    return pa.types.is_boolean(t) or pa.types.is_null(t)


def _is_dv(t: pa.DataType) -> bool:
    if pa.types.is_null(t):
        return True
    return pa.types.is_struct(t) and all(
        _EXPECTED_DV[f.name](f.type) for f in t if f.name in _EXPECTED_DV)


_EXPECTED_DV: dict[str, Callable[[pa.DataType], bool]] = {
    "storageType": _is_str, "pathOrInlineDv": _is_str, "offset": _is_long,
    "sizeInBytes": _is_long, "cardinality": _is_long, "maxRowIndex": _is_long,
}
#: The inferred types the Arrow path takes as they are (null type: every value was null). A
#: string field pyarrow typed as a timestamp, a number read as double... and the chunk is read
#: another way. (``partitionValues`` and ``tags`` are checked per row instead.)
_EXPECTED: dict[str, dict[str, Callable[[pa.DataType], bool]]] = {
    "add": {"path": _is_str, "size": _is_long, "modificationTime": _is_long, "stats": _is_str,
            "deletionVector": _is_dv, "baseRowId": _is_long, "defaultRowCommitVersion": _is_long,
            "clusteringProvider": _is_str},
    "remove": {"path": _is_str, "deletionTimestamp": _is_long, "extendedFileMetadata": _is_bool,
               "size": _is_long, "deletionVector": _is_dv, "baseRowId": _is_long,
               "defaultRowCommitVersion": _is_long},
    "txn": {"appId": _is_str, "version": _is_long, "lastUpdated": _is_long},
    "domainMetadata": {"domain": _is_str, "configuration": _is_str, "removed": _is_bool},
}


#: What the Python parser checks besides, and the Python view takes from the columns.
_EXPECTED_VIEW: dict[str, dict[str, Callable[[pa.DataType], bool]]] = {
    "add": {**_EXPECTED["add"], "dataChange": _is_bool},
    "remove": {**_EXPECTED["remove"], "dataChange": _is_bool, "stats": _is_str},
    "txn": _EXPECTED["txn"], "domainMetadata": _EXPECTED["domainMetadata"],
}


def _check_types(kind: str, t: pa.DataType, view: bool = False) -> None:
    if not pa.types.is_struct(t):
        raise _Irregular(f"{kind} is not an object")
    expected = (_EXPECTED_VIEW if view else _EXPECTED)[kind]
    for f in t:
        check = expected.get(f.name)
        if check is not None and not check(f.type):
            raise _Irregular(f"{kind}.{f.name} was read as {f.type}")


def _map_rows_to_check(child: pa.Array | None) -> tuple[pa.Array | None, pa.Array | None]:
    """Rows of a JSON object read as the struct ``child`` that Arrow cannot map as they are:
    ``(hard, soft)``. Hard: a value pyarrow typed itself (number, timestamp...; the row goes to
    the Python parser). Soft: a null field - a key this row's object lacks, or a ``null`` value?
    (:func:`_objects_without_null` looks at the line)."""
    if child is None or pa.types.is_null(child.type):
        return None, None
    n = len(child)
    if not pa.types.is_struct(child.type):
        return pa.repeat(pa.scalar(True, _BOOL), n), None  # not an object at all
    hard = soft = None
    for i in range(child.type.num_fields):
        sub = child.field(i)
        if pa.types.is_string(sub.type):
            soft = _or(soft, sub.is_null() if sub.null_count else None)
        elif pa.types.is_null(sub.type):
            soft = pa.repeat(pa.scalar(True, _BOOL), n)
        else:
            hard = _or(hard, sub.is_valid() if sub.null_count else pa.repeat(pa.scalar(True, _BOOL), n))
            soft = _or(soft, sub.is_null() if sub.null_count else None)
    if child.null_count:
        present = child.is_valid()
        hard = pc.and_(hard, present) if hard is not None else None
        soft = pc.and_(soft, present) if soft is not None else None
    return hard, soft


_STRING = rb'"(?:[^"\\]|\\.)*"'
_OBJECT = re.compile(rb'\{(?:[^"{}]|' + _STRING + rb')*\}')
_STRINGS = re.compile(_STRING)


def _null_keys(line: bytes, names: Sequence[str]) -> dict[str, list[str]] | None:
    """The keys with a ``null`` value in the objects ``"name": {...}`` of this line (a null
    field Arrow read for any other key is a key the object does not have). None when unsure:
    the name is there more than once, its object is not flat, or holds something else than
    strings and nulls."""
    out: dict[str, list[str]] = {}
    if b"null" not in line:
        return out
    for name in names:
        key = b'"%s"' % name.encode()
        at = line.find(key)
        if at < 0:
            continue
        if line.find(key, at + 1) >= 0:
            return None
        start = at + len(key)
        while start < len(line) and line[start] in b" \t\r:":
            start += 1
        if line.startswith(b"null", start):
            continue
        found = _OBJECT.match(line, start)
        if found is None:
            return None
        text = found.group()
        bare = _STRINGS.sub(b'""', text)
        if b"null" not in bare:
            continue
        try:
            obj = json.loads(text.decode("utf-8"))
        except ValueError:
            return None
        if not isinstance(obj, dict) or bare.count(b":") != len(obj) or \
                any(v is not None and not isinstance(v, str) for v in obj.values()):
            return None  # a key twice, or a value that is not a string
        nulls = [k for k, v in obj.items() if v is None]
        if nulls:
            out[name] = nulls
    return out


def _json_maps(explicit: dict[str, dict[int, list[str]]]
               ) -> Callable[[str, pa.Array | None, int], pa.Array]:
    def maps(name: str, child: pa.Array | None, n: int) -> pa.Array:
        if child is None or pa.types.is_null(child.type):
            return pa.nulls(n, _MAP)
        return _struct_to_map(child, explicit.get(name))
    return maps


#: Actions the Python parser checks that the Arrow path does not read: with ``view``, their rows
#: are parsed again in Python (a ``commitInfo`` only when its type leaves a doubt).
_OTHER_ACTIONS = tuple(k for k in ACTION_TYPES if k not in ("add", "remove", "txn", "domainMetadata",
                                                            "protocol", "metaData"))


def _commit_info_is_sure(t: pa.DataType) -> bool:
    """A ``commitInfo`` of this type parses: an object whose ``inCommitTimestamp`` is a long
    (PROTOCOL.md "Commit Provenance Information" leaves the rest free)."""
    if not pa.types.is_struct(t):
        return False
    index = t.get_field_index("inCommitTimestamp")
    return index < 0 or _is_long(t.field(index).type)


def _view_rows_to_redo(kind: str, raw: pa.StructArray, keep: pa.Array) -> pa.Array | None:
    """Rows of ``keep`` whose action object :func:`json_file_actions` cannot rebuild from the
    columns (see there): they are parsed from their line instead."""
    cls = AddFile if kind == "add" else RemoveFile
    if any(f.name not in FIELDS[cls] for f in raw.type):  # a field would go to ``extra``
        return keep
    redo = None
    for name in ("partitionValues", "tags"):
        child = _field(raw, name)
        if child is None or pa.types.is_null(child.type):
            continue
        if kind == "remove" and name == "tags" or not pa.types.is_struct(child.type) \
                or child.type.num_fields > 1:  # more than one key: their order is the line's
            redo = _or(redo, child.is_valid())
    dv = _field(raw, "deletionVector")
    if dv is not None and not pa.types.is_null(dv.type):
        redo = _or(redo, dv.is_valid())  # the line's object is the action's deletionVector
    data_change = _field(raw, "dataChange")
    if data_change is not None and data_change.null_count:
        redo = _or(redo, data_change.is_null())  # absent (true) or null?
    if redo is None:
        return None
    redo = pc.and_(redo, keep)
    return redo if _any(redo) else None


class _ChunkReader:
    """Parses ranges of commits of one segment into :class:`_Pieces`. With ``view``, also what
    the Python view needs, with the Python parser's checks and errors."""

    def __init__(self, commits: CommitBytes, view: bool = False) -> None:
        self.commits = commits
        self.view = view
        self.schema = _json_schema(_partition_keys(commits))

    def parse(self, lo: int, hi: int) -> _Pieces:
        """Commits ``lo .. hi-1``: with Arrow, else in halves, else (one commit) in Python."""
        try:
            return self._arrow(lo, hi)
        except (pa.ArrowException, _Irregular):
            if hi - lo > 1:
                mid = (lo + hi) // 2
                out = self.parse(lo, mid)
                out.extend(self.parse(mid, hi))
                return out
            return self._python(lo)

    def _check_commit(self, i: int, meta: list[Any], files: list[Any]) -> None:
        """With ``view``, what reading commit ``i`` with ``read_commit_actions`` and applying it
        checks once it is parsed: one protocol and one metaData action at most, a key for every
        file action."""
        if not self.view:
            return
        if len(meta) > 1:
            check_single_protocol_and_metadata(meta, self.commits.path(i), getattr(self.commits.storage, "root", None))
        for action in files:
            file_key(action)

    # -- Python, line by line ----------------------------------------------------------------------

    def _python(self, i: int) -> _Pieces:
        out = _Pieces(python_commits=[self.commits.version(i)])
        adds: list[AddFile] = []
        removes: list[RemoveFile] = []
        for line_no, line in enumerate(self.commits.lines(i)):
            action = _parse_line(self.commits, i, line)
            if isinstance(action, AddFile):
                adds.append(action)
            elif isinstance(action, RemoveFile):
                removes.append(action)
            elif isinstance(action, Txn):
                out.txns.append(((i, line_no), action))
            elif isinstance(action, DomainMetadata):
                out.domains.append(((i, line_no), action))
            elif isinstance(action, (ProtocolAction, Metadata)):
                out.meta.append(((i, line_no), action))
        self._check_commit(i, [a for _, a in out.meta], [*removes, *adds])
        out.add_objects("remove", removes, commit_rank(i, "remove"), self.view)
        out.add_objects("add", adds, commit_rank(i, "add"), self.view)
        return out

    # -- Arrow ---------------------------------------------------------------------------------------

    def _arrow(self, lo: int, hi: int) -> _Pieces:
        view = self.view
        data = self.commits.chunk(lo, hi)
        if not _is_utf8(data):  # pyarrow.json does not check; the Python parser then raises
            raise _Irregular("not UTF-8")
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(use_threads=False,  # one block: one chunk per column
                                        block_size=min(max(data.size + 1, 1 << 20), (1 << 31) - 1)),
            parse_options=pj.ParseOptions(explicit_schema=self.schema,
                                          unexpected_field_behavior="infer"),
            memory_pool=MEMORY_POOL)
        n = table.num_rows
        marker = table.column(MARKER).combine_chunks()
        is_marker = marker.is_valid()
        marker_rows = pc.indices_nonzero(is_marker).to_pylist()
        if marker.filter(is_marker).to_pylist() != list(range(lo, hi)) or marker_rows[0] != 0:
            raise _Irregular("marker rows do not match the commits")
        commit_of_row = pc.fill_null_forward(marker)

        def line_of(r: int) -> bytes:
            """The line of row ``r`` (rows are the non-blank lines, after each marker)."""
            k = bisect.bisect_right(marker_rows, r) - 1
            first = marker_rows[k]
            last = marker_rows[k + 1] if k + 1 < len(marker_rows) else n
            lines = self.commits.lines(lo + k)
            if len(lines) != last - first - 1:
                raise _Irregular(f"commit {lo + k}: its lines are not pyarrow's rows")
            return lines[r - first - 1]

        valid: dict[str, pa.Array] = {}
        count = None
        for name in table.column_names:
            if name != MARKER:
                v = table.column(name).is_valid().combine_chunks()
                valid[name] = v
                count = v.cast(_INT) if count is None else pc.add(count, v.cast(_INT))
        redo: set[int] = set()  # rows to parse again, in Python
        single = None
        if count is not None and pc.max(count).as_py() > 1:
            wanted = None
            for name in ("add", "remove", "txn", "domainMetadata", "protocol", "metaData") + (
                    _OTHER_ACTIONS if view else ()):
                wanted = _or(wanted, valid.get(name))
            if wanted is not None:
                multi = pc.and_(pc.greater(count, pa.scalar(1, _INT)), wanted)
                redo.update(pc.indices_nonzero(multi).to_pylist())
                single = pc.invert(multi)
        meta_rows: set[int] = set()
        for name in ("protocol", "metaData"):  # few: always read by the Python parser
            if name in valid:
                meta_rows.update(pc.indices_nonzero(valid[name]).to_pylist())
        redo |= meta_rows
        checked = len(redo)
        if view:  # the actions the Arrow path does not read, where the Python parser may refuse one
            for name in _OTHER_ACTIONS:
                if name in valid and _any(valid[name]) and not (
                        name == "commitInfo" and _commit_info_is_sure(table.column(name).type)):
                    redo.update(pc.indices_nonzero(valid[name]).to_pylist())
        checked = len(redo) - checked

        def mask_of(kind: str) -> pa.Array | None:
            if kind not in valid:
                return None
            mask = valid[kind] if single is None else pc.and_(valid[kind], single)
            if not _any(mask):
                return None
            _check_types(kind, table.column(kind).type, view)
            return mask

        out = _Pieces()
        # add/remove: worked on over the whole chunk (no copy), the rows kept sliced out at the end
        file_rows: dict[str, tuple[pa.StructArray, pa.Array, dict[str, dict[int, list[str]]]]] = {}
        for kind in ("add", "remove"):
            mask = mask_of(kind)
            if mask is None:
                continue
            raw = table.column(kind).combine_chunks()
            objects = ["partitionValues", "tags"] if kind == "add" else ["partitionValues"]
            bad = soft = None
            for name in objects:
                hard, maybe = _map_rows_to_check(_field(raw, name))
                bad, soft = _or(bad, hard), _or(soft, maybe)
            names = ["path"]
            if kind == "add":
                names += ["partitionValues", "size", "modificationTime"]  # AddFile defaults
            for name in names:
                c = _field(raw, name)
                if c is not None and c.null_count:
                    bad = _or(bad, c.is_null())
            bad = pc.and_(bad, mask) if bad is not None else None
            explicit: dict[str, dict[int, list[str]]] = {}
            if soft is not None:
                soft = pc.and_(soft, mask)
                soft = pc.and_(soft, pc.invert(bad)) if bad is not None else soft
                if _any(soft):  # absent keys or null values? the line tells
                    unsure = []
                    for r in pc.indices_nonzero(soft).to_pylist():
                        nulls = _null_keys(line_of(r), objects)
                        if nulls is None:
                            unsure.append(r)
                        for name, keys in (nulls or {}).items():
                            explicit.setdefault(name, {})[r] = keys
                    if unsure:
                        bad = _or(bad, _row_mask(unsure, n))
            keep = mask
            if _any(bad):
                assert bad is not None
                keep = pc.and_(mask, pc.invert(bad))
            if view:
                bad = _or(bad, _view_rows_to_redo(kind, raw, keep))
                keep = pc.and_(mask, pc.invert(bad)) if bad is not None else mask
            if _any(bad):
                assert bad is not None
                redo.update(pc.indices_nonzero(bad).to_pylist())
            file_rows[kind] = (raw, keep, explicit)

        for kind in ("txn", "domainMetadata"):
            mask = mask_of(kind)
            if mask is None:
                continue
            rows = pc.indices_nonzero(mask)
            values = table.column(kind).take(rows).to_pylist()
            required = ("appId", "version") if kind == "txn" else ("domain", "configuration", "removed")
            # with ``view``, a field the action does not know would go to ``extra``: the line tells
            every = view and any(f.name not in (Txn if kind == "txn" else DomainMetadata)._NAMES
                                 for f in table.column(kind).type)
            for r, c, value in zip(rows.to_pylist(), commit_of_row.take(rows).to_pylist(), values):
                if every or any(value.get(k) is None for k in required):
                    redo.add(r)
                elif kind == "txn":
                    out.txns.append(((c, r), Txn.from_obj(value)))  # type: ignore[arg-type]
                else:
                    out.domains.append(((c, r), DomainMetadata.from_obj(value)))  # type: ignore[arg-type]

        extra: dict[str, list[tuple[int, Any]]] = {"add": [], "remove": []}
        if redo:
            redo_rows = sorted(redo)
            out.python_lines += len(redo) - len(meta_rows) - checked
            ids = commit_of_row.take(pa.array(redo_rows, _LONG)).to_pylist()
            current, meta, files = -1, [], []  # commit being read, its protocol/metaData and file actions
            for r, c in zip(redo_rows, ids):
                if c != current:
                    self._check_commit(current, meta, files)
                    current, meta, files = c, [], []
                action = _parse_line(self.commits, c, line_of(r))
                if isinstance(action, AddFile):
                    extra["add"].append((r, action))
                    files.append(action)
                elif isinstance(action, RemoveFile):
                    extra["remove"].append((r, action))
                    files.append(action)
                elif isinstance(action, Txn):
                    out.txns.append(((c, r), action))
                elif isinstance(action, DomainMetadata):
                    out.domains.append(((c, r), action))
                elif isinstance(action, (ProtocolAction, Metadata)):
                    out.meta.append(((c, r), action))
                    meta.append(action)
            self._check_commit(current, meta, files)

        for kind, typ, build in (("remove", REMOVE_TYPE, remove_array), ("add", ADD_TYPE, add_array)):
            extras = extra[kind]
            if kind not in file_rows and not extras:
                continue
            ranks = _commit_ranks(commit_of_row, kind)
            json_source = objects_source = None
            if kind in file_rows:
                raw, keep, explicit = file_rows[kind]
                actions = _file_actions(raw, typ, _json_maps(explicit))
                if view:
                    json_source = out.source(_JsonRows(
                        actions, AddFile if kind == "add" else RemoveFile, _field(raw, "dataChange"),
                        _field(raw, "stats") if kind == "remove" else None))
                runs = None if extras else _runs(keep)
                if runs is not None:  # the kept rows are few runs: slices, no copy
                    for start, stop in runs:
                        rows_of = _provenance(json_source, _arange(start, stop)) if view else None
                        out.add(kind, actions.slice(start, stop - start), ranks.slice(start, stop - start),
                                rows_of)
                    continue
                rows = pc.indices_nonzero(keep)
                parts, positions = [actions.take(rows)], [rows]
                sources = [_provenance(json_source, rows)] if view else []
            else:
                parts, positions, sources = [], [], []
            if extras:  # rows the Python parser read: back into line order
                parts.append(build([a for _, a in extras]))  # type: ignore[operator]
                positions.append(pa.array([r for r, _ in extras], pa.uint64()))
                if view:
                    objects_source = out.source(_Objects([a for _, a in extras]))
                    sources.append(_provenance(objects_source, _arange(0, len(extras))))
            where = pa.concat_arrays([p.cast(_LONG) for p in positions])
            order = pc.sort_indices(where)
            out.add(kind, pa.concat_arrays(parts).take(order), ranks.take(where.take(order)),
                    pa.concat_arrays(sources).take(order) if view else None)
        return out


def _row_mask(rows: Sequence[int], n: int) -> pa.Array:
    """A boolean array of length ``n``, true at ``rows``."""
    hit = bytearray(n)
    for r in rows:
        hit[r] = 1
    return pa.array(memoryview(hit), pa.uint8()).cast(_BOOL)


def _runs(mask: pa.Array) -> list[tuple[int, int]] | None:
    """The runs of true values of ``mask`` as ``(start, stop)``; None when there are so many
    that slices would cost more than a copy."""
    rows = pc.indices_nonzero(mask)
    k = len(rows)
    if k == 0:
        return []
    first, last = rows[0].as_py(), rows[k - 1].as_py()
    if last - first + 1 == k:
        return [(first, last + 1)]
    breaks = pc.indices_nonzero(pc.not_equal(pc.subtract(rows.slice(1), rows.slice(0, k - 1)),
                                             pa.scalar(1, pa.uint64())))
    if len(breaks) + 1 > max(64, k // 256):
        return None
    ends = rows.take(breaks).to_pylist()
    starts = rows.take(pc.add(breaks, pa.scalar(1, pa.uint64()))).to_pylist()
    return list(zip([first] + starts, [e + 1 for e in ends] + [last + 1]))


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _commit_pieces(storage: Storage, segment: LogSegment, threads: int | None,
                   view: bool = False) -> list[_Pieces]:
    """The commits of ``segment`` parsed chunk by chunk, each chunk read and parsed by one of
    ``threads`` threads (default: :data:`THREADS_PER_CPU` per CPU); ``view``: see
    :class:`_ChunkReader`."""
    threads = max(1, threads if threads is not None else min(32, THREADS_PER_CPU * _cpus()))
    commits = CommitBytes(storage, segment, _plan_chunks(segment.commits, threads))
    if not commits.ranges:
        return []
    reader = _ChunkReader(commits, view)

    def parse(k: int) -> _Pieces:
        try:
            return reader.parse(*commits.ranges[k])
        finally:
            commits.release(k)

    if threads == 1 or len(commits.ranges) == 1:
        return [parse(k) for k in range(len(commits.ranges))]
    with ThreadPoolExecutor(max_workers=min(threads, len(commits.ranges))) as pool:
        return list(pool.map(parse, range(len(commits.ranges))))


# --- reconciliation --------------------------------------------------------------------------------

def _may_hold(arrays: Sequence[pa.Array], needle: bytes) -> bool:
    """Whether the data of some string array holds ``needle`` (each buffer searched once;
    bytes outside an array's slice may give a false yes, never a false no)."""
    seen: set[int] = set()
    for arr in arrays:
        buf = arr.buffers()[2]
        if buf is None or buf.address in seen:
            continue
        seen.add(buf.address)
        if buf.to_pybytes().find(needle) >= 0:
            return True
    return False


def _decoded_paths(paths: pa.Array) -> pa.Array:
    """``unquote`` of every path (only the ones with a ``%`` need it)."""
    has_escape = pc.match_substring(paths, "%")
    if not _any(has_escape):
        return paths
    decoded = [unquote(p) for p in paths.filter(has_escape).to_pylist()]
    return pc.replace_with_mask(paths, has_escape, pa.array(decoded, _STR))


def _dv_ids(dv: pa.StructArray, missing_path: str = "") -> pa.Array:
    """``DeletionVectorDescriptor.unique_id`` per row; null without a DV. ``missing_path``
    stands for a null ``pathOrInlineDv`` (the descriptor's own id spells it ``None``)."""
    if dv.null_count == len(dv):
        return pa.nulls(len(dv), _STR)
    offset = dv.field("offset")
    suffix = pc.binary_join_element_wise(pa.scalar("@", _STR), offset.cast(_STR), "")
    path = dv.field("pathOrInlineDv")
    if missing_path and path.null_count:
        path = pc.fill_null(path, missing_path)
    ids = pc.binary_join_element_wise(dv.field("storageType"), path, suffix, "",
                                      null_handling="replace", null_replacement="")
    return pc.if_else(dv.is_valid(), ids, pa.scalar(None, _STR))


@dataclass
class _Reconciled:
    """What the rules of :mod:`~delta_downgrade.log.reconcile` make of the file actions: for the
    checkpoint, the live adds and the tombstones of files that are not live, each in the order of
    its value's position; for the Python view (``files``, ``tombstones``), the positions of the
    values of the live files and of every tombstone, in place order (positions: adds first, then
    removes, as :class:`_Pieces` holds them)."""

    adds: pa.ChunkedArray | None = None
    removes: pa.ChunkedArray | None = None
    files: list[int] | None = None
    tombstones: list[int] | None = None


def _position(order: pa.Array, total: int) -> pa.Array:
    """The position part of ``rank * total + position``."""
    return pc.subtract(order, pc.multiply(pc.divide(order, pa.scalar(total, _LONG)), pa.scalar(total, _LONG)))


def _reconcile(pieces: _Pieces, view: bool = False) -> _Reconciled:
    """Apply the rules to every file action at once: with ``view`` for the Python view, else for
    the checkpoint."""
    adds = pa.chunked_array(pieces.adds, ADD_TYPE)
    removes = pa.chunked_array(pieces.removes, REMOVE_TYPE)
    n_adds, n_removes = len(adds), len(removes)
    total = n_adds + n_removes
    chunks = pieces.adds + pieces.removes
    path_chunks = [c.field("path") for c in chunks]
    escaped = _may_hold(path_chunks, b"%")
    no_dvs = all(c.field("deletionVector").null_count == len(c) for c in chunks)
    if total == 0 or no_dvs and not escaped and \
            len(pc.unique(pa.chunked_array(path_chunks, _STR), memory_pool=MEMORY_POOL)) == total:
        # every logical file appears once: nothing to reconcile
        if view:
            return _Reconciled(files=list(range(n_adds)), tombstones=list(range(n_adds, total)))
        return _Reconciled(adds, removes)
    paths = pa.concat_arrays(path_chunks)
    if escaped:
        paths = _decoded_paths(paths)
    dv_ids = (pa.nulls(total, _STR) if no_dvs else
              _dv_ids(pa.concat_arrays([c.field("deletionVector") for c in chunks]), "None" if view else ""))
    ranks = pa.concat_arrays(pieces.add_ranks + pieces.remove_ranks)
    order = pc.add(pc.multiply(ranks, pa.scalar(total, _LONG)), _arange(0, total))
    is_add = pc.less(_arange(0, total), pa.scalar(n_adds, _LONG))
    nothing = pa.scalar(None, _LONG)
    # per logical file: the highest rank of its adds and of its removes, the last of each
    groups = pa.table({
        "p": paths, "d": dv_ids,
        "ar": pc.if_else(is_add, ranks, nothing), "rr": pc.if_else(is_add, nothing, ranks),
        "ao": pc.if_else(is_add, order, nothing), "ro": pc.if_else(is_add, nothing, order),
    }).group_by(["p", "d"], use_threads=False).aggregate(
        [("ar", "max"), ("rr", "max"), ("ao", "max"), ("ro", "max")])
    add_rank = pc.fill_null(groups.column("ar_max"), -1).combine_chunks()
    remove_rank = pc.fill_null(groups.column("rr_max"), -1).combine_chunks()
    if not view:
        # live: an add that no remove of a higher rank follows (a checkpoint's removes never
        # cancel its adds); a tombstone of a file that is live is not written
        live = pc.and_(pc.is_valid(groups.column("ar_max")), pc.greater_equal(add_rank, remove_rank))
        dead = pc.and_(pc.is_valid(groups.column("rr_max")), pc.greater(remove_rank, add_rank))
        add_index = _position(groups.column("ao_max").combine_chunks().filter(live), total)
        remove_index = pc.subtract(_position(groups.column("ro_max").combine_chunks().filter(dead), total),
                                   pa.scalar(n_adds, _LONG))
        add_index = add_index.take(pc.sort_indices(add_index))
        remove_index = remove_index.take(pc.sort_indices(remove_index))
        return _Reconciled(adds if len(add_index) == n_adds else adds.take(add_index),
                           removes if len(remove_index) == n_removes else removes.take(remove_index))
    # the Python view: every action of a kind that no action of the other kind with a higher
    # rank cancels; the last of them is the value, the first the place
    has_dv = pc.is_valid(dv_ids)
    rows = pa.table({"p": paths, "d": pc.fill_null(dv_ids, ""), "v": has_dv, "r": ranks, "o": order,
                     "a": is_add})
    thresholds = pa.table({"p": groups.column("p"), "d": pc.fill_null(groups.column("d"), ""),
                           "v": pc.is_valid(groups.column("d")), "ar": add_rank, "rr": remove_rank})
    joined = rows.join(thresholds, keys=["p", "d", "v"], join_type="inner", use_threads=False)
    kept = pc.if_else(joined.column("a"), pc.greater_equal(joined.column("r"), joined.column("rr")),
                      pc.greater_equal(joined.column("r"), joined.column("ar")))
    values = joined.filter(kept).group_by(["p", "d", "v", "a"], use_threads=False).aggregate(
        [("o", "min"), ("o", "max")])
    out = []
    for kind_is_add in (True, False):
        mine = values.filter(pc.equal(values.column("a"), kind_is_add))
        place = mine.column("o_min").combine_chunks()
        value = _position(mine.column("o_max").combine_chunks(), total)
        out.append(value.take(pc.sort_indices(place)).to_pylist())
    if len(joined) != total:
        raise _Irregular("the keys of the join are not those of the groups")
    return _Reconciled(files=out[0], tombstones=out[1])


def _latest(entries: list[tuple[tuple[int, int], Any]], key: Callable[[Any], str]) -> list[Any]:
    """The last entry per key in log order, placed where the key first appeared (dict order, as
    in :class:`~delta_downgrade.log.reconcile.TableState`)."""
    found: dict[str, Any] = {}
    for _, value in sorted(entries, key=lambda e: e[0]):
        found[key(value)] = value
    return list(found.values())


# --- entry points ----------------------------------------------------------------------------------

def replay_segment(storage: Storage, table: str, segment: LogSegment, *,
                   threads: int | None = None) -> ArrowState:
    """The reconciled state at ``segment.version`` as the columns of a checkpoint; ``threads``:
    threads that read and parse the commits (default: :data:`THREADS_PER_CPU` per CPU).

    Raises :class:`CheckpointUnreadableError` when the segment's checkpoint cannot be read (the
    caller may try an older one, as ``DeltaLog.snapshot`` does), :class:`CorruptLogError` for a
    commit that is not JSON or a log without protocol or metadata."""
    parsed = _commit_pieces(storage, segment, threads)
    meta = [m for part in parsed for m in part.meta]
    protocol, metadata = _protocol_and_metadata(storage, table, segment, meta)
    pieces = _Pieces()
    if segment.checkpoint is not None:
        pieces.extend(_checkpoint_pieces(storage, segment.checkpoint))
    for part in parsed:
        pieces.extend(part)
    result = _reconcile(pieces)
    assert result.adds is not None and result.removes is not None
    return ArrowState(
        version=segment.version, protocol=protocol, metadata=metadata, adds=result.adds,
        removes=result.removes, txns=_latest(pieces.txns, lambda t: t.appId),
        domains=_latest(pieces.domains, lambda d: d.domain),
        python_commits=tuple(sorted(pieces.python_commits)), python_lines=pieces.python_lines)


def _materialize(pieces: _Pieces, positions: list[int]) -> list[Any]:
    """The action objects at ``positions`` (as :class:`_Reconciled` counts them)."""
    if not positions:
        return []
    rows = pa.concat_arrays(pieces.add_rows + pieces.remove_rows)
    if len(rows) != sum(map(len, pieces.adds)) + sum(map(len, pieces.removes)):
        raise _Irregular("a piece of file actions has no rows for the Python view")
    wanted = rows.take(pa.array(positions, _LONG))
    source_ids = pc.shift_right(wanted, pa.scalar(_ROW_BITS, _LONG))
    row_of = pc.bit_wise_and(wanted, pa.scalar((1 << _ROW_BITS) - 1, _LONG))
    out: list[Any] = [None] * len(positions)
    for source_id in pc.unique(source_ids).to_pylist():
        mine = pc.equal(source_ids, pa.scalar(source_id, _LONG))
        actions = pieces.sources[source_id].actions(row_of.filter(mine).to_pylist())
        for at, action in zip(pc.indices_nonzero(mine).to_pylist(), actions):
            out[at] = action
    return out


def replay_state(storage: Storage, table: str, segment: LogSegment, protocol: ProtocolAction,
                 metadata: Metadata, *, threads: int | None = None) -> TableState | None:
    """The reconciled state at ``segment.version`` as Python objects, with ``protocol`` and
    ``metadata`` (which the caller has read): the objects, their order and the errors of the
    Python parser (see the module's docstring). None when the Arrow replay cannot take this
    log (a shape it does not know): the caller then applies the checkpoint and the commits one
    at a time (:class:`~delta_downgrade.log.reconcile.TableState`), as ``checkpoint_table`` does."""
    try:
        pieces = _Pieces()
        if segment.checkpoint is not None:
            pieces.extend(_checkpoint_pieces(storage, segment.checkpoint, view=True))
        for part in _commit_pieces(storage, segment, threads, view=True):
            pieces.extend(part)
        result = _reconcile(pieces, view=True)
        assert result.files is not None and result.tombstones is not None
        files = {file_key(a): a for a in _materialize(pieces, result.files)}
        tombstones = {file_key(r): r for r in _materialize(pieces, result.tombstones)}
        if len(files) != len(result.files) or len(tombstones) != len(result.tombstones):
            raise _Irregular("two values for one logical file")
    except (pa.ArrowException, UnicodeError, _Irregular):
        return None
    return TableState(segment.version, protocol, metadata, files, tombstones,
                      {t.appId: t for t in _latest(pieces.txns, lambda t: t.appId)},
                      {d.domain: d for d in _latest(pieces.domains, lambda d: d.domain)})


def replay_snapshot(snapshot: Any, *, threads: int | None = None) -> ArrowState:
    """:func:`replay_segment` of a snapshot's segment (a :class:`~delta_downgrade.log.snapshot.Snapshot`,
    or anything with its ``storage``, ``table`` and ``segment``)."""
    return replay_segment(snapshot.storage, snapshot.table, snapshot.segment, threads=threads)
