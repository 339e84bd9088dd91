"""Clustering columns from the ``delta.clustering`` / ``delta.liquid`` domains, and those domains
after column-mapping removal (protocol/clustering.py, PROTOCOL.md "Clustered Table")."""

from __future__ import annotations

import json

from delta_downgrade.protocol.actions import DomainMetadata
from delta_downgrade.protocol.clustering import (
    CLUSTERING_DOMAIN, LIQUID_DOMAIN, clustering_columns, domain_clustering_columns, domains_with_logical_names,
)
from tests.schema_support import field


def _dm(domain: str, config: object, removed: bool = False) -> DomainMetadata:
    return DomainMetadata(domain=domain, configuration=json.dumps(config), removed=removed)


SCHEMA = {"type": "struct", "fields": [
    field("id", "long", "col-1"),
    field("s", {"type": "struct", "fields": [field("b", "string", "col-3"), field("c", "date", "col-4")]},
          "col-2"),
    field("plain", "integer"),
]}


def test_every_spelling_of_the_columns_is_read():
    # delta-spark / kernel: lists of physical name parts; PROTOCOL.md's example: flat names;
    # DBR 13.x's delta.liquid: {"physicalName": [...]}.
    assert domain_clustering_columns(_dm(CLUSTERING_DOMAIN, {"clusteringColumns": [["col-1"], ["col-2", "col-3"]]})) \
        == [("col-1",), ("col-2", "col-3")]
    assert domain_clustering_columns(_dm(CLUSTERING_DOMAIN, {"clusteringColumns": ["col-1", "x"]})) \
        == [("col-1",), ("x",)]
    liquid = _dm(LIQUID_DOMAIN, {"clusteringColumns": [{"physicalName": ["id"]}], "domainName": "delta.liquid"})
    assert domain_clustering_columns(liquid) == [("id",)]


def test_malformed_or_removed_domains_name_no_column():
    assert domain_clustering_columns(DomainMetadata(domain=CLUSTERING_DOMAIN, configuration="not json")) == []
    assert domain_clustering_columns(_dm(CLUSTERING_DOMAIN, {"clusteringColumns": "id"})) == []
    assert domain_clustering_columns(_dm(CLUSTERING_DOMAIN, {"clusteringColumns": [3, [], ["a", 1]]})) == []
    assert domain_clustering_columns(_dm(CLUSTERING_DOMAIN, {"clusteringColumns": [["a"]]}, removed=True)) == []
    assert domain_clustering_columns(_dm(CLUSTERING_DOMAIN, {"clusteringColumns": []})) == []


def test_table_columns_come_from_either_domain_once_and_ignore_other_domains():
    domains = [_dm("delta.rowTracking", {"rowIdHighWaterMark": 9}),
               _dm(LIQUID_DOMAIN, {"clusteringColumns": [{"physicalName": ["id"]}]}),
               _dm(CLUSTERING_DOMAIN, {"clusteringColumns": [["id"], ["s", "b"]]})]
    assert clustering_columns(domains) == [("id",), ("s", "b")]
    assert clustering_columns([]) == []


def test_column_mapping_removal_renames_each_shape_to_logical_names():
    domains = [
        _dm(CLUSTERING_DOMAIN, {"clusteringColumns": [["col-1"], ["col-2", "col-3"], ["plain"]]}),
        _dm(LIQUID_DOMAIN, {"clusteringColumns": [{"physicalName": ["COL-2", "col-4"]}], "domainName": "delta.liquid"}),
        _dm("delta.rowTracking", {"rowIdHighWaterMark": 9}),
    ]
    renamed = {d.domain: json.loads(d.configuration) for d in domains_with_logical_names(domains, SCHEMA)}
    assert renamed == {
        CLUSTERING_DOMAIN: {"clusteringColumns": [["id"], ["s", "b"], ["plain"]]},
        # case-insensitive resolution, other keys of the configuration kept
        LIQUID_DOMAIN: {"clusteringColumns": [{"physicalName": ["s", "c"]}], "domainName": "delta.liquid"},
    }
    flat = domains_with_logical_names([_dm(CLUSTERING_DOMAIN, {"clusteringColumns": ["col-1"]})], SCHEMA)
    assert json.loads(flat[0].configuration) == {"clusteringColumns": ["id"]}
    assert all(not d.removed for d in flat)


def test_unchanged_or_unknown_columns_leave_the_domain_alone():
    same = _dm(CLUSTERING_DOMAIN, {"clusteringColumns": [["plain"]]})
    gone = _dm(CLUSTERING_DOMAIN, {"clusteringColumns": [["col-99"]]})
    removed = _dm(CLUSTERING_DOMAIN, {"clusteringColumns": [["col-1"]]}, removed=True)
    assert domains_with_logical_names([same], SCHEMA) == []
    assert domains_with_logical_names([gone], SCHEMA) == []
    assert domains_with_logical_names([removed], SCHEMA) == []
    # a path through a non-struct does not resolve
    assert domains_with_logical_names([_dm(CLUSTERING_DOMAIN, {"clusteringColumns": [["col-1", "x"]]})], SCHEMA) == []
