"""Spark's own parser on what the package sends it (issue 14, catalog names).

Plain Spark has no grammar for Delta's statements (tests/unit/app/engines/
test_sql_statements_grammar.py checks those against Delta's rules); here Spark's parser, on a
classic session, checks every table identifier (``parseMultipartIdentifier`` gives back exactly
the parts meant: backticks, dots, spaces, SQL in a name) and the read statement (``parsePlan``: a
``LIMIT 1`` over an ``UnresolvedRelation`` of those parts).
"""

from __future__ import annotations

import pytest

from delta_downgrade.app.engines.sql_statements import read_statement
from delta_downgrade.app.table_ref import parse_table_ref
from tests.unit.app.engines.test_sql_statements_grammar import NAMES


def _parser(spark):
    if not hasattr(spark, "_jsparkSession"):
        pytest.skip("Spark's parser is reached through a classic session's JVM")
    return spark._jsparkSession.sessionState().sqlParser()


def _seq(seq) -> list[str]:
    return [seq.apply(i) for i in range(seq.size())]


def test_every_identifier_round_trips_through_sparks_parser(spark):
    parser = _parser(spark)
    for name, parts in NAMES.items():
        assert _seq(parser.parseMultipartIdentifier(parse_table_ref(name).identifier)) == parts, name


def test_the_read_statement_parses_to_a_limit_over_the_table(spark):
    parser = _parser(spark)
    for name, parts in NAMES.items():
        plan = parser.parsePlan(read_statement(parse_table_ref(name)))
        assert plan.getClass().getSimpleName() == "GlobalLimit"
        leaves = plan.collectLeaves()
        assert leaves.size() == 1
        relation = leaves.head()
        assert relation.getClass().getSimpleName() == "UnresolvedRelation"
        assert _seq(relation.multipartIdentifier()) == parts, name
