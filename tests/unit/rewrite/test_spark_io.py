"""Spark names taken literally (rewrite/spark_io.py): glob escaping and column quoting; no Spark."""

from __future__ import annotations

import re

import pytest

from delta_downgrade.rewrite.spark_io import escape_glob, quote_name


@pytest.mark.parametrize(("path", "escaped"), [
    ("/t/p=1/part-0.parquet", "/t/p=1/part-0.parquet"),
    ("/t/a*b?.parquet", "/t/a\\*b\\?.parquet"),
    ("/t/p=[1]/x.parquet", "/t/p=\\[1\\]/x.parquet"),
    ("/t/{a,b}.parquet", "/t/\\{a,b\\}.parquet"),
    ("/t/back\\slash", "/t/back\\\\slash"),
    ("s3://b/t/é %20+~.parquet", "s3://b/t/é %20+~.parquet"),  # only glob characters change
])
def test_escape_glob(path, escaped):
    assert escape_glob(path) == escaped
    assert re.sub(r"\\(.)", r"\1", escape_glob(path)) == path  # Hadoop's unescaping gives the path back


def test_quote_name():
    assert quote_name("a") == "`a`"
    assert quote_name("a.b c") == "`a.b c`"
    assert quote_name("we`ird") == "`we``ird`"
