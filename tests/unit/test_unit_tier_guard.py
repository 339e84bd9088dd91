"""The unit tier's guard (tests/unit_tier_guard.py) fails a test that starts something, even when
the code under test swallows the refusal, and lets a test that starts nothing pass."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ("pytester",)


@pytest.fixture
def unit_tier(pytester: pytest.Pytester):
    """A throw-away project whose tests/unit has the guard, run in this process."""
    pytester.makeconftest("")
    unit = pytester.mkdir("tests").joinpath("unit")
    unit.mkdir()
    unit.joinpath("conftest.py").write_text(textwrap.dedent("""
        from tests.unit_tier_guard import (
            pytest_collection_modifyitems, pytest_runtest_call, pytest_runtest_setup,
            pytest_runtest_teardown,
        )
        import pytest

        @pytest.fixture
        def spark():
            return "a session an integration test started"
    """))

    def run(body: str) -> pytest.RunResult:
        unit.joinpath("test_inner.py").write_text(textwrap.dedent(body))
        return pytester.runpytest_inprocess(str(unit), "-p", "no:cacheprovider")

    return run


def test_a_child_process_fails_the_test(unit_tier):
    result = unit_tier("""
        import subprocess
        def test_starts_a_child():
            subprocess.run(["true"], check=True)
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*StartedInUnitTier*started a child process*tests/integration*"])


def test_a_swallowed_refusal_still_fails_the_test(unit_tier):
    result = unit_tier("""
        import subprocess
        def test_swallows():
            try:
                subprocess.Popen(["java", "-version"])
            except Exception:
                pass  # code under test that hides every error
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*started a child process*java*"])


def test_a_server_fails_the_test(unit_tier):
    result = unit_tier("""
        import http.server
        def test_serves():
            http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*started a server*"])


def test_a_network_connection_fails_the_test(unit_tier):
    result = unit_tier("""
        import socket
        def test_connects():
            socket.create_connection(("127.0.0.1", 9), timeout=1)
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*opened a network connection*"])


def test_a_fixture_that_starts_spark_is_refused_before_it_runs(unit_tier):
    result = unit_tier("""
        def test_uses_spark(spark):
            assert spark
    """)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*asks for spark*tests/integration*"])


def test_a_test_that_starts_nothing_passes(unit_tier, tmp_path):
    result = unit_tier("""
        import json, threading
        def test_pure(tmp_path):
            (tmp_path / "x.json").write_text(json.dumps({"a": 1}))
            worker = threading.Thread(target=lambda: None)
            worker.start(); worker.join()
    """)
    result.assert_outcomes(passed=1)


def test_a_spark_session_of_the_same_process_is_not_active_for_a_unit_test(unit_tier):
    """An integration test of the same worker may have started a session: a unit test's code that
    asks for the active one gets None, as in a run of the unit tier alone, and may not build one."""
    result = unit_tier("""
        import pytest
        pyspark_sql = pytest.importorskip("pyspark.sql")

        def test_no_active_session():
            assert pyspark_sql.SparkSession.getActiveSession() is None

        def test_no_new_session():
            pyspark_sql.SparkSession.builder.getOrCreate()
    """)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*asked for a Spark session*"])
