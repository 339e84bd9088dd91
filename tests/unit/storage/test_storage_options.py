"""Storage options: deltalake's keys (any case, with or without the store prefix) split into
obstore's config (the keys obstore's own parser takes, as given) / client options / retry config; delta-rs-only keys and other stores' keys
accepted and ignored; unknown keys refused by name (never by value); DELTA_DOWNGRADE_STORAGE
picks the implementation; secrets redacted from option dicts and messages."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from delta_downgrade.errors import BadStorageOptionError, UnsupportedStorageError
from delta_downgrade.storage import implementation_for, open_storage, redact, redact_text
from delta_downgrade.storage.hadoop import HadoopStorage
from delta_downgrade.storage.local import LocalStorage
from delta_downgrade.storage.object_store import ObjectStoreStorage
from delta_downgrade.storage.options import (
    DEFAULT_MAX_RETRIES, DEFAULT_RETRY_TIMEOUT, implementation_choice, is_secret_key, parse_options,
)


@pytest.mark.parametrize("key", ["AWS_ACCESS_KEY_ID", "aws_access_key_id", "access_key_id",
                                 "Aws_Access_Key_Id"])
def test_s3_access_key_spellings(key):
    assert parse_options("s3", {key: "AKIA1"}).config == {key.lower(): "AKIA1"}


@pytest.mark.parametrize("key", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT", "endpoint", "aws_endpoint_url"])
def test_s3_endpoint_spellings(key):
    assert parse_options("s3", {key: "http://h:1"}).config == {key.lower(): "http://h:1"}


def test_s3_options_split_into_config_client_and_retry():
    parsed = parse_options("s3", {
        "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t",
        "AWS_REGION": "eu-west-1", "AWS_ALLOW_HTTP": "true", "timeout": "30s",
        "connect_timeout": "1s", "proxy_url": "http://proxy:3128", "max_retries": "5",
        "retry_timeout": "20s", "backoff_config.init_backoff": "200ms",
    })
    assert parsed.config == {"aws_access_key_id": "a", "aws_secret_access_key": "s",
                             "aws_session_token": "t", "aws_region": "eu-west-1"}
    assert parsed.client_options == {"allow_http": True, "timeout": timedelta(seconds=30),
                                     "connect_timeout": timedelta(seconds=1),
                                     "read_timeout": timedelta(seconds=8),
                                     "proxy_url": "http://proxy:3128"}
    assert parsed.retry_config == {"max_retries": 5, "retry_timeout": timedelta(seconds=20),
                                   "backoff": {"init_backoff": timedelta(milliseconds=200)}}


def test_defaults_bound_retries_and_connect_time():
    parsed = parse_options("azure", {})
    assert parsed.retry_config == {"max_retries": DEFAULT_MAX_RETRIES,
                                   "retry_timeout": DEFAULT_RETRY_TIMEOUT}
    assert parsed.client_options == {"connect_timeout": timedelta(seconds=2),
                                     "read_timeout": timedelta(seconds=8)}


@pytest.mark.parametrize("text,seconds", [("5s", 5), ("500ms", 0.5), ("2min 30s", 150), ("7", 7),
                                          ("1h", 3600), ("1.5 seconds", 1.5)])
def test_durations(text, seconds):
    assert parse_options("s3", {"timeout": text}).client_options["timeout"] == timedelta(
        seconds=seconds)


def test_azure_and_gcs_keys():
    azure = parse_options("azure", {
        "AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": "k",
        "AZURE_STORAGE_SAS_KEY": "sv=1&sig=x", "AZURE_STORAGE_ENDPOINT": "http://h/acct",
        "AZURE_CLIENT_ID": "cid", "azure_client_secret": "cs", "AZURE_TENANT_ID": "tid",
        "AZURE_STORAGE_USE_EMULATOR": "true", "AZURE_ALLOW_HTTP": "true"})
    assert azure.config == {"azure_storage_account_name": "acct", "azure_storage_account_key": "k",
                            "azure_storage_sas_key": "sv=1&sig=x",
                            "azure_storage_endpoint": "http://h/acct", "azure_client_id": "cid",
                            "azure_client_secret": "cs", "azure_tenant_id": "tid",
                            "azure_storage_use_emulator": "true"}
    assert azure.client_options["allow_http"] is True
    gcs = parse_options("gcs", {"GOOGLE_SERVICE_ACCOUNT": "/sa.json",
                                "GOOGLE_SERVICE_ACCOUNT_KEY": "{}",
                                "GOOGLE_APPLICATION_CREDENTIALS": "/adc.json",
                                "GOOGLE_ALLOW_HTTP": "false"})
    assert gcs.config == {"google_service_account": "/sa.json", "google_service_account_key": "{}",
                          "google_application_credentials": "/adc.json"}
    assert gcs.client_options["allow_http"] is False
    assert parse_options("gcs", {"google_service_account_path": "/p"}).config == {
        "google_service_account_path": "/p"}


def test_delta_rs_only_and_other_stores_keys_are_ignored():
    options = {"AWS_S3_ALLOW_UNSAFE_RENAME": "true", "AWS_S3_LOCKING_PROVIDER": "dynamodb",
               "DELTA_DYNAMO_TABLE_NAME": "locks", "conditional_put": "disabled",
               "AZURE_STORAGE_ACCOUNT_KEY": "k", "GOOGLE_SERVICE_ACCOUNT_KEY": "{}",
               "azure_allow_http": "true", "AWS_ACCESS_KEY_ID": "a"}
    parsed = parse_options("s3", options)
    assert parsed.config == {"aws_access_key_id": "a"}
    # conditional_put never reaches the store: commits always use a conditional create.
    assert "conditional_put" not in parsed.config and "allow_http" not in parsed.client_options
    assert sorted(parsed.ignored) == sorted(k for k in options if k != "AWS_ACCESS_KEY_ID")


@pytest.mark.parametrize("kind,key", [("s3", "aws_access_key_id"), ("s3", "token"),
                                      ("azure", "azure_storage_sas_token"), ("azure", "use_emulator"),
                                      ("gcs", "google_application_credentials")])
def test_config_keys_are_what_obstore_takes(kind, key):
    """obstore's own parser decides the config keys: a key taken here is one it knows."""
    import obstore.store
    from obstore.exceptions import UnknownConfigurationKeyError

    parsed = parse_options(kind, {key: "v"})
    assert parsed.config == {key: "v"}
    store_class = {"s3": obstore.store.S3Store, "azure": obstore.store.AzureStore,
                   "gcs": obstore.store.GCSStore}[kind]
    try:
        store_class("b", config=parsed.config)
    except UnknownConfigurationKeyError:
        raise
    except Exception:  # noqa: BLE001 - "v" is no usable value; the key was understood
        pass
    with pytest.raises(UnknownConfigurationKeyError):
        store_class("b", config={f"{key}_not_a_key": "v"})
    with pytest.raises(BadStorageOptionError):
        parse_options(kind, {f"{key}_not_a_key": "v"})


