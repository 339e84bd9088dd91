"""The actions of the Delta log as value types (PROTOCOL.md, "Actions").

Each action parses from the JSON object a commit line holds (``{"add": {...}}``) and writes back
to the same shape. Fields the package does not know are kept in ``extra`` and written back
unchanged, so a rewrite never loses what another writer recorded.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, ClassVar, Iterable, Mapping, TypeVar
from urllib.parse import unquote

from msgspec import Struct, field
from msgspec.structs import replace

from delta_downgrade.errors import MalformedActionError  # noqa: F401 - re-exported
from delta_downgrade.errors import NestingTooDeepError
from delta_downgrade.protocol.json_nesting import check_nesting
from delta_downgrade.protocol.json_values import JsonObject, JsonValue
from delta_downgrade.protocol.protocol import Protocol


def _clean_map(value: object) -> JsonObject | None:
    """Maps come as dicts from JSON and as lists of (key, value) pairs from pyarrow."""
    if value is None:
        return None
    if type(value) is dict or isinstance(value, Mapping):  # the exact test first: typing's is slow
        return dict(value)
    if isinstance(value, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in value):
        return {k: v for k, v in value}
    raise MalformedActionError(f"expected a JSON object, got {_json_type(value)} {_short(value)}")


# --- field types (PROTOCOL.md "Actions": the schema of each action) ---------------------------------
#
# A field of the wrong JSON type is refused when the action is parsed: left in, it fails later as
# a Python error far from the log line that caused it. Checks are by exact type (``bool`` is not
# a long). A long may be written as an integral JSON number (``1.0``): Jackson, which delta-spark
# reads the log with, accepts that, so it is taken as the long it denotes.

def _json_type(value: object) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _short(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


_LONG_MAX = (1 << 63) - 1
_LONG_MIN = -_LONG_MAX - 1


def _is_str(v: object) -> bool:
    return type(v) is str


# A '%' that does not start an escape of two hex digits: not a URI (RFC 2396), and Spark's
# ``new URI(path)`` refuses it, so no reader can find the file.
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _is_path(v: object) -> bool:
    """A file action's ``path`` (PROTOCOL.md "Add File and Remove File": a URI, RFC 2396):
    a non-empty string whose escapes are well-formed."""
    return type(v) is str and v != "" and ("%" not in v or _BAD_ESCAPE.search(v) is None)


def _is_long(v: object) -> bool:
    return type(v) is int and _LONG_MIN <= v <= _LONG_MAX


def _is_size(v: object) -> bool:
    """A file's size in bytes: a long, never negative."""
    return type(v) is int and 0 <= v <= _LONG_MAX


def _is_bool(v: object) -> bool:
    return type(v) is bool


def _is_obj(v: object) -> bool:
    return isinstance(v, Mapping)


def _is_str_list(v: object) -> bool:
    return type(v) is list and all(type(x) is str for x in v)


def _is_str_map(v: object) -> bool:  # map<string, string> (values may be null); after _clean_map
    if not isinstance(v, dict):  # _clean_map made it one
        return False
    for k, x in v.items():
        if type(k) is not str or (x is not None and type(x) is not str):
            return False
    return True


def _is_dv(v: object) -> bool:
    """PROTOCOL.md "Deletion Vector Descriptor Schema"."""
    if not isinstance(v, Mapping):
        return False
    for name, check in _DV_FIELDS.items():
        x = v.get(name)
        if x is not None and not check(_integral(x) if check is _is_long else x):
            return False
    return True


def _is_dv_storage_type(v: object) -> bool:
    """PROTOCOL.md "Deletion Vector Descriptor Schema": ``u`` (relative UUID path), ``i``
    (inline) or ``p`` (absolute path); no reader can find a DV of another kind."""
    return v in ("u", "i", "p")


_DV_FIELDS = {"storageType": _is_dv_storage_type, "pathOrInlineDv": _is_str, "offset": _is_long,
              "sizeInBytes": _is_long, "cardinality": _is_long, "maxRowIndex": _is_long}


