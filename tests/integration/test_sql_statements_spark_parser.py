"""Spark's own parser on what the package sends it (catalog names).

Plain Spark has no grammar for Delta's statements (tests/unit/app/engines/
test_sql_statements_grammar.py checks those against Delta's rules); here Spark's parser, on a
classic or a Spark Connect session (tests/spark_parser.py), checks every table identifier (``parseMultipartIdentifier`` gives back exactly
the parts meant: backticks, dots, spaces, SQL in a name) and the read statement (``parsePlan``: a
``LIMIT 1`` over an ``UnresolvedRelation`` of those parts).
"""

from __future__ import annotations

from delta_downgrade.app.engines.sql_statements import read_statement
from delta_downgrade.app.table_ref import parse_table_ref
from tests.spark_parser import identifier_parts, is_classic, relation_of_failed_statement
from tests.unit.app.engines.test_sql_statements_grammar import NAMES


def test_every_identifier_round_trips_through_sparks_parser(spark):
    for name, parts in NAMES.items():
        assert identifier_parts(spark, parse_table_ref(name).identifier) == parts, name


def test_the_read_statement_parses_to_a_limit_over_the_table(spark):
    for name, parts in NAMES.items():
        statement = read_statement(parse_table_ref(name))
        if not is_classic(spark):
            # Connect: the server parses it and its analyzer names the one relation it reads.
            assert relation_of_failed_statement(spark, statement) == parts, name
            continue
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(statement)
        assert plan.getClass().getSimpleName() == "GlobalLimit"
        leaves = plan.collectLeaves()
        assert leaves.size() == 1
        relation = leaves.head()
        assert relation.getClass().getSimpleName() == "UnresolvedRelation"
        multipart = relation.multipartIdentifier()
        assert [multipart.apply(i) for i in range(multipart.size())] == parts, name
