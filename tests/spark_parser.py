"""Spark's own parser, on a classic session or a Spark Connect one, for tests that prove what the
package sends Spark parses to exactly the parts it means.

A classic session reaches the parser through its JVM (``parseMultipartIdentifier``, ``parsePlan``).
A Connect session has no JVM: there the statement is sent to the server, whose parser reads it and
whose analyzer then fails to find the relation; the error names the relation as Spark itself
renders a multi-part identifier (``toSQLId``: every part in backticks, an embedded backtick doubled),
which reads back unambiguously. A statement the parser refuses raises the parser's error in both.
"""

from __future__ import annotations

import re

_QUOTED_PART = re.compile(r"`((?:[^`]|``)*)`")


def is_classic(spark) -> bool:
    return hasattr(spark, "_jsparkSession")


def _jvm_seq(seq) -> list[str]:
    return [seq.apply(i) for i in range(seq.size())]


def canonical_parts(rendered: str) -> list[str]:
    """The parts of an identifier as Spark's errors render it: `a`.`b``c` -> ["a", "b`c"]."""
    parts, pos = [], 0
    while True:
        match = _QUOTED_PART.match(rendered, pos)
        assert match, f"not Spark's rendering of an identifier: {rendered!r}"
        parts.append(match.group(1).replace("``", "`"))
        pos = match.end()
        if pos == len(rendered):
            return parts
        assert rendered[pos] == ".", rendered
        pos += 1


def relation_of_failed_statement(spark, statement: str) -> list[str]:
    """The parts of the one relation ``statement`` reads, from the analyzer's refusal (the
    relation does not exist on the test session); the parser's own error propagates."""
    from pyspark.errors import AnalysisException, ParseException

    try:
        _ = spark.sql(statement).schema
    except ParseException:
        raise  # the parser's refusal (a subclass of AnalysisException): the caller's answer
    except AnalysisException as exc:
        params = exc.getMessageParameters() or {}
        rendered = params.get("relationName") or params.get("identifier")
        assert rendered, (exc.getCondition(), params)
        return canonical_parts(rendered)
    raise AssertionError(f"{statement!r} resolved a relation on a session that has none")


def identifier_parts(spark, identifier: str) -> list[str]:
    """What Spark's parser reads ``identifier`` as, part by part."""
    if is_classic(spark):
        return _jvm_seq(spark._jsparkSession.sessionState().sqlParser().parseMultipartIdentifier(identifier))
    # SHOW TBLPROPERTIES takes the identifier and nothing after it (in a SELECT a trailing word
    # would read as an alias), and reads nothing.
    return relation_of_failed_statement(spark, f"SHOW TBLPROPERTIES {identifier}")
