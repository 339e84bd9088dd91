"""The packaged client catalogue's coverage: every client family the issue names
is present, every side is sourced, aliases are unique and resolve, and a few verdicts per family
on protocols where the sources disagree with a naive "supports reader version 3" reading.

The verdicts here follow from the catalogue's data and PROTOCOL.md's rules; the entries whose
verdicts are compared with the real client (deltalake, DuckDB) are tested in
tests/integration/test_compat_catalogue.py."""

from __future__ import annotations

import pytest

from delta_downgrade.compat import Verdict, packaged_catalogue, read_verdict, write_verdict
from delta_downgrade.protocol.protocol import Protocol

FAMILIES = {"deltalake", "duckdb", "polars", "trino", "delta-spark", "databricks", "delta-sharing",
            "snowflake", "bigquery", "athena", "fabric"}

# The short names users type, and the entry each must resolve to (the unversioned alias names
# the latest entry of its family).
ALIASES = {
    "polars": "polars-2.1",
    "trino": "trino-471",
    "duckdb": "duckdb-delta-1.5",
    "dbr": "dbr-17.3",
    "databricks": "dbr-17.3",
    "dbr-13.3": "dbr-13.3",
    "dbr-12.2-lts": "dbr-12.2",
    "delta-sharing": "delta-sharing-parquet",
    "delta-sharing-spark": "delta-sharing-spark-4.3-4.4",
    "delta-sharing-python": "delta-sharing-python-1.3.2",
    "spark-delta-3.2": "delta-spark-3.2",
    "spark-delta-4.1": "delta-spark-4.1-4.2",
    "delta-spark": "delta-spark-4.3-4.4",
    "snowflake": "snowflake-delta-iceberg",
    "bigquery": "bigquery-biglake-delta",
    "athena": "athena-delta",
    "fabric": "fabric-sql-endpoint",
}

DV = Protocol(3, 7, {"deletionVectors"}, {"deletionVectors"})
CM_LEGACY = Protocol(2, 5)
NTZ = Protocol(3, 7, {"timestampNtz"}, {"timestampNtz"})
V2CP = Protocol(3, 7, {"v2Checkpoint"}, {"v2Checkpoint"})
VPC = Protocol(3, 7, {"vacuumProtocolCheck"}, {"vacuumProtocolCheck"})
TW = Protocol(3, 7, {"typeWidening"}, {"typeWidening"})
PLAIN = Protocol(1, 2)
WRITER_ONLY = Protocol(1, 7, None, {"appendOnly", "invariants", "domainMetadata", "rowTracking"})


@pytest.fixture(scope="module")
def cat():
    return packaged_catalogue()


def verdict(cat, client: str, protocol: Protocol) -> Verdict:
    return read_verdict(cat.client(client), protocol).verdict


def test_every_family_the_issue_names_is_present(cat):
    assert FAMILIES <= {c.family for c in cat.clients}
    by_family = {f: [c for c in cat.clients if c.family == f] for f in FAMILIES}
    # By version where features changed between versions (Trino release notes, DBR LTS lines,
    # delta-spark minors, Polars' switches of protocol check).
    assert len(by_family["trino"]) >= 5
    assert {c.id for c in by_family["databricks"]} >= {
        "dbr-10.4", "dbr-11.3", "dbr-12.2", "dbr-13.3", "dbr-14.3", "dbr-15.4", "dbr-16.4", "dbr-17.3"}
    assert len(by_family["polars"]) >= 2
    assert "delta-sharing-parquet" in {c.id for c in by_family["delta-sharing"]}


def test_every_side_is_sourced_with_a_statement(cat):
    for c in cat.clients:
        for side in (c.read, c.write):
            if side is None:
                continue
            assert side.sources, c.id
            for s in side.sources:
                assert s.url.startswith("https://") and " " not in s.url, (c.id, s.url)
                assert len(s.states) > 10, (c.id, s.url)


def test_ids_and_aliases_are_unique_case_insensitively(cat):
    names = [n.lower() for c in cat.clients for n in (c.id, *c.aliases)]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("alias, client_id", sorted(ALIASES.items()))
def test_client_resolves_each_short_name(cat, alias, client_id):
    assert cat.client(alias).id == client_id
    assert cat.client(alias.upper()).id == client_id  # case-insensitive, as --client is


def test_every_alias_and_id_resolves_to_its_own_entry(cat):
    for c in cat.clients:
        for name in (c.id, *c.aliases):
            assert cat.client(name) is c


def test_nothing_passes_every_protocol(cat):
    # A catalogue entry that says yes to a reader feature no client knows would be a typo'd
    # "features" list; the unknown name is refused outright (PROTOCOL.md: unknown reader feature).
    odd = Protocol(3, 7, {"someFutureFeature"}, {"someFutureFeature"})
    for c in cat.clients:
        assert read_verdict(c, odd).verdict in (Verdict.NO, Verdict.UNKNOWN), c.id


# --- verdicts per family -------------------------------------------------------------------------

def test_delta_sharing_parquet_format_serves_reader_version_one_only(cat):
    assert verdict(cat, "delta-sharing", PLAIN) is Verdict.YES
    assert verdict(cat, "delta-sharing", WRITER_ONLY) is Verdict.YES  # writer features do not matter
    v = read_verdict(cat.client("delta-sharing"), DV)
    assert v.verdict is Verdict.NO and v.blockers[0].kind == "reader_version"
    assert verdict(cat, "delta-sharing", CM_LEGACY) is Verdict.NO
    assert write_verdict(cat.client("delta-sharing"), PLAIN).verdict is Verdict.NOT_APPLICABLE  # read-only