def _integral(v: object) -> object:
    """``1.0`` -> ``1`` (see above); anything else unchanged."""
    if type(v) is float and v.is_integer() and abs(v) <= _LONG_MAX:
        return int(v)
    return v


# checks that are a test of the exact type (done inline in from_obj: it runs for every action)
_EXACT: dict[Callable[[object], bool] | None, type] = {_is_str: str, _is_long: int, _is_bool: bool}
_EXACT_CHECK: dict[type, Callable[[object], bool]] = {t: c for c, t in _EXACT.items() if c is not None}

_TYPE_NAMES: dict[Callable[[object], bool], str] = {_is_path: "a string", _is_size: "a long",
               _is_str: "a string", _is_long: "a long", _is_bool: "a boolean", _is_obj: "an object",
               _is_str_list: "an array of strings", _is_str_map: "a map of strings",
               _is_dv: "a deletion vector descriptor"}


_A = TypeVar("_A", bound="Action")


class Action(Struct, frozen=True):
    """Base: ``KEY`` is the action's name in the log; ``extra`` keeps unknown fields."""

    KEY: ClassVar[str] = ""
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ()
    #: field -> type check (see "field types" above); a field not named here is not checked.
    FIELD_TYPES: ClassVar[dict[str, Callable[[object], bool]]] = {}
    #: fields without a default: they must be present and not null.
    _REQUIRED: ClassVar[frozenset[str]] = frozenset()
    _NAMES: ClassVar[frozenset[str]] = frozenset()
    _SPEC: ClassVar[dict[str, tuple[type | None, Callable[[object], bool] | None, bool]]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._NAMES = frozenset()  # filled in by _finish() once the struct fields exist

    @classmethod
    def _finish(cls) -> None:
        names = cls.__struct_fields__
        cls._NAMES = frozenset(names) - {"extra"}
        # the fields without a default come first (the struct's defaults are those of the last)
        cls._REQUIRED = frozenset(names[:len(names) - len(cls.__struct_defaults__)])
        # field -> (exact Python type or None, other check or None, is a map)
        cls._SPEC = {name: (_EXACT.get(cls.FIELD_TYPES.get(name)),
                            None if cls.FIELD_TYPES.get(name) in _EXACT else cls.FIELD_TYPES.get(name),
                            name in cls.MAP_FIELDS)
                     for name in cls._NAMES}

    @classmethod
    def from_obj(cls: type[_A], obj: object) -> _A:
        if type(obj) is not dict and not isinstance(obj, Mapping):  # JSON gives a dict: the fast test first
            raise MalformedActionError(
                f"malformed {cls.KEY} action: expected a JSON object, got {_json_type(obj)} {_short(obj)}")
        spec = cls._SPEC
        known: dict[str, Any] = {}
        extra: JsonObject = {}
        for key, value in obj.items():
            field_spec = spec.get(key)
            if field_spec is None:
                extra[key] = value
                continue
            if value is None:
                if key in cls._REQUIRED:
                    raise MalformedActionError(f"malformed {cls.KEY} action: field {key!r} is null")
            else:
                exact, check, is_map = field_spec
                if is_map:
                    try:
                        value = _clean_map(value)
                    except MalformedActionError as exc:
                        raise MalformedActionError(f"malformed {cls.KEY} action: field {key!r}: {exc}") from None
                if exact is not None:
                    if type(value) is not exact or (exact is int and not _is_long(value)):
                        value = cls._wrong_type(key, value, _EXACT_CHECK[exact])
                elif check is not None and not check(value):
                    value = cls._wrong_type(key, value, check)
            known[key] = value
        known["extra"] = extra  # every action struct has it, last (the base declares no field)
        missing = sorted(cls._REQUIRED - known.keys())
        if missing:  # named by the field, as PROTOCOL.md "Actions" names it
            raise MalformedActionError(f"malformed {cls.KEY} action: field {missing[0]!r} is missing")
        return cls(**known)

    @classmethod
    def _wrong_type(cls, key: str, value: object, check: Callable[[object], bool]) -> object:
        """``value`` as the long it denotes (``1.0``), or raise."""
        if check in (_is_long, _is_size) and check(_integral(value)):
            return _integral(value)
        if check is _is_size and type(value) is int and value < 0:
            raise MalformedActionError(f"malformed {cls.KEY} action: field {key!r} must not be negative, got {value}")
        if check is _is_path and type(value) is str:
            raise MalformedActionError(
                f"malformed {cls.KEY} action: field {key!r} must be a non-empty URI path (RFC 2396, every '%' "
                f"starting an escape of two hex digits), got {_short(value)}")
        raise MalformedActionError(
            f"malformed {cls.KEY} action: field {key!r} must be {_TYPE_NAMES.get(check, 'of another type')}, "
            f"got {_json_type(value)} {_short(value)}")

    def to_obj(self) -> JsonObject:
        out: JsonObject = {}
        extra: JsonObject = {}
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name == "extra":  # every action declares it, last (it has a default)
                extra = value
                continue
            if value is None:
                continue
            out[name] = value.to_obj() if isinstance(value, DeletionVectorDescriptor) else value
        for key, value in extra.items():
            if value is not None:
                out.setdefault(key, value)
        return out

    def to_line(self) -> str:
        """One commit-file line, ``{"<key>": {...}}``."""
        return json.dumps({self.KEY: self.to_obj()}, separators=(",", ":"), ensure_ascii=False)


class DeletionVectorDescriptor(Struct, frozen=True):
    """``deletionVector`` of add/remove/cdc (PROTOCOL.md "Deletion Vector Descriptor Schema")."""

    storageType: str
    pathOrInlineDv: str
    sizeInBytes: int
    cardinality: int
    offset: int | None = None
    maxRowIndex: int | None = None

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any] | None) -> "DeletionVectorDescriptor | None":
        if not obj or obj.get("storageType") is None:
            return None
        return cls(storageType=obj["storageType"], pathOrInlineDv=obj["pathOrInlineDv"],
                   sizeInBytes=int(obj["sizeInBytes"]), cardinality=int(obj["cardinality"]),
                   offset=obj.get("offset"), maxRowIndex=obj.get("maxRowIndex"))

    @classmethod
    def coerce(cls, dv: "DeletionVectorDescriptor | Mapping[str, Any]") -> "DeletionVectorDescriptor":
        """A descriptor from itself or its JSON object; ValueError for anything else."""
        if isinstance(dv, DeletionVectorDescriptor):
            return dv
        parsed = cls.from_obj(dv)
        if parsed is None:
            raise ValueError(f"not a deletion vector descriptor: {dv!r}")
        return parsed

    def to_obj(self) -> JsonObject:
        out: JsonObject = {"storageType": self.storageType, "pathOrInlineDv": self.pathOrInlineDv,
               "sizeInBytes": self.sizeInBytes, "cardinality": self.cardinality}
        if self.offset is not None:
            out["offset"] = self.offset
        if self.maxRowIndex is not None:
            out["maxRowIndex"] = self.maxRowIndex
        return out

    @property
    def is_inline(self) -> bool:
        return self.storageType == "i"

    @property
    def unique_id(self) -> str:
        """Identity of the DV: storage type, path or inline data, and offset."""
        suffix = f"@{self.offset}" if self.offset is not None else ""
        return f"{self.storageType}{self.pathOrInlineDv}{suffix}"


