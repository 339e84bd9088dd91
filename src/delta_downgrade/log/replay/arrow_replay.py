"""The one reconciliation of a log segment (PROTOCOL.md "Action Reconciliation"), with Arrow.

Parsing every commit line into a Python action object is most of the time a replay of a table of
a hundred thousand files takes; the Arrow replay reads the segment's checkpoint
(:mod:`~delta_downgrade.log.replay.arrow_checkpoint`) and commits (:mod:`~delta_downgrade.log.replay.arrow_commits`)
as Arrow arrays instead, in parts (:mod:`~delta_downgrade.log.replay.arrow_pieces`), and reconciles them
here: the rules of :mod:`delta_downgrade.log.replay.reconcile`, for all file actions at once. Each gets
its rank, and ``rank * N + position`` orders them in the log; a group-by on the logical file
``(URL-decoded path, DV unique id)`` finds the highest rank of each kind (which kind is live), the
last action of the live kind (its value) and - for the Python view - the first one that no action
of the other kind cancels (its place). When all paths are distinct, there is nothing to reconcile
and the arrays are used as read.

Two results: :func:`replay_segment` gives the file actions as the columns of a checkpoint
(:class:`ArrowState`, for ``checkpoint_table``; a tombstone of a live file, possible only in an
invalid checkpoint, is left out there) - for a log larger than :data:`PART_ACTIONS` file actions
streamed and reconciled in hash parts of the path spilled to local files, so that memory follows
one part (:mod:`~delta_downgrade.log.replay.state_parts`) - :func:`replay_state` the Python view
(:class:`~delta_downgrade.log.replay.reconcile.TableState`, for ``Snapshot.state``), whose objects are
those the Python parser builds: rows whose Arrow columns settle that are built from them
(:mod:`delta_downgrade.log.format.action_rows`), every other row is parsed from its line (or its
checkpoint row); and it refuses what the Python parser refuses (a malformed ``commitInfo`` or
``cdc`` line, a checkpoint row ``from_obj`` rejects), with the same error, in the same order
(the checkpoint, then the commits in order; in a commit, a line that does not parse before two
protocol or metaData actions).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from msgspec import Struct, field
from msgspec.structs import replace
import pyarrow as pa
from delta_downgrade import arrow_compute as ac

from delta_downgrade.log.replay.arrow_checkpoint import (checkpoint_pieces, checkpoint_rows, checkpoint_size_bytes,
                                                         iter_checkpoint_pieces)
from delta_downgrade.log.format.arrow_columns import arange, taken
from delta_downgrade.log.replay.arrow_commits import commit_pieces, iter_commit_pieces
from delta_downgrade.log.replay.arrow_pieces import ROW_BITS, Pieces
from delta_downgrade.log.format.checkpoint_schema import ADD_TYPE, REMOVE_TYPE
from delta_downgrade.log.replay.memory_pool import MEMORY_POOL
from delta_downgrade.log.replay.reconcile import TableState, file_key
from delta_downgrade.log.replay.state_parts import (ACTION, RANK, MemoryParts, PartSpill, SpilledParts, decoded_paths,
                                             release_memory, tombstones_after)
from delta_downgrade.log.read.segment import LogSegment, check_single_protocol_and_metadata, with_checkpoint_fallback
from delta_downgrade.protocol.actions import DomainMetadata, Metadata, ProtocolAction, Txn
from delta_downgrade.storage import Storage

_STR = pa.string()
_LONG = pa.int64()


class _Mismatch(Exception):
    """The Python view's parts do not fit together (caught in :func:`replay_state`, which then
    leaves the segment to the rules applied one commit at a time)."""


def _protocol_and_metadata(storage: Storage, table: str, segment: LogSegment,
                           found: list[tuple[tuple[int, int], ProtocolAction | Metadata]],
                           known: tuple[ProtocolAction, Metadata] | None = None
                           ) -> tuple[ProtocolAction, Metadata]:
    """What ``Snapshot.protocol_action`` / ``Snapshot.metadata`` give: the newest of the commits'
    (by commit, then line), else the checkpoint's - or ``known``'s, the segment's protocol and
    metadata its snapshot has already read, so that the checkpoint is not read for them again."""
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
    if known is not None:
        return protocol or known[0], metadata or known[1]
    return with_checkpoint_fallback(storage, table, segment, protocol, metadata)


class ArrowState(Struct):
    """The reconciled state at ``version`` with its file actions as Arrow columns, held in
    ``parts`` (:mod:`~delta_downgrade.log.replay.state_parts`): one part in memory for a small table, or
    hash parts of the path spilled to local files for a large one."""

    version: int
    protocol: ProtocolAction
    metadata: Metadata
    parts: MemoryParts | SpilledParts      # adds: ADD_TYPE, live; removes: REMOVE_TYPE, every tombstone
    txns: list[Txn] = field(default_factory=list)
    domains: list[DomainMetadata] = field(default_factory=list)  # removed ones included
    python_commits: tuple[int, ...] = ()   # commit versions parsed line by line in Python
    python_lines: int = 0                  # lines of the other commits parsed again in Python

    @property
    def adds(self) -> pa.ChunkedArray:
        """Every live file at once: for small states (a spilled state is loaded whole)."""
        return self.parts.all()[0]

    @property
    def removes(self) -> pa.ChunkedArray:
        """Every tombstone at once: for small states (a spilled state is loaded whole)."""
        return self.parts.all()[1]

    @property
    def live_domains(self) -> list[DomainMetadata]:
        return [d for d in self.domains if not d.removed]

    @property
    def num_adds(self) -> int:
        return self.parts.num_adds

    @property
    def num_removes(self) -> int:
        return self.parts.num_removes

    @property
    def num_parts(self) -> int:
        return self.parts.count

    def file_parts(self) -> Iterator[tuple[pa.ChunkedArray, pa.ChunkedArray]]:
        """The reconciled file actions as ``(adds, removes)`` per part (a hash partition of the
        path); every logical file is in exactly one part. Callers that look at every file (trace
        checks, checkpoint writers) iterate this instead of ``adds``/``removes``, so a state whose
        parts do not all fit in memory at once is read one part at a time."""
        for i in range(self.parts.count):
            yield self.parts.load(i)

    def same_files(self, other: "ArrowState") -> bool:
        """Whether both states hold the very same file actions (one carried from the other over
        commits that changed no file, :meth:`advanced`)."""
        return self.parts is other.parts

    def advanced(self, version: int, protocol: ProtocolAction, metadata: Metadata,
                 txns: list[Txn], domains: list[DomainMetadata]) -> "ArrowState":
        """This state moved to ``version`` over commits that changed no file action (empty
        commits, protocol or metadata changes, txns, domains): the same file actions (the same
        parts object: spilled files stay while any state refers to them)."""
        return replace(self, version=version, protocol=protocol, metadata=metadata,
                       txns=list(txns), domains=list(domains))

    def tombstones_after(self, cutoff_ms: int) -> pa.ChunkedArray:
        """The removes whose ``deletionTimestamp`` is null or later than ``cutoff_ms`` (all parts
        at once: :meth:`num_tombstones_after` counts them part by part)."""
        return tombstones_after(self.removes, cutoff_ms)

    def tombstones_after_per_part(self, cutoff_ms: int) -> list[int]:
        """How many removes :meth:`tombstones_after` keeps in each part, read one part at a time."""
        return [len(tombstones_after(removes, cutoff_ms)) for _, removes in self.file_parts()]

    def num_tombstones_after(self, cutoff_ms: int) -> int:
        """How many removes :meth:`tombstones_after` keeps."""
        return sum(self.tombstones_after_per_part(cutoff_ms))


def arrow_state_of(state: TableState) -> ArrowState:
    """A state reconciled action by action (:class:`TableState`) as Arrow columns: for the shapes
    of log the Arrow replay does not read, and for states that exist only in a plan."""
    from delta_downgrade.log.format.checkpoint_columns import add_array, remove_array

    return ArrowState(
        version=state.version, protocol=state.protocol_action, metadata=state.metadata,
        parts=MemoryParts(pa.chunked_array([add_array(list(state.files.values()))]),
                          pa.chunked_array([remove_array(list(state.tombstones.values()))])),
        txns=list(state.txns.values()), domains=list(state.domains.values()))


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


def _dv_ids(dv: pa.StructArray, missing_path: str = "") -> pa.Array:
    """``DeletionVectorDescriptor.unique_id`` per row; null without a DV. ``missing_path``
    stands for a null ``pathOrInlineDv`` (the descriptor's own id spells it ``None``)."""
    if dv.null_count == len(dv):
        return pa.nulls(len(dv), _STR)
    offset = dv.field("offset")
    suffix = ac.binary_join_element_wise(pa.scalar("@", _STR), ac.cast(offset, _STR), "")
    path = dv.field("pathOrInlineDv")
    if missing_path and path.null_count:
        path = ac.fill_null(path, missing_path)
    ids = ac.binary_join_element_wise(dv.field("storageType"), path, suffix, "",
                                      null_handling="replace", null_replacement="")
    return ac.if_else(ac.is_valid(dv), ids, pa.scalar(None, _STR))


class _Reconciled(Struct):
    """What the rules of :mod:`~delta_downgrade.log.replay.reconcile` make of the file actions: for the
    checkpoint, the live adds and the tombstones of files that are not live, each in the order of
    its value's position; for the Python view (``files``, ``tombstones``), the positions of the
    values of the live files and of every tombstone, in place order (positions: adds first, then
    removes, as :class:`Pieces` holds them)."""

    adds: pa.ChunkedArray | None = None
    removes: pa.ChunkedArray | None = None
    files: list[int] | None = None
    tombstones: list[int] | None = None


def _position(order: pa.Array, total: int) -> pa.Array:
    """The position part of ``rank * total + position``."""
    return ac.subtract(order, ac.multiply(ac.divide(order, pa.scalar(total, _LONG)), pa.scalar(total, _LONG)))


#: At most this many actions of logical files named more than once are reconciled one by one in
#: Python (:func:`_reconcile_few_repeats`); more go through Arrow's group-by.
FEW_REPEATS = 50_000


def _reconcile_few_repeats(adds: pa.ChunkedArray, removes: pa.ChunkedArray, paths: pa.Array,
                           dv_ids: pa.Array, ranks: pa.Array) -> _Reconciled | None:
    """:func:`_reconcile` for the checkpoint when few actions share a path (a log whose files are
    rewritten now and then): the actions of a path named once are kept as they are (an add is
    live, a remove a tombstone of a file that is not), the few others reconciled here by the
    same rules - per logical file the highest ``rank * total + position`` of each kind, the add
    live when its rank is not below the remove's. None when there are more than
    :data:`FEW_REPEATS` of them (the group-by is then cheaper). Spares the group-by and the
    import of Arrow's query engine it needs, a fixed cost of tens of milliseconds."""
    counts = ac.value_counts(paths)
    repeated = ac.filter(counts.field("values"), ac.greater(counts.field("counts"), pa.scalar(1, _LONG)))
    total = len(paths)
    n_adds = len(adds)
    if len(repeated) == 0:
        return _Reconciled(adds, removes)
    involved = ac.is_in(paths, value_set=repeated)
    rows = ac.indices_nonzero(involved)
    if len(rows) > FEW_REPEATS:
        return None
    best: dict[tuple[str, str | None], list[int]] = {}  # key -> [add order, remove order] (-1: none)
    for row, path, dv_id, rank in zip(rows.to_pylist(), ac.take(paths, rows).to_pylist(),
                                      ac.take(dv_ids, rows).to_pylist(), ac.take(ranks, rows).to_pylist()):
        kind = 0 if row < n_adds else 1
        mine = best.setdefault((path, dv_id), [-1, -1])
        order = rank * total + row
        if order > mine[kind]:
            mine[kind] = order
    kept = []
    for add_order, remove_order in best.values():
        add_rank = add_order // total if add_order >= 0 else -1
        remove_rank = remove_order // total if remove_order >= 0 else -1
        if add_order >= 0 and add_rank >= remove_rank:
            kept.append(add_order % total)
        if remove_order >= 0 and remove_rank > add_rank:
            kept.append(remove_order % total)
    keep = ac.or_(ac.invert(involved), ac.is_in(arange(0, total), value_set=pa.array(kept, _LONG)))
    add_index = ac.indices_nonzero(keep.slice(0, n_adds))
    remove_index = ac.indices_nonzero(keep.slice(n_adds))
    return _Reconciled(adds if len(add_index) == n_adds else taken(adds, add_index),
                       removes if len(remove_index) == len(removes) else taken(removes, remove_index))


def _reconcile(pieces: Pieces, view: bool = False) -> _Reconciled:
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
            len(ac.unique(pa.chunked_array(path_chunks, _STR), memory_pool=MEMORY_POOL)) == total:
        # every logical file appears once: nothing to reconcile
        if view:
            return _Reconciled(files=list(range(n_adds)), tombstones=list(range(n_adds, total)))
        return _Reconciled(adds, removes)
    paths = pa.concat_arrays(path_chunks)
    if escaped:
        paths = decoded_paths(paths)
    dv_ids = (pa.nulls(total, _STR) if no_dvs else
              _dv_ids(pa.concat_arrays([c.field("deletionVector") for c in chunks]), "None" if view else ""))
    ranks = pa.concat_arrays(pieces.add_ranks + pieces.remove_ranks)
    if not view:
        few = _reconcile_few_repeats(adds, removes, paths, dv_ids, ranks)
        if few is not None:
            return few
    order = ac.add(ac.multiply(ranks, pa.scalar(total, _LONG)), arange(0, total))
    is_add = ac.less(arange(0, total), pa.scalar(n_adds, _LONG))
    nothing = pa.scalar(None, _LONG)
    # per logical file: the highest rank of its adds and of its removes, the last of each
    groups = pa.table({
        "p": paths, "d": dv_ids,
        "ar": ac.if_else(is_add, ranks, nothing), "rr": ac.if_else(is_add, nothing, ranks),
        "ao": ac.if_else(is_add, order, nothing), "ro": ac.if_else(is_add, nothing, order),
    }).group_by(["p", "d"], use_threads=False).aggregate(
        [("ar", "max"), ("rr", "max"), ("ao", "max"), ("ro", "max")]
        + ([("ao", "count"), ("ro", "count")] if view else []))
    add_rank = ac.fill_null(groups.column("ar_max"), -1).combine_chunks()
    remove_rank = ac.fill_null(groups.column("rr_max"), -1).combine_chunks()
    if not view:
        # live: an add that no remove of a higher rank follows (a checkpoint's removes never
        # cancel its adds); a tombstone of a file that is live is not written
        live = ac.and_(ac.is_valid(groups.column("ar_max")), ac.greater_equal(add_rank, remove_rank))
        dead = ac.and_(ac.is_valid(groups.column("rr_max")), ac.greater(remove_rank, add_rank))
        add_index = _position(ac.filter(groups.column("ao_max").combine_chunks(), live), total)
        remove_index = ac.subtract(_position(ac.filter(groups.column("ro_max").combine_chunks(), dead), total),
                                   pa.scalar(n_adds, _LONG))
        add_index = ac.take(add_index, ac.sort_indices(add_index))
        remove_index = ac.take(remove_index, ac.sort_indices(remove_index))
        return _Reconciled(adds if len(add_index) == n_adds else taken(adds, add_index),
                           removes if len(remove_index) == n_removes else taken(removes, remove_index))
    # the Python view: every action of a kind that no action of the other kind with a higher
    # rank cancels; the last of them is the value, the first the place
    if ac.max(groups.column("ao_count")).as_py() <= 1 and ac.max(groups.column("ro_count")).as_py() <= 1:
        # at most one action of each kind per logical file: each is its own value and place
        files = ac.and_(ac.is_valid(groups.column("ar_max")), ac.greater_equal(add_rank, remove_rank))
        tombstones = ac.and_(ac.is_valid(groups.column("rr_max")), ac.greater_equal(remove_rank, add_rank))
        out = []
        for column, mask in (("ao_max", files), ("ro_max", tombstones)):
            order_of = ac.filter(groups.column(column).combine_chunks(), mask)
            out.append(_position(ac.take(order_of, ac.sort_indices(order_of)), total).to_pylist())
        return _Reconciled(files=out[0], tombstones=out[1])
    has_dv = ac.is_valid(dv_ids)
    rows = pa.table({"p": paths, "d": ac.fill_null(dv_ids, ""), "v": has_dv, "r": ranks, "o": order,
                     "a": is_add})
    thresholds = pa.table({"p": groups.column("p"), "d": ac.fill_null(groups.column("d"), ""),
                           "v": ac.is_valid(groups.column("d")), "ar": add_rank, "rr": remove_rank})
    joined = rows.join(thresholds, keys=["p", "d", "v"], join_type="inner", use_threads=False)
    kept = ac.if_else(joined.column("a"), ac.greater_equal(joined.column("r"), joined.column("rr")),
                      ac.greater_equal(joined.column("r"), joined.column("ar")))
    values = ac.filter(joined, kept).group_by(["p", "d", "v", "a"], use_threads=False).aggregate(
        [("o", "min"), ("o", "max")])
    out = []
    for kind_is_add in (True, False):
        mine = ac.filter(values, ac.equal(values.column("a"), kind_is_add))
        place = mine.column("o_min").combine_chunks()
        value = _position(mine.column("o_max").combine_chunks(), total)
        out.append(ac.take(value, ac.sort_indices(place)).to_pylist())
    if len(joined) != total:
        raise _Mismatch("the keys of the join are not those of the groups")
    return _Reconciled(files=out[0], tombstones=out[1])


def _latest(entries: list[tuple[tuple[int, int], Any]], key: Callable[[Any], str]) -> list[Any]:
    """The last entry per key in log order, placed where the key first appeared (dict order, as
    in :class:`~delta_downgrade.log.replay.reconcile.TableState`)."""
    found: dict[str, Any] = {}
    for _, value in sorted(entries, key=lambda e: e[0]):
        found[key(value)] = value
    return list(found.values())


#: File actions per part of a streamed replay: a segment estimated to hold more is reconciled in
#: hash parts of the path spilled to local files (:mod:`~delta_downgrade.log.replay.state_parts`), so that
#: the driver's memory follows one part, not the table; a smaller one in memory, in one go.
PART_ACTIONS = 250_000
#: For that estimate, before anything is read: bytes per file action in a commit (a Spark ``add``
#: with statistics is 400-700 bytes of JSON; fewer bytes per action only means more parts) ...
JSON_BYTES_PER_ACTION = 400
#: ... and in a checkpoint's parquet file (snappy, about 110 bytes for such an ``add``).
PARQUET_BYTES_PER_ACTION = 100


def estimated_file_actions(storage: Storage, segment: LogSegment, *, count_above: int | None = None) -> int:
    """The file actions of ``segment``, estimated from its files' bytes before anything is read.
    When that says more than ``count_above`` (default :data:`PART_ACTIONS`), the checkpoint's
    share is its rows as its parquet footers state them instead (:func:`checkpoint_rows`, a small
    read per file): a checkpoint's bytes per action vary threefold with its statistics, and a table
    of 100k files with a checkpoint would otherwise be taken for 300k actions and spilled in parts."""
    estimate = sum(st.size for st in segment.commits) // JSON_BYTES_PER_ACTION
    if segment.checkpoint is not None:
        by_bytes = checkpoint_size_bytes(storage, segment.checkpoint) // PARQUET_BYTES_PER_ACTION
        above = PART_ACTIONS if count_above is None else count_above
        counted = checkpoint_rows(storage, segment.checkpoint) if estimate + by_bytes > above else None
        estimate += by_bytes if counted is None else counted
    return estimate


def planned_parts(storage: Storage, segment: LogSegment, part_actions: int | None = None) -> int:
    """Parts of the replay of ``segment``: ``ceil(estimated file actions / part_actions)``
    (default :data:`PART_ACTIONS`), 1 for a log that fits."""
    per_part = PART_ACTIONS if part_actions is None else part_actions
    if isinstance(per_part, bool) or not isinstance(per_part, int) or per_part < 1:
        raise ValueError(f"part_actions must be a positive int, got {per_part!r}")
    return max(1, -(-estimated_file_actions(storage, segment, count_above=per_part) // per_part))


def parse_commits_checked(storage: Storage, segment: LogSegment, *,
                          threads: int | None = None) -> tuple[bool, list[Pieces] | None]:
    """The commits of ``segment`` parsed for the Python view: with every check of the Python
    parser (``read_commit_actions``). Returns ``(accepted, parsed)``: ``parsed`` in a form that
    :func:`replay_segment` and :func:`replay_state` take as ``parsed_commits`` - so that a run
    that checks its segment's commits before its first write and then replays them parses them
    once - or None for a segment estimated to hold more file actions than one part
    (:data:`PART_ACTIONS`): it is parsed as a stream, chunk by chunk, and not held (the replay
    streams it again).

    ``accepted`` is False for any error or shape this parse does not take: the Python parser then
    reads the commits, so that the error raised is always its own, in its order."""
    sizes = [st.size for st in segment.commits]
    if not sizes or min(sizes) < 0:
        return False, None
    try:
        if sum(sizes) // JSON_BYTES_PER_ACTION > PART_ACTIONS:
            for _ in iter_commit_pieces(storage, segment, threads, lambda pieces: None, view=True):
                pass
            return True, None
        return True, commit_pieces(storage, segment, threads, view=True)
    except Exception:  # noqa: BLE001 - the Python parser decides (and raises its own error)
        return False, None


def replay_segment(storage: Storage, table: str, segment: LogSegment, *,
                   threads: int | None = None, part_actions: int | None = None,
                   protocol_and_metadata: tuple[ProtocolAction, Metadata] | None = None,
                   parsed_commits: Sequence[Pieces] | None = None) -> ArrowState:
    """The reconciled state at ``segment.version`` as the columns of a checkpoint; ``threads``:
    threads that read and parse the commits (default: :data:`THREADS_PER_CPU` per CPU);
    ``part_actions``: file actions per part (default :data:`PART_ACTIONS`; see
    :func:`planned_parts`) - a larger log is streamed and reconciled part by part;
    ``protocol_and_metadata``: the segment's, when the caller has them (a snapshot): what the
    commits do not state is taken from them instead of a second read of the checkpoint;
    ``parsed_commits``: the segment's commits as :func:`parse_commits_checked` parsed them.

    Raises :class:`CheckpointUnreadableError` when the segment's checkpoint cannot be read (the
    caller may try an older one, as ``DeltaLog.snapshot`` does), :class:`CorruptLogError` for a
    commit that is not JSON or a log without protocol or metadata."""
    num_parts = planned_parts(storage, segment, part_actions)
    if num_parts > 1:
        return _replay_in_parts(storage, table, segment, num_parts, threads, protocol_and_metadata,
                                parsed_commits)
    parsed = list(parsed_commits) if parsed_commits is not None else commit_pieces(storage, segment, threads)
    meta = [m for part in parsed for m in part.meta]
    protocol, metadata = _protocol_and_metadata(storage, table, segment, meta, protocol_and_metadata)
    pieces = Pieces()
    if segment.checkpoint is not None:
        pieces.extend(checkpoint_pieces(storage, segment.checkpoint))
    for part in parsed:
        pieces.extend(part)
    result = _reconcile(pieces)
    assert result.adds is not None and result.removes is not None
    return ArrowState(
        version=segment.version, protocol=protocol, metadata=metadata,
        parts=MemoryParts(result.adds, result.removes), txns=_latest(pieces.txns, lambda t: t.appId),
        domains=_latest(pieces.domains, lambda d: d.domain),
        python_commits=tuple(sorted(pieces.python_commits)), python_lines=pieces.python_lines)


def _replay_in_parts(storage: Storage, table: str, segment: LogSegment, num_parts: int,
                     threads: int | None,
                     known: tuple[ProtocolAction, Metadata] | None = None,
                     parsed_commits: Sequence[Pieces] | None = None) -> ArrowState:
    """:func:`replay_segment` streamed: the commits chunk by chunk and the checkpoint row groups
    by row groups, their file actions (with ranks) appended to ``num_parts`` spill files by hash part of
    the decoded path (:class:`~delta_downgrade.log.replay.state_parts.PartSpill`), in log order; then
    each part read back and reconciled alone (all actions of a logical file are in its part) -
    the same rules, the same result as one reconciliation of the whole, in parts."""
    spill = PartSpill(num_parts)
    try:
        rest = Pieces()  # everything but the file actions: txns, domains, protocol/metaData, counts

        def cut(pieces: Pieces) -> tuple[Pieces, list[tuple[str, int, pa.RecordBatch]]]:
            """In the parse thread: the file actions cut by part, and the rest."""
            batches = (spill.split("add", pieces.adds, pieces.add_ranks)
                       + spill.split("remove", pieces.removes, pieces.remove_ranks))
            return Pieces(txns=pieces.txns, domains=pieces.domains, meta=pieces.meta,
                          python_commits=pieces.python_commits, python_lines=pieces.python_lines), batches

        def take(other: Pieces, batches: list[tuple[str, int, pa.RecordBatch]]) -> None:
            for kind, part, batch in batches:
                spill.write(kind, part, batch)
            rest.extend(other)

        # The commits first, then the checkpoint: the order (and so the errors) of the one-part
        # replay. Positions in a part then put checkpoint rows after commit rows, which changes
        # nothing: the rank (the checkpoint's is the lowest) decides before the position, and
        # the position only orders actions of one rank, which keep their order here.
        # (commits already parsed - a small tail before a large checkpoint - are cut as they are)
        for other, batches in (map(cut, parsed_commits) if parsed_commits is not None
                               else iter_commit_pieces(storage, segment, threads, cut)):
            take(other, batches)
            del batches
        protocol, metadata = _protocol_and_metadata(storage, table, segment, rest.meta, known)
        if segment.checkpoint is not None:
            for pieces in iter_checkpoint_pieces(storage, segment.checkpoint):
                take(*cut(pieces))
        spill.close_writers()
        release_memory()
        parts = []
        for i in range(num_parts):
            raw_adds, raw_removes = spill.raw(i)
            pieces = Pieces()
            for kind, raw in (("add", raw_adds), ("remove", raw_removes)):
                if raw is not None:
                    for actions, ranks in zip(raw.column(ACTION).chunks, raw.column(RANK).chunks):
                        pieces.add(kind, actions, ranks)
            result = _reconcile(pieces)
            assert result.adds is not None and result.removes is not None
            n_adds, n_removes = sum(map(len, pieces.adds)), sum(map(len, pieces.removes))
            parts.append(spill.keep(i, result.adds, result.removes,
                                    (len(result.adds) == n_adds, len(result.removes) == n_removes)))
            del raw_adds, raw_removes, pieces, result
            release_memory()
    except BaseException:
        spill.abort()
        raise
    return ArrowState(
        version=segment.version, protocol=protocol, metadata=metadata, parts=spill.handover(parts),
        txns=_latest(rest.txns, lambda t: t.appId), domains=_latest(rest.domains, lambda d: d.domain),
        python_commits=tuple(sorted(rest.python_commits)), python_lines=rest.python_lines)


def _materialize(pieces: Pieces, positions: list[int]) -> list[Any]:
    """The action objects at ``positions`` (as :class:`_Reconciled` counts them)."""
    if not positions:
        return []
    rows = pa.concat_arrays(pieces.add_rows + pieces.remove_rows)
    if len(rows) != sum(map(len, pieces.adds)) + sum(map(len, pieces.removes)):
        raise _Mismatch("a piece of file actions has no rows for the Python view")
    wanted = ac.take(rows, pa.array(positions, _LONG))
    source_ids = ac.shift_right(wanted, pa.scalar(ROW_BITS, _LONG))
    row_of = ac.bit_wise_and(wanted, pa.scalar((1 << ROW_BITS) - 1, _LONG))
    out: list[Any] = [None] * len(positions)
    for source_id in ac.unique(source_ids).to_pylist():
        mine = ac.equal(source_ids, pa.scalar(source_id, _LONG))
        actions = pieces.sources[source_id].actions(ac.filter(row_of, mine).to_pylist())
        for at, action in zip(ac.indices_nonzero(mine).to_pylist(), actions):
            out[at] = action
    return out


def replay_state(storage: Storage, table: str, segment: LogSegment, protocol: ProtocolAction,
                 metadata: Metadata, *, threads: int | None = None,
                 parsed_commits: Sequence[Pieces] | None = None) -> TableState | None:
    """The reconciled state at ``segment.version`` as Python objects, with ``protocol`` and
    ``metadata`` (which the caller has read): the objects, their order and the errors of the
    Python parser (see the module's docstring). None when the Arrow replay cannot take this
    log (a shape it does not know): the caller then applies the checkpoint and the commits one
    at a time (:class:`~delta_downgrade.log.replay.reconcile.TableState`), as ``checkpoint_table`` does.
    ``parsed_commits``: the segment's commits as :func:`parse_commits_checked` parsed them."""
    try:
        pieces = Pieces()
        if segment.checkpoint is not None:
            pieces.extend(checkpoint_pieces(storage, segment.checkpoint, view=True))
        for part in (parsed_commits if parsed_commits is not None else
                     commit_pieces(storage, segment, threads, view=True)):
            pieces.extend(part)
        result = _reconcile(pieces, view=True)
        assert result.files is not None and result.tombstones is not None
        files = {file_key(a): a for a in _materialize(pieces, result.files)}
        tombstones = {file_key(r): r for r in _materialize(pieces, result.tombstones)}
        if len(files) != len(result.files) or len(tombstones) != len(result.tombstones):
            raise _Mismatch("two values for one logical file")
    except (pa.ArrowException, UnicodeError, _Mismatch):
        return None
    return TableState(segment.version, protocol, metadata, files, tombstones,
                      {t.appId: t for t in _latest(pieces.txns, lambda t: t.appId)},
                      {d.domain: d for d in _latest(pieces.domains, lambda d: d.domain)})


def replay_snapshot(snapshot: Any, *, threads: int | None = None) -> ArrowState:
    """:func:`replay_segment` of a snapshot's segment (a :class:`~delta_downgrade.log.snapshot.Snapshot`,
    or anything with its ``storage``, ``table`` and ``segment``)."""
    return replay_segment(snapshot.storage, snapshot.table, snapshot.segment, threads=threads)
