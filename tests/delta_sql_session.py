"""A stand-in for a Spark session with Delta SQL and a Unity Catalog (test support).

Real Delta SQL runs in the tests (delta-spark's jars, names in Spark's session catalog); this
stand-in serves only what neither OSS Delta nor Spark's session catalog can show and no Unity
Catalog server here can (its server and Spark connector jars are not served by the Maven registry
these machines reach): a missing MODIFY privilege, and a managed table whose location the
package may not read. It plays the runtime, not the package:

- ``sql(statement)`` accepts the statements Delta's grammar has for what the package issues
  (``ALTER TABLE t DROP FEATURE f [TRUNCATE HISTORY]``, ``DESCRIBE DETAIL t``, ``DESCRIBE HISTORY
  t [LIMIT n]``, ``SELECT * FROM t LIMIT n``), tokenized and parsed here independently of the
  package (keywords case-insensitive, identifiers plain or backtick-quoted with ```` for a
  backtick); anything else is ``PARSE_SYNTAX_ERROR``;
- every catalog name maps to a real Delta table directory; names resolve case-insensitively
  against the current catalog and schema (``main.default``), as Unity Catalog does;
- ``DESCRIBE DETAIL`` and ``DESCRIBE HISTORY`` answer in the documented columns and types
  (delta-spark's ``TableDetail``; Databricks' "Table history schema"), from an independent reader
  of the directory: deltalake 1.6.6 (``DeltaTable.protocol()``, ``.metadata()``, ``.history()``)
  in a subprocess (tests/oracle.py);
- ``ALTER TABLE … DROP FEATURE`` is carried out by the package's native engine on the directory
  (as a runtime would carry it out), and its errors come back as the runtime raises them: a
  pyspark ``AnalysisException`` whose condition is the Delta error class;
- scripted refusals use the documented messages: ``INSUFFICIENT_PERMISSIONS`` for a name without
  MODIFY, ``TABLE_OR_VIEW_NOT_FOUND`` for an unknown name;
- the session lists Delta's extension in ``spark.sql.extensions`` and its driver "JVM" loads
  that class (the two questions ``has_delta_sql`` asks);
- ``location`` in DETAIL is an address no storage answers (a managed table's location cannot be
  read with path access), so a package that read it would fail.

``statements`` records every statement run, in order.
"""

from __future__ import annotations

import re
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Row

from tests.oracle import DeltaRsOracle

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CURRENT = ("main", "default")

# PROTOCOL.md "Table Features": the features a legacy (reader < 3 / writer < 7) protocol implies.
_LEGACY_WRITER = {2: ["appendOnly", "invariants"], 3: ["checkConstraints"],
                  4: ["changeDataFeed", "generatedColumns"], 5: ["columnMapping"], 6: ["identityColumns"]}

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z0-9_]+)|(\*|\.)|(\S))")


class StandInAnalysisException(AnalysisException):
    """pyspark's AnalysisException as a Delta runtime raises it through PySpark 4: the message
    starts with ``[CLASS]`` and ``getCondition()`` gives the class."""

    def __init__(self, condition: str, message: str, sqlstate: str | None = None) -> None:
        text = f"[{condition}] {message}" + (f" SQLSTATE: {sqlstate}" if sqlstate else "")
        super().__init__(message=text)
        self._condition = condition

    def getCondition(self) -> str:  # noqa: N802 - pyspark's name
        return self._condition


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class _JavaLang:
    """The two calls ``delta_downgrade.spark.has_delta_sql`` makes on a driver JVM, answered as
    one where Delta's session extension class loads."""

    class Thread:
        @staticmethod
        def currentThread() -> Any:  # noqa: N802 - Java's name
            return SimpleNamespace(getContextClassLoader=lambda: "context class loader")

    class Class:
        @staticmethod
        def forName(name: str, *args: Any) -> str:  # noqa: N802 - Java's name
            if name != DELTA_EXTENSION:
                raise RuntimeError(f"java.lang.ClassNotFoundException: {name}")
            return name


