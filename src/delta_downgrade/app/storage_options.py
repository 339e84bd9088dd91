"""Storage options as the entry points take them, and how their values are kept out of output.

Storage options are the credentials and endpoint of a table's store, with the keys deltalake
accepts (``AWS_ACCESS_KEY_ID``, ``AZURE_STORAGE_ACCOUNT_KEY``, ``GOOGLE_SERVICE_ACCOUNT_KEY``, …),
so that one set serves delta-rs and this package. The CLI takes them as repeated
``--storage-option KEY=VALUE``, the tasks as ``storage_options`` (a TOML table, a JSON object, or
repeated ``--storage_option KEY=VALUE``); both parse each item here.

Their values are secrets. Everything an entry point prints or hands on (the RESULT line, task
values, log records, error messages, a traceback) passes through :func:`redact_output` first,
which masks every secret value wherever it appears (``storage/options.py``'s ``redact_text``
decides which values are secret and how they are masked).
"""

from __future__ import annotations

import json
from typing import Iterable, Mapping, Sequence, overload

from delta_downgrade.errors import BadStorageOptionError
from delta_downgrade.protocol.json_values import JsonValue

from delta_downgrade.storage.options import KEY_SHAPE


def split_item(item: str) -> tuple[str, str] | None:
    """``KEY=VALUE`` → ``(KEY, VALUE)``, split on the first ``=`` (a SAS token holds ``=``
    itself); None when the item has no key-shaped key or no value: then it is most likely a value
    alone, cut at its base64 padding (``abc…==``, ``abc…=``)."""
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep or not KEY_SHAPE.fullmatch(key) or not value.strip("="):
        return None
    return key, value


def parse_storage_option_items(items: Iterable[str] | None, flag: str = "--storage-option") -> dict[str, str]:
    """``["KEY=VALUE", …]`` → ``{KEY: VALUE}`` (:func:`split_item`). An item that is not
    ``KEY=VALUE``, and a key given twice with different values, is a
    :class:`BadStorageOptionError` naming the item's number or the key only: the value may be a
    secret."""
    options: dict[str, str] = {}
    for number, item in enumerate(items or (), start=1):
        pair = split_item(item)
        if pair is None:
            # The item itself is not shown: a mistyped one may well be the secret value alone.
            raise BadStorageOptionError(
                f"{flag} takes KEY=VALUE (for example {flag} AWS_REGION=eu-west-1); item {number} "
                f"is not a KEY=VALUE pair (a key of letters, digits and '_', then '=', then the "
                f"value); nothing was read or written")
        key, value = pair
        if key in options and options[key] != value:
            raise BadStorageOptionError(
                f"{flag} {key} is given twice with different values; give it once")
        options[key] = value
    return options


def _storage_flag(word: str) -> bool:
    """Whether ``word`` is a storage-option flag (``--storage-option``, ``--storage_options=…``,
    a misspelling of them such as ``--storage-options``)."""
    if not word.startswith("-"):
        return False
    return word.lstrip("-").partition("=")[0].replace("-", "_").lower().startswith("storage_option")


def command_line_secrets(argv: Sequence[str]) -> dict[str, str]:
    """The values on a command line that may be secrets, keyed so that :func:`redact_output`
    masks them: by flag position (the value of a storage-option flag, ``--storage-option X`` or
    ``--storage_options=X``: a ``KEY=VALUE`` item's or a JSON object's values under secret-named
    keys, anything else whole) and by key shape (``KEY=VALUE`` anywhere, ``--KEY=VALUE`` included, whose key names a
    secret: ``AWS_SECRET_ACCESS_KEY=…``). For what a refused or echoed command line would show."""
    from delta_downgrade.storage.options import is_secret_key

    found: dict[str, str] = {}

    def add(value: str) -> None:
        if value:
            found[f"command line secret {len(found)}"] = value

    def add_option_value(value: str) -> None:
        # An option's value is masked when its key names a secret (an endpoint or a region stays
        # readable in messages); what is not KEY=VALUE (nor a JSON object of them) is masked whole.
        try:
            given = json.loads(value)
        except ValueError:
            given = None
        if isinstance(given, dict):
            for key, item in given.items():
                if is_secret_key(str(key)):
                    add(str(item))
            return
        pair = split_item(value)
        if pair is None:
            add(value)
        elif is_secret_key(pair[0]):
            add(pair[1])

    flag_before = False
    for word in argv:
        word = str(word)
        if flag_before and not word.startswith("--"):
            add_option_value(word)
            flag_before = False
            continue
        flag_before = False
        if _storage_flag(word):
            name, sep, value = word.partition("=")
            if sep:
                add_option_value(value)
            else:
                flag_before = True
            continue
        pair = split_item(word.lstrip("-"))
        if pair is not None and is_secret_key(pair[0]):
            add(pair[1])
    return found


def masked_command_line(argv: Sequence[str]) -> str:
    """``argv`` joined for a person to read, every value :func:`command_line_secrets` finds
    masked."""
    return redact_output(" ".join(str(a) for a in argv), command_line_secrets(argv))


# Masking keeps the shape: text stays text, a JSON value a JSON value (tuples become lists).
@overload
def redact_output(value: str, options: Mapping[str, str] | None) -> str: ...


@overload
def redact_output(value: JsonValue, options: Mapping[str, str] | None) -> JsonValue: ...


@overload
def redact_output(value: object, options: Mapping[str, str] | None) -> object: ...


def redact_output(value: object, options: Mapping[str, str] | None) -> object:
    """``value`` (a string, or dicts and lists of them, as a RESULT or a task value is) with every
    secret of ``options`` masked, and always the query strings of URLs and the values of
    secret-named environment variables (``redact_text``), options or not. Strings are masked one
    by one, before any JSON encoding, so that a secret holding ``"`` or ``\\`` is found as it is
    and not as its escaped form."""
    from delta_downgrade.storage.options import secret_masker

    masked = secret_masker(options)

    def mask(item: object) -> object:
        if isinstance(item, str):
            return masked(item)
        if isinstance(item, dict):
            return {mask(k): mask(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [mask(v) for v in item]
        return item

    return mask(value)