class _FileActionMixin:
    """Shared behaviour of add, remove and cdc: path decoding and DV parsing."""

    __slots__ = ()  # a struct's base adds no instance storage

    path: str
    deletionVector: JsonObject | None

    @property
    def decoded_path(self) -> str:
        """Paths in the log are URL-encoded (RFC 2396 URI); storage wants them decoded."""
        return unquote(self.path)

    @property
    def dv(self) -> DeletionVectorDescriptor | None:
        if isinstance(self.deletionVector, DeletionVectorDescriptor):
            return self.deletionVector
        return DeletionVectorDescriptor.from_obj(self.deletionVector)


class AddFile(Action, _FileActionMixin, frozen=True):
    KEY: ClassVar[str] = "add"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("partitionValues", "tags")

    path: str
    partitionValues: dict[str, str | None] = field(default_factory=dict)
    size: int = 0
    modificationTime: int = 0
    dataChange: bool = True
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletionVector: JsonObject | None = None
    baseRowId: int | None = None
    defaultRowCommitVersion: int | None = None
    clusteringProvider: str | None = None
    extra: JsonObject = field(default_factory=dict)

    @property
    def num_records(self) -> int | None:
        if not self.stats:
            return None
        try:
            value = json.loads(self.stats).get("numRecords")
        except (ValueError, AttributeError, RecursionError):
            return None
        return int(value) if value is not None else None


