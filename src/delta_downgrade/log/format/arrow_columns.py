"""Arrow arrays for the Arrow replay: small helpers, and the file actions in the checkpoint's
``add``/``remove`` types (:mod:`~delta_downgrade.log.format.checkpoint_schema`) built from what was read
- JSON objects read as structs by ``pyarrow.json``, parquet rows of a checkpoint."""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import pyarrow as pa
from delta_downgrade import arrow_compute as ac

from delta_downgrade.log.format.checkpoint_schema import ADD_TYPE, DV_TYPE

_STR = pa.string()
_LONG = pa.int64()
_INT = pa.int32()
_BOOL = pa.bool_()
_MAP = pa.map_(pa.string(), pa.string())

_EMPTY_STR = pa.array([], _STR)
_ARANGE: Callable[[int, int, int], pa.Array] | None = getattr(pa, "arange", None)


def arange(start: int, stop: int, step: int = 1) -> pa.Array:
    if _ARANGE is not None:
        return _ARANGE(start, stop, step)
    n = max(0, -(-(stop - start) // step))
    if n == 0:
        return pa.array([], _LONG)
    ones = ac.cumulative_sum(pa.repeat(pa.scalar(step, _LONG), n))
    return ac.add(ones, pa.scalar(start - step, _LONG))


def falses(n: int) -> pa.Array:
    return pa.repeat(pa.scalar(False, _BOOL), n)


def any_true(mask: pa.Array | pa.ChunkedArray | None) -> bool:
    return mask is not None and len(mask) > 0 and bool(ac.any(mask).as_py())


def or_masks(a: pa.Array | None, b: pa.Array | None) -> pa.Array | None:
    if a is None:
        return b
    if b is None:
        return a
    return ac.or_(a, b)


def struct_field(s: pa.StructArray, name: str) -> pa.Array | None:
    index = s.type.get_field_index(name)
    return s.field(index) if index >= 0 else None


def chunked_field(column: pa.ChunkedArray, name: str) -> pa.ChunkedArray:
    """Field ``name`` of a chunked struct column, chunk by chunk (no copy). Like
    ``StructArray.field``, it ignores the parent's nulls: filter those rows first where they
    matter."""
    return pa.chunked_array([chunk.field(name) for chunk in column.chunks], column.type.field(name).type)


def empty_maps(n: int, valid: pa.Array | None = None) -> pa.Array:
    offsets = pa.repeat(pa.scalar(0, _INT), n + 1)
    return ac.with_validity(pa.MapArray.from_arrays(offsets, _EMPTY_STR, _EMPTY_STR, type=_MAP), valid)


def struct_to_map(s: pa.StructArray, explicit: Mapping[int, Sequence[str]] | None = None) -> pa.Array:
    """A JSON object read as a struct -> ``map<string,string>`` holding, for every non-null row,
    its non-null fields, and the null fields ``explicit[row]`` names (keys whose value is
    ``null``). The caller has made sure that any other null field of a row it keeps is a key the
    row's object does not have, and that the rows it keeps have no value in a field pyarrow
    typed other than string."""
    n = len(s)
    names = [s.type.field(i).name for i in range(s.type.num_fields)]
    valid = ac.is_valid(s) if s.null_count else None
    width = len(names)
    if width == 0 or n == 0:
        return empty_maps(n, valid)
    children = [s.field(i) if pa.types.is_string(s.field(i).type) else pa.nulls(n, _STR)
                for i in range(width)]
    sparse = any(c.null_count for c in children)
    sizes = None
    if sparse:  # entries per row: its non-null fields, and its explicit nulls
        sizes = ac.cast(ac.is_valid(children[0]), _LONG)
        for c in children[1:]:
            sizes = ac.add(sizes, ac.cast(ac.is_valid(c), _LONG))
        if explicit:
            rows = sorted(explicit)
            more = ac.add(ac.take(sizes, pa.array(rows, _LONG)), pa.array([len(explicit[r]) for r in rows], _LONG))
            sizes = ac.replace_with_mask(sizes, row_mask(rows, n), more)
    if valid is not None:
        rank = ac.subtract(ac.cumulative_sum(ac.cast(valid, _LONG)), pa.scalar(1, _LONG))
        taken = ac.indices_nonzero(valid)
        children = [ac.take(c, taken) for c in children]
        sizes = ac.if_else(valid, sizes if sizes is not None else pa.scalar(width, _LONG),
                           pa.scalar(0, _LONG))
    count = len(children[0])
    if sizes is None:
        offsets = ac.cast(arange(0, (n + 1) * width, width), _INT)
    else:
        offsets = ac.cast(pa.concat_arrays([pa.array([0], _LONG), ac.cumulative_sum(sizes)]), _INT)
    if width == 1:
        keys = pa.repeat(pa.scalar(names[0], _STR), count)
        items = children[0]
    else:
        p = arange(0, count * width)
        row = ac.divide(p, pa.scalar(width, _LONG))
        col = ac.subtract(p, ac.multiply(row, pa.scalar(width, _LONG)))
        keys = ac.take(pa.array(names, _STR), col)
        items = ac.take(pa.concat_arrays(children), ac.add(ac.multiply(col, pa.scalar(count, _LONG)), row))
    if sparse:
        present = ac.is_valid(items)
        if explicit:
            rows = sorted(explicit)
            at = rows if valid is None else ac.take(rank, pa.array(rows, _LONG)).to_pylist()
            index = {name: j for j, name in enumerate(names)}
            entries = [a * width + index[k] for r, a in zip(rows, at) for k in explicit[r]]
            present = ac.or_(present, row_mask(entries, len(items)))
        keys, items = ac.filter(keys, present), ac.filter(items, present)
    return ac.with_validity(pa.MapArray.from_arrays(offsets, keys, items, type=_MAP), valid)


def dv_column(dv: pa.Array | None, n: int) -> pa.Array:
    """``deletionVector`` as :data:`DV_TYPE`; a DV without ``storageType`` is no DV (as
    ``DeletionVectorDescriptor.from_obj`` and the Python writer have it)."""
    if dv is None or pa.types.is_null(dv.type):
        return pa.nulls(n, DV_TYPE)
    if not pa.types.is_struct(dv.type):
        raise pa.ArrowTypeError("deletionVector is not an object")  # the callers take it as a shape they do not read
    storage_type = struct_field(dv, "storageType")
    if storage_type is None:
        return pa.nulls(n, DV_TYPE)
    present = ac.and_(ac.is_valid(dv), ac.is_valid(storage_type))
    if not any_true(present):
        return pa.nulls(n, DV_TYPE)
    children = []
    for f in DV_TYPE:
        child = struct_field(dv, f.name)
        children.append(pa.nulls(n, f.type) if child is None else ac.cast(child, f.type))
    valid = None if ac.all(present).as_py() else present
    return ac.with_validity(pa.StructArray.from_arrays(children, fields=list(DV_TYPE)), valid)


def file_actions(s: pa.StructArray, typ: pa.StructType,
                  maps: Callable[[str, pa.Array | None, int], pa.Array]) -> pa.StructArray:
    """Rows of an ``add``/``remove`` struct (all non-null) as exactly ``typ``, dataChange false.
    ``maps(name, child, n)`` turns ``partitionValues``/``tags`` into maps."""
    n = len(s)
    is_add = typ == ADD_TYPE
    children = []
    for f in typ:
        child = struct_field(s, f.name)
        if f.name == "dataChange":
            children.append(falses(n))
        elif f.name in ("partitionValues", "tags"):
            children.append(maps(f.name, child, n))
        elif f.name == "deletionVector":
            children.append(dv_column(child, n))
        elif child is None:
            zero = is_add and f.name in ("size", "modificationTime")  # AddFile's defaults
            children.append(pa.repeat(pa.scalar(0, _LONG), n) if zero else pa.nulls(n, f.type))
        else:
            children.append(ac.cast(child, f.type))
    return pa.StructArray.from_arrays(children, fields=list(typ))


#: Rows that lie in at most this many runs (or one run per 256 rows, where that is more) are kept
#: as slices (:func:`taken`); more runs would cost more than a copy.
SLICED_RUNS = 64


def runs_of(index: pa.Array) -> list[tuple[int, int]] | None:
    """The runs of consecutive values of the ascending ``index`` as ``(start, stop)``; None when
    there are so many that slices would cost more than a copy (more than :data:`SLICED_RUNS` and
    more than one per 256 rows)."""
    k = len(index)
    if k == 0:
        return []
    first, last = index[0].as_py(), index[k - 1].as_py()
    if last - first + 1 == k:
        return [(first, last + 1)]
    breaks = ac.indices_nonzero(ac.not_equal(ac.subtract(index.slice(1), index.slice(0, k - 1)),
                                             pa.scalar(1, index.type)))
    if len(breaks) + 1 > max(SLICED_RUNS, k // 256):
        return None
    ends = ac.take(index, breaks).to_pylist()
    starts = ac.take(index, ac.add(breaks, pa.scalar(1, breaks.type))).to_pylist()
    return list(zip([first] + starts, [e + 1 for e in ends] + [last + 1]))


def taken(column: pa.ChunkedArray, index: pa.Array) -> pa.ChunkedArray:
    """``column.take(index)`` for an ascending ``index``: slices of ``column`` where the rows kept
    are a few runs (the live files of a log are most of its adds, in long runs between the
    rewritten ones), so that the kept actions - their statistics most of all - are not copied."""
    runs = runs_of(index)
    if runs is None:
        return ac.take(column, index)
    return pa.chunked_array([chunk for start, stop in runs for chunk in column.slice(start, stop - start).chunks
                             if len(chunk)], column.type)


def row_mask(rows: Sequence[int], n: int) -> pa.Array:
    """A boolean array of length ``n``, true at ``rows``."""
    hit = bytearray(n)
    for r in rows:
        hit[r] = 1
    return ac.cast(pa.array(memoryview(hit), pa.uint8()), _BOOL)
