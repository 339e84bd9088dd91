"""Storage options: the ``KEY=VALUE`` settings of a table's store, as deltalake takes them.

One mapping serves both tools: the keys are those delta-rs accepts (``AWS_ACCESS_KEY_ID``,
``AZURE_STORAGE_ACCOUNT_KEY``, ``GOOGLE_SERVICE_ACCOUNT_KEY`` ...), in upper or lower case, with
or without the store's prefix where the Rust ``object_store`` crate accepts both
(``aws_endpoint`` / ``endpoint``). :func:`parse_options` splits them into what obstore's store
constructors take: ``config`` (credentials, endpoint, region), ``client_options`` (HTTP: allow
http, timeouts, proxy) and ``retry_config``.

- Keys that only delta-rs uses (its S3 locking, unsafe rename, DynamoDB table ...) are accepted
  and ignored, so that a user's deltalake options work unchanged. ``conditional_put`` is among
  them: this package always commits with a conditional create and never switches it off.
- Keys of another store (``AZURE_*`` given for an ``s3://`` table) are accepted and ignored, as
  delta-rs does, so one set of options may cover several tables.
- Any other key is :class:`~delta_downgrade.errors.BadStorageOptionError`, naming the key and
  never its value.
- Our own key ``DELTA_DOWNGRADE_STORAGE`` (``object_store`` | ``hadoop`` | ``local``, also read
  from the environment variable of that name) chooses the implementation (``registry``); it is
  removed before the rest reaches a store.

Credentials not given here come from the standard environment variables and instance
credentials: obstore's store constructors read ``AWS_*`` / ``AZURE_*`` / ``GOOGLE_*`` from the
environment and fall back to the instance metadata service, web identity, managed identity or
application-default credentials (object_store's credential chains); explicit options win.

:func:`redact` and :func:`redact_text` keep secrets out of RESULT lines, task values and logs.
"""

from __future__ import annotations

import functools
import os
import re
from datetime import timedelta
from typing import Any, Callable, Mapping

from msgspec import Struct, field
from delta_downgrade.errors import BadStorageOptionError

#: Our own option (and environment variable): which implementation serves the table.
IMPLEMENTATION_KEY = "DELTA_DOWNGRADE_STORAGE"
IMPLEMENTATION_CHOICES = ("object_store", "hadoop", "local")

# --- which store takes a key -----------------------------------------------------------------
# The keys of a store's ``config`` (credentials, endpoint, region ...) and their aliases are the
# Rust object_store crate's (AmazonS3ConfigKey / AzureConfigKey / GoogleConfigKey::from_str), and
# obstore's store constructors raise ``UnknownConfigurationKeyError`` for any other: that parser
# is asked here, so the accepted keys are always those of the obstore release installed.

#: The store families: kind -> (obstore's store class name, the prefix of its own keys).
STORE_FAMILIES: dict[str, tuple[str, str]] = {
    "s3": ("S3Store", "aws_"),
    "azure": ("AzureStore", "azure_"),
    "gcs": ("GCSStore", "google_"),
}


@functools.lru_cache(maxsize=512)
def store_takes(kind: str, key: str) -> bool:
    """Whether obstore's store of ``kind`` takes ``key`` (lower case) in its ``config``: the
    store is built with that key alone, which reads no credentials and opens no connection; only
    ``UnknownConfigurationKeyError`` says no (a value it cannot use still means the key is
    known)."""
    import obstore.store
    from obstore.exceptions import UnknownConfigurationKeyError

    family = STORE_FAMILIES.get(kind)
    if family is None:
        return False
    try:
        getattr(obstore.store, family[0])("probe", config={key: "1"})
    except UnknownConfigurationKeyError:
        return False
    except Exception:  # noqa: BLE001 - the key is known; its probe value is not usable
        return True
    return True


#: HTTP client options (obstore ``client_options=``), for every store; ``aws_allow_http``,
#: ``azure_allow_http``, ``google_allow_http`` are the same key with the store's prefix.
CLIENT_KEYS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
    "http1_only", "http2_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
    "http2_keep_alive_while_idle", "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url",
    "proxy_ca_certificate", "proxy_excludes", "randomize_addresses", "read_timeout", "timeout",
    "user_agent", "root_certificate",
})
_BOOL_CLIENT_KEYS = frozenset({"allow_http", "allow_invalid_certificates", "http1_only",
                               "http2_only", "randomize_addresses"})
