"""A Databricks workspace stand-in on loopback for the Databricks CLI's `bundle deploy` and for
databricks-sdk: a workspace cannot run here, so this answers the documented REST shapes the deploy
calls and records every request, for the tests to assert what reached the "workspace".

Answered (Databricks REST API reference, "Workspace", "Jobs 2.2", "SCIM Me", "Permissions",
"Statement Execution"):

- ``GET /.well-known/databricks-config``: the host's metadata (a workspace host, no account);
- ``GET /api/2.0/preview/scim/v2/Me``: the current user;
- ``/api/2.0/workspace/{get-status,mkdirs,list,delete,export,import}`` and
  ``/api/2.0/workspace-files/import-file/<path>``, ``GET /api/2.0/workspace-files/<path>``: a
  tree of files and directories kept in memory;
- ``/api/2.2/jobs/{create,reset,get,list,delete}`` (and the ``2.0``/``2.1`` spellings of ``get``);
- ``/api/2.0/permissions/jobs/<id>`` (PUT/PATCH/GET): recorded, echoed;
- ``/api/2.0/sql/statements`` (POST, GET ``/<id>``): answered by ``statement_handler``, a
  function the test gives (statement text, warehouse id) -> (columns, rows) or an error;
- ``/telemetry-ext``: accepted.

Anything else is ``404 ENDPOINT_NOT_FOUND`` and recorded in :attr:`WorkspaceStandIn.unknown`, so a
test sees a call the stand-in does not know instead of a silent pass.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

USER_NAME = "deployer@example.com"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    body: Any


class ApiError(Exception):
    def __init__(self, status: int, error_code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error_code, self.message = status, error_code, message


@dataclass
class WorkspaceState:
    objects: dict[str, dict[str, Any]] = field(default_factory=lambda: {"/": {"object_type": "DIRECTORY"}})
    files: dict[str, bytes] = field(default_factory=dict)
    jobs: dict[int, dict[str, Any]] = field(default_factory=dict)
    permissions: dict[str, Any] = field(default_factory=dict)
    next_id: int = 1000

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def mkdirs(self, path: str) -> None:
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            sub = "/" + "/".join(parts[:i])
            found = self.objects.get(sub)
            if found and found["object_type"] != "DIRECTORY":
                raise ApiError(400, "RESOURCE_ALREADY_EXISTS", f"{sub} is a file")
            if not found:
                self.objects[sub] = {"object_type": "DIRECTORY", "object_id": self.new_id()}

    def put_file(self, path: str, data: bytes, overwrite: bool) -> None:
        if path in self.objects and not overwrite:
            raise ApiError(400, "RESOURCE_ALREADY_EXISTS", f"{path} already exists")
        parent = path.rsplit("/", 1)[0] or "/"
        if parent not in self.objects:
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", f"The parent folder ({parent}) does not exist.")
        self.objects[path] = {"object_type": "FILE", "object_id": self.new_id()}
        self.files[path] = data

    def status(self, path: str) -> dict[str, Any]:
        found = self.objects.get(path)
        if found is None:
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", f"Path ({path}) doesn't exist.")
        info = {"path": path, "object_type": found["object_type"], "object_id": found.get("object_id", 1)}
        if found["object_type"] == "FILE":
            info["size"] = len(self.files.get(path, b""))
        return info

    def delete(self, path: str, recursive: bool) -> None:
        if path not in self.objects:
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", f"Path ({path}) doesn't exist.")
        under = [p for p in self.objects if p.startswith(path.rstrip("/") + "/")]
        if under and not recursive:
            raise ApiError(400, "DIRECTORY_NOT_EMPTY", f"Folder ({path}) is not empty")
        for p in under + [path]:
            self.objects.pop(p, None)
            self.files.pop(p, None)

    def list(self, path: str) -> list[dict[str, Any]]:
        self.status(path)
        prefix = path.rstrip("/") + "/"
        return [self.status(p) for p in sorted(self.objects)
                if p.startswith(prefix) and "/" not in p[len(prefix):]]


#: (statement, warehouse id) -> (columns, rows); a column is a name (STRING) or (name, type name);
#: a value is sent as JSON_ARRAY sends it: a string, or null (other values are JSON-encoded).
StatementHandler = Callable[[str, str], tuple[list[Any], list[list[Any]]]]


class WorkspaceStandIn:
    """``with WorkspaceStandIn() as ws:`` a server at ``ws.url``; ``ws.requests`` in order."""

    def __init__(self, statement_handler: StatementHandler | None = None, *, chunk_rows: int = 1000,
                 pending: Callable[[str], bool] = lambda statement: False) -> None:
        """``chunk_rows``: rows per result chunk (more rows: the next chunks by their index);
        ``pending(statement)``: answer that statement ``PENDING`` first, its result on the poll."""
        self.chunk_rows, self.pending = chunk_rows, pending
        self._finished: dict[str, dict[str, Any]] = {}
        self._chunks: dict[str, list[list[list[Any]]]] = {}
        self.state = WorkspaceState()
        self.requests: list[Recorded] = []
        self.unknown: list[str] = []
        self.statement_handler = statement_handler
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- what tests read ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def jobs_by_name(self) -> dict[str, dict[str, Any]]:
        return {job["settings"]["name"]: job for job in self.state.jobs.values()}

    def calls(self, method: str, prefix: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.path.startswith(prefix)]

    # --- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> "WorkspaceStandIn":
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # no access log on the test's stderr
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                split = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(split.query).items()}
                try:
                    body: Any = json.loads(raw) if raw and "json" in (self.headers.get("Content-Type") or "json") else raw
                except ValueError:
                    body = raw
                with standin._lock:
                    standin.requests.append(Recorded(self.command, split.path, query, body))
                    try:
                        status, answer = 200, standin._route(self.command, split.path, query, body, raw)
                    except ApiError as exc:
                        status, answer = exc.status, {"error_code": exc.error_code, "message": exc.message}
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream" if isinstance(answer, bytes)
                                 else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # --- routes ---------------------------------------------------------------------------------

    def _route(self, method: str, path: str, query: dict[str, str], body: Any, raw: bytes) -> Any:
        ws = self.state
        if path == "/api/2.0/preview/scim/v2/Me":
            return {"id": "7", "userName": USER_NAME, "displayName": "Deployer", "active": True,
                    "emails": [{"value": USER_NAME, "primary": True}], "groups": [{"display": "users"}]}
        if path == "/.well-known/databricks-config":
            return {"host_type": "WORKSPACE_HOST", "workspace_id": "1234567890", "cloud": "AWS",
                    "oidc_endpoint": f"{self.url}/oidc"}
        if path == "/telemetry-ext":
            return {"errors": [], "numProtoSuccess": 1}
        if path == "/api/2.0/workspace/get-status":
            return ws.status(query.get("path", ""))
        if path == "/api/2.0/workspace/mkdirs" and method == "POST":
            ws.mkdirs(body["path"])
            return {}
        if path == "/api/2.0/workspace/list":
            return {"objects": ws.list(query.get("path", ""))}
        if path == "/api/2.0/workspace/delete" and method == "POST":
            ws.delete(body["path"], bool(body.get("recursive")))
            return {}
        if path == "/api/2.0/workspace/export":
            import base64

            target = query.get("path", "")
            if ws.status(target)["object_type"] != "FILE":
                raise ApiError(400, "INVALID_PARAMETER_VALUE", f"{target} is a directory")
            if query.get("direct_download") == "true":
                return ws.files[target]
            return {"content": base64.b64encode(ws.files[target]).decode(), "file_type": "auto"}
        if path == "/api/2.0/workspace/import" and method == "POST":
            import base64

            ws.put_file(body["path"], base64.b64decode(body.get("content") or ""), bool(body.get("overwrite")))
            return {}
        if path.startswith("/api/2.0/workspace-files/import-file/") and method == "POST":
            target = "/" + unquote(path[len("/api/2.0/workspace-files/import-file/"):]).lstrip("/")
            ws.put_file(target, raw, query.get("overwrite") == "true")
            return {}
        if path.startswith("/api/2.0/workspace-files/") and method == "GET":
            target = "/" + unquote(path[len("/api/2.0/workspace-files/"):]).lstrip("/")
            if target not in ws.files:
                raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", f"Path ({target}) doesn't exist.")
            return ws.files[target]
        if path.startswith("/api/") and path.split("/")[3:4] == ["jobs"]:
            return self._jobs(method, path.split("/", 4)[4], query, body)
        if path.startswith("/api/2.0/permissions/"):
            key = path[len("/api/2.0/permissions/"):]
            if method in ("PUT", "PATCH"):
                ws.permissions[key] = body
            object_type, _, object_id = key.partition("/")
            return {"object_id": f"/{object_type}/{object_id}", "object_type": object_type.rstrip("s"),
                    "access_control_list": (ws.permissions.get(key) or {}).get("access_control_list", [])}
        if path.startswith("/api/2.0/sql/statements"):
            return self._statements(method, path, body)
        self.unknown.append(f"{method} {path}")
        raise ApiError(404, "ENDPOINT_NOT_FOUND", f"No API found for '{method} {path}'")

    def _jobs(self, method: str, verb: str, query: dict[str, str], body: Any) -> Any:
        ws = self.state
        if verb == "create" and method == "POST":
            job_id = ws.new_id()
            ws.jobs[job_id] = {"job_id": job_id, "creator_user_name": USER_NAME,
                               "created_time": int(time.time() * 1000), "settings": body}
            return {"job_id": job_id}
        if verb == "reset" and method == "POST":
            job_id = int(body["job_id"])
            if job_id not in ws.jobs:
                raise ApiError(400, "INVALID_PARAMETER_VALUE", f"Job {job_id} does not exist.")
            ws.jobs[job_id]["settings"] = body["new_settings"]
            return {}
        if verb == "delete" and method == "POST":
            ws.jobs.pop(int(body["job_id"]), None)
            return {}
        if verb == "get":
            job_id = int(query.get("job_id", "0"))
            if job_id not in ws.jobs:
                raise ApiError(400, "INVALID_PARAMETER_VALUE", f"Job {job_id} does not exist.")
            return ws.jobs[job_id]
        if verb == "list":
            name = query.get("name")
            jobs = [j for j in ws.jobs.values() if name is None or j["settings"].get("name") == name]
            return {"jobs": jobs, "has_more": False}
        self.unknown.append(f"{method} jobs/{verb}")
        raise ApiError(404, "ENDPOINT_NOT_FOUND", f"No API found for '{method} jobs/{verb}'")

    def _statements(self, method: str, path: str, body: Any) -> Any:
        """The Statement Execution API: ``POST`` runs a statement (``SUCCEEDED`` with an
        ``INLINE`` ``JSON_ARRAY`` result, every value a string or null, ``chunk_rows`` rows per
        chunk; or ``FAILED`` with the error the handler raised; or ``PENDING`` first when
        ``pending`` says so), ``GET …/{id}`` polls it, ``GET …/{id}/result/chunks/{n}`` gives a
        further chunk."""
        parts = path.rstrip("/").split("/")[5:]  # after /api/2.0/sql/statements
        if method == "GET" and len(parts) == 1 and parts[0] in self._finished:
            return self._finished[parts[0]]
        if method == "GET" and len(parts) == 4 and parts[1:3] == ["result", "chunks"] and parts[0] in self._chunks:
            return self._chunk(parts[0], int(parts[3]))
        if method != "POST" or parts:
            raise ApiError(404, "ENDPOINT_NOT_FOUND", f"No API found for '{method} {path}'")
        if self.statement_handler is None:
            raise ApiError(404, "ENDPOINT_NOT_FOUND", "no SQL warehouse here")
        statement_id = f"01ef-{self.state.new_id()}"
        try:
            columns, rows = self.statement_handler(body["statement"], body.get("warehouse_id", ""))
        except ApiError as exc:
            answer: dict[str, Any] = {"statement_id": statement_id, "status": {
                "state": "FAILED", "error": {"error_code": exc.error_code, "message": exc.message}}}
        else:
            typed = [c if isinstance(c, tuple) else (c, "STRING") for c in columns]
            schema = {"column_count": len(typed),
                      "columns": [{"name": name, "position": i, "type_name": kind, "type_text": kind}
                                  for i, (name, kind) in enumerate(typed)]}
            data = [[None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in row]
                    for row in rows]
            chunks = [data[i:i + self.chunk_rows] for i in range(0, len(data), self.chunk_rows)] or [[]]
            self._chunks[statement_id] = chunks
            answer = {"statement_id": statement_id, "status": {"state": "SUCCEEDED"},
                      "manifest": {"format": "JSON_ARRAY", "schema": schema, "total_chunk_count": len(chunks),
                                   "total_row_count": len(data),
                                   "chunks": [{"chunk_index": i, "row_offset": i * self.chunk_rows,
                                               "row_count": len(c)} for i, c in enumerate(chunks)]},
                      "result": self._chunk(statement_id, 0)}
        self._finished[statement_id] = answer
        if self.pending(body["statement"]):
            return {"statement_id": statement_id, "status": {"state": "PENDING"}}
        return answer

    def _chunk(self, statement_id: str, index: int) -> dict[str, Any]:
        chunks = self._chunks[statement_id]
        result: dict[str, Any] = {"chunk_index": index, "row_offset": index * self.chunk_rows,
                                  "row_count": len(chunks[index]), "data_array": chunks[index]}
        if index + 1 < len(chunks):
            result["next_chunk_index"] = index + 1
            result["next_chunk_internal_link"] = f"/api/2.0/sql/statements/{statement_id}/result/chunks/{index + 1}"
        return result
