"""The actions of the Delta log as value types (PROTOCOL.md, "Actions").

Each action parses from the JSON object a commit line holds (``{"add": {...}}``) and writes back
to the same shape. Fields the package does not know are kept in ``extra`` and written back
unchanged, so a rewrite never loses what another writer recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Iterable, Mapping
from urllib.parse import unquote

from delta_downgrade.protocol import Protocol


class MalformedActionError(ValueError):
    """An action lacks a field the protocol requires."""


def _clean_map(value: Any) -> dict[str, Any] | None:
    """Maps come as dicts from JSON and as lists of (key, value) pairs from pyarrow."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return dict(value)
    return {k: v for k, v in value}


@dataclass(frozen=True)
class Action:
    """Base: ``KEY`` is the action's name in the log; ``extra`` keeps unknown fields."""

    KEY: ClassVar[str] = ""
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> "Action":
        names = {f.name for f in fields(cls)} - {"extra"}
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in obj.items():
            if key in names:
                known[key] = _clean_map(value) if key in cls.MAP_FIELDS else value
            else:
                extra[key] = value
        try:
            return cls(**known, extra=extra)  # type: ignore[call-arg]
        except TypeError as exc:  # a required field is missing
            raise MalformedActionError(f"malformed {cls.KEY} action: {exc}") from None

    def to_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is None:
                continue
            out[f.name] = value.to_obj() if isinstance(value, DeletionVectorDescriptor) else value
        for key, value in self.extra.items():
            if value is not None:
                out.setdefault(key, value)
        return out

    def to_line(self) -> str:
        """One commit-file line, ``{"<key>": {...}}``."""
        return json.dumps({self.KEY: self.to_obj()}, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class DeletionVectorDescriptor:
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

    def to_obj(self) -> dict[str, Any]:
        out = {"storageType": self.storageType, "pathOrInlineDv": self.pathOrInlineDv,
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

    path: str
    deletionVector: Any

    @property
    def decoded_path(self) -> str:
        """Paths in the log are URL-encoded (RFC 2396 URI); storage wants them decoded."""
        return unquote(self.path)

    @property
    def dv(self) -> DeletionVectorDescriptor | None:
        if isinstance(self.deletionVector, DeletionVectorDescriptor):
            return self.deletionVector
        return DeletionVectorDescriptor.from_obj(self.deletionVector)


@dataclass(frozen=True)
class AddFile(Action, _FileActionMixin):
    KEY: ClassVar[str] = "add"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("partitionValues", "tags")

    path: str
    partitionValues: dict[str, str | None] = field(default_factory=dict)
    size: int = 0
    modificationTime: int = 0
    dataChange: bool = True
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletionVector: dict[str, Any] | None = None
    baseRowId: int | None = None
    defaultRowCommitVersion: int | None = None
    clusteringProvider: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def num_records(self) -> int | None:
        if not self.stats:
            return None
        try:
            value = json.loads(self.stats).get("numRecords")
        except (ValueError, AttributeError):
            return None
        return int(value) if value is not None else None


@dataclass(frozen=True)
class RemoveFile(Action, _FileActionMixin):
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
    deletionVector: dict[str, Any] | None = None
    baseRowId: int | None = None
    defaultRowCommitVersion: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AddCDCFile(Action, _FileActionMixin):
    KEY: ClassVar[str] = "cdc"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("partitionValues", "tags")

    path: str
    partitionValues: dict[str, str | None] = field(default_factory=dict)
    size: int = 0
    dataChange: bool = False
    tags: dict[str, str] | None = None
    deletionVector: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Metadata(Action):
    KEY: ClassVar[str] = "metaData"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("configuration",)

    id: str
    schemaString: str
    partitionColumns: list[str] = field(default_factory=list)
    configuration: dict[str, str] = field(default_factory=dict)
    format: dict[str, Any] = field(default_factory=lambda: {"provider": "parquet", "options": {}})
    name: str | None = None
    description: str | None = None
    createdTime: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> "Metadata":
        md = super().from_obj(obj)
        assert isinstance(md, Metadata)
        fmt = dict(md.format or {})
        if "options" in fmt:
            fmt["options"] = _clean_map(fmt["options"]) or {}
        return replace(md, format=fmt, configuration=md.configuration or {},
                       partitionColumns=list(md.partitionColumns or []))

    @property
    def schema(self) -> dict[str, Any]:
        return json.loads(self.schemaString)

    def with_configuration(self, updates: Mapping[str, str | None]) -> "Metadata":
        """A copy with properties set (str) or unset (None)."""
        conf = dict(self.configuration)
        for key, value in updates.items():
            if value is None:
                conf.pop(key, None)
            else:
                conf[key] = value
        return replace(self, configuration=conf)


@dataclass(frozen=True)
class ProtocolAction(Action):
    """The ``protocol`` action; :meth:`protocol` gives the value type with the algebra."""

    KEY: ClassVar[str] = "protocol"

    minReaderVersion: int
    minWriterVersion: int
    readerFeatures: list[str] | None = None
    writerFeatures: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def protocol(self) -> Protocol:
        return Protocol.from_action(self.to_obj())

    @classmethod
    def of(cls, protocol: Protocol) -> "ProtocolAction":
        obj = protocol.to_action()
        return cls(minReaderVersion=obj["minReaderVersion"], minWriterVersion=obj["minWriterVersion"],
                   readerFeatures=obj.get("readerFeatures"), writerFeatures=obj.get("writerFeatures"))


@dataclass(frozen=True)
class CommitInfo(Action):
    KEY: ClassVar[str] = "commitInfo"

    timestamp: int | None = None
    operation: str | None = None
    operationParameters: dict[str, Any] | None = None
    inCommitTimestamp: int | None = None
    engineInfo: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DomainMetadata(Action):
    KEY: ClassVar[str] = "domainMetadata"

    domain: str
    configuration: str = ""
    removed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Txn(Action):
    KEY: ClassVar[str] = "txn"

    appId: str
    version: int
    lastUpdated: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckpointMetadata(Action):
    KEY: ClassVar[str] = "checkpointMetadata"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("tags",)

    version: int
    tags: dict[str, str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sidecar(Action):
    KEY: ClassVar[str] = "sidecar"
    MAP_FIELDS: ClassVar[tuple[str, ...]] = ("tags",)

    path: str
    sizeInBytes: int
    modificationTime: int
    tags: dict[str, str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


ACTION_TYPES: dict[str, type[Action]] = {
    cls.KEY: cls
    for cls in (AddFile, RemoveFile, AddCDCFile, Metadata, ProtocolAction, CommitInfo,
                DomainMetadata, Txn, CheckpointMetadata, Sidecar)
}


@dataclass(frozen=True)
class UnknownAction:
    """An action this package does not know; kept verbatim."""

    key: str
    body: Any

    def to_line(self) -> str:
        return json.dumps({self.key: self.body}, separators=(",", ":"), ensure_ascii=False)


AnyAction = Action | UnknownAction


def parse_action(obj: Mapping[str, Any]) -> AnyAction | None:
    """Parse one log line's object. Returns None for an empty object."""
    for key, body in obj.items():
        if body is None:
            continue
        cls = ACTION_TYPES.get(key)
        if cls is None:
            return UnknownAction(key, body)
        return cls.from_obj(body)
    return None


def parse_commit(text: str | bytes) -> list[AnyAction]:
    """Parse a JSON commit file (newline-delimited actions)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    actions: list[AnyAction] = []
    for line in text.split("\n"):  # not splitlines(): U+2028 may sit inside a JSON string
        line = line.strip()
        if not line:
            continue
        action = parse_action(json.loads(line))
        if action is not None:
            actions.append(action)
    return actions


def serialize_commit(actions: Iterable[AnyAction]) -> bytes:
    return ("\n".join(a.to_line() for a in actions) + "\n").encode("utf-8")