_DURATION_CLIENT_KEYS = frozenset({"timeout", "connect_timeout", "read_timeout",
                                   "pool_idle_timeout", "http2_keep_alive_timeout"})

#: Retry settings as delta-rs spells them (its ``RetryConfig`` keys).
RETRY_KEYS = frozenset({"max_retries", "retry_timeout", "backoff_config.init_backoff",
                        "backoff_config.max_backoff", "backoff_config.base"})

#: Keys only delta-rs (or another tool sharing the options) uses: accepted and ignored here.
#: ``conditional_put`` too: we always commit with a conditional create (``If-None-Match: *``).
IGNORED_KEYS = frozenset({
    "aws_s3_allow_unsafe_rename", "aws_s3_locking_provider", "delta_dynamo_table_name",
    "dynamo_lock_table_name", "dynamo_lock_owner_name", "dynamo_lock_partition_key_value",
    "dynamo_lock_refresh_period_millis", "dynamo_lock_additional_time_to_wait_millis",
    "aws_conditional_put", "conditional_put", "aws_s3_pool_idle_timeout_seconds",
    "aws_sts_pool_idle_timeout_seconds", "aws_s3_get_internal_server_error_retries",
    "aws_ec2_metadata_disabled", "aws_ec2_metadata_timeout", "aws_force_credential_load",
    "aws_s3_assume_role_arn", "aws_s3_role_session_name", "aws_iam_role_arn",
    "aws_iam_role_session_name", "aws_profile", "mount_allow_unsafe_rename",
    "allow_unsafe_rename", "aws_dynamodb_endpoint",
    "aws_endpoint_url_dynamodb", "aws_endpoint_url_sts", "aws_external_id",
    "hdfs_config_dir", "max_concurrency",
})

# --- defaults: every failure within seconds ---------------------------------------------------
# object_store retries a failed request 10 times over up to 3 minutes by default: a wrong port
# or host would answer after minutes. Connection errors and 5xx are still retried (transient
# faults on a real cloud) but bounded so that a user's mistake surfaces in under 10 s: three
# retries with exponential backoff from 100 ms, none started later than 6 s after the first
# attempt, and 2 s to establish a connection. A server that accepts the connection and then
# says nothing fails after 8 s without a byte (``read_timeout``, which restarts at every read,
# so a long download that keeps flowing is not cut; by then ``retry_timeout`` has passed, so
# it is not retried). A request that is slow but flowing is bounded by object_store's own 30 s
# ``timeout`` (large uploads are multipart, one request per part). Each is overridable with the
# keys above (``max_retries``, ``retry_timeout``, ``connect_timeout``, ``read_timeout``,
# ``timeout``).
DEFAULT_MAX_RETRIES = 3
DEFAULT_RETRY_TIMEOUT = timedelta(seconds=6)
DEFAULT_CONNECT_TIMEOUT = timedelta(seconds=2)
DEFAULT_READ_TIMEOUT = timedelta(seconds=8)
#: A listing or a HEAD carries little (a page of 1,000 keys at most): the whole request, body
#: included, is bounded at 10 s unless ``timeout`` is given, so that an endpoint that accepts and
#: then trickles its answer (which ``read_timeout`` cannot see: every byte restarts it) is found
#: at the first step of any command, in seconds, and not after object_store's 30 s.
DEFAULT_METADATA_TIMEOUT = timedelta(seconds=10)


class StoreOptions(Struct):
    """Options of one table's store, split into the arguments of obstore's constructors."""

    kind: str                                             # "s3", "azure", "gcs", "local"
    config: dict[str, str] = field(default_factory=dict)
    client_options: dict[str, Any] = field(default_factory=dict)
    retry_config: dict[str, Any] = field(default_factory=dict)
    #: Keys accepted but not used for this store (delta-rs-only, or another store's).
    ignored: list[str] = field(default_factory=list)


