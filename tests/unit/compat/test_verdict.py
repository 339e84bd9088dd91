"""The verdict rules of delta_downgrade.compat on synthetic protocols and catalogues
(PROTOCOL.md "Protocol Evolution" and "Table Features"), and the catalogue's validation."""

from __future__ import annotations

import copy

import pytest

from delta_downgrade.compat import (
    Access,
    Verdict, client_verdict, load_catalogue, packaged_catalogue, read_verdict, unblock_plan,
    write_verdict,
)
from delta_downgrade.errors import BadClientCatalogueError, UnknownClientError
from delta_downgrade.protocol.protocol import Protocol

SRC = [{"url": "https://example.org/spec", "states": "test"}]


def catalogue(*clients: dict, extra: list[str] | None = None):
    return load_catalogue({"schema_version": 1, "extra_features": extra or [], "client": list(clients)})


def client(id="c", read=None, write=None, **kw) -> dict:
    out = {"id": id, "name": id, "family": "f", "versions": "1",
           "read": {"sources": SRC, **(read or {"max_version": 1})}, **kw}
    if write is not None:
        out["write"] = {"sources": SRC, **write}
    return out


DV_TABLE = Protocol(3, 7, {"deletionVectors"}, {"deletionVectors", "appendOnly", "invariants"})
CM_LEGACY = Protocol(2, 5)


def test_reader_three_needs_every_listed_reader_feature():
    c = catalogue(client(read={"max_version": 3, "features": ["timestampNtz"]})).client("c")
    v = read_verdict(c, DV_TABLE)
    assert v.verdict is Verdict.NO and v.blocking_features == ("deletionVectors",)
    assert read_verdict(c, Protocol(3, 7, {"timestampNtz"}, {"timestampNtz"})).verdict is Verdict.YES


def test_readers_ignore_writer_features():
    c = catalogue(client(read={"max_version": 3, "features": []})).client("c")
    assert read_verdict(c, Protocol(1, 7, None, {"rowTracking", "domainMetadata"})).verdict is Verdict.YES


def test_reader_version_above_max_or_not_accepted_is_no():
    legacy = catalogue(client(read={"max_version": 1})).client("c")
    assert read_verdict(legacy, CM_LEGACY).verdict is Verdict.NO
    picky = catalogue(client(read={"max_version": 3, "versions": [1, 3], "features": []})).client("c")
    v = read_verdict(picky, CM_LEGACY)
    assert v.verdict is Verdict.NO and v.blockers[0].kind == "reader_version"


def test_legacy_reader_two_accepted_without_column_mapping_misreads():
    c = catalogue(client(read={"max_version": 3, "features": ["timestampNtz"]})).client("c")
    v = read_verdict(c, CM_LEGACY)
    assert v.verdict is Verdict.MISREADS and v.blocking_features == ("columnMapping",)
    # columnMapping listed only in writerFeatures under reader 2 is the same thing
    assert read_verdict(c, Protocol(2, 7, None, {"columnMapping"})).verdict is Verdict.MISREADS


def test_legacy_only_client_derives_its_features_from_its_versions():
    c = catalogue(client(read={"max_version": 2}, write={"max_version": 5})).client("c")
    assert c.read_features() == {"columnMapping"}
    assert read_verdict(c, CM_LEGACY).verdict is Verdict.YES
    assert write_verdict(c, CM_LEGACY).verdict is Verdict.YES
    v = write_verdict(c, Protocol(2, 6))
    assert v.verdict is Verdict.NO and v.blockers[0].kind == "writer_version"
    assert read_verdict(c, DV_TABLE).verdict is Verdict.NO


def test_unknown_stays_unknown():
    c = catalogue(client(read={"max_version": 3, "features": "unknown"},
                         write={"max_version": "unknown"})).client("c")
    assert read_verdict(c, DV_TABLE).verdict is Verdict.UNKNOWN
    assert read_verdict(c, Protocol(1, 2)).verdict is Verdict.YES  # needs no reader feature
    assert write_verdict(c, Protocol(1, 2)).verdict is Verdict.UNKNOWN


def test_writers_need_every_feature_legacy_ones_included():
    c = catalogue(client(read={"max_version": 3, "features": ["deletionVectors"]},
                         write={"max_version": 7, "features": ["appendOnly", "deletionVectors"]})).client("c")
    v = write_verdict(c, DV_TABLE)
    assert v.verdict is Verdict.NO and v.blocking_features == ("invariants",)
    # (1,2) implies appendOnly and invariants (PROTOCOL.md "Protocol Evolution")
    assert write_verdict(c, Protocol(1, 2)).blocking_features == ("invariants",)
    assert write_verdict(c, Protocol(1, 1)).verdict is Verdict.YES


def test_write_side_absent_or_zero():
    c = catalogue(client(read={"max_version": 1})).client("c")
    assert write_verdict(c, Protocol(1, 1)).verdict is Verdict.NOT_APPLICABLE
    ro = catalogue(client(read={"max_version": 1}, write={"max_version": 0})).client("c")
    # a read-only client: writes are not applicable on any table (nothing to unblock)
    assert write_verdict(ro, Protocol(1, 1)) == Access(Verdict.NOT_APPLICABLE,
                                                       notes=("this client does not write Delta tables",))


