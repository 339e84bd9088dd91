"""The older Delta clients of the integration tests: a client's process, refused with the reason
when the client is not installed (``make older-clients``), and the current delta-spark every
older client's rows are compared with."""

from __future__ import annotations

import time
from typing import Any, Iterator

import pytest

from delta_downgrade_tools import clients_matrix as matrix
from delta_downgrade_tools.older_clients import CURRENT_SPARK, ClientProcess, ClientSpec, SessionRunner


def client_process(spec: ClientSpec) -> ClientProcess:
    """A process of ``spec``; the test fails naming what is missing when it is not installed."""
    why = spec.missing()
    if why:
        pytest.fail(f"{spec.name} is not installed: {why}", pytrace=False)
    return ClientProcess(spec)


def cached_reference(delta_spark: Any) -> Iterator[matrix.CachedReads]:
    """For a fixture: the current delta-spark, its reads cached - the test session's when this
    process runs in UTC as the clients do, else a process of its own, closed afterwards."""
    if time.timezone == 0 and time.daylight == 0:
        yield matrix.CachedReads(SessionRunner(delta_spark))
        return
    process = client_process(CURRENT_SPARK)
    try:
        yield matrix.CachedReads(process)
    finally:
        process.close()
