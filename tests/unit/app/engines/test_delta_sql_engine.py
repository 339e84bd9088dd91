"""The delta-sql engine's pure parts: SQL text and the mapping of Delta error classes to ours."""

from __future__ import annotations

import pytest

from delta_downgrade.app.engines import NativeEngine, select_engine
from delta_downgrade.app.engines.delta_sql import drop_feature_sql, error_class_of, map_error, table_identifier
from delta_downgrade.app.engines.delta_sql import DeltaSqlEngine
from delta_downgrade.errors import BadInputError, CatalogNameNeedsSqlError


class FakeAnalysisException(Exception):
    """Shaped like pyspark's: the error class through getCondition() (PySpark 4)."""

    def __init__(self, condition: str, message: str) -> None:
        super().__init__(message)
        self._condition = condition

    def getCondition(self) -> str:
        return self._condition


def test_sql_text():
    assert drop_feature_sql("/data/t", "deletionVectors", False) == \
        "ALTER TABLE delta.`/data/t` DROP FEATURE `deletionVectors`"
    assert drop_feature_sql("main.ops.events", "`checkpointProtection`", True) == \
        "ALTER TABLE `main`.`ops`.`events` DROP FEATURE `checkpointProtection` TRUNCATE HISTORY"
    assert table_identifier("s3://b/p`q") == "delta.`s3://b/p``q`"


@pytest.mark.parametrize("error_class, exit_code", [
    ("DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD", 3),
    ("DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST", 3),
    ("DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD", 3),
    ("DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL", 4),
    ("DELTA_CONCURRENT_APPEND", 4),
    ("DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE", 2),
    ("DELTA_FEATURE_DROP_DEPENDENT_FEATURE", 2),
    ("DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE", 2),
    ("DELTA_UNSUPPORTED_FEATURES_FOR_WRITE", 2),
    ("TABLE_OR_VIEW_NOT_FOUND", 2),
    ("DELTA_TABLE_NOT_FOUND", 2),
    ("INSUFFICIENT_PERMISSIONS", 2),
    ("PERMISSION_DENIED", 2),
    ("INTERNAL_ERROR", 1),
])
def test_error_mapping(error_class, exit_code):
    mapped = map_error(FakeAnalysisException(error_class, f"[{error_class}] something"), "t", "f")
    assert mapped.error_class == error_class
    assert mapped.exit_code == exit_code


def test_error_class_from_message_prefix():
    exc = Exception("[DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT] Cannot drop deletionVectors ...")
    assert error_class_of(exc) == "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"
    assert error_class_of(Exception("no class here")) is None


def test_auto_picks_native_for_paths_and_delta_sql_for_names():
    assert isinstance(select_engine("auto", "/data/table"), NativeEngine)
    assert isinstance(select_engine("auto", "delta.`/data/table`"), NativeEngine)
    assert isinstance(select_engine("auto", "main.ops.t"), DeltaSqlEngine)
    assert isinstance(select_engine("delta-sql", "/data/table"), DeltaSqlEngine)


def test_native_engine_refuses_a_catalog_name():
    """A catalog name is reached only through SQL; native with a name used to be
    accepted and then failed with 'path does not exist'."""
    with pytest.raises(CatalogNameNeedsSqlError) as info:
        select_engine("native", "main.ops.t")
    assert info.value.exit_code == 2 and "pass the table's path" in str(info.value)


# --- names that could change the statement ------------------------

def _bad_input(exc_info, error_class: str) -> None:
    assert exc_info.value.exit_code == 2
    assert exc_info.value.error_class == error_class, exc_info.value


@pytest.mark.parametrize("feature", ["x` TRUNCATE HISTORY --", "deletionVectors` TRUNCATE HISTORY",
                                     "a b", "v2Checkpoint;", "`x``y`", ""])
def test_13_feature_name_that_could_change_the_statement_is_refused(feature):
    with pytest.raises(BadInputError) as info:
        drop_feature_sql("/data/t", feature, False)
    _bad_input(info, "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE")


def test_13_known_features_take_the_registry_spelling_and_plain_unknown_names_pass():
    assert drop_feature_sql("/d", "DELETIONVECTORS", False) == "ALTER TABLE delta.`/d` DROP FEATURE `deletionVectors`"
    assert drop_feature_sql("/d", "typeWidening-preview", True) == \
        "ALTER TABLE delta.`/d` DROP FEATURE `typeWidening-preview` TRUNCATE HISTORY"
    assert drop_feature_sql("/d", "futureFeature_2", False) == "ALTER TABLE delta.`/d` DROP FEATURE `futureFeature_2`"


@pytest.mark.parametrize("name", ["main.ops.t; DROP TABLE x", "main.ops.t DROP FEATURE x --", "a..b",
                                  "main.`ops", "main.ops.", "a.`b`c"])
def test_13_table_name_that_is_not_an_identifier_is_refused(name):
    with pytest.raises(BadInputError) as info:
        drop_feature_sql(name, "deletionVectors", False)
    _bad_input(info, "INVALID_IDENTIFIER")