class _Result:
    """The little of a DataFrame the package uses on a statement's result."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows

    def collect(self) -> list[Row]:
        return list(self.rows)


def _tokens(statement: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(statement):
        if statement[pos:].strip() == "":
            break
        m = _TOKEN.match(statement, pos)
        quoted, word, punct, other = m.groups()
        if other is not None:
            raise StandInAnalysisException("PARSE_SYNTAX_ERROR", f"Syntax error at or near '{other}'.", "42601")
        if quoted is not None:
            out.append(("id", quoted[1:-1].replace("``", "`")))
        elif word is not None:
            out.append(("word", word))
        else:
            out.append(("p", punct))
        pos = m.end()
    return out


class DeltaSqlStandIn:
    """See the module docstring. ``tables``: catalog name (``catalog.schema.table``, any case) ->
    table directory. ``no_modify``: names whose principal lacks MODIFY. ``clock``: the runtime's
    clock, for its retention decisions (None: the system's)."""

    def __init__(self, tables: dict[str, str], *, no_modify: set[str] = frozenset(),
                 reader: DeltaRsOracle | None = None, clock: Any = None) -> None:
        self.tables = {tuple(k.lower().split(".")): str(v) for k, v in tables.items()}
        self.no_modify = {tuple(k.lower().split(".")) for k in no_modify}
        self.reader = reader or DeltaRsOracle()
        self.conf = _Conf({"spark.sql.extensions": DELTA_EXTENSION})
        self._jvm = SimpleNamespace(java=SimpleNamespace(lang=_JavaLang))
        self.statements: list[str] = []
        self.clock = clock  # the runtime's clock (None: the system's)

    # --- the runtime's parser -------------------------------------------------------------------

    def sql(self, statement: str) -> _Result:
        self.statements.append(statement)
        toks = _tokens(statement)
        words = [v.upper() if k == "word" else None for k, v in toks]
        if words[:2] == ["ALTER", "TABLE"]:
            name, i = self._qualified(toks, 2)
            if words[i:i + 2] != ["DROP", "FEATURE"] or i + 2 >= len(toks) or toks[i + 2][0] == "p":
                self._syntax(statement)
            feature = toks[i + 2][1]
            rest = words[i + 3:]
            if rest not in ([], ["TRUNCATE", "HISTORY"]):
                self._syntax(statement)
            return self._drop_feature(name, feature, truncate_history=bool(rest))
        if words[:1] in (["DESCRIBE"], ["DESC"]) and words[1:2] in (["DETAIL"], ["HISTORY"]):
            name, i = self._qualified(toks, 2)
            if words[1] == "DETAIL":
                if i != len(toks):
                    self._syntax(statement)
                return self._detail(name)
            limit = None
            if i < len(toks):
                if words[i] != "LIMIT" or i + 2 != len(toks) or not toks[i + 1][1].isdigit():
                    self._syntax(statement)
                limit = int(toks[i + 1][1])
            return self._history(name, limit)
        if words[:1] == ["SELECT"] and toks[1:2] == [("p", "*")] and words[2:3] == ["FROM"]:
            name, i = self._qualified(toks, 3)
            if words[i:i + 1] != ["LIMIT"] or i + 2 != len(toks) or not toks[i + 1][1].isdigit():
                self._syntax(statement)
            return self._select(name, int(toks[i + 1][1]))
        self._syntax(statement)
        raise AssertionError("unreachable")

    @staticmethod
    def _syntax(statement: str) -> None:
        raise StandInAnalysisException("PARSE_SYNTAX_ERROR", f"Syntax error in {statement!r}.", "42601")

    @staticmethod
    def _qualified(toks: list[tuple[str, str]], i: int) -> tuple[tuple[str, ...], int]:
        parts = []
        while True:
            if i >= len(toks) or toks[i][0] == "p":
                raise StandInAnalysisException("PARSE_SYNTAX_ERROR", "Syntax error: a table name expected.", "42601")
            parts.append(toks[i][1])
            i += 1
            if i < len(toks) and toks[i] == ("p", "."):
                i += 1
                continue
            return tuple(parts), i

    # --- the catalog ----------------------------------------------------------------------------

    def _resolve(self, parts: tuple[str, ...]) -> tuple[str, tuple[str, ...] | None]:
        """The table directory, and the full name (None for a path identifier)."""
        if len(parts) == 2 and parts[0].lower() == "delta" and parts[1].startswith(("/", "file:")):
            return parts[1], None
        full = tuple(p.lower() for p in (*CURRENT[:3 - len(parts)], *parts)) if len(parts) <= 3 else None
        if full is None or full not in self.tables:
            shown = ".".join(f"`{p}`" for p in (full or parts))
            raise StandInAnalysisException(
                "TABLE_OR_VIEW_NOT_FOUND",
                f"The table or view {shown} cannot be found. Verify the spelling and correctness of "
                f"the schema and catalog. If you did not qualify the name with a schema, verify the "
                f"current_schema() output, or qualify the name with the correct schema and catalog. "
                f"To tolerate the error on drop use DROP VIEW IF EXISTS or DROP TABLE IF EXISTS.",
                "42P01")
        return self.tables[full], full

    def _answers(self, path: str, history_limit: int | None = None) -> dict[str, Any]:
        return self.reader.catalog_answers(path, history_limit).unwrap()

    # --- the statements -------------------------------------------------------------------------

    def _drop_feature(self, parts: tuple[str, ...], feature: str, truncate_history: bool) -> _Result:
        from delta_downgrade.app.engines import NativeEngine
        from delta_downgrade.errors import DeltaDowngradeError

        path, full = self._resolve(parts)
        if full in self.no_modify:
            raise StandInAnalysisException(
                "INSUFFICIENT_PERMISSIONS",
                f"Insufficient privileges: User does not have MODIFY on Table '{'.'.join(full)}'.", "42501")
        try:
            outcome = NativeEngine().drop_feature(path, feature, truncate_history=truncate_history,
                                                 clock=self.clock)
        except DeltaDowngradeError as exc:  # the runtime's own refusal, in the runtime's form
            raise StandInAnalysisException(exc.error_class, exc.message, exc.sqlstate) from None
        if outcome.error is not None:  # already absent: delta-spark raises FEATURE_NOT_PRESENT
            raise StandInAnalysisException(outcome.error.error_class, outcome.error.message,
                                           outcome.error.sqlstate)
        return _Result([])

    def _detail(self, parts: tuple[str, ...]) -> _Result:
        path, full = self._resolve(parts)
        a = self._answers(path, 1)
        p, m = a["protocol"], a["metadata"]
        r, w = p["minReaderVersion"], p["minWriterVersion"]
        features = set(p["readerFeatures"] or []) | set(p["writerFeatures"] or [])
        if w < 7:
            features |= {f for v, names in _LEGACY_WRITER.items() if w >= v for f in names}
        if r == 2:
            features.add("columnMapping")
        latest = a["history"][0] if a["history"] else None
        row = Row(
            format="delta", id=m["id"], name=".".join(full) if full else None,
            description=m["description"],
            # A managed table's location: no storage here answers it (path access is forbidden).
            location=f"abfss://managed@unity-catalog.invalid/tables/{m['id']}",
            createdAt=datetime.fromtimestamp(m["createdTime"] / 1000) if m["createdTime"] else None,
            lastModified=datetime.fromtimestamp(latest["timestamp"] / 1000) if latest else None,
            partitionColumns=m["partitionColumns"], clusteringColumns=[],
            numFiles=a["numFiles"], sizeInBytes=a["sizeInBytes"],
            properties=dict(m["configuration"]),
            minReaderVersion=r, minWriterVersion=w, tableFeatures=sorted(features))
        return _Result([row])

    def _history(self, parts: tuple[str, ...], limit: int | None) -> _Result:
        path, _ = self._resolve(parts)
        rows = []
        for c in self._answers(path, limit)["history"]:
            rows.append(Row(
                version=c["version"],
                # PySpark hands a timestamp column over as a naive datetime in local time.
                timestamp=datetime.fromtimestamp(c["timestamp"] / 1000),
                userId=None, userName=None, operation=c.get("operation"),
                operationParameters={str(k): v if isinstance(v, str) else str(v).lower() if isinstance(v, bool)
                                     else str(v) for k, v in (c.get("operationParameters") or {}).items()},
                job=None, notebook=None, clusterId=None, readVersion=c.get("readVersion"),
                isolationLevel=c.get("isolationLevel"), isBlindAppend=c.get("isBlindAppend"),
                operationMetrics={str(k): str(v) for k, v in (c.get("operationMetrics") or {}).items()},
                userMetadata=c.get("userMetadata"), engineInfo=c.get("engineInfo")))
        return _Result(rows)

    def _select(self, parts: tuple[str, ...], limit: int) -> _Result:
        path, _ = self._resolve(parts)
        result = self.reader.first_rows(path, limit)
        if not result.ok:
            raise StandInAnalysisException("DELTA_UNSUPPORTED_FEATURES_FOR_READ", result.error or "read failed", "56038")
        return _Result([Row(**r) for r in result.value])