#: What an option's key looks like (deltalake's keys: ``AWS_REGION``, ``backoff_config.base``).
#: Anything else is no key: most likely a secret value given alone (an Azure account key ends in
#: ``==``, so it splits as ``KEY=VALUE`` too), never quoted back.
KEY_SHAPE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def shown_key(key: str) -> str:
    """An option's key as a message quotes it: itself when key-shaped, else a description."""
    return repr(key) if KEY_SHAPE.fullmatch(key.strip()) else "(not shown: it is not KEY-shaped and may be a secret)"


def _norm(key: str) -> str:
    return key.strip().lower()


def implementation_choice(options: Mapping[str, str] | None, *,
                          table: str | None = None) -> str | None:
    """``DELTA_DOWNGRADE_STORAGE`` from the options, else the environment; None when unset."""
    value = None
    for key, v in (options or {}).items():
        if _norm(key) == IMPLEMENTATION_KEY.lower():
            value = v
    if value is None:
        value = os.environ.get(IMPLEMENTATION_KEY) or None
    if value is None:
        return None
    choice = value.strip().lower().replace("-", "_")
    if choice not in IMPLEMENTATION_CHOICES:
        raise BadStorageOptionError(
            f"{IMPLEMENTATION_KEY}={value!r} is not a storage implementation; use one of "
            f"{', '.join(IMPLEMENTATION_CHOICES)}. Nothing was read or written",
            table=table, params={"key": IMPLEMENTATION_KEY})
    return choice


def without_implementation_key(options: Mapping[str, str] | None) -> dict[str, str]:
    """The options without our own ``DELTA_DOWNGRADE_STORAGE``."""
    return {k: v for k, v in (options or {}).items() if _norm(k) != IMPLEMENTATION_KEY.lower()}


def _client_key(key: str, prefix: str) -> str | None:
    bare = key[len(prefix):] if key.startswith(prefix) else key
    return bare if bare in CLIENT_KEYS else None


def _known_elsewhere(key: str, kind: str) -> bool:
    """Whether ``key`` belongs to another store (ignored for this one, as delta-rs does)."""
    for other, (_cls, prefix) in STORE_FAMILIES.items():
        if other == kind:
            continue
        if (key.startswith(prefix) and _client_key(key, prefix)) or store_takes(other, key):
            return True
    return False


def _bool(value: str, key: str, table: str | None) -> bool:
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise BadStorageOptionError(
        f"storage option {key} takes true or false; nothing was read or written", table=table,
        params={"key": key})


_UNIT_SECONDS = {
    "ns": 1e-9, "nsec": 1e-9, "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400,
}
_SPAN_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)")


def _duration(value: str, key: str, table: str | None) -> timedelta:
    """A duration as delta-rs and object_store write it (``"5s"``, ``"500ms"``, ``"2min 30s"``)
    or plain seconds (``"5"``)."""
    text = str(value).strip().lower()
    total, pos = 0.0, 0
    while pos < len(text):
        match = _SPAN_RE.match(text, pos)
        unit = match.group(2) if match else None
        if match is None or match.end() == pos or (unit and unit not in _UNIT_SECONDS):
            raise BadStorageOptionError(
                f"storage option {key} takes a duration such as 5s, 500ms or 2min; nothing was "
                f"read or written", table=table, params={"key": key})
        total += float(match.group(1)) * _UNIT_SECONDS.get(unit or "s", 1)
        pos = match.end()
    if pos == 0:
        raise BadStorageOptionError(
            f"storage option {key} takes a duration such as 5s, 500ms or 2min; nothing was read "
            f"or written", table=table, params={"key": key})
    return timedelta(seconds=total)


