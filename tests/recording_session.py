"""A real Spark session that remembers the statements run on it (test support).

`RecordingSession` wraps the test's own SparkSession with Delta SQL: every call goes to the real
session (Spark parses, Delta answers and writes); ``sql(statement)`` also appends the statement
to ``statements``, so a test can say which statements the package issued (by catalog name, never
by path) without a stand-in playing the runtime. `activate` makes it the session the package
finds (``SparkSession.getActiveSession``).
"""

from __future__ import annotations

from typing import Any


class RecordingSession:
    def __init__(self, spark: Any) -> None:
        self._spark = spark
        self.statements: list[str] = []

    def sql(self, statement: str, *args: Any, **kwargs: Any) -> Any:
        self.statements.append(statement)
        return self._spark.sql(statement, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spark, name)


def activate(spark: Any, monkeypatch: Any) -> RecordingSession:
    """``spark`` wrapped, and returned by ``SparkSession.getActiveSession`` for this test."""
    from pyspark.sql import SparkSession

    session = RecordingSession(spark)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: session))
    return session
