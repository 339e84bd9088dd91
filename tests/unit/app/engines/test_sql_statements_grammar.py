"""Every statement of Delta's own grammar that the package can issue, checked against Delta's
parser rules.

The rules below are those of delta-io/delta ``spark/src/main/antlr4/io/delta/sql/parser/
DeltaSqlBase.g4`` (facts, restated, not copied):

- ``#alterTableDropFeature``: ``ALTER TABLE qualifiedName DROP FEATURE featureNameValue
  (TRUNCATE HISTORY)?``; ``featureNameValue: identifier | stringLit``;
- ``#describeDeltaDetail``: ``(DESC | DESCRIBE) DETAIL (stringLit | qualifiedName)``;
- ``#describeDeltaHistory``: ``(DESC | DESCRIBE) HISTORY (stringLit | qualifiedName)
  (LIMIT INTEGER_VALUE)?``;
- ``qualifiedName: identifier ('.' identifier)*``; ``identifier: IDENTIFIER | quotedIdentifier |
  nonReserved``; ``IDENTIFIER: (LETTER | DIGIT | '_')+``; ``BACKQUOTED_IDENTIFIER: '`' (~'`' |
  '``')* '`'``; keywords match case-insensitively (the parser upper-cases its input stream);
  ``DELTA``, ``TABLE``, ``HISTORY``, ``FEATURE``, ``LIMIT``, ``DETAIL`` … are nonReserved.

The checker tokenizes and parses with these rules alone and gives back the identifier parts and
the feature name, which must be exactly the ones meant.
"""

from __future__ import annotations

import re

import pytest

from delta_downgrade.app.engines.sql_statements import (
    describe_detail_statement, describe_history_statement, drop_feature_statement, read_statement,
)
from delta_downgrade.app.table_ref import parse_table_ref
from delta_downgrade.protocol.features import FEATURES

KEYWORDS = {"ALTER", "TABLE", "DROP", "FEATURE", "TRUNCATE", "HISTORY", "DESC", "DESCRIBE", "DETAIL",
            "LIMIT", "DELTA"}
# DeltaSqlBase.g4 nonReserved (the subset among KEYWORDS; ALTER and DROP are not in it).
NON_RESERVED = {"TABLE", "FEATURE", "TRUNCATE", "HISTORY", "DESC", "DESCRIBE", "DETAIL", "LIMIT", "DELTA"}

_LEX = re.compile(r"\s+|(?P<bq>`(?:[^`]|``)*`)|(?P<word>[A-Za-z0-9_]+)|(?P<str>'(?:[^'\\]|\\.)*')|(?P<p>\.)")


class Unparsable(Exception):
    pass