@pytest.mark.parametrize("options,key", [
    ({"AWS_NO_SUCH_OPTION": "s3cr3t-v4lue"}, "AWS_NO_SUCH_OPTION"),
    ({"endpont": "s3cr3t-v4lue"}, "endpont"),
    ({"timeout_ms": "s3cr3t-v4lue"}, "timeout_ms"),
])
def test_unknown_key_is_refused_by_name_not_value(options, key):
    with pytest.raises(BadStorageOptionError) as info:
        parse_options("s3", options, table="s3://b/t")
    assert info.value.exit_code == 2 and key in info.value.message
    assert "s3cr3t-v4lue" not in str(info.value)


@pytest.mark.parametrize("options", [{"allow_http": "maybe"}, {"timeout": "soon"},
                                     {"max_retries": "many"}, {"retry_timeout": "-1s"},
                                     {"connect_timeout": "5 parsecs"}, {"timeout": ""}])
def test_bad_values_are_refused(options):
    with pytest.raises(BadStorageOptionError):
        parse_options("s3", options)


def test_implementation_key_from_options_or_environment(monkeypatch):
    monkeypatch.delenv("DELTA_DOWNGRADE_STORAGE", raising=False)
    assert implementation_choice({}) is None
    assert implementation_choice({"delta_downgrade_storage": "Object-Store"}) == "object_store"
    monkeypatch.setenv("DELTA_DOWNGRADE_STORAGE", "hadoop")
    assert implementation_choice({}) == "hadoop"
    assert implementation_choice({"DELTA_DOWNGRADE_STORAGE": "local"}) == "local"  # option wins
    with pytest.raises(BadStorageOptionError):
        implementation_choice({"DELTA_DOWNGRADE_STORAGE": "fast"})


