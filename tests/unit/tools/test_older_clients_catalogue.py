"""The clients installed for the compatibility matrix (tools/src/delta_downgrade_tools/
older_clients.py) and the catalogue's ``verified`` entries name each other: an entry is marked
verified exactly when a client run here checks it, and every such client names a real entry."""

from __future__ import annotations

from delta_downgrade.compat import packaged_catalogue
from delta_downgrade_tools.older_clients import CURRENT_SPARK, PYTHON_CLIENTS, SPARK_CLIENTS, all_clients


def test_every_installed_client_checks_a_catalogue_entry():
    catalogue = packaged_catalogue()
    for spec in all_clients():
        assert catalogue.client(spec.catalogue_id).id == spec.catalogue_id, spec


def test_verified_entries_are_exactly_those_a_client_here_checks():
    checked = {spec.catalogue_id for spec in all_clients()}
    verified = {c.id for c in packaged_catalogue().clients if c.verified}
    assert verified == checked


def test_entries_that_cannot_run_here_stay_unverified_with_their_sources():
    for entry in packaged_catalogue().clients:
        if entry.family in ("databricks", "trino", "snowflake", "bigquery", "athena", "fabric", "delta-sharing"):
            assert not entry.verified, entry.id
            assert entry.read.sources, entry.id


def test_the_rfc_clients_are_installed_by_make():
    names = {s.name for s in SPARK_CLIENTS}
    assert {"delta-spark 2.4.0", "delta-spark 3.1.0", "delta-spark 3.2.1", "delta-spark 3.3.2"} <= names
    assert CURRENT_SPARK.catalogue_id == "delta-spark-4.3-4.4"
    assert all(s.kind == "python" for s in PYTHON_CLIENTS)
