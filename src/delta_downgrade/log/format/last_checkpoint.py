"""The ``_delta_log/_last_checkpoint`` file (PROTOCOL.md "Last Checkpoint File",
"Last Checkpoint File Schema", "JSON checksum").

It is only a hint: a reader that finds it missing, empty, unparsable or with a wrong checksum
lists the log instead (Spark does the same). :func:`read_last_checkpoint` therefore returns None
for all of those, never raises for bad content.

:func:`write_last_checkpoint` never moves the pointer backwards: when the file already names a
newer version, it is left alone. (Read-then-replace is not atomic; two writers racing can still
leave the older of two *new* pointers. That only costs a reader some listing, never correctness,
because readers must verify the checkpoint the pointer names anyway.)
"""

from __future__ import annotations

import json
from typing import Any, Mapping
from urllib.parse import quote

from delta_downgrade.log.format.file_names import LAST_CHECKPOINT
from delta_downgrade.protocol.json_nesting import check_nesting
from delta_downgrade.storage import Storage


class _RawNumber(str):
    """A JSON number kept as its source text: the checksum canonical form of a number is the
    number as written."""


def _parse(text: str) -> Any:
    return json.loads(text, parse_float=_RawNumber, parse_int=_RawNumber,
                      object_pairs_hook=_no_duplicates)


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:  # "Duplicate keys are not allowed in the last checkpoint JSON"
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _encode(s: str) -> str:
    """PROTOCOL.md "How to URL encode keys and string values": UTF-8, only ``A-Za-z0-9-._~``
    unescaped, upper-case hex."""
    return '"' + quote(s, safe="-._~", encoding="utf-8") + '"'


def _canonical_pairs(value: object, path: str, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _canonical_pairs(item, f"{path}+{_encode(key)}" if path else _encode(key), out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _canonical_pairs(item, f"{path}+{i}" if path else str(i), out)
    elif value is None:
        out.append((path, "null"))
    elif value is True:
        out.append((path, "true"))
    elif value is False:
        out.append((path, "false"))
    elif isinstance(value, _RawNumber):
        out.append((path, str.__str__(value)))
    elif isinstance(value, str):
        out.append((path, _encode(value)))
    elif isinstance(value, (int, float)):
        out.append((path, json.dumps(value)))
    else:
        raise TypeError(f"not a JSON value: {value!r}")


def canonical_json(info: Mapping[str, object]) -> str:
    """The canonical form of PROTOCOL.md "JSON checksum" (top-level ``checksum`` left out)."""
    pairs: list[tuple[str, str]] = []
    _canonical_pairs({k: v for k, v in info.items() if k != "checksum"}, "", pairs)
    pairs.sort(key=lambda p: p[0].encode("utf-8"))
    return ",".join(f"{path}={value}" for path, value in pairs)


def checksum(info: Mapping[str, object]) -> str:
    """MD5 hex digest (32 lower-case characters) of :func:`canonical_json`."""
    import hashlib  # only where a checksum is checked or written (start-up time of every command)

    return hashlib.md5(canonical_json(info).encode("utf-8")).hexdigest()


def parse_last_checkpoint(data: bytes | str) -> dict[str, Any] | None:
    """The pointer as a dict (numbers as Python ints), or None when it cannot be trusted:
    empty, not JSON, not an object, no non-negative integer ``version``, duplicate keys, or a
    ``checksum`` that does not match."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not data.strip():
        return None
    try:
        check_nesting(data)
        raw = _parse(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(raw, dict):
        return None
    expected = raw.get("checksum")
    if expected is not None and (not isinstance(expected, str) or checksum(raw) != expected):
        return None
    info: dict[str, Any] = json.loads(data)
    version = info.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        return None
    return info


def read_last_checkpoint(storage: Storage) -> dict[str, Any] | None:
    """``_last_checkpoint`` as a dict, or None when missing or untrustworthy (see
    :func:`parse_last_checkpoint`)."""
    try:
        data = storage.read_bytes(LAST_CHECKPOINT)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        # never ignored as a bad hint: every checkpoint a writer makes replaces this file
        from delta_downgrade.errors import CorruptLogError

        raise CorruptLogError(
            f"{LAST_CHECKPOINT} is a directory, not a file: the log's checkpoint pointer cannot be "
            f"read or replaced. Move it out of the log (nothing was written)",
            table=getattr(storage, "root", None), params={"path": LAST_CHECKPOINT}) from None
    return parse_last_checkpoint(data)


def serialize_last_checkpoint(info: Mapping[str, object], *, with_checksum: bool = True) -> bytes:
    """One JSON line; ``checksum`` recomputed (or dropped when ``with_checksum`` is False)."""
    body = {k: v for k, v in info.items() if k != "checksum" and v is not None}
    if with_checksum:
        body["checksum"] = checksum(_parse(json.dumps(body)))
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def write_last_checkpoint(storage: Storage, info: Mapping[str, object], *,
                          with_checksum: bool = True) -> bool:
    """Point ``_last_checkpoint`` at ``info["version"]`` unless it already names a newer version.

    Returns True when the file was written. Uses :meth:`Storage.write_atomic`, so readers see the
    old or the new pointer, never a partial one.
    """
    version = info.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"_last_checkpoint needs a non-negative int version, got {version!r}")
    current = read_last_checkpoint(storage)
    if current is not None and current["version"] > version:
        return False
    data = serialize_last_checkpoint(info, with_checksum=with_checksum)
    # a hint needs no fsync where the storage can skip it (LocalStorage.replace_hint says why)
    getattr(storage, "replace_hint", storage.write_atomic)(LAST_CHECKPOINT, data)
    return True
