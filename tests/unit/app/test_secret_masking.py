"""Storage-option secrets are masked in everything the entry points print or pass on: the RESULT
line, log lines, task values, even when a message quotes the secret itself (a store's answer may
echo what it was sent). The end-to-end runs on S3 (test_object_store_entry_points.py) never make
a store echo a secret; these feed one through each output path directly."""

from __future__ import annotations

import io
import logging

from delta_downgrade.app.console_logging import console_logging
from delta_downgrade.app.render.result import emit_result, parse_result_lines
from delta_downgrade.app.tasks.framework import MaskedTaskValues
from delta_downgrade.storage.options import redact_text

SECRET = "s3cr3t-VALUE/with+chars=="
OPTIONS = {"AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_REGION": "eu-west-1"}


def test_a_result_line_quoting_the_secret_shows_it_masked() -> None:
    out = io.StringIO()
    emit_result({"status": "error", "error": {"message": f"the store said: bad key {SECRET}"},
                 "table": "s3://bucket/t"}, out, secrets=OPTIONS)
    text = out.getvalue()
    assert SECRET not in text
    [result] = parse_result_lines(text)
    assert result["error"]["message"] == "the store said: bad key ***"
    assert result["table"] == "s3://bucket/t"


def test_log_lines_and_their_arguments_are_masked(capsys) -> None:
    with console_logging("%(message)s", secrets=OPTIONS):
        logging.getLogger("delta_downgrade.drop").info("writing with %s in %s", SECRET, "eu-west-1")
    err = capsys.readouterr().err
    assert SECRET not in err
    assert "writing with *** in eu-west-1" in err  # a region is not a secret


class _RecordedValues:
    def __init__(self) -> None:
        self.values: dict = {}

    def set(self, key, value) -> None:
        self.values[key] = value


def test_task_values_are_masked_before_they_are_set() -> None:
    recorded = _RecordedValues()
    MaskedTaskValues(recorded, OPTIONS).set("result", {"error": [f"denied: {SECRET}"], "n": 3})
    assert recorded.values == {"result": {"error": ["denied: ***"], "n": 3}}


def test_url_query_strings_are_masked_and_a_plain_question_mark_is_not() -> None:
    text = ("is this right? GET https://acct.blob.core.windows.net/c/t/_delta_log/0.json"
            "?sv=2022-11-02&sig=abc%2Bdef failed")
    assert redact_text(text) == ("is this right? GET https://acct.blob.core.windows.net/c/t/"
                                 "_delta_log/0.json?*** failed")
