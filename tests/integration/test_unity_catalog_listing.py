"""``tables_from=catalog[.schema]`` through the real databricks-sdk against a local HTTP server
that answers the documented Unity Catalog REST shape (``GET /api/2.1/unity-catalog/schemas`` and
``/tables``: ``next_page_token`` pagination, a page that is empty but not the last, errors as
``{"error_code", "message"}`` with 403/404). The workspace itself cannot be reached from here; the
SDK is pointed at the server through DATABRICKS_HOST / DATABRICKS_TOKEN, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from delta_downgrade.app.unity_catalog import full_name, list_delta_tables, parse_source
from delta_downgrade.errors import BadSettingsError, UnityCatalogListingError

pytest.importorskip("databricks.sdk")

TOKEN = "dapi-test-token"


def _table(schema: str, name: str, table_type: str, fmt: str | None, catalog: str = "main") -> dict:
    info = {"catalog_name": catalog, "schema_name": schema, "name": name, "table_type": table_type,
            "full_name": f"{catalog}.{schema}.{name}"}
    if fmt:
        info["data_source_format"] = fmt
    return info


# (catalog, schema) -> pages of tables; each page but the last carries a next_page_token.
TABLE_PAGES: dict[tuple[str, str], list[list[dict]]] = {
    ("main", "sales"): [
        [_table("sales", "events", "MANAGED", "DELTA"), _table("sales", "events_view", "VIEW", None)],
        [],  # "a page may contain zero results while still providing a next_page_token"
        [_table("sales", "orders", "EXTERNAL", "DELTA"), _table("sales", "raw_csv", "EXTERNAL", "CSV"),
         _table("sales", "daily", "MATERIALIZED_VIEW", "DELTA"), _table("sales", "clicks", "STREAMING_TABLE", "DELTA"),
         _table("sales", "events_clone", "MANAGED_SHALLOW_CLONE", "DELTA")],
    ],
    ("main", "my-schema"): [[_table("my-schema", "select", "MANAGED", "DELTA"),
                             _table("my-schema", "odd`name", "MANAGED", "DELTA")]],
    ("main", "information_schema"): [[_table("information_schema", "tables", "VIEW", None)]],
    ("main", "empty"): [[_table("empty", "only_a_view", "VIEW", None)]],
}
SCHEMA_PAGES = {"main": [[{"name": "sales", "catalog_name": "main"}],
                         [{"name": "information_schema", "catalog_name": "main"},
                          {"name": "my-schema", "catalog_name": "main"}]]}
ERRORS = {  # (path tail, catalog, schema) -> (status, error_code)
    ("schemas", "locked", None): (403, "PERMISSION_DENIED"),
    ("tables", "main", "secret"): (403, "PERMISSION_DENIED"),
}


class UnityCatalogServer(BaseHTTPRequestHandler):
    requests: list[tuple[str, dict[str, list[str]], str | None]] = []

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        url = urlparse(self.path)
        query = parse_qs(url.query)
        if url.path == "/.well-known/databricks-config":
            # The SDK's host discovery (unauthenticated), answered as a workspace does.
            host = f"http://{self.headers.get('Host')}"
            return self._send(200, {"oidc_endpoint": f"{host}/oidc", "workspace_id": "1234567890"})
        type(self).requests.append((url.path, query, self.headers.get("Authorization")))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(401, {"error_code": "UNAUTHENTICATED", "message": "bad token"})
        catalog = query.get("catalog_name", [None])[0]
        schema = query.get("schema_name", [None])[0]
        page = int(query.get("page_token", ["0"])[0])
        if url.path == "/api/2.1/unity-catalog/schemas":
            key: Any = ("schemas", catalog, None)
            pages, item = SCHEMA_PAGES.get(catalog), "schemas"
        elif url.path == "/api/2.1/unity-catalog/tables":
            key, pages, item = ("tables", catalog, schema), TABLE_PAGES.get((catalog, schema)), "tables"
        else:
            return self._send(404, {"error_code": "ENDPOINT_NOT_FOUND", "message": f"no API {url.path}"})
        if key in ERRORS:
            status, code = ERRORS[key]
            return self._send(status, {"error_code": code, "message": f"User does not have USE CATALOG on "
                                                                      f"Catalog '{catalog}'."})
        if pages is None:
            code = "CATALOG_DOES_NOT_EXIST" if item == "schemas" or (catalog != "main") else "SCHEMA_DOES_NOT_EXIST"
            return self._send(404, {"error_code": code, "message": f"{item[:-1].title()} '{schema or catalog}' "
                                                                  f"does not exist."})
        body: dict[str, Any] = {item: pages[page]}
        if page + 1 < len(pages):
            body["next_page_token"] = str(page + 1)
        self._send(200, body)


@pytest.fixture
def workspace(monkeypatch, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), UnityCatalogServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    UnityCatalogServer.requests = []
    for name in list(os.environ):
        if name.startswith("DATABRICKS_"):
            monkeypatch.delenv(name)
    host = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("DATABRICKS_HOST", host)
    monkeypatch.setenv("DATABRICKS_TOKEN", TOKEN)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.databrickscfg of this machine
    try:
        yield host
    finally:
        server.shutdown()
        server.server_close()


def test_a_schema_lists_its_delta_tables_over_every_page(workspace):
    tables = list_delta_tables("main.sales")
    assert tables == ["main.sales.events", "main.sales.events_clone", "main.sales.orders"]
    pages = [q.get("page_token", [None])[0] for path, q, _ in UnityCatalogServer.requests
             if path.endswith("/tables")]
    assert pages == [None, "1", "2"]  # the empty page did not end the listing
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in UnityCatalogServer.requests)


def test_a_catalog_lists_every_schema_and_quotes_names_where_needed(workspace):
    tables = list_delta_tables("main")
    assert tables == ["main.`my-schema`.`odd``name`", "main.`my-schema`.`select`",
                      "main.sales.events", "main.sales.events_clone", "main.sales.orders"]
    asked = {q["schema_name"][0] for path, q, _ in UnityCatalogServer.requests if path.endswith("/tables")}
    assert asked == {"sales", "my-schema"}  # information_schema holds views only: not asked


def test_a_quoted_source_is_asked_by_its_plain_name(workspace):
    assert list_delta_tables("`main`.`my-schema`") == ["main.`my-schema`.`odd``name`", "main.`my-schema`.`select`"]


@pytest.mark.parametrize("source, error_class, status_type", [
    ("locked", "PERMISSION_DENIED", "UnityCatalogPermissionError"),
    ("main.secret", "PERMISSION_DENIED", "UnityCatalogPermissionError"),
    ("nope", "CATALOG_DOES_NOT_EXIST", "UnityCatalogNotFoundError"),
    ("main.nope", "SCHEMA_DOES_NOT_EXIST", "UnityCatalogNotFoundError"),
])
def test_refusals_keep_the_api_error_code_and_are_bad_input(workspace, source, error_class, status_type):
    with pytest.raises(UnityCatalogListingError) as info:
        list_delta_tables(source)
    assert info.value.error_class == error_class and info.value.exit_code == 2
    assert type(info.value).__name__ == status_type
    assert source in info.value.message


def test_a_wrong_token_is_bad_input_with_the_api_code(workspace, monkeypatch):
    monkeypatch.setenv("DATABRICKS_TOKEN", "wrong")
    with pytest.raises(UnityCatalogListingError) as info:
        list_delta_tables("main.sales")
    assert info.value.exit_code == 2 and info.value.error_class == "UNAUTHENTICATED"


@pytest.mark.parametrize("text, parsed", [("main", ("main", None)), ("main.sales", ("main", "sales")),
                                          ("`my.cat`.`a``b`", ("my.cat", "a`b")), (" main . sales ", ("main", "sales"))])
def test_parse_source(text, parsed):
    assert parse_source(text) == parsed


@pytest.mark.parametrize("text", ["", "a.b.c", "a.", "`a", "`a`b", ".b"])
def test_parse_source_refuses_what_is_not_a_catalog_or_schema(text):
    with pytest.raises(BadSettingsError):
        parse_source(text)


def test_full_name_round_trips_through_sparks_own_parser(spark):
    """Every quoting choice parses back to the same parts with Spark's own parser
    (``parseMultipartIdentifier``, what ``spark.table`` uses), classic or Spark Connect."""
    from tests.spark_parser import identifier_parts

    names = [("main", "sales", "events"), ("main", "my-schema", "odd`name"), ("main", "s", "select"),
             ("1cat", "sch", "t"), ("c", "s", "table"), ("c", "s", "a.b")]
    for parts in names:
        assert identifier_parts(spark, full_name(*parts)) == list(parts)


def _task_process(args: list[str], env: dict[str, str], block_sdk: bool = False) -> subprocess.CompletedProcess:
    block = ("import sys\n"
             "class _NoSdk:\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if name == 'databricks.sdk' or name.startswith('databricks.sdk.'):\n"
             "            raise ImportError('No module named ' + repr(name))\n"
             "sys.meta_path.insert(0, _NoSdk())\n") if block_sdk else ""
    source = block + ("import sys; from delta_downgrade.app.tasks.entrypoints import verify_task; "
                      "sys.exit(verify_task())")
    return subprocess.run([sys.executable, "-c", source, *args], env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_task_runs_the_listed_tables_as_its_fleet(workspace, tmp_path):
    env = dict(os.environ)
    proc = _task_process(["--tables_from=main.sales", f"--table={tmp_path / 'also'}"], env)
    assert "tables_from=main.sales: 3 Delta table(s)" in proc.stderr, proc.stderr[-2000:]
    from delta_downgrade.app.render.result import parse_result_lines

    results = [r for r in parse_result_lines(proc.stdout) if not r.get("summary")]
    assert [r["table"] for r in results] == [str(tmp_path / "also"), "main.sales.events",
                                             "main.sales.events_clone", "main.sales.orders"]


def test_a_schema_without_delta_tables_is_an_empty_fleet_not_an_error(workspace):
    assert list_delta_tables("main.empty") == []
    proc = _task_process(["--tables_from=main.empty"], dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-2000:]
    from delta_downgrade.app.render.result import parse_result_lines

    [summary] = parse_result_lines(proc.stdout)
    assert summary["summary"] is True and summary["tables"] == 0 and summary["exit_code"] == 0


def test_the_task_refused_listing_is_exit_2_with_the_class_and_nothing_runs(workspace):
    proc = _task_process(["--tables_from=locked"], dict(os.environ))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: [PERMISSION_DENIED] --tables_from=locked"), proc.stderr
    assert "RESULT" not in proc.stdout or "main." not in proc.stdout


def test_without_databricks_sdk_tables_from_is_one_line_and_exit_2(workspace):
    proc = _task_process(["--tables_from=main.sales"], dict(os.environ), block_sdk=True)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert lines == ["error: [DELTA_DOWNGRADE_MISSING_DEPENDENCY] --tables_from needs databricks-sdk: "
                     "pip install 'delta-downgrade[databricks]'"], proc.stderr
    assert not UnityCatalogServer.requests
