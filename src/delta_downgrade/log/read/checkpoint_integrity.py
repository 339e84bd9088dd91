"""Whether a checkpoint is the one its writer recorded, before any replay trusts it.

A checkpoint can be well-formed and still wrong: a sidecar rewritten with fewer rows, a part
replaced by another file. Parquet cannot tell; the log records enough to: every ``sidecar``
action carries the sidecar's ``sizeInBytes`` (PROTOCOL.md "Sidecar File Information"; delta-rs
refuses a table whose sidecar has another size), ``_last_checkpoint`` may record the number of
``add`` actions of the checkpoint it names (``numOfAddFiles``) and, for a classic or multi-part
one, the number of its actions (``size``), a V2 checkpoint's ``checkpointMetadata`` may carry
tags with the same counts (this package writes ``numOfAddFiles``), and the version's ``.crc``
file records its number of live files (``numFiles``), the ``add`` actions of its checkpoint. :func:`verify_checkpoint`
checks each of those that is recorded (and that a UUID-named checkpoint holds its one
``checkpointMetadata`` action) and raises :class:`CheckpointUnreadableError` on the first
mismatch; :class:`~delta_downgrade.log.delta_log.DeltaLog` then falls back to an older checkpoint
and the commits after it, or refuses the table.

The checks cost a listing entry per sidecar and parquet footers (row counts, the null count of
``add.path``); the column ``add.path`` is read only when its statistics are missing and a count
is recorded to compare with.
"""

from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa

from delta_downgrade.arrow_parquet import FileMetaData
from delta_downgrade.errors import CheckpointUnreadableError
from delta_downgrade.log.read.checkpoint_reader import (CheckpointReader, open_checkpoint_parquet, parquet_source,
                                                   sidecar_rel_path)
from delta_downgrade.log.read.listing import CheckpointInstance
from delta_downgrade.protocol.actions import parse_commit
from delta_downgrade.storage import Storage


def _recorded_count(value: object) -> int | None:
    """A count as recorded (an int, or a string of one in tags); None when not usable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


class _Counts:
    """Rows and ``add`` actions of a checkpoint's files, counted from footers when they can be."""

    def __init__(self, storage: Storage, name: str) -> None:
        self.storage = storage
        self.name = name
        self.rows = 0
        self._adds: int | None = 0
        self._pending: list[str] = []  # parquet files whose adds need their add.path column read

    def parquet(self, rel_path: str) -> None:
        with parquet_source(self.storage, rel_path) as source:
            try:
                pf = open_checkpoint_parquet(source)
                meta = pf.metadata
            except (pa.ArrowException, OSError) as exc:
                raise CheckpointUnreadableError(
                    f"{self.name}: cannot read the footer of {rel_path}: {exc}") from exc
            _check_schema(pf.schema_arrow, rel_path, self.name)
            self.rows += meta.num_rows
            adds = _adds_from_statistics(meta)
            if adds is None:
                self._pending.append(rel_path)
            elif self._adds is not None:
                self._adds += adds

    def json(self, rel_path: str, data: bytes) -> None:
        try:
            actions = parse_commit(data)
        except ValueError as exc:
            raise CheckpointUnreadableError(f"cannot parse checkpoint {rel_path}: {exc}") from exc
        self.rows += len(actions)
        if self._adds is not None:
            self._adds += sum(1 for a in actions if getattr(a, "KEY", None) == "add")

    def adds(self) -> int:
        """The number of ``add`` actions (reading ``add.path`` of the files whose footers lack
        its null count)."""
        total = self._adds or 0
        for rel_path in self._pending:
            with parquet_source(self.storage, rel_path) as source:
                try:
                    pf = open_checkpoint_parquet(source)
                    if "add" not in pf.schema_arrow.names:
                        continue
                    column = pf.read(columns=["add.path"]).column("add")
                except (pa.ArrowException, OSError) as exc:
                    raise CheckpointUnreadableError(
                        f"{self.name}: cannot read the add actions of {rel_path}: {exc}") from exc
                total += len(column) - column.null_count
        self._pending = []
        self._adds = total
        return total


