"""A Delta refusal raised inside a job's thread pool (delta-spark 3.2's DROP FEATURE
typeWidening-preview rewrites files with an OPTIMIZE executor) reaches the client wrapped in
Spark's "Exception thrown in awaitResult": the runner answers the Delta error class found down the
cause chain, and keeps the outer class when the chain holds no Delta one."""

from __future__ import annotations

from delta_downgrade_tools.client_runner import error_answer


class Throwable:
    """The Py4J view of a Java throwable: toString, getCause, an error class or none."""

    def __init__(self, text: str, error_class: str | None = None, cause: "Throwable | None" = None) -> None:
        self.text, self.error_class, self.cause = text, error_class, cause

    def toString(self) -> str:  # noqa: N802 - the Java method's name
        return self.text

    def getCause(self):  # noqa: N802
        return self.cause

    def getErrorClass(self):  # noqa: N802
        if self.error_class is None:
            raise RuntimeError("no such method")  # as Py4J answers a throwable without one
        return self.error_class


class Py4JLike(Exception):
    def __init__(self, java: Throwable) -> None:
        super().__init__("An error occurred while calling o33.sql.")
        self.java_exception = java


def test_the_delta_error_class_down_the_cause_chain_is_the_answer():
    delta = Throwable("org.apache.spark.sql.delta.DeltaIllegalStateException: [DELTA_UNSUPPORTED_TYPE_CHANGE_IN_SCHEMA] "
                      "Unable to operate on this table because an unsupported type change was applied.",
                      "DELTA_UNSUPPORTED_TYPE_CHANGE_IN_SCHEMA")
    outer = Throwable("org.apache.spark.SparkException: Exception thrown in awaitResult:", None,
                      Throwable("org.apache.spark.SparkException: Exception thrown in awaitResult:", None, delta))
    answer = error_answer(Py4JLike(outer))
    assert answer["ok"] is False
    assert answer["error_class"] == "DELTA_UNSUPPORTED_TYPE_CHANGE_IN_SCHEMA"
    assert "awaitResult" in answer["error"] and "unsupported type change" in answer["error"]


def test_a_chain_without_a_delta_error_class_keeps_the_outer_class():
    outer = Throwable("org.apache.spark.SparkException: Job aborted due to stage failure", None,
                      Throwable("org.apache.hadoop.fs.ChecksumException: Checksum error", None))
    assert error_answer(Py4JLike(outer))["error_class"] == "SparkException"


def test_an_error_class_of_the_outer_exception_wins():
    outer = Throwable("org.apache.spark.sql.delta.DeltaUnsupportedTableFeatureException: "
                      "[DELTA_UNSUPPORTED_FEATURES_FOR_READ] ...", "DELTA_UNSUPPORTED_FEATURES_FOR_READ",
                      Throwable("x", "DELTA_OTHER"))
    assert error_answer(Py4JLike(outer))["error_class"] == "DELTA_UNSUPPORTED_FEATURES_FOR_READ"
