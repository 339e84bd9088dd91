"""Catalog names without a cluster: Delta's SQL on a Databricks SQL warehouse, through
databricks-sdk's Statement Execution API (REST ``POST /api/2.0/sql/statements``).

With ``DELTA_DOWNGRADE_WAREHOUSE_ID`` set and a workspace the SDK can reach (``DATABRICKS_HOST``
and a token or OAuth credentials, or a profile: the SDK's own configuration), and no Spark
session active, :func:`warehouse_session` answers where a session would: the delta-sql engine runs
the very statements it runs on a session (``DESCRIBE DETAIL``, ``DESCRIBE HISTORY``,
``ALTER TABLE … DROP FEATURE``) and reads their rows the same way, so the RESULT lines carry the
same fields.

A statement's rows come back as ``JSON_ARRAY`` (every value a string or null) with the columns'
types in the manifest; :class:`WarehouseRow` gives them the Python types a Spark ``Row`` has
(integers, booleans, arrays and maps decoded, timestamps as datetimes). A failed statement raises
``errors.WarehouseStatementFailed``, whose message keeps the runtime's ``[ERROR_CLASS]`` prefix,
so that ``run_sql`` maps it like a session's error.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from typing import Any

from delta_downgrade.errors import WarehouseStatementFailed

WAREHOUSE_ENV = "DELTA_DOWNGRADE_WAREHOUSE_ID"
#: How long one call waits for a statement before polling (the API allows 5 to 50 seconds).
_WAIT = "30s"
_POLL_S = 2.0
_INTEGRAL = frozenset({"BYTE", "SHORT", "INT", "LONG"})
_FRACTIONAL = frozenset({"FLOAT", "DOUBLE"})
_JSON = frozenset({"ARRAY", "MAP", "STRUCT"})


def warehouse_id() -> str | None:
    return (os.environ.get(WAREHOUSE_ENV) or "").strip() or None


def _typed(value: Any, type_name: str) -> Any:
    if value is None:
        return None
    if type_name in _INTEGRAL:
        return int(value)
    if type_name in _FRACTIONAL:
        return float(value)
    if type_name == "BOOLEAN":
        return str(value).lower() == "true"
    if type_name in _JSON:
        return json.loads(value) if isinstance(value, str) else value
    if type_name == "TIMESTAMP":
        text = str(value).replace("Z", "+00:00")
        moment = datetime.fromisoformat(text)
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return value


class WarehouseRow:
    """One result row, read as a Spark ``Row`` is: ``asDict()`` and ``row["column"]``."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def asDict(self) -> dict[str, Any]:  # noqa: N802 - Spark's Row spelling
        return dict(self._values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]


class _Result:
    def __init__(self, rows: list[WarehouseRow]) -> None:
        self._rows = rows

    def collect(self) -> list[WarehouseRow]:
        return list(self._rows)


class WarehouseSession:
    """What the delta-sql engine needs of a session (``sql(statement).collect()``), answered by
    a SQL warehouse."""

    def __init__(self, client: Any, warehouse: str) -> None:
        self.client, self.warehouse = client, warehouse

    def sql(self, statement: str) -> _Result:
        from databricks.sdk.service.sql import (
            Disposition, ExecuteStatementRequestOnWaitTimeout, Format, StatementState,
        )

        api = self.client.statement_execution
        response = api.execute_statement(statement=statement, warehouse_id=self.warehouse, wait_timeout=_WAIT,
                                          on_wait_timeout=ExecuteStatementRequestOnWaitTimeout.CONTINUE,
                                          format=Format.JSON_ARRAY, disposition=Disposition.INLINE)
        while response.status is not None and response.status.state in (StatementState.PENDING,
                                                                           StatementState.RUNNING):
            time.sleep(_POLL_S)
            response = api.get_statement(response.statement_id)
        state = response.status.state if response.status is not None else None
        if state != StatementState.SUCCEEDED:
            error = response.status.error if response.status is not None else None
            message = (error.message if error is not None and error.message else
                       f"the statement ended {getattr(state, 'value', state)}")
            raise WarehouseStatementFailed(message, getattr(getattr(error, "error_code", None), "value", None))
        columns = [(c.name, getattr(c.type_name, "value", c.type_name) or "STRING")
                   for c in ((response.manifest.schema.columns or []) if response.manifest and
                             response.manifest.schema else [])]
        rows: list[WarehouseRow] = []
        chunk = response.result
        while chunk is not None:
            for values in chunk.data_array or []:
                rows.append(WarehouseRow({name: _typed(v, kind) for (name, kind), v in zip(columns, values)}))
            if chunk.next_chunk_index is None:
                break
            chunk = api.get_statement_result_chunk_n(response.statement_id, chunk.next_chunk_index)
        return _Result(rows)


def warehouse_session() -> WarehouseSession | None:
    """A :class:`WarehouseSession` when ``DELTA_DOWNGRADE_WAREHOUSE_ID`` is set; None otherwise.
    Without databricks-sdk or a workspace to reach, :class:`EngineUnavailableError` (exit 2)
    saying what is missing."""
    warehouse = warehouse_id()
    if warehouse is None:
        return None
    from delta_downgrade.errors import EngineUnavailableError

    try:
        from databricks.sdk import WorkspaceClient
    except ImportError:
        raise EngineUnavailableError(f"{WAREHOUSE_ENV} is set, but databricks-sdk is not installed: "
                                     f"pip install 'delta-downgrade[databricks]'") from None
    try:
        client = WorkspaceClient()
    except ValueError as exc:  # the SDK's "cannot configure default credentials"
        raise EngineUnavailableError(
            f"{WAREHOUSE_ENV} is set, but no Databricks workspace is configured: set DATABRICKS_HOST "
            f"and DATABRICKS_TOKEN (or OAuth credentials), or DATABRICKS_CONFIG_PROFILE "
            f"({' '.join(str(exc).split())})") from None
    return WarehouseSession(client, warehouse)