def parse_options(kind: str, options: Mapping[str, str] | None, *,
                  table: str | None = None) -> StoreOptions:
    """Split ``options`` for a store of ``kind`` (``s3``, ``azure``, ``gcs``, ``local``) into
    obstore's ``config``, ``client_options`` and ``retry_config``, with this package's bounded
    retry and connect-timeout defaults where the options do not set them.

    :class:`BadStorageOptionError` for a key no store takes (naming the key, never the value)
    or a value that cannot be parsed (a boolean, a duration, a count)."""
    out = StoreOptions(kind)
    retry: dict[str, Any] = {}
    backoff: dict[str, Any] = {}
    _cls, prefix = STORE_FAMILIES.get(kind, ("", ""))
    for raw_key, value in without_implementation_key(options).items():
        if not isinstance(raw_key, str) or not raw_key.strip():
            raise BadStorageOptionError("a storage option has an empty key; nothing was read or "
                                        "written", table=table, params={"key": str(raw_key)})
        key = _norm(raw_key)
        client = _client_key(key, prefix) if prefix else (key if key in CLIENT_KEYS else None)
        if client is not None:
            if client in _BOOL_CLIENT_KEYS:
                out.client_options[client] = _bool(value, raw_key, table)
            elif client in _DURATION_CLIENT_KEYS:
                out.client_options[client] = _duration(value, raw_key, table)
            else:
                out.client_options[client] = str(value)
            continue
        if key in RETRY_KEYS:
            if key == "max_retries":
                try:
                    retry["max_retries"] = int(str(value).strip())
                except ValueError:
                    raise BadStorageOptionError(
                        f"storage option {raw_key} takes a whole number; nothing was read or "
                        f"written", table=table, params={"key": raw_key}) from None
            elif key == "retry_timeout":
                retry["retry_timeout"] = _duration(value, raw_key, table)
            elif key == "backoff_config.base":
                try:
                    backoff["base"] = float(str(value).strip())
                except ValueError:
                    raise BadStorageOptionError(
                        f"storage option {raw_key} takes a number; nothing was read or written",
                        table=table, params={"key": raw_key}) from None
            else:
                backoff[key.split(".", 1)[1]] = _duration(value, raw_key, table)
            continue
        if key in IGNORED_KEYS:
            out.ignored.append(raw_key)
            continue
        if store_takes(kind, key):
            out.config[key] = str(value)
            continue
        if _known_elsewhere(key, kind):
            out.ignored.append(raw_key)
            continue
        raise BadStorageOptionError(
            f"unknown storage option {shown_key(raw_key)}: no store takes it. Use the keys deltalake "
            f"accepts (e.g. AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, AZURE_STORAGE_ACCOUNT_NAME, "
            f"GOOGLE_SERVICE_ACCOUNT_KEY, allow_http, timeout); nothing was read or written",
            table=table, params={"key": raw_key if KEY_SHAPE.fullmatch(raw_key.strip()) else None})
    out.client_options.setdefault("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    out.client_options.setdefault("read_timeout", DEFAULT_READ_TIMEOUT)
    retry.setdefault("max_retries", DEFAULT_MAX_RETRIES)
    retry.setdefault("retry_timeout", DEFAULT_RETRY_TIMEOUT)
    if backoff:
        retry["backoff"] = backoff
    out.retry_config = retry
    return out


# --- keeping secrets out of messages --------------------------------------------------------

# Every secret key of the stores names one of these (``secret_access_key``, ``session_token``,
# ``account_key``, ``client_secret``, ``sas_key``, ``bearer_token``, ``service_account_key`` ...).
_SECRET_WORDS = ("key", "secret", "token", "password", "sas", "credential", "signature")
REDACTED = "***"


def is_secret_key(key: str) -> bool:
    """Whether the value of option ``key`` is a secret (or may contain one): keys naming a key,
    secret, token, password, SAS or credential, and service-account JSON."""
    k = _norm(key)
    return any(word in k for word in _SECRET_WORDS)


def redact(options: Mapping[str, str] | None) -> dict[str, str]:
    """``options`` with the value of every secret-looking key replaced by ``***`` (the keys
    and the other values stay, so a RESULT line still says which endpoint and region were
    used)."""
    return {k: (REDACTED if is_secret_key(k) else v) for k, v in (options or {}).items()}


# ``?sv=...&sig=...`` (an Azure SAS), ``X-Amz-Signature=...``, any ``token=``/``key=`` query value.
#: The query string of a URL (``scheme://host/path?sv=...&sig=...``): SAS tokens and presigned
#: signatures travel there. Only after a URL: a ``?`` in plain text is left alone.
_QUERY_RE = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s?\"'<>]*)\?[^\s\"'<>]*")


