"""``verify_task`` for a catalog name: prove a drop's outcome through SQL on the session.

The same :class:`~delta_downgrade.operations.verify.VerifyReport` as a path's verification, from
what a catalog table shows without its storage location (Unity Catalog forbids path access to
managed tables):

- ``DESCRIBE DETAIL``: the protocol (versions, ``tableFeatures``) and the properties, among them
  the Checkpoint Protection boundary ``delta.requireCheckpointProtectionBeforeVersion``;
- ``DESCRIBE HISTORY``: the latest version, the DROP FEATURE commits of the feature, and the
  boundary commit (the RFC's boundary is the version of the commit that removed the feature);
- a read of the latest version by the runtime (``SELECT … LIMIT 1``).

What SQL cannot show is not claimed: the feature's traces in data files and the protected
checkpoint files are listed in ``unavailable``; an expectation on protected checkpoint files is
refused for a name (exit 2), since nothing here could check it.
"""

from __future__ import annotations


from msgspec import field
from delta_downgrade.app.engines.catalog_answers import HistoryEntry, read_detail, read_history
from delta_downgrade.app.engines.sql_session import SqlSession, run_sql
from delta_downgrade.app.engines.sql_statements import read_statement
from delta_downgrade.app.table_ref import TableRef
from delta_downgrade.errors import (
    BadSettingsError, DeltaDowngradeError, InsufficientPermissionsError, TableNotFoundError,
    TableOrViewNotFoundError,
)
from delta_downgrade.operations.verify import Check, Expectations, VerifyReport, version_and_boundary_checks
from delta_downgrade.protocol import lookup_feature
from delta_downgrade.protocol.json_values import JsonObject
from delta_downgrade.protocol.support import Operation, unsupported_features

#: Checks a path's verification makes that SQL cannot: file-level traces, checkpoint files.
CATALOG_VERIFY_UNAVAILABLE = ("feature_traces_removed", "protected_checkpoints_exist")


class CatalogVerifyReport(VerifyReport, frozen=True):
    """A :class:`VerifyReport` made through SQL, with the DROP FEATURE commits HISTORY shows."""

    drop_commits: list[JsonObject] = field(default_factory=list)
    unavailable: tuple[str, ...] = CATALOG_VERIFY_UNAVAILABLE

    def extra_result_fields(self) -> JsonObject:
        return {"drop_commits": self.drop_commits, "unavailable": list(self.unavailable)}


def verify_catalog_table(spark: SqlSession, ref: TableRef, expect: Expectations) -> CatalogVerifyReport:
    """Check every expectation through DETAIL, HISTORY and a read; bad input raises."""
    table = ref.display
    if expect.protected_checkpoints:
        raise BadSettingsError(
            f"expect_protected_checkpoints names checkpoint files, which a catalog table does not "
            f"show through SQL: leave it unset for {table} (the boundary is checked through "
            f"DESCRIBE DETAIL and HISTORY)", table=table)
    detail = read_detail(spark, ref)
    history = read_history(spark, ref)
    protocol = detail.protocol
    version = history[0].version if history else -1
    checks: list[Check] = []

    def add(name: str, ok: bool, text: str) -> None:
        checks.append(Check(name, ok, text))

    # The runtime's own read of the latest version (its protocol check included). A read it
    # refuses is a failed check (exit 1), as for a path; an unknown table or a missing privilege
    # stays bad input (exit 2).
    try:
        run_sql(spark, read_statement(ref), table)
        add("readable", True, f"version {version} read by the runtime; DESCRIBE DETAIL gives protocol {protocol}")
    except (TableOrViewNotFoundError, TableNotFoundError, InsufficientPermissionsError):
        raise
    except DeltaDowngradeError as exc:
        add("readable", False, f"the runtime could not read version {version}: {exc}")

    name = None
    if expect.absent_feature:
        spec = lookup_feature(expect.absent_feature)
        name = spec.name if spec else expect.absent_feature
        present = name.lower() in {f.lower() for f in detail.table_features}
        add("feature_absent_from_protocol", not present,
            f"{name} is {'still' if present else 'not'} in tableFeatures {list(detail.table_features)}")

    boundary = detail.boundary_version
    checks += version_and_boundary_checks(expect, protocol, boundary)
    if boundary is not None:
        add("boundary_commit_in_history", *_boundary_commit(history, boundary))

    unsupported = unsupported_features(protocol, Operation.READ)
    add("latest_version_readable_by_package", not unsupported,
        "every reader feature is supported" if not unsupported
        else f"unsupported reader features: {sorted(unsupported)}")

    drops = [e.to_dict() for e in history if e.drops(name)]
    return CatalogVerifyReport(table, expect.absent_feature, version, protocol, boundary, [], checks,
                               drop_commits=drops)


def _boundary_commit(history: list[HistoryEntry], boundary: int) -> tuple[bool, str]:
    """The boundary is the version of a DROP FEATURE commit (Checkpoint Protection RFC: the
    downgrade commit sets it to its own version), when HISTORY still holds it."""
    commit = next((e for e in history if e.version == boundary), None)
    if commit is None:
        oldest = history[-1].version if history else None
        return True, (f"boundary commit v{boundary} is older than the history retained "
                      f"(oldest v{oldest}): not checked")
    ok = commit.drops()
    return ok, (f"v{boundary} is {commit.operation} {dict(commit.parameters)}" if ok
                else f"v{boundary} is {commit.operation!r}, not a DROP FEATURE commit")