def lex(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _LEX.match(text, pos)
        if m is None or m.end() == pos:
            raise Unparsable(f"no token at {text[pos:]!r}")
        pos = m.end()
        if m.group("bq") is not None:
            out.append(("BACKQUOTED_IDENTIFIER", m.group("bq")[1:-1].replace("``", "`")))
        elif m.group("word") is not None:
            word = m.group("word")
            if word.upper() in KEYWORDS:
                out.append((word.upper(), word))
            elif word.isdigit():
                out.append(("INTEGER_VALUE", word))
            else:
                out.append(("IDENTIFIER", word))
        elif m.group("str") is not None:
            out.append(("STRING", m.group("str")))
        elif m.group("p") is not None:
            out.append((".", "."))
    return out


class Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.t, self.i = tokens, 0

    def peek(self) -> str | None:
        return self.t[self.i][0] if self.i < len(self.t) else None

    def take(self, *kinds: str) -> str:
        if self.peek() not in kinds:
            raise Unparsable(f"expected {kinds} at token {self.i}: {self.t[self.i:]}")
        self.i += 1
        return self.t[self.i - 1][1]

    def identifier(self) -> str:
        return self.take("IDENTIFIER", "BACKQUOTED_IDENTIFIER", *NON_RESERVED)

    def qualified_name(self) -> list[str]:
        parts = [self.identifier()]
        while self.peek() == ".":
            self.take(".")
            parts.append(self.identifier())
        return parts

    def end(self) -> None:
        if self.peek() is not None:
            raise Unparsable(f"trailing tokens {self.t[self.i:]}")


def parse_delta_statement(text: str) -> dict:
    p = Parser(lex(text))
    if p.peek() == "ALTER":
        p.take("ALTER"), p.take("TABLE")
        table = p.qualified_name()
        p.take("DROP"), p.take("FEATURE")
        feature = p.take("STRING") if p.peek() == "STRING" else p.identifier()
        truncate = False
        if p.peek() == "TRUNCATE":
            p.take("TRUNCATE"), p.take("HISTORY")
            truncate = True
        p.end()
        return {"rule": "alterTableDropFeature", "table": table, "feature": feature, "truncate": truncate}
    p.take("DESC", "DESCRIBE")
    kind = p.take("DETAIL", "HISTORY").upper()
    table = p.qualified_name()
    limit = None
    if kind == "HISTORY" and p.peek() == "LIMIT":
        p.take("LIMIT")
        limit = int(p.take("INTEGER_VALUE"))
    p.end()
    return {"rule": "describeDelta" + kind.title(), "table": table, "limit": limit}


NAMES = {
    "main.ops.events": ["main", "ops", "events"],
    "events": ["events"],
    "MAIN.Default.Events": ["MAIN", "Default", "Events"],
    "main.`we.ird`.t": ["main", "we.ird", "t"],
    "a.`b``c`.d": ["a", "b`c", "d"],
    "`x; DROP TABLE y`": ["x; DROP TABLE y"],
    "cat.`sch ema`.`t DROP FEATURE x --`": ["cat", "sch ema", "t DROP FEATURE x --"],
    "main.`table`.`history`": ["main", "table", "history"],
    "delta.`/data/p`": ["delta", "/data/p"],
    "/data/p`q": ["delta", "/data/p`q"],
    "s3://bucket/x` y": ["delta", "s3://bucket/x` y"],
    "./rel/t": ["delta", "./rel/t"],
}
FEATURE_NAMES = sorted({f.name for f in FEATURES.values()}) + ["futureFeature-x_1"]


@pytest.mark.parametrize("name", sorted(NAMES))
def test_drop_feature_statements_parse_with_deltas_rules(name):
    ref = parse_table_ref(name)
    for feature in FEATURE_NAMES:
        for truncate in (False, True):
            parsed = parse_delta_statement(drop_feature_statement(ref, feature, truncate))
            assert parsed == {"rule": "alterTableDropFeature", "table": NAMES[name],
                              "feature": feature, "truncate": truncate}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_describe_statements_parse_with_deltas_rules(name):
    ref = parse_table_ref(name)
    assert parse_delta_statement(describe_detail_statement(ref)) == \
        {"rule": "describeDeltaDetail", "table": NAMES[name], "limit": None}
    for limit in (None, 1, 50):
        assert parse_delta_statement(describe_history_statement(ref, limit)) == \
            {"rule": "describeDeltaHistory", "table": NAMES[name], "limit": limit}


def test_a_feature_name_with_a_dash_is_one_backquoted_identifier():
    """``typeWidening-preview`` is not an IDENTIFIER (no '-' in it): only backquoted does it parse."""
    with pytest.raises(Unparsable):
        parse_delta_statement("ALTER TABLE `t` DROP FEATURE typeWidening-preview")
    assert parse_delta_statement(drop_feature_statement(parse_table_ref("t"), "typeWidening-preview", False))[
        "feature"] == "typeWidening-preview"


@pytest.mark.parametrize("limit", [0, -1, True, 1.5])
def test_history_limit_is_a_positive_integer(limit):
    with pytest.raises(ValueError):
        describe_history_statement(parse_table_ref("t"), limit)


def test_the_checker_refuses_what_delta_refuses():
    for text in ["ALTER TABLE a.b DROP FEATURE x TRUNCATE", "ALTER TABLE a..b DROP FEATURE x",
                 "DESCRIBE HISTORY t LIMIT x", "DESCRIBE DETAIL t extra", "ALTER TABLE t DROP FEATURE a b"]:
        with pytest.raises(Unparsable):
            parse_delta_statement(text)


def test_read_statement_is_a_select_of_one_row():
    # Spark's own grammar parses it: tests/integration/test_sql_statements_spark_parser.py
    assert read_statement(parse_table_ref("main.`a b`.t")) == "SELECT * FROM `main`.`a b`.`t` LIMIT 1"
