"""The table goes into an error once, where an operation starts (``errors.naming_table``), the
CLI or a task adds the one the user named, and the core below raises without it: no function
takes a table only to put it in a message."""

from __future__ import annotations

import traceback

import pytest

from delta_downgrade.drop.validation import validate_drop
from delta_downgrade.errors import (
    EXIT_BAD_INPUT, BadInputError, FeatureNotPresentError, InvalidTablePropertyError, naming_table,
)
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.table_config import TableConfig
from tests.drop_support import build, log_snapshot_files


class _Log:
    table = "s3://bucket/events"


@naming_table("location")
def _operation(location: str, *, error: Exception) -> None:
    raise error


@naming_table("log")
def _on_log(log: object) -> None:
    assert TableConfig({"delta.logRetentionDuration": "forever"}).log_retention_ms is None  # raises


def test_an_error_without_a_table_gets_the_operations_table():
    with pytest.raises(BadInputError) as info:
        _operation("/data/t", error=BadInputError("bad", feature="f", params={"k": 1}))
    err = info.value
    assert err.table == "/data/t" and str(err) == "[DELTA_DOWNGRADE_BAD_INPUT] bad (table /data/t)"
    # the same error otherwise: its class, exit code, feature and params
    assert type(err) is BadInputError and err.exit_code == EXIT_BAD_INPUT
    assert err.feature == "f" and err.params == {"k": 1}


def test_an_error_that_names_its_table_keeps_it():
    with pytest.raises(BadInputError) as info:
        _operation("/data/t", error=BadInputError("bad", table="/data/other"))
    assert info.value.table == "/data/other"


def test_a_log_parameter_names_the_logs_table():
    with pytest.raises(InvalidTablePropertyError) as info:
        _on_log(_Log())
    assert info.value.table == "s3://bucket/events"
    assert "delta.logRetentionDuration" in info.value.message


def test_the_traceback_still_shows_where_it_was_raised():
    with pytest.raises(BadInputError) as info:
        _on_log_raising()
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "_raise_deep" in frames


def _raise_deep() -> None:
    raise BadInputError("deep")


@naming_table("location")
def _on_log_raising(location: str = "/data/t") -> None:
    _raise_deep()


def test_other_exceptions_pass_untouched():
    with pytest.raises(KeyError):
        _operation("/data/t", error=KeyError("k"))


def test_a_parameter_the_function_lacks_is_refused_when_decorating():
    with pytest.raises(TypeError, match="no parameter 'table'"):
        naming_table("table")(lambda location: None)


def test_the_core_raises_without_a_table():
    protocol = Protocol(1, 2)
    with pytest.raises(FeatureNotPresentError) as info:
        validate_drop(protocol, "deletionVectors", truncate_history=False)
    assert info.value.table is None


def test_a_drop_refusal_names_the_table_and_writes_nothing(tmp_path):
    # The refusal comes from the drop's validation, which is given no table.
    path = str(tmp_path / "t")
    build(path, Protocol(1, 2), appends=1)
    before = log_snapshot_files(path)
    with pytest.raises(BadInputError) as info:
        drop_feature(path, "delta.enableDeletionVectors")
    assert info.value.error_class == "DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY"
    assert info.value.table == path and str(info.value).endswith(f"(table {path})")
    assert log_snapshot_files(path) == before
