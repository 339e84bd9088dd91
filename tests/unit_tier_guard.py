"""What keeps ``tests/unit`` a unit tier: a test there starts no child process (so no JVM, no
delta-rs reader, no Azurite), no server, opens no network connection and reaches no Spark session.

``tests/unit/conftest.py`` imports the hooks below; pytest calls a conftest's run-test hooks only
for the tests below that conftest, so integration tests are untouched. For every phase of a unit
test (setup, call, teardown) the ways to start something are replaced by functions that record
what was attempted and raise :class:`StartedInUnitTier`; a record fails the test even when the code
under test swallowed the exception. Fixtures that exist only to start something (``spark``, the
outside readers, the object-store servers, Chromium) are refused before the test runs: a session
fixture may already have been started by an integration test of the same run, and then nothing
would be started to catch.

A test that needs any of this belongs in ``tests/integration``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any, Callable, Iterator

import pytest

#: Fixtures whose only job is to start something the unit tier must not start.
FORBIDDEN_FIXTURES = frozenset({
    "spark", "oracle", "oracle_018", "duckdb_reader", "chromium",
    "s3_endpoint", "azure_endpoint", "gcs_endpoint", "object_store",
    "s3_server", "azurite_server", "gcs_server",
})

_HINT = "move the test to tests/integration (tests/unit starts nothing; see tests/unit_tier_guard.py)"


class StartedInUnitTier(Exception):
    """A unit test tried to start a process, a server, a connection or a Spark session."""


class _Recorder:
    def __init__(self) -> None:
        self.attempts: list[str] = []

    def refuse(self, what: str) -> StartedInUnitTier:
        self.attempts.append(what)
        return StartedInUnitTier(f"a unit test {what}: {_HINT}")


def _is_network(family: Any) -> bool:
    return family in (socket.AF_INET, socket.AF_INET6)


def _guards(recorder: _Recorder) -> Iterator[tuple[Any, str, Callable[..., Any]]]:
    """(owner, attribute, replacement) for every way to start something."""

    def child(*args: Any, **kwargs: Any) -> Any:
        raise recorder.refuse("started a child process")

    def popen(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> Any:
        raise recorder.refuse(f"started a child process ({args!r:.200})")

    yield subprocess.Popen, "_execute_child", popen
    import _posixsubprocess  # multiprocessing's spawn and forkserver start children through it

    yield _posixsubprocess, "fork_exec", child
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            yield os, name, child

    original_listen = socket.socket.listen
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def listen(self: socket.socket, *args: Any) -> Any:
        if _is_network(self.family):
            raise recorder.refuse(f"started a server (listen on {self.getsockname()!r})")
        return original_listen(self, *args)

    def connect(self: socket.socket, address: Any) -> Any:
        if _is_network(self.family):
            raise recorder.refuse(f"opened a network connection to {address!r}")
        return original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if _is_network(self.family):
            raise recorder.refuse(f"opened a network connection to {address!r}")
        return original_connect_ex(self, address)

    yield socket.socket, "listen", listen
    yield socket.socket, "connect", connect
    yield socket.socket, "connect_ex", connect_ex

    # A fixture asked for by name inside a fixture or test (``request.getfixturevalue``) is not in
    # the item's fixture names: refuse it when it is asked for.
    original_getfixturevalue = pytest.FixtureRequest.getfixturevalue

    def getfixturevalue(self: pytest.FixtureRequest, argname: str) -> Any:
        if argname in FORBIDDEN_FIXTURES:
            raise recorder.refuse(f"asked for the fixture {argname!r}, which starts a process or a server")
        return original_getfixturevalue(self, argname)

    yield pytest.FixtureRequest, "getfixturevalue", getfixturevalue

    # A Spark session that already runs in this process (an integration test of the same run
    # started it) is reached without starting anything: refuse reaching it.
    # Asking whether one is active answers as in a process that never started one (the question
    # itself would reach the JVM through py4j's socket).
    def no_active_session(cls: Any) -> None:
        return None

    session_module = sys.modules.get("pyspark.sql.session")
    if session_module is not None:
        def get_or_create(self: Any) -> Any:
            raise recorder.refuse("asked for a Spark session")

        yield session_module.SparkSession.Builder, "getOrCreate", get_or_create
        yield session_module.SparkSession, "getActiveSession", classmethod(no_active_session)
    connect_module = sys.modules.get("pyspark.sql.connect.session")
    if connect_module is not None:
        def connect_get_or_create(self: Any) -> Any:
            raise recorder.refuse("asked for a Spark Connect session")

        yield connect_module.SparkSession.Builder, "getOrCreate", connect_get_or_create
        yield connect_module.SparkSession, "getActiveSession", classmethod(no_active_session)


_REFUSED_FIXTURES = pytest.StashKey[list]()


def _guarded_phase(item: pytest.Item) -> Iterator[None]:
    recorder = _Recorder()
    failure: BaseException | None = None
    with pytest.MonkeyPatch.context() as patch:
        # Without these a session could still be reached through a Connect server of the run.
        for name in ("SPARK_REMOTE", "DELTA_DOWNGRADE_SPARK_REMOTE"):
            patch.delenv(name, raising=False)
        for owner, attribute, replacement in _guards(recorder):
            patch.setattr(owner, attribute, replacement)
        try:
            yield
        except BaseException as exc:  # re-raised below, as the guard's failure when it caused it
            failure = exc
    if recorder.attempts:
        raise StartedInUnitTier(f"{item.nodeid} {'; then '.join(recorder.attempts)}: {_HINT}") from failure
    if failure is not None:
        raise failure


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Note, at collection, a unit test that asks for a fixture that starts something: its setup
    fails before any fixture runs."""
    unit_dir = os.path.join(str(config.rootpath), "tests", "unit") + os.sep
    for item in items:
        asked = FORBIDDEN_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if asked and str(item.path).startswith(unit_dir):
            item.stash[_REFUSED_FIXTURES] = sorted(asked)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    refused = item.stash.get(_REFUSED_FIXTURES, None)
    if refused:
        raise StartedInUnitTier(f"{item.nodeid} asks for {', '.join(refused)}, fixtures that start a "
                                f"process or a server: {_HINT}")
    return (yield from _guarded_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _guarded_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if nextitem is None:
        # The run's last teardown also finalizes the session fixtures (stops the Spark session,
        # the servers) that integration tests started: not the unit test's doing.
        return (yield)
    return (yield from _guarded_phase(item))