def _never(_: pa.DataType) -> bool:
    return False


# The view types came with pyarrow 16: an older one reads no column as a view, so it never has to
# recognise one.
_is_string_view = getattr(pa.types, "is_string_view", _never)
_is_list_view = getattr(pa.types, "is_list_view", _never)


def _is_string(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or _is_string_view(t))


def _is_list(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t) or _is_list_view(t))


_STRING = ("a string", _is_string)
_LONG = ("an integer", pa.types.is_integer)
_BOOLEAN = ("a boolean", pa.types.is_boolean)
_MAP = ("a map", pa.types.is_map)
_STRUCT = ("a struct", pa.types.is_struct)
_ARRAY = ("an array", _is_list)

#: The fields every action of a checkpoint must have, with their types (PROTOCOL.md "Checkpoint
#: Schema" and the actions' sections: the required fields). A file whose struct lacks one - a
#: name changed by a damaged footer, a writer that left it out - or holds it with another type
#: (a size as text) cannot give the actions it claims to hold. Integers of any width pass (a
#: protocol version is an int, a size a long); a column of nulls only has no value to misread.
REQUIRED_FIELDS = {
    "add": (("path", _STRING), ("partitionValues", _MAP), ("size", _LONG), ("modificationTime", _LONG),
            ("dataChange", _BOOLEAN)),
    "remove": (("path", _STRING),),
    "metaData": (("id", _STRING), ("format", _STRUCT), ("schemaString", _STRING), ("partitionColumns", _ARRAY)),
    "protocol": (("minReaderVersion", _LONG), ("minWriterVersion", _LONG)),
    "txn": (("appId", _STRING), ("version", _LONG)),
    "domainMetadata": (("domain", _STRING), ("configuration", _STRING), ("removed", _BOOLEAN)),
    "sidecar": (("path", _STRING), ("sizeInBytes", _LONG)),
}


def _check_schema(schema: pa.Schema, rel_path: str, name: str) -> None:
    for action, required in REQUIRED_FIELDS.items():
        index = schema.get_field_index(action)
        if index < 0:
            continue
        typ = schema.field(index).type
        for field, (kind, is_kind) in required:
            at = typ.get_field_index(field) if pa.types.is_struct(typ) else -1
            if at < 0:
                raise CheckpointUnreadableError(
                    f"{name}: the {action} column of {rel_path} has no field {field!r}, which every "
                    f"{action} action has: the file is damaged or was not written as a checkpoint")
            found = typ.field(at).type
            if not (is_kind(found) or pa.types.is_null(found)):
                raise CheckpointUnreadableError(
                    f"{name}: {action}.{field} in {rel_path} is {found}, where every {action} action "
                    f"holds {kind}: the file is damaged or was not written as a checkpoint")


def _adds_from_statistics(meta: FileMetaData) -> int | None:
    """Rows with an ``add`` action, from the null counts of ``add.path`` in the footer (a row
    holds one action: ``add`` is null exactly where ``add.path`` is); 0 without an ``add``
    column; None when a row group has no null count for it."""
    schema = meta.schema
    index = next((i for i in range(len(schema)) if schema.column(i).path == "add.path"), None)
    if index is None:
        return 0
    total = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        stats = group.column(index).statistics
        if stats is None or not stats.has_null_count:
            return None
        total += group.num_rows - stats.null_count
    return total


