"""The types of JSON documents: a log line's action, a ``--json`` document, a task value.

A value *read* (a log line, a user's input, a task value) has no type until it is checked: the
functions that check one take ``object`` and narrow it. A document *built* to be written is a
:data:`JsonObject`; its values may be read-only containers (``Mapping``, ``Sequence``), so a
``dict[str, str]`` or a ``list[int]`` goes into one as it is.
"""

from __future__ import annotations

from typing import Mapping, Sequence, TypeAlias, Union

#: A JSON scalar as ``json`` reads and writes it.
JsonScalar: TypeAlias = Union[str, int, float, bool, None]
#: A JSON value: a scalar, an array or an object, nested.
JsonValue: TypeAlias = Union[JsonScalar, Sequence["JsonValue"], Mapping[str, "JsonValue"]]
#: A JSON object built to be written (``json.dumps``).
JsonObject: TypeAlias = dict[str, JsonValue]
