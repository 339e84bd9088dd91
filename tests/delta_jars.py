"""Delta's own jars for the tests: delta-spark (and the jars it needs at runtime) and hadoop-aws,
resolved by ``make jars`` (jars/pom.xml) into ``.jars/``.

`use_fetched_jars` (called once by tests/conftest.py, before any session starts) points
``DELTA_DOWNGRADE_DELTA_JARS`` at the Delta jars of ``.jars/spark.classpath`` unless the caller set
it, so the ``spark`` fixture's session, a Connect server the tests start, and every CLI or task
subprocess inheriting the environment have Delta SQL. hadoop-aws and its AWS SDK bundle are kept
apart (`hadoop_aws_jars`): only tests about ``s3a://`` put them on a classpath.

`delta_spark` is the ``spark`` fixture with Delta SQL proven present: a test that needs Delta fails
(red, never a skip) when the jars are missing, with what to run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CLASSPATH_FILE = REPO_ROOT / ".jars" / "spark.classpath"
ENV = "DELTA_DOWNGRADE_DELTA_JARS"
#: Artifacts of the hadoop-aws side of jars/pom.xml (the s3a:// connector), by file-name prefix.
S3A_PREFIXES = ("hadoop-aws-", "bundle-", "analyticsaccelerator-s3-", "wildfly-openssl-")

#: Why the jars are not usable, or None: filled by `use_fetched_jars`.
missing_reason: str | None = None


def _classpath() -> list[Path]:
    if not CLASSPATH_FILE.is_file():
        return []
    return [Path(p) for p in CLASSPATH_FILE.read_text(encoding="utf-8").strip().split(",") if p]


def _is_s3a(jar: Path) -> bool:
    return jar.name.startswith(S3A_PREFIXES)


def fetched_delta_jars() -> list[Path]:
    """The Delta jars ``make jars`` resolved (delta-spark, delta-storage, Kernel, UC client)."""
    return [j for j in _classpath() if not _is_s3a(j)]


def hadoop_aws_jars() -> list[Path]:
    """hadoop-aws, its AWS SDK v2 bundle and their runtime jars (``s3a://``)."""
    return [j for j in _classpath() if _is_s3a(j)]


def use_fetched_jars() -> None:
    """Set ``DELTA_DOWNGRADE_DELTA_JARS`` from ``.jars/spark.classpath`` (a value already in the
    environment wins: the caller's jars); record why not in `missing_reason`."""
    global missing_reason
    if os.environ.get(ENV):
        return
    jars = fetched_delta_jars()
    absent = [str(j) for j in jars if not j.is_file()]
    if not jars or absent:
        missing_reason = (f"Delta's jars are missing ({', '.join(absent) or CLASSPATH_FILE}): "
                          "run `make jars` (Maven fetches jars/pom.xml) or set " + ENV)
        return
    os.environ[ENV] = ",".join(str(j) for j in jars)


@pytest.fixture(scope="session")
def delta_spark(spark):
    """The test session's ``spark`` with Delta SQL (delta-spark's extension and catalog): fails,
    never skips, when Delta's jars are not on its classpath."""
    from delta_downgrade.spark import has_delta_sql

    if not has_delta_sql(spark):
        pytest.fail(missing_reason or f"the test session has no Delta SQL although {ENV} is set "
                    f"({os.environ.get(ENV)!r})", pytrace=False)
    return spark
