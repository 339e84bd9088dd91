"""The Arrow replay's read of a segment's commits.

In chunks of whole commits, each chunk read into one buffer (each commit behind a marker line
``{"<MARKER>": i}``) and parsed by ``pyarrow.json``, one thread per chunk. The marker column,
filled forward, tags every row with its commit; rows keep line order. Only ``partitionValues`` is
declared in the read schema, with the keys of the newest file action of the log, so that its values
stay strings (``pyarrow.json`` reads ``"2024-01-01"`` as a timestamp); every other field is
inferred, and its type checked before use. The add/remove rows are used in place: slices of the
parsed columns, no copy.

**Exactness.** JSON has a difference Arrow cannot see: a field that is absent and a field that is
``null`` both read as null, yet :class:`AddFile` gives them different values (an absent
``partitionValues`` is ``{}``, an absent ``size`` is 0; a map with ``"k": null`` holds the key, a
map without ``"k"`` does not). A row with a null field in ``partitionValues``/``tags`` has its line
looked at: the keys whose value is ``null`` are read from the (flat) object there, the other null
fields are keys the object does not have (:func:`_null_keys`). Every row where that is unsure, or
where the difference matters otherwise - an add without ``partitionValues``/
``size``/``modificationTime``, a ``partitionValues``/``tags`` value that is not a JSON string, a
txn or domain with a null field, a line with more than one action - is parsed again from its line
by the Python parser (``python_lines`` counts them); so are the few protocol and metaData lines. A
chunk that ``pyarrow.json`` cannot read (e.g. a field whose JSON type changes between commits), or
that is not valid UTF-8, is split in halves and retried; a single commit that still fails is parsed
line by line in Python (``python_commits``), which raises the same :class:`CorruptLogError` for
broken JSON as :func:`~delta_downgrade.log.read.segment.read_commit_actions` does.

With ``view`` (the Python view), the rows whose object the columns cannot give exactly are parsed
again too, and the actions the Arrow path does not read are checked as the Python parser checks
them (:class:`_ChunkReader`).
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import re
import struct
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence, TypeVar

import pyarrow as pa
from delta_downgrade import arrow_compute as ac
import pyarrow.json as pj

from delta_downgrade.log.format.action_rows import FIELDS
from delta_downgrade.log.format.arrow_columns import (any_true, arange, file_actions, or_masks, row_mask, runs_of,
                                               struct_field, struct_to_map)
from delta_downgrade.log.replay.arrow_pieces import JsonRows, ObjectRows, Pieces, commit_ranks, provenance
from delta_downgrade.log.format.checkpoint_columns import add_array, remove_array
from delta_downgrade.log.format.checkpoint_schema import ADD_TYPE, REMOVE_TYPE
from delta_downgrade.log.read.concurrent_reads import read_files
from delta_downgrade.log.replay.memory_pool import MEMORY_POOL
from delta_downgrade.log.replay.reconcile import commit_rank, file_key
from delta_downgrade.log.read.segment import LogSegment, check_single_protocol_and_metadata, commit_parse_error
from delta_downgrade.protocol.json_nesting import check_nesting, may_nest_too_deep
from delta_downgrade.protocol.actions import (ACTION_TYPES, AddFile, DomainMetadata, Metadata, ProtocolAction,
                                              RemoveFile, Txn, parse_action, parse_commit)
from delta_downgrade.storage import FileStatus, Storage

T = TypeVar("T")
_STR = pa.string()
_LONG = pa.int64()
_INT = pa.int32()
_BOOL = pa.bool_()
_MAP = pa.map_(pa.string(), pa.string())


#: Key of the marker line written before each commit in the parse buffer.
MARKER = "__delta_downgrade_commit__"
#: Chunks are whole commits of about this many bytes or more ...
CHUNK_MIN_BYTES = 4 << 20
#: ... and about this many per thread, so that threads finish close together.
CHUNKS_PER_THREAD = 2
#: Default parse threads per CPU: a thread reads its chunk's files before it parses them, and on a
#: busy machine more, smaller chunks keep the CPUs we get busy (measured: 2 per CPU beats 1).
THREADS_PER_CPU = 2


class _Irregular(Exception):
    """A chunk the Arrow path does not take as is (it is split, or parsed in Python)."""


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
        self._crowded: set[int] = set()  # commits with a line that may nest too deep

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
            buffer, spans, crowded = _read_chunk(self.storage, self.segment.commits, lo, hi)
            for i, span in zip(range(lo, hi), spans):
                self._spans[i] = span
            self._crowded.update(crowded)
            self._buffers[k] = buffer
        return self._buffers[k]

    def may_nest_too_deep(self, i: int) -> bool:
        """Whether commit ``i`` has a line that :func:`check_nesting` may refuse (measured as it
        was read, on bytes already in the CPU's cache)."""
        self.load(self._chunk_of[i])
        return i in self._crowded

    def raw(self, i: int) -> bytes:
        """The bytes of commit ``i``, as stored."""
        buffer = self.load(self._chunk_of[i])
        _, start, end = self._spans[i]
        data: bytes = buffer.slice(start, end - start).to_pybytes()
        return data

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
            self._crowded.discard(i)

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
                hi: int) -> tuple[pa.Buffer, list[tuple[int, int, int]], list[int]]:
    """Commits ``lo .. hi-1`` in one buffer behind their markers, with each one's
    (marker start, content start, content end), and the commits with a line that may nest too
    deep for the parser (:func:`may_nest_too_deep`, measured on each file as it is read, while
    its bytes are in the CPU's cache). On local storage, the files are read straight into a
    buffer of Arrow's memory pool (few page faults: the pool maps large pages); on a remote one
    they are fetched concurrently (:func:`concurrent_reads.read_files`)."""
    local = storage.local_file
    if lo < hi and local(statuses[lo].path) is not None:
        markers = [_marker(i) for i in range(lo, hi)]
        buffer = pa.allocate_buffer(sum(len(m) + statuses[i].size + 1 for m, i in zip(markers, range(lo, hi))),
                                    memory_pool=MEMORY_POOL)
        view = memoryview(buffer).cast("B")
        spans = []
        crowded = []
        pos = 0
        ok = True
        try:
            for m, i in zip(markers, range(lo, hi)):
                size = statuses[i].size
                view[pos:pos + len(m)] = m
                start = pos + len(m)
                path = local(statuses[i].path)
                assert path is not None, "the first file is local, so is every file of the store"
                with open(path, "rb", buffering=0) as fh:
                    got = 0
                    while got < size:
                        n = fh.readinto(view[start + got:start + size])
                        if not n:
                            break
                        got += n
                    if got != size or fh.read(1):
                        ok = False  # not the size the listing saw: read the plain way
                        break
                if may_nest_too_deep(view[start:start + size].tobytes()):
                    crowded.append(i)
                view[start + size] = 0x0A
                spans.append((pos, start, start + size))
                pos = start + size + 1
        except OSError:
            ok = False
        finally:
            view.release()
        if ok:
            return buffer, spans, crowded
    parts: list[bytes] = []
    spans = []
    crowded = []
    pos = 0
    fetched: list[bytes | OSError] | None = None
    if lo < hi and local(statuses[lo].path) is None:
        fetched = read_files(storage, [statuses[i].path for i in range(lo, hi)])
    for i in range(lo, hi):
        if fetched is None:
            data = storage.read_bytes(statuses[i].path)
        else:
            result = fetched[i - lo]
            if isinstance(result, OSError):
                raise result
            data = result
        if may_nest_too_deep(data):
            crowded.append(i)
        m = _marker(i)
        parts += [m, data, b"\n"]
        spans.append((pos, pos + len(m), pos + len(m) + len(data)))
        pos += len(m) + len(data) + 1
    return pa.py_buffer(b"".join(parts)), spans, crowded


