"""Output validated against its models, completely (test support): strict types, and no field
the model does not declare - the check that keeps the models of ``delta_downgrade.app.schemas`` and
their JSON Schemas complete, while a consumer's validation accepts fields added later."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


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
