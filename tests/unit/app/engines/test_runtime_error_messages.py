"""A runtime error's message as the user sees it: the runtime's own first line, whatever wrapper
PySpark hands it over in.

PySpark converts the Spark exceptions it knows (``AnalysisException`` …); a Delta exception it
does not (delta-spark's ``DeltaUnsupportedTableFeatureException`` for a table with a reader
feature Delta lacks) arrives as py4j's ``Py4JJavaError``, whose text is "An error occurred while
calling o50.sql." followed by the Java exception's class, message and stack. The shapes below
are those texts as delta-spark 4.4 gives them (tests/integration/test_catalog_names.py reads the
same refusal from the real runtime).
"""

from __future__ import annotations

from delta_downgrade.app.engines.sql_session import error_class_of, map_error, runtime_message

JAVA_MESSAGE = ('[DELTA_UNSUPPORTED_FEATURES_FOR_READ] Unsupported Delta read feature: table "default.x" '
                'requires reader table feature(s) that are unsupported by Delta Lake "4.4.0": '
                'aFeatureFromTheFuture.')
PY4J_TEXT = ("An error occurred while calling o50.sql.\n"
             ": org.apache.spark.sql.delta.DeltaUnsupportedTableFeatureException: " + JAVA_MESSAGE + "\n"
             "\tat org.apache.spark.sql.delta.DeltaUnsupportedTableFeatureException.copy(DeltaErrors.scala:4536)\n")


class _JavaException:
    def __init__(self, message: str) -> None:
        self._message = message

    def getMessage(self) -> str:  # noqa: N802 - Java's name
        return self._message


class Py4JJavaErrorShape(Exception):
    """py4j's Py4JJavaError: ``java_exception`` and the text above."""

    def __init__(self, text: str, java_exception: _JavaException | None) -> None:
        super().__init__(text)
        self.java_exception = java_exception


def test_the_java_exceptions_message_not_py4js_call_line():
    exc = Py4JJavaErrorShape(PY4J_TEXT, _JavaException(JAVA_MESSAGE))
    assert runtime_message(exc) == JAVA_MESSAGE
    mapped = map_error(exc, "spark_catalog.default.x", None)
    assert mapped.error_class == "DELTA_UNSUPPORTED_FEATURES_FOR_READ"
    assert mapped.message.startswith("Unsupported Delta read feature: table")
    assert "An error occurred while calling" not in str(mapped)


def test_without_the_java_object_the_line_with_the_class_without_the_java_class_name():
    exc = Py4JJavaErrorShape(PY4J_TEXT, None)
    assert error_class_of(exc) == "DELTA_UNSUPPORTED_FEATURES_FOR_READ"
    assert runtime_message(exc) == JAVA_MESSAGE


def test_a_converted_exceptions_first_line_is_kept():
    exc = Exception("[TABLE_OR_VIEW_NOT_FOUND] The table or view `a`.`b` cannot be found.\nSearch path: x")
    assert runtime_message(exc) == "[TABLE_OR_VIEW_NOT_FOUND] The table or view `a`.`b` cannot be found."
    assert runtime_message(Exception("")) == "Exception"


def test_an_unknown_catalog_is_bad_input_with_sparks_class_and_sqlstate():
    """Spark takes the unknown catalog of ``main.default.t`` as a namespace of its session catalog
    and refuses the name with REQUIRES_SINGLE_PART_NAMESPACE (SQLSTATE 42K05): a wrong name, exit
    2 with what to check, as for an unknown table."""
    exc = Exception("[REQUIRES_SINGLE_PART_NAMESPACE] spark_catalog requires a single-part namespace, "
                    "but got identifier `main`.`default`.`t`. SQLSTATE: 42K05")
    mapped = map_error(exc, "main.default.t", None)
    assert (mapped.error_class, mapped.exit_code, mapped.sqlstate) == ("REQUIRES_SINGLE_PART_NAMESPACE", 2, "42K05")
    assert "Next: check the name as catalog.schema.table (SHOW CATALOGS" in mapped.message
    for error_class in ("SCHEMA_NOT_FOUND", "CATALOG_NOT_FOUND", "NO_SUCH_CATALOG_EXCEPTION"):
        assert map_error(Exception(f"[{error_class}] x"), "a.b.c", None).exit_code == 2


def test_a_message_without_sqlstate_keeps_the_types_own():
    mapped = map_error(Exception("[TABLE_OR_VIEW_NOT_FOUND] The table or view `a`.`b` cannot be found."), "a.b", None)
    assert mapped.sqlstate == "42P01"
