"""What every output model shares: strict types, extra fields accepted, and the check that a
document holds no field its model does not declare.

The documents' fields are only ever added (README "Output contract"), so a consumer validating
our output with these models, or with the JSON Schemas generated from them (``docs/schemas/``),
must accept a field it does not know yet: every model allows extra fields and its schema says
``additionalProperties: true``. Our own tests ask the opposite question - does the model still
describe everything the code prints? - with ``validate_complete`` (tests/output_schemas.py), which refuses any field
the model does not declare, at any depth.

Types are strict (``1`` is no boolean, ``"1"`` no integer): a document that changes a field's
type fails, as a consumer's typed reader would. A field the output always has is required (even
when its value may be null); a field printed only in some cases (``plan`` of a dry run) has the
default None and, when present, its declared type (never null unless declared so).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Document", "ProtocolAction", "ProtocolDocument", "when_present"]


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