class RemoveFile(Action, _FileActionMixin, frozen=True):
    KEY: ClassVar[str] = "remove"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("partitionValues", "tags")

    path: str
    deletionTimestamp: int | None = None
    dataChange: bool = True
    extendedFileMetadata: bool | None = None
    partitionValues: dict[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletionVector: JsonObject | None = None
    baseRowId: int | None = None
    defaultRowCommitVersion: int | None = None
    extra: JsonObject = field(default_factory=dict)


class AddCDCFile(Action, _FileActionMixin, frozen=True):
    KEY: ClassVar[str] = "cdc"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("partitionValues", "tags")

    path: str
    partitionValues: dict[str, str | None] = field(default_factory=dict)
    size: int = 0
    dataChange: bool = False
    tags: dict[str, str] | None = None
    deletionVector: JsonObject | None = None
    extra: JsonObject = field(default_factory=dict)


class Metadata(Action, frozen=True):
    KEY: ClassVar[str] = "metaData"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("configuration",)

    id: str
    schemaString: str
    partitionColumns: list[str] = field(default_factory=list)
    configuration: dict[str, str] = field(default_factory=dict)
    # {provider: string, options: map<string, string>}, both checked in from_obj
    format: dict[str, Any] = field(default_factory=lambda: {"provider": "parquet", "options": {}})
    name: str | None = None
    description: str | None = None
    createdTime: int | None = None
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_obj(cls, obj: object) -> "Metadata":
        md = super().from_obj(obj)
        assert isinstance(md, Metadata)
        if isinstance(md.schemaString, str):  # parsed later, by json and by Spark's parser
            try:
                check_nesting(md.schemaString, "schemaString")
                schema = json.loads(md.schemaString)
            except (NestingTooDeepError, ValueError) as exc:
                raise MalformedActionError(f"malformed metaData action: schemaString is not a schema: {exc}") from None
            if not isinstance(schema, dict) or schema.get("type") != "struct" \
                    or not isinstance(schema.get("fields"), list):
                raise MalformedActionError(
                    f"malformed metaData action: schemaString is not a struct type ({_short(md.schemaString)})")
        fmt = dict(md.format or {})
        if "options" in fmt:
            fmt["options"] = _clean_map(fmt["options"]) or {}
            # PROTOCOL.md "Format Specification": options is a map<string, string>; a checkpoint
            # stores it so, and a writer of one would fail later on any other value.
            if not _is_str_map(fmt["options"]):
                raise MalformedActionError(
                    f"malformed metaData action: format.options must be a map of strings, got "
                    f"{_short(fmt['options'])}")
        if fmt.get("provider") is not None and type(fmt["provider"]) is not str:
            raise MalformedActionError(
                f"malformed metaData action: format.provider must be a string, got {_short(fmt['provider'])}")
        return replace(md, format=fmt, configuration=md.configuration or {},
                       partitionColumns=list(md.partitionColumns or []))

    @property
    def schema(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.schemaString)
        return parsed

    def with_configuration(self, updates: Mapping[str, str | None]) -> "Metadata":
        """A copy with properties set (str) or unset (None)."""
        conf = dict(self.configuration)
        for key, value in updates.items():
            if value is None:
                conf.pop(key, None)
            else:
                conf[key] = value
        return replace(self, configuration=conf)


class ProtocolAction(Action, frozen=True):
    """The ``protocol`` action; :meth:`protocol` gives the value type with the algebra."""

    KEY: ClassVar[str] = "protocol"

    minReaderVersion: int
    minWriterVersion: int
    readerFeatures: list[str] | None = None
    writerFeatures: list[str] | None = None
    extra: JsonObject = field(default_factory=dict)

    @property
    def protocol(self) -> Protocol:
        return Protocol.from_action(self.to_obj())

    @classmethod
    def of(cls, protocol: Protocol) -> "ProtocolAction":
        reader, writer = protocol.reader_features, protocol.writer_features
        # lists sorted, as in Protocol.to_action (deterministic commits)
        return cls(minReaderVersion=protocol.min_reader_version, minWriterVersion=protocol.min_writer_version,
                   readerFeatures=None if reader is None else sorted(reader),
                   writerFeatures=None if writer is None else sorted(writer))


class CommitInfo(Action, frozen=True):
    KEY: ClassVar[str] = "commitInfo"

    timestamp: int | None = None
    operation: str | None = None
    operationParameters: JsonObject | None = None
    inCommitTimestamp: int | None = None
    engineInfo: str | None = None
    # Commit tags (delta-spark's ``DeltaCommitTag``), e.g. ``delta.rowTracking.preserved``
    # (PROTOCOL.md "Writer Requirements for Row Tracking"). Free-form like the rest of
    # commitInfo: not type-checked, written back as read.
    tags: dict[str, str] | None = None
    extra: JsonObject = field(default_factory=dict)


class DomainMetadata(Action, frozen=True):
    KEY: ClassVar[str] = "domainMetadata"

    domain: str
    configuration: str = ""
    removed: bool = False
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_obj(cls, obj: object) -> "DomainMetadata":
        dm = super().from_obj(obj)
        assert isinstance(dm, DomainMetadata)
        if isinstance(dm.configuration, str) and dm.configuration:  # JSON, parsed by the system domains' readers
            try:
                check_nesting(dm.configuration, "configuration")
            except NestingTooDeepError as exc:
                raise MalformedActionError(f"malformed domainMetadata action: {exc}") from None
        return dm


class Txn(Action, frozen=True):
    KEY: ClassVar[str] = "txn"

    appId: str
    version: int
    lastUpdated: int | None = None
    extra: JsonObject = field(default_factory=dict)


class CheckpointMetadata(Action, frozen=True):
    KEY: ClassVar[str] = "checkpointMetadata"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("tags",)

    version: int
    tags: dict[str, str] | None = None
    extra: JsonObject = field(default_factory=dict)


class Sidecar(Action, frozen=True):
    KEY: ClassVar[str] = "sidecar"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("tags",)

    path: str
    sizeInBytes: int
    modificationTime: int
    tags: dict[str, str] | None = None
    extra: JsonObject = field(default_factory=dict)


ACTION_TYPES: dict[str, type[Action]] = {
    cls.KEY: cls
    for cls in (AddFile, RemoveFile, AddCDCFile, Metadata, ProtocolAction, CommitInfo,
                DomainMetadata, Txn, CheckpointMetadata, Sidecar)
}

# The JSON types of the fields PROTOCOL.md specifies ("Actions"). commitInfo is free-form
# ("Commit Provenance Information": any valid JSON), except the in-commit timestamp, a long.
_FILE_FIELDS: dict[str, Callable[[object], bool]] = {
    "path": _is_path, "partitionValues": _is_str_map, "size": _is_size, "modificationTime": _is_long,
    "dataChange": _is_bool, "stats": _is_str, "tags": _is_str_map, "deletionVector": _is_dv,
    "baseRowId": _is_long, "defaultRowCommitVersion": _is_long, "clusteringProvider": _is_str,
    "deletionTimestamp": _is_long, "extendedFileMetadata": _is_bool,
}
for _cls in (AddFile, RemoveFile, AddCDCFile):
    _cls.FIELD_TYPES = {k: v for k, v in _FILE_FIELDS.items() if k in _cls.__struct_fields__}
Metadata.FIELD_TYPES = {"id": _is_str, "schemaString": _is_str, "partitionColumns": _is_str_list,
                        "configuration": _is_str_map, "format": _is_obj, "name": _is_str,
                        "description": _is_str, "createdTime": _is_long}
ProtocolAction.FIELD_TYPES = {"minReaderVersion": _is_long, "minWriterVersion": _is_long,
                              "readerFeatures": _is_str_list, "writerFeatures": _is_str_list}
CommitInfo.FIELD_TYPES = {"inCommitTimestamp": _is_long}
DomainMetadata.FIELD_TYPES = {"domain": _is_str, "configuration": _is_str, "removed": _is_bool}
Txn.FIELD_TYPES = {"appId": _is_str, "version": _is_long, "lastUpdated": _is_long}
CheckpointMetadata.FIELD_TYPES = {"version": _is_long, "tags": _is_str_map}
Sidecar.FIELD_TYPES = {"path": _is_str, "sizeInBytes": _is_long, "modificationTime": _is_long,
                       "tags": _is_str_map}
for _action_type in ACTION_TYPES.values():
    _action_type._finish()
del _cls, _action_type


class UnknownAction(Struct, frozen=True):
    """An action this package does not know; kept verbatim."""

    key: str
    body: JsonValue

    def to_line(self) -> str:
        return json.dumps({self.key: self.body}, separators=(",", ":"), ensure_ascii=False)


AnyAction = Action | UnknownAction


def parse_action(obj: object) -> AnyAction | None:
    """Parse one log line's object. Returns None for an empty object.

    Raises :class:`MalformedActionError` for a line that is not a JSON object (PROTOCOL.md
    "Delta Log Entries": each line is an action, a JSON object) and for a known action whose
    body is not an object or has a field of the wrong type."""
    if not isinstance(obj, dict):
        raise MalformedActionError(f"a log line must be a JSON object, got {_json_type(obj)} {_short(obj)}")
    for key, body in obj.items():
        if body is None:
            continue
        cls = ACTION_TYPES.get(key)
        if cls is None:
            return UnknownAction(key, body)
        return cls.from_obj(body)
    return None


def parse_commit(text: str | bytes) -> list[AnyAction]:
    """Parse a JSON commit file (newline-delimited actions). A line that cannot be parsed raises
    :class:`MalformedActionError` (a ``ValueError``) naming its line number (1-based)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    check_nesting(text)  # a MalformedActionError naming the line
    actions: list[AnyAction] = []
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines(): U+2028 may sit inside a JSON string
        line = line.strip()
        if not line:
            continue
        action = parse_log_line(line, number)
        if action is not None:
            actions.append(action)
    return actions


def parse_log_line(line: str, number: int) -> AnyAction | None:
    """The action of one line of a commit file (None for an action this package does not know);
    a line that is not a JSON object of an action is a :class:`MalformedActionError` naming the
    line ``number``."""
    try:
        return parse_action(json.loads(line))
    except ValueError as exc:
        raise MalformedActionError(f"line {number}: {exc}") from None
    except RecursionError:
        raise MalformedActionError(f"line {number}: nested too deeply to parse") from None


def serialize_commit(actions: Iterable[AnyAction]) -> bytes:
    return ("\n".join(a.to_line() for a in actions) + "\n").encode("utf-8")
