"""One parse of a table argument: a path/URI, delta.`path` (read as the path), or a
catalog name of 1-3 parts, plain or backtick-quoted."""

from __future__ import annotations

import pytest

from delta_downgrade.app.table_ref import parse_table_ref
from delta_downgrade.errors import InvalidIdentifierError


@pytest.mark.parametrize("text, path", [
    ("/data/t", "/data/t"),
    ("./rel/t", "./rel/t"),
    ("s3://bucket/x` y", "s3://bucket/x` y"),
    ("abfss://c@acct.dfs.core.windows.net/t", "abfss://c@acct.dfs.core.windows.net/t"),
    ("delta.`/data/t`", "/data/t"),
    ("DELTA.`/data/t`", "/data/t"),
    ("delta.`s3://bucket/t`", "s3://bucket/t"),
    ("delta.`/data/a``b`", "/data/a`b"),
    ("delta.`file:/data/t`", "file:/data/t"),
])
def test_paths_and_delta_path_identifiers_are_paths(text, path):
    ref = parse_table_ref(text)
    assert not ref.is_name and ref.path == path and ref.display == path


@pytest.mark.parametrize("text, parts", [
    ("main.default.events", ("main", "default", "events")),
    ("events", ("events",)),
    ("ops.events", ("ops", "events")),
    ("main.`we.ird`.t", ("main", "we.ird", "t")),
    ("a.`b``c`.d", ("a", "b`c", "d")),
    ("cat.`sch ema`.`t DROP FEATURE x --`", ("cat", "sch ema", "t DROP FEATURE x --")),
    ("main.`a/b`.t", ("main", "a/b", "t")),
    # delta.`x` with a relative, non-path part is not delta-spark's path identifier
    # (isPathIdentifier needs an absolute path): schema "delta", table "events".
    ("delta.`events`", ("delta", "events")),
])
def test_catalog_names(text, parts):
    ref = parse_table_ref(text)
    assert ref.is_name and ref.parts == parts and ref.path is None and ref.display == text


def test_identifier_quotes_every_part():
    assert parse_table_ref("main.`b``c`.t").identifier == "`main`.`b``c`.`t`"
    assert parse_table_ref("delta.`/d/a``b`").identifier == "delta.`/d/a``b`"


@pytest.mark.parametrize("text", ["", "  ", "a.b.c.d", "main.ops.t; DROP TABLE x", "a..b", "main.`ops",
                                  "main.ops.", "a.`b`c", "main.`` .t"])
def test_anything_else_is_an_invalid_identifier(text):
    with pytest.raises(InvalidIdentifierError) as info:
        parse_table_ref(text)
    assert info.value.exit_code == 2 and info.value.error_class == "INVALID_IDENTIFIER"