def _secret_values(options: Mapping[str, str] | None) -> list[str]:
    values: set[str] = set()
    for key, value in (options or {}).items():
        if not is_secret_key(key) or not value:
            continue
        text = str(value)
        values.add(text)
        # A service-account JSON: also its private key and its lines, which a message may
        # quote piecemeal.
        for match in re.finditer(r'"(?:private_key|private_key_id|client_secret|refresh_token)"'
                                 r'\s*:\s*"([^"]+)"', text):
            values.add(match.group(1))
            # A PEM key: each of its lines too (a message may show it unescaped, line by line).
            values.update(line for line in re.split(r"\\n|\n", match.group(1)) if len(line) >= 8)
    # Longest first, so that a value containing another is replaced whole.
    return sorted((v for v in values if len(v) >= 4), key=len, reverse=True)


#: Environment values shorter than this are not masked: a flag such as ``1`` or ``true`` under a
#: secret-looking name would otherwise blank every digit of the output.
_MIN_ENVIRONMENT_SECRET = 8


def environment_secrets() -> dict[str, str]:
    """The environment variables whose names look secret (``AWS_SECRET_ACCESS_KEY``,
    ``AZURE_STORAGE_SAS_TOKEN``, ``DATABRICKS_TOKEN``, ``DELTA_DOWNGRADE_STORAGE_OPTIONS`` …): the
    stores read credentials from them, so a store's message may quote one. Masked in every output
    like an option's value."""
    import json

    out: dict[str, str] = {}
    for name, value in os.environ.items():
        if len(value) < _MIN_ENVIRONMENT_SECRET:
            continue
        if name.endswith("STORAGE_OPTIONS"):
            # A JSON object of options (the tasks' DELTA_DOWNGRADE_STORAGE_OPTIONS): its secret
            # values one by one, as an option's.
            try:
                given = json.loads(value)
            except ValueError:
                given = None
            if isinstance(given, dict):
                out.update({str(k): str(v) for k, v in given.items() if is_secret_key(str(k))})
            out[f"secret environment {name}"] = value
        elif _SECRET_ENVIRONMENT_NAME.search(name) and not name.startswith("DELTA_DOWNGRADE_"):
            out[f"secret environment {name}"] = value
    return out


#: Names of environment variables that hold credentials: a word of the name is TOKEN, SECRET,
#: PASSWORD, SAS, SIGNATURE or CREDENTIAL(S), or it ends in one of the kinds of key
#: (``AWS_SECRET_ACCESS_KEY``, ``AZURE_STORAGE_ACCOUNT_KEY``, ``GOOGLE_SERVICE_ACCOUNT_KEY``,
#: ``OPENAI_API_KEY``). Narrower than :func:`is_secret_key`: the environment is full of names such
#: as ``DELTA_DOWNGRADE_TASK_KEY`` whose values are plain words.
_SECRET_ENVIRONMENT_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|SAS|SIGNATURE|CREDENTIALS?)(?:_|$)"
    r"|(?:ACCESS|ACCOUNT|API|PRIVATE|MASTER|SECRET|SAS|SERVICE_ACCOUNT|STORAGE)_KEY(?:_ID)?$", re.IGNORECASE)


def secret_masker(options: Mapping[str, str] | None = None) -> Callable[[str], str]:
    """:func:`redact_text` with ``options`` and the environment read once, for masking many
    strings (every path of a document) at the cost of one."""
    values = _secret_values({**environment_secrets(), **dict(options or {})})

    def mask(text: str) -> str:
        out = str(text)
        for value in values:
            if value in out:
                out = out.replace(value, REDACTED)
        if "?" in out:
            out = _QUERY_RE.sub(lambda m: m.group(1) + "?" + REDACTED, out)
        return out

    return mask


def redact_text(text: str, options: Mapping[str, str] | None = None) -> str:
    """``text`` (an error message, a log line) with every secret value of ``options`` and of the
    secret-named environment variables replaced by ``***``, and the query string of every URL in
    it (SAS tokens, presigned signatures) dropped."""
    return secret_masker(options)(text)
