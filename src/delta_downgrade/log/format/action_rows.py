"""``add``/``remove`` action objects from Arrow rows, equal to the ones the Python parser builds.

The Python parser makes an action with :meth:`Action.from_obj` of its JSON object (a commit line)
or of its checkpoint row (as :class:`~delta_downgrade.log.read.checkpoint_reader.CheckpointReader`
gives it). For rows whose Arrow types settle every check ``from_obj`` makes, the same object is
built here straight from the columns, without the per-field checks (:func:`checkpoint_file_actions`,
:func:`json_file_actions`); the callers send every other row through the parser.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pyarrow as pa
from delta_downgrade import arrow_compute as ac

from delta_downgrade.protocol.actions import AddFile, RemoveFile

FileAction = AddFile | RemoveFile


def _is_str(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t))


def _is_long(t: pa.DataType) -> bool:
    # every value fits a long (PROTOCOL.md "Actions": long fields); uint64 may not
    return bool(pa.types.is_null(t) or (pa.types.is_integer(t) and not pa.types.is_uint64(t)))


def _is_bool(t: pa.DataType) -> bool:
    return bool(pa.types.is_boolean(t) or pa.types.is_null(t))


def _is_str_map(t: pa.DataType) -> bool:
    return pa.types.is_null(t) or (pa.types.is_map(t) and _is_str(t.key_type) and _is_str(t.item_type))


_DV_FIELD_TYPES: dict[str, Callable[[pa.DataType], bool]] = {
    "storageType": _is_str, "pathOrInlineDv": _is_str, "offset": _is_long, "sizeInBytes": _is_long,
    "cardinality": _is_long, "maxRowIndex": _is_long}
#: Fields a deletion vector descriptor cannot do without (``DeletionVectorDescriptor.from_obj``).
DV_REQUIRED = ("pathOrInlineDv", "sizeInBytes", "cardinality")


def _is_dv(t: pa.DataType) -> bool:
    return pa.types.is_null(t) or (pa.types.is_struct(t) and all(
        _DV_FIELD_TYPES.get(f.name, lambda _: True)(f.type) for f in t))


_FIELD_TYPES: dict[str, Callable[[pa.DataType], bool]] = {
    "path": _is_str, "partitionValues": _is_str_map, "size": _is_long, "modificationTime": _is_long,
    "dataChange": _is_bool, "stats": _is_str, "tags": _is_str_map, "deletionVector": _is_dv,
    "baseRowId": _is_long, "defaultRowCommitVersion": _is_long, "clusteringProvider": _is_str,
    "deletionTimestamp": _is_long, "extendedFileMetadata": _is_bool,
}
#: The fields of each action (``extra`` aside).
FIELDS: dict[type, frozenset[str]] = {
    cls: frozenset(cls.__struct_fields__) - {"extra"} for cls in (AddFile, RemoveFile)}


def is_exact_checkpoint_type(typ: pa.DataType, cls: type[FileAction]) -> bool:
    """Whether checkpoint rows of type ``typ`` can be built by :func:`checkpoint_file_actions`:
    a struct of fields ``cls`` knows (none would go to ``extra``), each of a type ``from_obj``
    takes every value of as it is."""
    return pa.types.is_struct(typ) and all(
        f.name in FIELDS[cls] and _FIELD_TYPES[f.name](f.type) for f in typ)


def rows_lacking(rows: pa.StructArray, name: str, required: Sequence[str]) -> pa.Array | None:
    """Rows whose struct field ``name`` is present but lacks (null or absent) one of ``required``:
    a deletion vector ``DeletionVectorDescriptor.from_obj`` cannot read. None when there is none."""
    index = rows.type.get_field_index(name)
    if index < 0 or not pa.types.is_struct(rows.type.field(index).type):
        return None
    dv = rows.field(index)
    storage_index = dv.type.get_field_index("storageType")
    if storage_index < 0:
        return None
    present = ac.and_(ac.is_valid(dv), ac.is_valid(dv.field(storage_index)))
    lacking = None
    for field_name in required:
        i = dv.type.get_field_index(field_name)
        missing = ac.invert(present) if i < 0 else ac.is_null(dv.field(i))
        lacking = missing if lacking is None else ac.or_(lacking, missing)
    if lacking is None:
        return None
    bad = ac.and_(present, lacking)
    return bad if ac.any(bad).as_py() else None


def _dict_or_none(pairs: Any) -> dict[str, Any] | None:
    """A map read by Arrow (key/value pairs) as the dict ``from_obj`` keeps."""
    return None if pairs is None else dict(pairs)


def _dv_row(dv: dict[str, Any] | None) -> dict[str, Any] | None:
    """As the checkpoint reader normalises it: no storage type is no DV; null fields dropped."""
    if dv is None or dv.get("storageType") is None:
        return None
    return {k: v for k, v in dv.items() if v is not None}


def checkpoint_file_actions(rows: pa.StructArray, cls: type[FileAction]) -> list[FileAction]:
    """``cls.from_obj`` of each checkpoint row, as the checkpoint reader reads it, for rows of a
    type :func:`is_exact_checkpoint_type` accepts whose ``path`` is never null."""
    names = [f.name for f in rows.type]
    columns: list[list[Any]] = []
    for i, name in enumerate(names):
        values = rows.field(i).to_pylist()
        if name in ("partitionValues", "tags"):
            values = [_dict_or_none(v) for v in values]
        elif name == "deletionVector":
            values = [_dv_row(v) for v in values]
        columns.append(values)
    return [cls(**dict(zip(names, row))) for row in zip(*columns)]


def json_file_actions(typed: pa.StructArray, cls: type[FileAction], data_change: pa.Array | None,
                      stats: pa.Array | None = None) -> list[FileAction]:
    """The ``add``/``remove`` objects of JSON rows read by Arrow, from ``typed`` (the rows in the
    checkpoint's ``add``/``remove`` type) for rows whose object had only fields of ``cls``, no
    deletion vector, at most one key in ``partitionValues`` and ``tags`` (so that no key order
    is lost), ``partitionValues`` (adds) and ``dataChange`` not null, and ``tags`` null (removes).
    ``data_change``: the rows' own ``dataChange`` (None: no row has the field, the default holds);
    ``stats``: the rows' ``stats`` (removes; the checkpoint type has none)."""
    n = len(typed)
    column = {typed.type.field(i).name: typed.field(i) for i in range(typed.type.num_fields)}
    changes = [True] * n if data_change is None else data_change.to_pylist()
    paths = column["path"].to_pylist()
    values = [_dict_or_none(v) for v in column["partitionValues"].to_pylist()]
    sizes = column["size"].to_pylist()
    row_ids = column["baseRowId"].to_pylist()
    versions = column["defaultRowCommitVersion"].to_pylist()
    if cls is AddFile:
        times = column["modificationTime"].to_pylist()
        all_stats = column["stats"].to_pylist()
        tags = [_dict_or_none(v) for v in column["tags"].to_pylist()]
        providers = column["clusteringProvider"].to_pylist()
        return [AddFile(path=p, partitionValues=pv, size=s, modificationTime=t, dataChange=c, stats=st,
                        tags=tg, baseRowId=b, defaultRowCommitVersion=d, clusteringProvider=cp)
                for p, pv, s, t, c, st, tg, b, d, cp
                in zip(paths, values, sizes, times, changes, all_stats, tags, row_ids, versions, providers)]
    stamps = column["deletionTimestamp"].to_pylist()
    extended = column["extendedFileMetadata"].to_pylist()
    all_stats = [None] * n if stats is None else stats.to_pylist()
    return [RemoveFile(path=p, deletionTimestamp=ts, dataChange=c, extendedFileMetadata=e, partitionValues=pv,
                       size=s, stats=st, baseRowId=b, defaultRowCommitVersion=d)
            for p, ts, c, e, pv, s, st, b, d
            in zip(paths, stamps, changes, extended, values, sizes, all_stats, row_ids, versions)]