def test_registry_routes_by_scheme_and_choice(monkeypatch, tmp_path):
    monkeypatch.delenv("DELTA_DOWNGRADE_STORAGE", raising=False)
    for scheme in ("s3", "s3a", "az", "azure", "abfs", "abfss", "adl", "gs", "S3"):
        assert implementation_for(f"{scheme}://b/t") is ObjectStoreStorage
    assert implementation_for(str(tmp_path)) is LocalStorage
    assert implementation_for(f"file://{tmp_path}") is LocalStorage
    choice = {"DELTA_DOWNGRADE_STORAGE": "object_store"}
    assert implementation_for(f"file://{tmp_path}", options=choice) is ObjectStoreStorage
    assert implementation_for("s3://b/t", options={"DELTA_DOWNGRADE_STORAGE": "hadoop"}) is HadoopStorage
    with pytest.raises(BadStorageOptionError):
        implementation_for("s3://b/t", options={"DELTA_DOWNGRADE_STORAGE": "local"})
    with pytest.raises(UnsupportedStorageError):
        implementation_for("hdfs://nn/t", options=choice)
    # The key is ours: the implementation never sees it.
    storage = open_storage(f"file://{tmp_path}/t", options=choice)
    assert isinstance(storage, ObjectStoreStorage)


def test_unknown_scheme_names_the_schemes_served(monkeypatch):
    monkeypatch.delenv("DELTA_DOWNGRADE_STORAGE", raising=False)
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    with pytest.raises(UnsupportedStorageError) as info:
        open_storage("nosuch://b/t")
    assert info.value.exit_code == 2
    for served in ("s3://", "abfss://", "gs://", "hdfs://"):
        assert served in info.value.message


# --- redaction ---------------------------------------------------------------------------------

SA_JSON = json.dumps({"type": "service_account", "client_email": "x@p.iam.gserviceaccount.com",
                      "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n",
                      "private_key_id": "abcdef0123456789"})


@pytest.mark.parametrize("key", ["AWS_SECRET_ACCESS_KEY", "aws_session_token", "token",
                                 "AZURE_STORAGE_ACCOUNT_KEY", "access_key", "master_key",
                                 "AZURE_STORAGE_SAS_KEY", "sas_token", "AZURE_CLIENT_SECRET",
                                 "GOOGLE_SERVICE_ACCOUNT_KEY", "proxy_password", "bearer_token"])
def test_secret_keys(key):
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["AWS_REGION", "AWS_ENDPOINT_URL", "AZURE_STORAGE_ACCOUNT_NAME",
                                 "allow_http", "timeout", "GOOGLE_SERVICE_ACCOUNT_PATH"])
def test_non_secret_keys_stay(key):
    assert not is_secret_key(key)


def test_redact_hides_secret_values_only():
    options = {"AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": "wJalr/secret",
               "AWS_REGION": "us-east-1", "GOOGLE_SERVICE_ACCOUNT_KEY": SA_JSON}
    redacted = redact(options)
    assert redacted["AWS_SECRET_ACCESS_KEY"] == "***"
    assert redacted["GOOGLE_SERVICE_ACCOUNT_KEY"] == "***"
    assert redacted["AWS_REGION"] == "us-east-1"
    assert options["AWS_SECRET_ACCESS_KEY"] == "wJalr/secret"  # the input is left alone


def test_redact_text_removes_secret_values_and_url_queries():
    options = {"AWS_SECRET_ACCESS_KEY": "wJalr/secret", "GOOGLE_SERVICE_ACCOUNT_KEY": SA_JSON}
    text = ("failed with key wJalr/secret at https://acct.blob.core.windows.net/c/x?sv=2022&sig=abc%2F "
            "and PRIVATE MIIEvQIBADANBg, id abcdef0123456789; also " + SA_JSON)
    out = redact_text(text, options)
    for secret in ("wJalr/secret", "sig=abc", "sv=2022", "abcdef0123456789", "MIIEvQIBADANBg",
                   "BEGIN PRIVATE KEY"):
        assert secret not in out
    assert "https://acct.blob.core.windows.net/c/x?***" in out
    assert redact_text("nothing secret here", options) == "nothing secret here"
