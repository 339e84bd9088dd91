"""What a command line gives is masked before anything quotes it: by flag position (the value of
a storage-option flag, spelt right or not, in one word or two), by key shape (``KEY=SECRET``
anywhere) and whole when it is no ``KEY=VALUE`` item (a key given alone); a URL's query string
and the credential environment variables are masked with no option given at all."""

from __future__ import annotations

import pytest

from delta_downgrade.app.storage_options import (
    command_line_secrets, masked_command_line, parse_storage_option_items, redact_output,
)
from delta_downgrade.errors import BadStorageOptionError
from delta_downgrade.storage.object_store import ObjectStoreStorage

SECRET = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@pytest.mark.parametrize("argv", [
    ["inspect", "/t", "--storage-options", f"AZURE_STORAGE_ACCOUNT_KEY={SECRET}"],
    ["inspect", "/t", f"--storage-options=AZURE_STORAGE_ACCOUNT_KEY={SECRET}"],
    ["inspect", "/t", f"AZURE_STORAGE_ACCOUNT_KEY={SECRET}"],
    ["inspect", "/t", "--storage-option", SECRET],
    ["verify_task", "--storage_option", SECRET],
    ["verify_task", f'--storage_options={{"AZURE_STORAGE_ACCOUNT_KEY": "{SECRET}"}}'],
    ["verify_task", f"--AZURE_STORAGE_ACCOUNT_KEY={SECRET}"],
])
def test_a_secret_on_the_command_line_is_masked_wherever_it_stands(argv):
    shown = masked_command_line(argv)
    assert SECRET not in shown and SECRET.rstrip("=") not in shown, shown
    assert shown.startswith(argv[0])


def test_an_endpoint_and_a_region_stay_readable():
    argv = ["inspect", "s3://b/t", "--storage-option", "AWS_ENDPOINT_URL=http://minio:9000",
            "--storage-option", "AWS_REGION=eu-west-1", "--storage-option", f"AWS_SECRET_ACCESS_KEY={SECRET}"]
    shown = masked_command_line(argv)
    assert "AWS_ENDPOINT_URL=http://minio:9000" in shown and "AWS_REGION=eu-west-1" in shown
    assert "AWS_SECRET_ACCESS_KEY=***" in shown and set(command_line_secrets(argv).values()) == {SECRET}


@pytest.mark.parametrize("item", [SECRET, "Short0Secret0Value=", "Short0Secret0Value=="])
def test_a_key_less_item_is_refused_without_quoting_it(item):
    with pytest.raises(BadStorageOptionError) as info:
        parse_storage_option_items(["AWS_REGION=eu-west-1", item])
    assert item.rstrip("=")[:16] not in str(info.value) and "item 2" in str(info.value)
    assert item.rstrip("=") not in masked_command_line(["inspect", "/t", "--storage-option", item])


def test_an_unknown_key_that_is_no_key_is_not_quoted():
    with pytest.raises(BadStorageOptionError) as info:
        ObjectStoreStorage.from_location("s3://b/t", {SECRET[:60] + "+/x": "1"})
    assert SECRET[:20] not in str(info.value)
    with pytest.raises(BadStorageOptionError) as info:
        ObjectStoreStorage.from_location("s3://b/t", {"AWS_REGOIN": "eu-west-1"})
    assert "'AWS_REGOIN'" in str(info.value)  # a misspelt key is still named


def test_a_uri_query_and_the_credential_environment_are_masked_without_options(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "EnvironmentSecretValue1")
    monkeypatch.setenv("DELTA_DOWNGRADE_TASK_KEY", "truncate")  # not a credential: stays
    text = ("cannot read s3://b/t?X-Amz-Security-Token=TokenInTheUri1 with EnvironmentSecretValue1; "
            "task truncate")
    shown = redact_output({"message": text}, None)["message"]
    assert "TokenInTheUri1" not in shown and "EnvironmentSecretValue1" not in shown
    assert shown.endswith("task truncate")
