"""Clustered tables (``clustering`` and Databricks' preview name ``liquid``) and collated strings
(``collations``) are writer features this package writes: the drops of other features on such
tables honour their writer requirements (PROTOCOL.md "Clustered Table", the Collated String Type
RFC) and outside readers read the same rows afterwards."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from delta_downgrade.app.render.inspect import inspect_document
from delta_downgrade.errors import FeatureDropError
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.operations.drop_feature import drop_feature
from delta_downgrade.operations.inspect import inspect_table
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.actions import DomainMetadata
from delta_downgrade_tools.builders import TableBuilder
from delta_downgrade_tools.dv_builder import delete_rows
from oracle import same_rows

PHYSICAL = "delta.columnMapping.physicalName"
COLUMN_ID = "delta.columnMapping.id"
COLLATIONS = "__COLLATIONS"


def _log_actions(path: str) -> list[tuple[int, dict]]:
    out = []
    log_dir = os.path.join(path, "_delta_log")
    for name in sorted(os.listdir(log_dir)):
        if name.endswith(".json") and name[:20].isdigit():
            with open(os.path.join(log_dir, name)) as fh:
                out += [(int(name[:20]), json.loads(line)) for line in fh if line.strip()]
    return out


def _cm_field(name: str, type_, physical: str, cid: int, extra: dict | None = None) -> dict:
    return {"name": name, "type": type_, "nullable": True,
            "metadata": {COLUMN_ID: cid, PHYSICAL: physical, **(extra or {})}}


def _domains(path: str) -> dict[str, dict]:
    state = DeltaLog(path).snapshot().state()
    return {name: json.loads(d.configuration) for name, d in state.live_domains.items()}


# --- liquid (golden, Databricks Runtime 13.2) -------------------------------------------------------

def test_liquid_golden_table_drops_deletion_vectors_and_keeps_its_domain(golden_table, oracle, duckdb_reader):
    path = golden_table("liquid_row_tracking_dbr")
    doc = inspect_document(inspect_table(path))
    liquid = next(f for f in doc["features"] if f["name"] == "liquid")
    assert liquid["kind"] == "writer" and not liquid["removable"]
    before_rows = oracle.scan_rows(path).unwrap()
    before_domains = _domains(path)
    assert before_domains["delta.liquid"] == {"clusteringColumns": [{"physicalName": ["id"]}],
                                              "domainName": "delta.liquid"}

    outcome = drop_feature(path, "deletionVectors")
    assert outcome.status == "dropped"
    protocol = oracle.protocol(path).unwrap()
    assert protocol["readerFeatures"] is None and "liquid" in protocol["writerFeatures"]
    assert _domains(path) == before_domains
    assert same_rows(before_rows, oracle.scan_rows(path).unwrap())
    assert same_rows(before_rows, duckdb_reader.duckdb_rows(path).unwrap())

    # domainMetadata stays while liquid (and rowTracking) need it
    with pytest.raises(FeatureDropError) as info:
        drop_feature(path, "domainMetadata")
    assert info.value.error_class == "DELTA_FEATURE_DROP_DEPENDENT_FEATURE"
    assert info.value.params["dependentFeatures"] == "liquid, rowTracking"


# --- clustering + column mapping + deletion vectors (built) ------------------------------------------

def _clustered_table(path: str) -> TableBuilder:
    """clustering by id and s.k (physical names in the delta.clustering domain), column mapping
    by name, deletion vectors, statistics for no column at all (dataSkippingNumIndexedCols=0), two
    files clustered by "liquid"; then rows deleted with DVs."""
    builder = TableBuilder(path)
    inner = pa.struct([pa.field("col-k", pa.int32())])
    arrow = pa.schema([("col-id", pa.int64()), ("col-name", pa.string()), ("col-s", inner)])
    schema = {"type": "struct", "fields": [
        _cm_field("id", "long", "col-id", 1), _cm_field("name", "string", "col-name", 2),
        _cm_field("s", {"type": "struct", "fields": [_cm_field("k", "integer", "col-k", 4)]}, "col-s", 3)]}
    features = {"columnMapping", "deletionVectors"}
    builder.create(arrow, protocol=Protocol(3, 7, features, features | {"clustering", "domainMetadata"}),
                   delta_schema=schema,
                   configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "4",
                                  "delta.enableDeletionVectors": "true", "delta.dataSkippingNumIndexedCols": "0"})
    rows = [{"col-id": i, "col-name": f"n{i}", "col-s": {"col-k": 100 - i}} for i in range(20)]
    adds = builder.write_files(pa.Table.from_pylist(rows, schema=arrow), files=2)
    domain = DomainMetadata(domain="delta.clustering",
                            configuration=json.dumps({"clusteringColumns": [["col-id"], ["col-s", "col-k"]]}))
    from msgspec.structs import replace

    builder.commit([domain, *(replace(a, clusteringProvider="liquid") for a in adds)], "OPTIMIZE")
    delete_rows(builder, lambda row: row["col-id"] % 3 == 0)
    return builder


def _assert_clustering_stats(path: str, id_key: tuple[str, ...], k_key: tuple[str, ...]) -> None:
    for add in DeltaLog(path).snapshot().state().files.values():
        assert add.clusteringProvider == "liquid", add
        stats = json.loads(add.stats)
        for key in (id_key, k_key):
            for kind in ("minValues", "maxValues", "nullCount"):
                node = stats[kind]
                for part in key:
                    node = node[part]
                assert node is not None, (kind, key, stats)


@pytest.mark.parametrize("order", [("deletionVectors", "columnMapping"), ("columnMapping", "deletionVectors")])
def test_clustered_table_keeps_provider_stats_and_domain_through_dv_and_column_mapping_drops(
        tmp_path, spark, oracle, duckdb_reader, oracle_018, order):
    """The builder's files have no statistics for the nested clustering column s.k: whichever
    rewrite comes first (the DV purge computes statistics, column-mapping removal carries them
    over) must give every new file statistics for both clustering columns."""
    path = str(tmp_path / "t")
    _clustered_table(path)
    expected = oracle.scan_rows(path).unwrap()
    assert len(expected) == 13  # 20 rows, 7 deleted (ids divisible by 3)
    assert not any("col-k" in (a.stats or "") for a in DeltaLog(path).snapshot().state().files.values())

    for feature in order:
        assert drop_feature(path, feature).status == "dropped"
        assert same_rows(expected, oracle.scan_rows(path).unwrap())
        if feature == "deletionVectors":
            assert not any(a.deletionVector for a in DeltaLog(path).snapshot().state().files.values())
        mapped = order.index("columnMapping") > order.index(feature)
        # provider kept; clustering columns have statistics though no column is indexed, under
        # the names the files use
        if mapped:
            _assert_clustering_stats(path, ("col-id",), ("col-s", "col-k"))
            assert _domains(path)["delta.clustering"] == {"clusteringColumns": [["col-id"], ["col-s", "col-k"]]}
        else:
            _assert_clustering_stats(path, ("id",), ("s", "k"))
            assert _domains(path)["delta.clustering"] == {"clusteringColumns": [["id"], ["s", "k"]]}

    # the renamed domain is in the commit that removes column mapping from the metadata
    [version] = {v for v, a in _log_actions(path)
                 if "domainMetadata" in a and a["domainMetadata"]["domain"] == "delta.clustering"} - {
        v for v, a in _log_actions(path) if "commitInfo" in a and a["commitInfo"]["operation"] == "OPTIMIZE"}
    in_commit = [a for v, a in _log_actions(path) if v == version]
    assert any("metaData" in a and "delta.columnMapping.mode" not in a["metaData"]["configuration"]
               for a in in_commit)
    assert next(a for a in in_commit if "commitInfo" in a)["commitInfo"]["operation"] == "REMOVE COLUMN MAPPING"

    protocol = oracle.protocol(path).unwrap()
    assert protocol["minReaderVersion"] == 1 and {"clustering", "domainMetadata"} <= set(protocol["writerFeatures"])
    for rows in (oracle.scan_rows(path), duckdb_reader.duckdb_rows(path), oracle_018.pyarrow_rows(path)):
        assert same_rows(expected, rows.unwrap())


# --- collations ----------------------------------------------------------------------------------------

def test_collations_golden_table_drops_an_unused_feature(golden_table, oracle):
    path = golden_table("collations_dbr")
    schema_before = DeltaLog(path).snapshot().metadata.schemaString
    builder = TableBuilder(path)
    p = DeltaLog(path).snapshot().protocol
    builder.set_protocol(Protocol(3, 7, frozenset({"deletionVectors"}),
                                  frozenset(p.writer_features or ()) | {"deletionVectors"}))
    assert drop_feature(path, "deletionVectors").status == "dropped"
    after = oracle.protocol(path).unwrap()
    assert after["readerFeatures"] is None and "collations" in after["writerFeatures"]
    assert DeltaLog(path).snapshot().metadata.schemaString == schema_before
    assert oracle.scan_rows(path).unwrap() == []


def _collated_table(path: str) -> TableBuilder:
    """Collated strings at the top level, in a struct and as array elements, under column mapping,
    with statsWithCollation keyed by physical names, and rows deleted with DVs."""
    builder = TableBuilder(path)
    inner = pa.struct([pa.field("col-e", pa.string())])
    arrow = pa.schema([("col-id", pa.int32()), ("col-c", pa.string()), ("col-d", inner),
                       ("col-arr", pa.list_(pa.string()))])
    schema = {"type": "struct", "fields": [
        _cm_field("id", "integer", "col-id", 1),
        _cm_field("c", "string", "col-c", 2, {COLLATIONS: {"c": "spark.UTF8_LCASE"}}),
        _cm_field("d", {"type": "struct", "fields": [
            _cm_field("e", "string", "col-e", 4, {COLLATIONS: {"e": "icu.UNICODE"}})]}, "col-d", 3),
        _cm_field("arr", {"type": "array", "elementType": "string", "containsNull": True}, "col-arr", 5,
                  {COLLATIONS: {"arr.element": "icu.de_DE"}})]}
    features = {"columnMapping", "deletionVectors"}
    builder.create(arrow, protocol=Protocol(3, 7, features, features | {"collations", "domainMetadata"}),
                   delta_schema=schema,
                   configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "5",
                                  "delta.enableDeletionVectors": "true"})
    rows = [{"col-id": i, "col-c": "AbC"[i % 3] + str(i), "col-d": {"col-e": f"é{i}"}, "col-arr": ["x", f"Y{i}"]}
            for i in range(12)]
    adds = builder.write_files(pa.Table.from_pylist(rows, schema=arrow), files=2)
    from msgspec.structs import replace

    collated = {"icu.UNICODE.75.1": {"minValues": {"col-d": {"col-e": "é0"}}, "maxValues": {"col-d": {"col-e": "é9"}}}}
    adds = [replace(a, stats=json.dumps({**json.loads(a.stats), "statsWithCollation": collated})) for a in adds]
    builder.commit([DomainMetadata(domain="delta.collations",
                                   configuration=json.dumps({"writeVersions": {"icu.UNICODE": ["75.1"]}})),
                    *adds], "WRITE")
    delete_rows(builder, lambda row: row["col-id"] in (1, 7, 8))
    return builder


def _collations_of(schema: dict) -> list[dict]:
    out = []

    def walk(t):
        if isinstance(t, dict):
            if t.get("type") == "struct":
                for f in t["fields"]:
                    if COLLATIONS in (f.get("metadata") or {}):
                        out.append({f["name"]: f["metadata"][COLLATIONS]})
                    walk(f["type"])
            elif t.get("type") == "array":
                walk(t["elementType"])
    walk(schema)
    return out


def test_collated_table_keeps_collations_through_column_mapping_and_dv_drops(tmp_path, spark, oracle):
    path = str(tmp_path / "t")
    _collated_table(path)
    expected = oracle.scan_rows(path).unwrap()
    assert len(expected) == 9
    collations = _collations_of(DeltaLog(path).snapshot().schema)
    assert collations == [{"c": {"c": "spark.UTF8_LCASE"}}, {"e": {"e": "icu.UNICODE"}},
                          {"arr": {"arr.element": "icu.de_DE"}}]

    assert drop_feature(path, "columnMapping").status == "dropped"
    schema = DeltaLog(path).snapshot().schema
    assert _collations_of(schema) == collations
    assert not any(k.startswith("delta.columnMapping") for f in schema["fields"] for k in f["metadata"])
    # statsWithCollation carried over by the rewrite names the logical columns
    for add in DeltaLog(path).snapshot().state().files.values():
        stats = json.loads(add.stats)
        assert set(stats["statsWithCollation"]["icu.UNICODE.75.1"]["minValues"]) == {"d"}
        assert "col-d" not in add.stats
    assert same_rows(expected, oracle.scan_rows(path).unwrap())

    assert drop_feature(path, "deletionVectors").status == "dropped"
    snapshot = DeltaLog(path).snapshot()
    assert _collations_of(snapshot.schema) == collations
    assert "delta.collations" in snapshot.state().live_domains
    protocol = oracle.protocol(path).unwrap()
    assert protocol["readerFeatures"] is None and "collations" in protocol["writerFeatures"]
    assert same_rows(expected, oracle.scan_rows(path).unwrap())