def test_scalar_field_metadata_reader():
    c = catalogue(client(read={"max_version": 3, "features": [], "field_metadata": "scalar-i32"})).client("c")
    schema = {"type": "struct", "fields": [
        {"name": "a", "type": "string", "nullable": True, "metadata": {"comment": "x", "n": 3}},
        {"name": "s", "type": {"type": "struct", "fields": [
            {"name": "b", "type": "string", "nullable": True,
             "metadata": {"__COLLATIONS": {"b": "ICU.de_DE"}}}]}, "nullable": True, "metadata": {}}]}
    proto = Protocol(1, 7, None, {"collations", "domainMetadata"})
    v = read_verdict(c, proto, schema)
    assert v.verdict is Verdict.NO and v.blockers[0].feature == "collations" and "s.b" in v.blockers[0].reason
    assert read_verdict(c, proto).verdict is Verdict.UNKNOWN  # no schema given
    big = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False,
                                         "metadata": {"delta.identity.highWaterMark": 2 ** 40}}]}
    v = read_verdict(c, Protocol(1, 6), big)
    assert v.verdict is Verdict.NO and v.blockers[0].feature is None


def test_plan_orders_dependents_first_and_predicts_the_protocol():
    proto = Protocol(3, 7, {"deletionVectors"}, {"deletionVectors", "rowTracking", "domainMetadata"})
    plan = unblock_plan(proto, ["domainMetadata"])
    assert [s.feature for s in plan.steps] == ["rowTracking", "domainMetadata"]
    assert plan.steps[0].required_by_blocker == "domainMetadata"
    assert plan.protocol_after.features == {"deletionVectors"}


def test_plan_names_what_cannot_be_dropped():
    plan = unblock_plan(Protocol(3, 7, {"timestampNtz"}, {"timestampNtz"}), ["timestampNtz"])
    assert not plan.possible and "not removable" in plan.undroppable[0].reason
    plan = unblock_plan(Protocol(3, 7, {"catalogManaged", "vacuumProtocolCheck"},
                                 {"catalogManaged", "vacuumProtocolCheck", "inCommitTimestamp"}),
                        ["vacuumProtocolCheck"])
    assert not plan.possible and plan.undroppable[0].feature == "catalogManaged"


def test_client_verdict_after_a_fast_drop_needs_truncate_history_to_write():
    c = catalogue(client(read={"max_version": 3, "features": ["timestampNtz"]},
                         write={"max_version": 7, "features": ["appendOnly", "invariants", "timestampNtz"]})).client("c")
    v = client_verdict(c, DV_TABLE)
    assert v.read.verdict is Verdict.NO
    assert [s.feature for s in v.plan.steps] == ["deletionVectors"]
    assert v.plan.steps[0].checkpoint_protection and v.plan.steps[0].may_rewrite_data
    assert v.read_after.verdict is Verdict.YES
    assert v.write_after.blocking_features == ("checkpointProtection",)
    assert v.truncate_history_for_write


def test_the_packaged_catalogue_loads_and_every_entry_has_sources():
    cat = packaged_catalogue()
    for c in cat.clients:
        assert c.read.sources and all(s.url.startswith("https://") for s in c.read.sources)
        if c.write is not None:
            assert c.write.sources
    assert cat.client("DuckDB").id == "duckdb-delta-1.5"
    with pytest.raises(UnknownClientError):
        cat.client("no-such-client")


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["client"][0]["read"].update(features=["deletionVector"]), "not a known table feature"),
    (lambda d: d["client"][0]["read"].update(features=["rowTracking"]), "writer feature"),
    (lambda d: d["client"][0]["read"].update(sources=[]), "sources"),
    (lambda d: d["client"][0]["read"].update(sources=[{"url": "file:///x", "states": "y"}]), "https"),
    (lambda d: d["client"][0]["read"].update(colour="red"), "colour"),
    (lambda d: d["client"][0]["read"].update(features=None), "must be listed"),
    (lambda d: d["client"].append(copy.deepcopy(d["client"][0])), "names both"),
])
def test_a_bad_catalogue_is_one_clear_error(mutate, message):
    data = {"schema_version": 1, "client": [client(read={"max_version": 3, "features": ["deletionVectors"]})]}
    mutate(data)
    with pytest.raises(BadClientCatalogueError, match=message) as info:
        load_catalogue(data)
    assert info.value.exit_code == 2


def test_a_file_that_is_not_toml(tmp_path):
    bad = tmp_path / "clients.toml"
    bad.write_text("schema_version = [", encoding="utf-8")
    with pytest.raises(BadClientCatalogueError, match="not valid TOML"):
        load_catalogue(bad)


def test_an_observed_misread_combination():
    c = catalogue(client(read={"max_version": 3, "features": ["columnMapping", "timestampNtz"],
                               "misreads_with": [["columnMapping", "timestampNtz"]]})).client("c")
    both = Protocol(3, 7, {"columnMapping", "timestampNtz"}, {"columnMapping", "timestampNtz"})
    v = read_verdict(c, both)
    assert v.verdict is Verdict.MISREADS and v.blocking_features == ("columnMapping", "timestampNtz")
    assert read_verdict(c, Protocol(3, 7, {"timestampNtz"}, {"timestampNtz"})).verdict is Verdict.YES


def test_a_refused_reader_version_is_blamed_on_the_features_that_raise_it():
    # Reader version 2 is column mapping (PROTOCOL.md "Protocol Evolution"): dropping it lowers
    # the version, so the plan drops it; a supported reader feature is not blamed.
    picky = catalogue(client(read={"max_version": 3, "versions": [1, 3], "features": []})).client("c")
    v = read_verdict(picky, CM_LEGACY)
    assert v.blocking_features == ("columnMapping",) and v.blockers[0].kind == "reader_version"
    old = catalogue(client(read={"max_version": 1, "features": ["timestampNtz"]})).client("c")
    v = read_verdict(old, Protocol(3, 7, {"timestampNtz", "deletionVectors"}, {"timestampNtz", "deletionVectors"}))
    assert v.blocking_features == ("deletionVectors",)
    # No reader-side feature: a version no drop lowers, blamed on nothing.
    v = read_verdict(old, Protocol(3, 7, set(), set()))
    assert v.verdict is Verdict.NO and v.blocking_features == ()
