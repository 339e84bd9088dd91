"""The unit tier starts nothing: no child process, JVM, server, network connection or Spark
session (tests/unit_tier_guard.py fails a unit test that tries)."""

from tests.unit_tier_guard import (  # noqa: F401  (pytest finds hooks by name in a conftest)
    pytest_collection_modifyitems, pytest_runtest_call, pytest_runtest_setup, pytest_runtest_teardown,
)