def _plan_chunks(statuses: Sequence[FileStatus], threads: int,
                 max_bytes: int | None = None) -> list[tuple[int, int]]:
    """Ranges of whole commits of about ``max(CHUNK_MIN_BYTES, total / (threads * k))`` bytes,
    at most ``max_bytes`` (but never less than one commit) when given. Commits of more than
    :data:`CHUNK_MIN_BYTES` but fewer such chunks than there are CPUs are cut into one chunk per
    CPU, of about equal size: a 4.7 MB log read as one chunk kept one CPU parsing while the
    other waited."""
    n = len(statuses)
    total = sum(st.size for st in statuses)
    target = max(CHUNK_MIN_BYTES, total // max(1, threads * CHUNKS_PER_THREAD))
    if max_bytes is not None:
        target = max(1, min(target, max_bytes))
    cpus = max(1, threads // THREADS_PER_CPU)
    if CHUNK_MIN_BYTES < total < cpus * target:
        return _equal_chunks([st.size for st in statuses], cpus)
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


def _equal_chunks(sizes: Sequence[int], parts: int) -> list[tuple[int, int]]:
    """``parts`` ranges of whole commits (fewer when there are fewer commits), each cut at the
    commit boundary nearest to its share of the bytes."""
    ends = list(itertools.accumulate(sizes))
    total = ends[-1] if ends else 0
    cuts = [0]
    for k in range(1, parts):
        share = total * k // parts
        i = bisect.bisect_left(ends, share)  # the first commit whose end reaches the share
        cut = i + 1 if i < len(ends) and (i == 0 or ends[i] - share <= share - ends[i - 1]) else i
        if cuts[-1] < cut < len(sizes):
            cuts.append(cut)
    cuts.append(len(sizes))
    return list(zip(cuts, cuts[1:]))


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
        check_nesting(line)
        return parse_action(json.loads(line.decode("utf-8")))
    except (ValueError, UnicodeDecodeError) as exc:
        first = exc
    try:
        parse_commit(commits.raw(i).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise commit_parse_error(commits.storage, commits.path(i), exc) from exc
    raise commit_parse_error(commits.storage, commits.path(i), first) from first


def _partition_keys(commits: CommitBytes) -> list[str]:
    """The ``partitionValues`` keys of the newest file action that has them: the keys of the
    table's files (if the partitioning changed within the segment, the rows with other keys are
    checked line by line). Taken from the log itself rather than from the metadata, which is
    only known after the parse."""
    for tries, line in enumerate(commits.newest_lines_with(b'"partitionValues"')):
        if tries == 16:
            break
        try:
            check_nesting(line)
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
    return bool(pa.types.is_string(t) or pa.types.is_null(t))


def _is_long(t: pa.DataType) -> bool:
    return bool(pa.types.is_int64(t) or pa.types.is_null(t))


def _is_bool(t: pa.DataType) -> bool:
    return bool(pa.types.is_boolean(t) or pa.types.is_null(t))


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


#: A '%' that does not start an escape of two hex digits (RE2 has no lookahead: ``_BAD_ESCAPE``
#: of :mod:`delta_downgrade.protocol.actions` spelled out).
_BAD_ESCAPE_RE2 = r"%([^0-9A-Fa-f]|[0-9A-Fa-f]([^0-9A-Fa-f]|$)|$)"


def _values_to_refuse(raw: pa.StructArray) -> pa.Array | None:
    """Rows of file actions whose values (not types) the Python parser refuses: a ``path`` that
    is empty or not a URI (a '%' without two hex digits), a negative ``size`` (PROTOCOL.md "Add
    File and Remove File"). With ``view`` they are parsed from their line, which raises the
    Python parser's error."""
    out = None
    path = struct_field(raw, "path")
    if path is not None and pa.types.is_string(path.type):
        out = ac.fill_null(ac.equal(path, pa.scalar("", _STR)), False)
        if any_true(ac.match_substring(path, "%")):
            out = ac.or_(out, ac.fill_null(ac.match_substring_regex(path, _BAD_ESCAPE_RE2), False))
    size = struct_field(raw, "size")
    if size is not None and pa.types.is_int64(size.type):
        out = or_masks(out, ac.fill_null(ac.less(size, pa.scalar(0, _LONG)), False))
    return out if any_true(out) else None


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
            soft = or_masks(soft, ac.is_null(sub) if sub.null_count else None)
        elif pa.types.is_null(sub.type):
            soft = pa.repeat(pa.scalar(True, _BOOL), n)
        else:
            hard = or_masks(hard, ac.is_valid(sub) if sub.null_count else pa.repeat(pa.scalar(True, _BOOL), n))
            soft = or_masks(soft, ac.is_null(sub) if sub.null_count else None)
    if child.null_count:
        present = ac.is_valid(child)
        hard = ac.and_(hard, present) if hard is not None else None
        soft = ac.and_(soft, present) if soft is not None else None
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
    if line.find(b"null") < 0:  # not ``in``: see protocol_history._checked
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
        if bare.find(b"null") < 0:
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
        return struct_to_map(child, explicit.get(name))
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
        child = struct_field(raw, name)
        if child is None or pa.types.is_null(child.type):
            continue
        if kind == "remove" and name == "tags" or not pa.types.is_struct(child.type) \
                or child.type.num_fields > 1:  # more than one key: their order is the line's
            redo = or_masks(redo, ac.is_valid(child))
    dv = struct_field(raw, "deletionVector")
    if dv is not None and not pa.types.is_null(dv.type):
        redo = or_masks(redo, ac.is_valid(dv))  # the line's object is the action's deletionVector
    data_change = struct_field(raw, "dataChange")
    if data_change is not None and data_change.null_count:
        redo = or_masks(redo, ac.is_null(data_change))  # absent (true) or null?
    if redo is None:
        return None
    redo = ac.and_(redo, keep)
    return redo if any_true(redo) else None


class _ChunkReader:
    """Parses ranges of commits of one segment into :class:`Pieces`. With ``view``, also what
    the Python view needs, with the Python parser's checks and errors."""

    def __init__(self, commits: CommitBytes, view: bool = False) -> None:
        self.commits = commits
        self.view = view
        self.schema = _json_schema(_partition_keys(commits))

    def parse(self, lo: int, hi: int) -> Pieces:
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

    def _python(self, i: int) -> Pieces:
        out = Pieces(python_commits=[self.commits.version(i)])
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

    def _arrow(self, lo: int, hi: int) -> Pieces:
        view = self.view
        data = self.commits.chunk(lo, hi)
        if not _is_utf8(data):  # pyarrow.json does not check; the Python parser then raises
            raise _Irregular("not UTF-8")
        for i in range(lo, hi):  # pyarrow.json's parser recurses: a deep line must never reach it
            if not self.commits.may_nest_too_deep(i):
                continue
            try:
                check_nesting(self.commits.raw(i))
            except ValueError as exc:
                raise commit_parse_error(self.commits.storage, self.commits.path(i), exc) from exc
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(use_threads=False,  # one block: one chunk per column
                                        block_size=min(max(data.size + 1, 1 << 20), (1 << 31) - 1)),
            parse_options=pj.ParseOptions(explicit_schema=self.schema,
                                          unexpected_field_behavior="infer"),
            memory_pool=MEMORY_POOL)
        n = table.num_rows
        marker = table.column(MARKER).combine_chunks()
        is_marker = ac.is_valid(marker)
        marker_rows = ac.indices_nonzero(is_marker).to_pylist()
        if ac.filter(marker, is_marker).to_pylist() != list(range(lo, hi)) or marker_rows[0] != 0:
            raise _Irregular("marker rows do not match the commits")
        commit_of_row = ac.fill_null_forward(marker)

        def line_of(r: int) -> bytes:
            """The line of row ``r`` (rows are the non-blank lines, after each marker)."""
            k = bisect.bisect_right(marker_rows, r) - 1
            first = marker_rows[k]
            last = marker_rows[k + 1] if k + 1 < len(marker_rows) else n
            lines = self.commits.lines(lo + k)
            if len(lines) != last - first - 1:
                raise _Irregular(f"commit {lo + k}: its lines are not pyarrow's rows")
            line: bytes = lines[r - first - 1]
            return line

        valid: dict[str, pa.Array] = {}
        count = None
        for name in table.column_names:
            if name != MARKER:
                v = ac.is_valid(table.column(name)).combine_chunks()
                valid[name] = v
                count = ac.cast(v, _INT) if count is None else ac.add(count, ac.cast(v, _INT))
        redo: set[int] = set()  # rows to parse again, in Python
        single = None
        if count is not None and ac.max(count).as_py() > 1:
            wanted = None
            for name in ("add", "remove", "txn", "domainMetadata", "protocol", "metaData") + (
                    _OTHER_ACTIONS if view else ()):
                wanted = or_masks(wanted, valid.get(name))
            if wanted is not None:
                multi = ac.and_(ac.greater(count, pa.scalar(1, _INT)), wanted)
                redo.update(ac.indices_nonzero(multi).to_pylist())
                single = ac.invert(multi)
        meta_rows: set[int] = set()
        for name in ("protocol", "metaData"):  # few: always read by the Python parser
            if name in valid:
                meta_rows.update(ac.indices_nonzero(valid[name]).to_pylist())
        redo |= meta_rows
        checked = len(redo)
        if view:  # the actions the Arrow path does not read, where the Python parser may refuse one
            for name in _OTHER_ACTIONS:
                if name in valid and any_true(valid[name]) and not (
                        name == "commitInfo" and _commit_info_is_sure(table.column(name).type)):
                    redo.update(ac.indices_nonzero(valid[name]).to_pylist())
        checked = len(redo) - checked

        def mask_of(kind: str) -> pa.Array | None:
            if kind not in valid:
                return None
            mask = valid[kind] if single is None else ac.and_(valid[kind], single)
            if not any_true(mask):
                return None
            _check_types(kind, table.column(kind).type, view)
            return mask

        out = Pieces()
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
                hard, maybe = _map_rows_to_check(struct_field(raw, name))
                bad, soft = or_masks(bad, hard), or_masks(soft, maybe)
            names = ["path"]
            if kind == "add":
                names += ["partitionValues", "size", "modificationTime"]  # AddFile defaults
            for name in names:
                c = struct_field(raw, name)
                if c is not None and c.null_count:
                    bad = or_masks(bad, ac.is_null(c))
            if view:
                bad = or_masks(bad, _values_to_refuse(raw))
            bad = ac.and_(bad, mask) if bad is not None else None
            explicit: dict[str, dict[int, list[str]]] = {}
            if soft is not None:
                soft = ac.and_(soft, mask)
                soft = ac.and_(soft, ac.invert(bad)) if bad is not None else soft
                if any_true(soft):  # absent keys or null values? the line tells
                    unsure = []
                    for r in ac.indices_nonzero(soft).to_pylist():
                        nulls = _null_keys(line_of(r), objects)
                        if nulls is None:
                            unsure.append(r)
                        for name, keys in (nulls or {}).items():
                            explicit.setdefault(name, {})[r] = keys
                    if unsure:
                        bad = or_masks(bad, row_mask(unsure, n))
            keep = mask
            if any_true(bad):
                assert bad is not None
                keep = ac.and_(mask, ac.invert(bad))
            if view:
                bad = or_masks(bad, _view_rows_to_redo(kind, raw, keep))
                keep = ac.and_(mask, ac.invert(bad)) if bad is not None else mask
            if any_true(bad):
                assert bad is not None
                redo.update(ac.indices_nonzero(bad).to_pylist())
            file_rows[kind] = (raw, keep, explicit)

        for kind in ("txn", "domainMetadata"):
            mask = mask_of(kind)
            if mask is None:
                continue
            rows = ac.indices_nonzero(mask)
            values = ac.take(table.column(kind), rows).to_pylist()
            required = ("appId", "version") if kind == "txn" else ("domain", "configuration", "removed")
            # with ``view``, a field the action does not know would go to ``extra``: the line tells
            every = view and any(f.name not in (Txn if kind == "txn" else DomainMetadata)._NAMES
                                 for f in table.column(kind).type)
            for r, c, value in zip(rows.to_pylist(), ac.take(commit_of_row, rows).to_pylist(), values):
                if every or any(value.get(k) is None for k in required):
                    redo.add(r)
                elif kind == "txn":
                    out.txns.append(((c, r), Txn.from_obj(value)))
                else:
                    out.domains.append(((c, r), DomainMetadata.from_obj(value)))

        extra: dict[str, list[tuple[int, Any]]] = {"add": [], "remove": []}
        if redo:
            redo_rows = sorted(redo)
            out.python_lines += len(redo) - len(meta_rows) - checked
            ids = ac.take(commit_of_row, pa.array(redo_rows, _LONG)).to_pylist()
            # the commit being read, its protocol/metaData and its file actions
            current = -1
            meta: list[ProtocolAction | Metadata] = []
            files: list[AddFile | RemoveFile] = []
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
            ranks = commit_ranks(commit_of_row, kind)
            json_source = objects_source = None
            if kind in file_rows:
                raw, keep, explicit = file_rows[kind]
                actions = file_actions(raw, typ, _json_maps(explicit))
                if view:
                    json_source = out.source(JsonRows(
                        actions, AddFile if kind == "add" else RemoveFile, struct_field(raw, "dataChange"),
                        struct_field(raw, "stats") if kind == "remove" else None))
                rows = ac.indices_nonzero(keep)
                runs = None if extras else runs_of(rows)
                if runs is not None:  # the kept rows are few runs: slices, no copy
                    for start, stop in runs:
                        rows_of = provenance(json_source, arange(start, stop)) if json_source is not None else None
                        out.add(kind, actions.slice(start, stop - start), ranks.slice(start, stop - start),
                                rows_of)
                    continue
                parts, positions = [ac.take(actions, rows)], [rows]
                sources = [provenance(json_source, rows)] if json_source is not None else []
            else:
                parts, positions, sources = [], [], []
            if extras:  # rows the Python parser read: back into line order
                parts.append(build([a for _, a in extras]))
                positions.append(pa.array([r for r, _ in extras], pa.uint64()))
                if view:
                    objects_source = out.source(ObjectRows([a for _, a in extras]))
                    sources.append(provenance(objects_source, arange(0, len(extras))))
            where = pa.concat_arrays([ac.cast(p, _LONG) for p in positions])
            order = ac.sort_indices(where)
            out.add(kind, ac.take(pa.concat_arrays(parts), order), ac.take(ranks, ac.take(where, order)),
                    ac.take(pa.concat_arrays(sources), order) if view else None)
        return out


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def commit_pieces(storage: Storage, segment: LogSegment, threads: int | None,
                   view: bool = False) -> list[Pieces]:
    """The commits of ``segment`` parsed chunk by chunk, each chunk read and parsed by one of
    ``threads`` threads (default: :data:`THREADS_PER_CPU` per CPU); ``view``: see
    :class:`_ChunkReader`."""
    threads = max(1, threads if threads is not None else min(32, THREADS_PER_CPU * _cpus()))
    commits = CommitBytes(storage, segment, _plan_chunks(segment.commits, threads))
    if not commits.ranges:
        return []
    reader = _ChunkReader(commits, view)

    def parse(k: int) -> Pieces:
        try:
            return reader.parse(*commits.ranges[k])
        finally:
            commits.release(k)

    if threads == 1 or len(commits.ranges) == 1:
        return [parse(k) for k in range(len(commits.ranges))]
    with ThreadPoolExecutor(max_workers=min(threads, len(commits.ranges))) as pool:
        return list(pool.map(parse, range(len(commits.ranges))))


#: Bytes of commits per chunk of a streamed read (:func:`iter_commit_pieces`): what one parse
#: holds in memory (the buffer and pyarrow's columns, about twice as much), per thread.
STREAM_CHUNK_BYTES = 8 << 20


def iter_commit_pieces(storage: Storage, segment: LogSegment, threads: int | None,
                       then: Callable[[Pieces], T], max_chunk_bytes: int = STREAM_CHUNK_BYTES,
                       view: bool = False) -> Iterator[T]:
    """:func:`commit_pieces` as a stream, in log order, for a segment too large to hold parsed:
    chunks of at most ``max_chunk_bytes``, and no more than ``threads`` of them parsed ahead of
    the one the caller is taking (the memory in flight is bounded, whatever the log's size).
    ``then`` is applied to each chunk's pieces in the thread that parsed them (work that can run
    in parallel, such as cutting the rows by part); its results are what is yielded. ``view``:
    see :class:`_ChunkReader`."""
    threads = max(1, threads if threads is not None else min(32, THREADS_PER_CPU * _cpus()))
    commits = CommitBytes(storage, segment, _plan_chunks(segment.commits, threads, max_chunk_bytes))
    if not commits.ranges:
        return
    reader = _ChunkReader(commits, view)

    def parse(k: int) -> T:
        try:
            pieces = reader.parse(*commits.ranges[k])
        finally:
            commits.release(k)
        return then(pieces)

    n = len(commits.ranges)
    if threads == 1 or n == 1:
        for k in range(n):
            yield parse(k)
        return
    with ThreadPoolExecutor(max_workers=min(threads, n)) as pool:
        pending = [pool.submit(parse, k) for k in range(min(threads, n))]
        submitted = len(pending)
        try:
            while pending:
                piece = pending.pop(0).result()
                if submitted < n:
                    pending.append(pool.submit(parse, submitted))
                    submitted += 1
                yield piece
        finally:
            for future in pending:
                future.cancel()
