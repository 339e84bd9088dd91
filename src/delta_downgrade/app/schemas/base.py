"""What every output model shares: strict types, extra fields accepted, and the check that a
document holds no field its model does not declare.

The documents' fields are only ever added (README "Output contract"), so a consumer validating
our output with these models, or with the JSON Schemas generated from them (``docs/schemas/``),
must accept a field it does not know yet: every model allows extra fields and its schema says
``additionalProperties: true``. Our own tests ask the opposite question - does the model still
describe everything the code prints? - with :func:`validate_complete`, which refuses any field
the model does not declare, at any depth.

Types are strict (``1`` is no boolean, ``"1"`` no integer): a document that changes a field's
type fails, as a consumer's typed reader would. A field the output always has is required (even
when its value may be null); a field printed only in some cases (``plan`` of a dry run) has the
default None and, when present, its declared type (never null unless declared so).
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Document", "ProtocolAction", "ProtocolDocument", "UndeclaredFieldsError", "undeclared_fields",
           "validate_complete", "when_present"]

M = TypeVar("M", bound=BaseModel)


class Document(BaseModel):
    """A JSON object of the output: strict types, fields added later accepted."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def when_present(description: str | None = None, **kwargs: Any) -> Any:
    """A field printed only in some cases: absent is fine, present it has its type. Its schema
    shows no default (the model's None stands for "absent", which JSON cannot say otherwise)."""
    return Field(default=None, description=description, json_schema_extra=_no_default, **kwargs)


class ProtocolDocument(Document):
    """A protocol with all four keys of the ``protocol`` action (PROTOCOL.md "Protocol
    Evolution"); a feature list is null when the protocol has none."""

    minReaderVersion: int
    minWriterVersion: int
    readerFeatures: list[str] | None
    writerFeatures: list[str] | None


class ProtocolAction(Document):
    """The ``protocol`` action as the log holds it: a feature list is absent when not listed."""

    minReaderVersion: int
    minWriterVersion: int
    readerFeatures: list[str] = when_present()
    writerFeatures: list[str] = when_present()


#: A client's verdict on reading or writing a table (compat/verdict.py ``Verdict``).
VerdictValue = Literal["yes", "no", "misreads", "unknown", "n/a"]


class UndeclaredFieldsError(ValueError):
    """A document holds fields its model does not declare: the model (and its schema) is behind
    the code."""

    def __init__(self, model: type[BaseModel], paths: list[str]) -> None:
        super().__init__(f"{model.__name__}: fields the model does not declare: {', '.join(paths)}")
        self.paths = paths


def undeclared_fields(value: Any, path: str = "$") -> list[str]:
    """The JSON paths of every field of a validated ``value`` that its model does not declare
    (the extras a consumer's model accepts), at any depth."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{path}.{key}" for key in sorted(value.model_extra or {})]
        for name in type(value).model_fields:
            found += undeclared_fields(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found += undeclared_fields(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += undeclared_fields(item, f"{path}.{key}")
    return found


def validate_complete(model: type[M], data: Any) -> M:
    """``data`` (JSON text, or what ``json.loads`` made of it) validated by ``model`` as JSON
    (strict types), and refused when it holds a field the model does not declare: the check that
    keeps the models and schemas complete."""
    text = data if isinstance(data, (str, bytes)) else json.dumps(data)
    document = model.model_validate_json(text, strict=True)
    extra = undeclared_fields(document)
    if extra:
        raise UndeclaredFieldsError(model, extra)
    return document
