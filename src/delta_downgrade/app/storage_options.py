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

from typing import Any, Iterable, Mapping

from delta_downgrade.errors import BadStorageOptionError


def parse_storage_option_items(items: Iterable[str] | None, flag: str = "--storage-option") -> dict[str, str]:
    """``["KEY=VALUE", …]`` → ``{KEY: VALUE}``: split on the first ``=`` (values such as SAS
    tokens hold ``=`` themselves). An item without ``=`` or with an empty key, and a key given
    twice with different values, is a :class:`BadStorageOptionError` naming the key only: the
    value may be a secret."""
    options: dict[str, str] = {}
    for number, item in enumerate(items or (), start=1):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            # The item itself is not shown: a mistyped one may well be the secret value alone.
            raise BadStorageOptionError(
                f"{flag} takes KEY=VALUE (for example {flag} AWS_REGION=eu-west-1); item {number} "
                f"has {'no key before' if sep else 'no'} '='; nothing was read or written")
        if key in options and options[key] != value:
            raise BadStorageOptionError(
                f"{flag} {key} is given twice with different values; give it once")
        options[key] = value
    return options


def redact_output(value: Any, options: Mapping[str, str] | None) -> Any:
    """``value`` (a string, or dicts and lists of them, as a RESULT or a task value is) with every
    secret of ``options`` masked. Strings are masked one by one, before any JSON encoding, so that
    a secret holding ``"`` or ``\\`` is found as it is and not as its escaped form."""
    if not options:
        return value
    from delta_downgrade.storage.options import redact_text

    def mask(item: Any) -> Any:
        if isinstance(item, str):
            return redact_text(item, options)
        if isinstance(item, dict):
            return {mask(k): mask(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [mask(v) for v in item]
        return item

    return mask(value)