def test_delta_sharing_delta_format_reads_what_the_client_announces(cat):
    assert verdict(cat, "delta-sharing-python-1.1-1.3.1", DV) is Verdict.YES
    assert verdict(cat, "delta-sharing-python-1.1-1.3.1", CM_LEGACY) is Verdict.YES
    # timestampNtz is announced from 1.3.2; before, the server decides: unknown, not no.
    assert verdict(cat, "delta-sharing-python-1.1-1.3.1", NTZ) is Verdict.UNKNOWN
    assert verdict(cat, "delta-sharing-python", NTZ) is Verdict.YES
    assert verdict(cat, "delta-sharing-spark-3.1-3.2", TW) is Verdict.UNKNOWN
    assert verdict(cat, "delta-sharing-spark", TW) is Verdict.YES


def test_dbr_12_2_reads_deletion_vectors_and_older_lts_lines_do_not(cat):
    assert verdict(cat, "dbr-12.2", DV) is Verdict.YES
    assert verdict(cat, "dbr-11.3", DV) is Verdict.NO
    assert verdict(cat, "dbr-10.4", CM_LEGACY) is Verdict.YES
    # Features documented from a later runtime are a definite no for an older one ...
    v = read_verdict(cat.client("dbr-12.2"), Protocol(3, 7, {"deletionVectors", "v2Checkpoint"},
                                                      {"deletionVectors", "v2Checkpoint"}))
    assert v.verdict is Verdict.NO and v.blocking_features == ("v2Checkpoint",)
    assert verdict(cat, "dbr-13.3", V2CP) is Verdict.YES
    assert verdict(cat, "dbr-14.3", TW) is Verdict.NO
    assert verdict(cat, "dbr-15.4", TW) is Verdict.YES
    # ... a feature no Databricks page dates stays unknown, never a guessed yes or no.
    assert verdict(cat, "dbr-15.4", VPC) is Verdict.UNKNOWN
    assert write_verdict(cat.client("dbr-15.4"), PLAIN).verdict is Verdict.UNKNOWN


def test_trino_versions_with_and_without_v2_checkpoints(cat):
    assert verdict(cat, "trino-427-443", DV) is Verdict.YES
    assert verdict(cat, "trino-427-443", V2CP) is Verdict.NO
    assert verdict(cat, "trino-444-448", V2CP) is Verdict.YES
    assert verdict(cat, "trino-444-448", VPC) is Verdict.NO
    assert verdict(cat, "trino-449", VPC) is Verdict.YES
    assert verdict(cat, "trino-423-426", DV) is Verdict.NO
    assert verdict(cat, "trino", TW) is Verdict.YES
    # The latest connector reads v2 checkpoints but does not write them (writer feature set).
    w = write_verdict(cat.client("trino"), V2CP)
    assert w.verdict is Verdict.NO and w.blocking_features == ("v2Checkpoint",)
    assert write_verdict(cat.client("trino"), DV).verdict is Verdict.YES
    assert write_verdict(cat.client("trino-444-448"), DV).verdict is Verdict.UNKNOWN


def test_polars_refuses_column_mapping_and_reads_deletion_vectors_from_1_40(cat):
    for name in ("polars-1.39", "polars-1.40-1.43", "polars"):
        v = read_verdict(cat.client(name), CM_LEGACY)
        assert v.verdict is Verdict.NO and v.blockers[0].kind == "reader_version", name
        assert verdict(cat, name, NTZ) is Verdict.YES
    assert verdict(cat, "polars-1.39", DV) is Verdict.NO
    assert verdict(cat, "polars-1.40-1.43", DV) is Verdict.YES
    assert verdict(cat, "polars", Protocol(3, 7, {"variantType"}, {"variantType"})) is Verdict.YES
    assert write_verdict(cat.client("polars"), PLAIN).verdict is Verdict.NOT_APPLICABLE


def test_delta_spark_minor_versions(cat):
    assert verdict(cat, "spark-delta-2.2", DV) is Verdict.NO
    assert verdict(cat, "spark-delta-2.2", CM_LEGACY) is Verdict.YES
    assert verdict(cat, "spark-delta-2.3", DV) is Verdict.YES
    # 2.3 reads deletion vectors but refuses to commit to a table supporting them
    assert write_verdict(cat.client("spark-delta-2.3"), DV).verdict is Verdict.NO
    assert write_verdict(cat.client("spark-delta-2.4"), DV).verdict is Verdict.YES
    assert verdict(cat, "spark-delta-3.1", VPC) is Verdict.NO
    assert verdict(cat, "spark-delta-3.2", VPC) is Verdict.YES


def test_documented_only_clients_say_unknown_beyond_their_documents(cat):
    for name in ("bigquery", "athena", "snowflake"):
        assert verdict(cat, name, DV) is Verdict.YES, name
        assert verdict(cat, name, V2CP) is Verdict.UNKNOWN, name
    assert verdict(cat, "athena", NTZ) is Verdict.YES
    assert verdict(cat, "snowflake-delta-iceberg-before-2026-03", DV) is Verdict.NO
    assert verdict(cat, "snowflake-delta-iceberg-before-2026-03", CM_LEGACY) is Verdict.YES
    assert write_verdict(cat.client("athena"), PLAIN).verdict is Verdict.NOT_APPLICABLE  # read-only
    # Fabric's SQL endpoint reads name-mode column mapping but not id mode, which the protocol
    # cannot tell apart: unknown.
    assert verdict(cat, "fabric", DV) is Verdict.YES
    assert verdict(cat, "fabric", CM_LEGACY) is Verdict.UNKNOWN
