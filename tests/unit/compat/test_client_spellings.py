"""Clients named as users name them: pip pins, a product and a version, Databricks' and Maven's
spellings resolve to the catalogue entry whose release range holds the version; an ambiguous or
uncovered version is exit 2 naming the nearest entries. Through the catalogue and through the CLI
(``drop-feature --for``, ``compat --client``, ``compat --list-clients``), in process: the client
is resolved before any table is looked at."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.compat import packaged_catalogue
from delta_downgrade.compat.spelling import parse_spelling
from delta_downgrade.errors import EXIT_BAD_INPUT, UnknownClientError

# spelling -> the entry it names
RESOLVES = {
    "deltalake==0.18.2": "deltalake-0.18-pyarrow",
    "deltalake 0.18": "deltalake-0.18-pyarrow",
    "deltalake[rust]==0.18.2": "deltalake-0.18-rust",
    "deltalake 0.18.2 rust": "deltalake-0.18-rust",
    "delta-rs 0.22": "deltalake-0.2x-pyarrow",
    "deltalake==1.4.2": "deltalake-1.0-1.5-pyarrow",
    "deltalake==1.6.6": "deltalake-1.6.6-pyarrow",
    "deltalake[rust]==1.6.4": "deltalake-1.6-rust",
    "polars==1.41.0": "polars-1.40-1.43",
    "polars 1.41": "polars-1.40-1.43",
    "Polars 1.14": "polars-1.39",
    "polars==2.1.3": "polars-2.1",
    "duckdb==1.5.5": "duckdb-delta-1.5",
    "duckdb 1.5": "duckdb-delta-1.5",
    "trino 447": "trino-444-448",
    "trino 449": "trino-449",
    "Trino 480": "trino-471",
    "trino-delta 430": "trino-427-443",
    "dbr 15.4": "dbr-15.4",
    "databricks 15.4 LTS": "dbr-15.4",
    "dbr-15.4.x": "dbr-15.4",
    "DBR 17.3 LTS": "dbr-17.3",
    "databricks-runtime 10.4": "dbr-10.4",
    "spark-delta 3.2": "delta-spark-3.2",
    "delta-spark==4.4.1": "delta-spark-4.3-4.4",
    "delta_spark==2.1.0": "delta-spark-2.0-2.2",
    "io.delta:delta-spark_2.13:3.2.0": "delta-spark-3.2",
    "delta-sharing-spark 3.3": "delta-sharing-spark-3.3",
    "delta_sharing==1.3.2": "delta-sharing-python-1.3.2",
    "delta-sharing==1.2.0": "delta-sharing-python-1.1-1.3.1",
    # ids and aliases still win
    "deltalake-0.18": "deltalake-0.18-pyarrow",
    "dbr-15.4-lts": "dbr-15.4",
}

# spelling -> (error class, entry ids the message must name)
REFUSED = {
    "polars 1": ("DELTA_DOWNGRADE_AMBIGUOUS_CLIENT", ["polars-1.39", "polars-1.40-1.43"]),
    "deltalake 1.6": ("DELTA_DOWNGRADE_AMBIGUOUS_CLIENT", ["deltalake-1.6.6-pyarrow", "deltalake-1.6-rust"]),
    "delta-spark 3": ("DELTA_DOWNGRADE_AMBIGUOUS_CLIENT", ["delta-spark-3.0", "delta-spark-3.3"]),
    # covered on the rust path only, not on deltalake's default pyarrow path
    "deltalake==1.6.4": ("DELTA_DOWNGRADE_AMBIGUOUS_CLIENT", ["deltalake-1.6-rust"]),
    "dbr 15.3": ("DELTA_DOWNGRADE_CLIENT_VERSION_NOT_IN_CATALOGUE", ["dbr-14.3", "dbr-15.4"]),
    "polars==1.45.0": ("DELTA_DOWNGRADE_CLIENT_VERSION_NOT_IN_CATALOGUE", ["polars-1.40-1.43", "polars-2.1"]),
    "polars==2.0.0": ("DELTA_DOWNGRADE_CLIENT_VERSION_NOT_IN_CATALOGUE", ["polars-1.40-1.43", "polars-2.1"]),
    "trino 413": ("DELTA_DOWNGRADE_CLIENT_VERSION_NOT_IN_CATALOGUE", ["trino-414-422"]),
    "deltalake==0.19.0": ("DELTA_DOWNGRADE_CLIENT_VERSION_NOT_IN_CATALOGUE",
                          ["deltalake-0.18-pyarrow", "deltalake-0.2x-pyarrow"]),
    "duckdb==1.4.4": ("DELTA_DOWNGRADE_CLIENT_VERSION_NOT_IN_CATALOGUE", ["duckdb-delta-1.5"]),
    "snowflake 2026": ("DELTA_DOWNGRADE_CLIENT_VERSION_NOT_IN_CATALOGUE", ["snowflake-delta-iceberg"]),
    "deltalake[gpu]==0.18.2": ("DELTA_DOWNGRADE_UNKNOWN_CLIENT", ["pyarrow", "rust"]),
    "sparkdelta==3.2": ("DELTA_DOWNGRADE_UNKNOWN_CLIENT", ["--list-clients"]),
    "polars-latest": ("DELTA_DOWNGRADE_UNKNOWN_CLIENT", ["--list-clients"]),
}


def test_enough_spellings_are_tried():
    assert len(RESOLVES) + len(REFUSED) >= 30


@pytest.mark.parametrize("spelled, expected", sorted(RESOLVES.items()))
def test_spelling_resolves_to_the_entry_whose_range_holds_it(spelled, expected):
    client = packaged_catalogue().client(spelled)
    assert client.id == expected
    parsed = parse_spelling(spelled)
    if parsed is not None and client.releases is not None and not spelled.startswith("dbr-15.4-"):
        assert client.releases.holds(parsed.low, parsed.high, inclusive_high=parsed.pinned)


@pytest.mark.parametrize("spelled, refusal", sorted(REFUSED.items()))
def test_ambiguous_or_uncovered_spelling_is_exit_2_naming_the_nearest(spelled, refusal):
    error_class, named = refusal
    with pytest.raises(UnknownClientError) as caught:
        packaged_catalogue().client(spelled)
    assert caught.value.error_class == error_class
    assert caught.value.exit_code == EXIT_BAD_INPUT
    for name in named:
        assert name in str(caught.value)


def test_a_pin_is_one_release_and_a_short_version_every_release_it_prefixes():
    pin = parse_spelling("polars==1.41.0")
    assert pin is not None and pin.pinned and pin.low == pin.high
    prefix = parse_spelling("polars 1.41")
    assert prefix is not None and not prefix.pinned
    assert (str(prefix.low), str(prefix.high)) == ("1.41", "1.42")
    assert parse_spelling("deltalake-0.18") is not None  # a spelling, though an alias wins first
    assert parse_spelling("duckdb") is None


def test_compat_client_with_a_version_selects_every_read_path_of_that_release():
    ids = [c.id for c in packaged_catalogue().family("deltalake==0.18.2")]
    assert ids == ["deltalake-0.18-pyarrow", "deltalake-0.18-rust"]
    assert [c.id for c in packaged_catalogue().family("deltalake==1.6.4")] == ["deltalake-1.6-rust"]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("spelled", ["dbr 15.3", "polars 1", "nosuchclient==1.0"])
def test_drop_feature_for_refuses_a_bad_spelling_before_the_table_is_read(tmp_path, spelled):
    code, out, _ = _cli("drop-feature", str(tmp_path / "no-table"), "--for", spelled)
    assert code == EXIT_BAD_INPUT
    result = json.loads(out.strip().splitlines()[-1].removeprefix("RESULT "))
    assert result["error_class"].startswith("DELTA_DOWNGRADE_")
    assert "CLIENT" in result["error_class"]
    assert not (tmp_path / "no-table").exists()


def test_list_clients_needs_no_table_and_lists_every_entry():
    catalogue = packaged_catalogue()
    code, out, _ = _cli("compat", "--list-clients", "--json")
    assert code == 0
    doc = json.loads(out)
    assert [e["client"] for e in doc["clients"]] == [c.id for c in catalogue.clients]
    by_id = {e["client"]: e for e in doc["clients"]}
    assert by_id["deltalake-0.18-rust"]["releases"] == {"from": "0.18", "before": "0.19"}
    assert by_id["deltalake-0.18-rust"]["path"] == "rust"
    assert by_id["dbr-15.4"]["product"] == "databricks"
    for entry in doc["clients"]:
        assert entry["read"]["sources"], entry["client"]

    code, text, _ = _cli("compat", "--list-clients")
    assert code == 0
    for client in catalogue.clients:
        assert f"\n{client.id}: " in "\n" + text
    assert "trino >= 444, < 449" in text


def test_list_clients_takes_no_table():
    code, _, _ = _cli("compat", "some/table", "--list-clients")
    assert code == EXIT_BAD_INPUT


@pytest.mark.parametrize("spelled, error_class", [
    ("dbr 15.3", "DELTA_DOWNGRADE_CLIENT_VERSION_NOT_IN_CATALOGUE"),
    ("polars 1", "DELTA_DOWNGRADE_AMBIGUOUS_CLIENT"),
])
def test_task_for_client_takes_the_same_spellings(tmp_path, spelled, error_class):
    from delta_downgrade.app.tasks.entrypoints import drop_feature_task

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = drop_feature_task([f"--table={tmp_path / 'no-table'}", f"--for_client={spelled}"])
    assert code == EXIT_BAD_INPUT
    result = json.loads(out.getvalue().strip().splitlines()[-1].removeprefix("RESULT "))
    assert result["error_class"] == error_class