def verify_checkpoint(storage: Storage, checkpoint: CheckpointInstance,
                      last_checkpoint: Mapping[str, Any] | None, *, hinted: bool,
                      checksum: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`CheckpointUnreadableError` when ``checkpoint`` is not the one its writer
    recorded (see the module docstring): a sidecar path outside ``_delta_log/_sidecars``, a
    sidecar missing or of another size than its ``sidecar`` action says, or a count of actions
    or of ``add`` actions other than ``_last_checkpoint`` (when ``hinted``: it names this
    checkpoint), the ``checkpointMetadata`` tags or the version's ``.crc`` file (``checksum``:
    its ``numFiles``, the live files of the version, PROTOCOL.md "Version Checksum File") record."""
    name = f"checkpoint {checkpoint.paths[0]}"
    counts = _Counts(storage, name)
    sidecars: list[dict[str, Any]] = []
    tags: dict[str, Any] = {}
    if checkpoint.kind != "multipart":  # multi-part checkpoints never have sidecars
        found = CheckpointReader(storage, checkpoint).rows(["sidecar", "checkpointMetadata"])
        sidecars = found.get("sidecar", [])
        metadata_rows = found.get("checkpointMetadata", [])
        if checkpoint.kind == "v2" and len(metadata_rows) != 1:
            # PROTOCOL.md "V2 Spec Checkpoints": a UUID-named checkpoint is always V2 spec, and a
            # V2 spec checkpoint holds exactly one checkpointMetadata action; without it (or with
            # two) the file is not the checkpoint its writer wrote, so it is not trusted.
            raise CheckpointUnreadableError(
                f"{name} holds {len(metadata_rows)} checkpointMetadata action(s) where a V2 checkpoint "
                f"holds exactly one: the file is damaged or was not written as a checkpoint")
        for row in metadata_rows:
            tags.update(row.get("tags") or {})
    for status in checkpoint.files:
        if status.path.endswith(".json"):
            try:
                data = storage.read_bytes(status.path)
            except OSError as exc:
                raise CheckpointUnreadableError(f"cannot read checkpoint {status.path}: {exc}") from exc
            counts.json(status.path, data)
        else:
            counts.parquet(status.path)
    for sidecar in sidecars:
        rel = sidecar_rel_path(sidecar.get("path"))
        expected = _recorded_count(sidecar.get("sizeInBytes"))
        if expected is None:
            raise CheckpointUnreadableError(
                f"{name}: its sidecar action for {rel} has no valid sizeInBytes "
                f"({sidecar.get('sizeInBytes')!r}); PROTOCOL.md \"Sidecar File Information\" requires it")
        try:
            actual = storage.status(rel).size
        except FileNotFoundError:
            raise CheckpointUnreadableError(f"{name}: its sidecar {rel} is missing") from None
        except OSError as exc:
            raise CheckpointUnreadableError(f"{name}: cannot read its sidecar {rel}: {exc}") from exc
        if actual != expected:
            raise CheckpointUnreadableError(
                f"{name}: its sidecar {rel} has {actual} bytes where the sidecar action records "
                f"{expected}: the file was replaced or damaged")
        counts.parquet(rel)
    recorded: list[tuple[str, str, int]] = []
    if hinted and last_checkpoint is not None:
        adds = _recorded_count(last_checkpoint.get("numOfAddFiles"))
        if adds is not None:
            recorded.append(("_last_checkpoint", "add", adds))
        size = _recorded_count(last_checkpoint.get("size"))
        if size is not None and checkpoint.kind != "v2" and not sidecars:
            recorded.append(("_last_checkpoint", "action", size))
    crc_files = _recorded_count((checksum or {}).get("numFiles"))
    if crc_files is not None:
        recorded.append((f"the .crc file of version {checkpoint.version}", "add", crc_files))
    tag_adds = _recorded_count(tags.get("numOfAddFiles"))
    if tag_adds is not None:
        recorded.append(("checkpointMetadata", "add", tag_adds))
    for source, kind, expected in recorded:
        actual = counts.rows if kind == "action" else counts.adds()
        if actual != expected:
            raise CheckpointUnreadableError(
                f"{name} holds {actual} {kind} action(s) where {source} records {expected}: a part "
                f"or sidecar was replaced or damaged")
