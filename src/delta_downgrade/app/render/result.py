"""The ``RESULT {json}`` line every task and every command prints, one per table, on every
outcome (an error included).

The line is a contract: its keys are what ``databricks.yml`` jobs read back as task values. The
dictionaries are built here from the typed outcomes of the operations (:class:`DropOutcome`,
:class:`VerifyReport`, an inspection, a cleanup, a VACUUM, a :class:`DeltaDowngradeError`); the
keys are printed sorted. Every RESULT has ``table``, ``status`` and, once printed, ``exit_code``.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Mapping, TextIO

from delta_downgrade.errors import DeltaDowngradeError, RetentionWaitError
from delta_downgrade.protocol import Protocol
from delta_downgrade.protocol.json_values import JsonObject

if TYPE_CHECKING:  # the operations load pyarrow: the entry points import this module first
    from delta_downgrade.app.engines.sql_inspect import CatalogTableReport
    from delta_downgrade.drop.run import DropOutcome
    from delta_downgrade.operations.cleanup import CleanupResult
    from delta_downgrade.operations.drop_for_client import ClientDropOutcome
    from delta_downgrade.operations.inspect import TableReport
    from delta_downgrade.operations.vacuum import VacuumResult
    from delta_downgrade.operations.verify import Check, VerifyReport

RESULT_PREFIX = "RESULT "


def protocol_fields(protocol: Protocol) -> JsonObject:
    """The protocol keys of a RESULT: versions and sorted feature lists (None when not listed)."""
    return {
        "min_reader_version": protocol.min_reader_version,
        "min_writer_version": protocol.min_writer_version,
        "reader_features": sorted(protocol.reader_features) if protocol.reader_features is not None else None,
        "writer_features": sorted(protocol.writer_features) if protocol.writer_features is not None else None,
    }


def drop_result(outcome: DropOutcome) -> JsonObject:
    """The RESULT of one drop (``drop_feature_task``, ``truncate_task``, ``drop-feature``)."""
    from delta_downgrade.drop.run import STATUS_PLANNED  # loaded with the outcome

    out: JsonObject = {
        "table": outcome.table, "feature": outcome.feature, "status": outcome.status,
        **protocol_fields(outcome.protocol_after),
        "protocol_before": outcome.protocol_before.to_action(),
        "boundary_version": outcome.boundary_version,
        "protected_checkpoints": outcome.protected_checkpoints,
        "needs_truncate": outcome.needs_truncate,
        "truncate_after": outcome.truncate_after,
        "commits": outcome.commits,
        "checkpoints_written": outcome.checkpoints_written,
    }
    if outcome.plan and outcome.status == STATUS_PLANNED:
        out["plan"] = outcome.plan
    # A catalog name's outcome (delta-sql engine) names the fields SQL cannot give.
    unavailable = getattr(outcome, "unavailable", None)
    if unavailable:
        out["unavailable"] = list(unavailable)
    if outcome.error is not None:
        out.update(outcome.error.to_dict())
    return out


def client_drop_result(outcome: ClientDropOutcome) -> JsonObject:
    """The RESULT of ``drop-feature --for CLIENT`` (``drop_feature_task --for_client``): the keys
    of :func:`drop_result` for the run as a whole, plus the client and the features. ``feature``
    keeps its type (one string): the features dropped, comma-joined in order (None when none);
    ``features_dropped`` is the list, ``features_planned`` the plan's list (the same in a real run
    that finished; in a dry run the features it would drop). ``commits`` and
    ``checkpoints_written`` are every drop's, in order; the boundary, protected checkpoints and
    ``truncate_after`` are the table's after the last drop."""
    drops = outcome.drops
    last = drops[-1] if drops else None
    dropped = outcome.features_dropped
    out: JsonObject = {
        "table": outcome.table, "client": outcome.client.id,
        "feature": ",".join(dropped) if dropped else None,
        "features_dropped": dropped, "features_planned": list(outcome.features_planned),
        "status": outcome.status,
        **protocol_fields(outcome.protocol_after),
        "protocol_before": outcome.protocol_before.to_action(),
        "boundary_version": last.boundary_version if last else outcome.boundary_version,
        "protected_checkpoints": last.protected_checkpoints if last else list(outcome.protected_checkpoints),
        "needs_truncate": "checkpointProtection" in outcome.protocol_after.features,
        "truncate_after": last.truncate_after if last else outcome.truncate_after,
        "commits": [v for d in drops for v in d.commits],
        "checkpoints_written": [p for d in drops for p in d.checkpoints_written],
        "read_before": outcome.verdict.read.verdict.value, "write_before": outcome.verdict.write.verdict.value,
        "read_after": outcome.read_after.verdict.value, "write_after": outcome.write_after.verdict.value,
        "truncate_history_before_write": outcome.truncate_history_before_write,
        "notes": list(outcome.notes),
    }
    if outcome.status == "planned":
        out["plan"] = [f"drop {d.feature}: {step}" for d in drops for step in d.plan]
    return out


def check_result(check: Check) -> JsonObject:
    return {"check": check.name, "ok": check.ok, "detail": check.detail}


def verify_result(report: VerifyReport) -> JsonObject:
    """The RESULT of ``verify_task`` for one table: ``verified`` or ``failed``, with every check."""
    return {
        "table": report.table,
        "feature": report.feature,
        "status": "verified" if report.ok else "failed",
        "version": report.version,
        **protocol_fields(report.protocol),
        "boundary_version": report.boundary_version,
        "protected_checkpoints": report.protected_checkpoints,
        "needs_truncate": report.needs_truncate,
        "checks": [check_result(c) for c in report.checks],
        "failed_checks": [c.name for c in report.failures],
    }


def inspect_result(report: TableReport) -> JsonObject:
    """The RESULT of ``inspect``: the version read, its protocol and checkpoint protection."""
    return {"table": report.table, "status": "inspected", "version": report.version,
            "latest_version": report.latest_version, **protocol_fields(report.protocol),
            "boundary_version": report.boundary_version,
            "protected_checkpoint_versions": list(report.protected_checkpoint_versions),
            "droppable_features": report.droppable_features}


def catalog_inspect_result(report: CatalogTableReport) -> JsonObject:
    """The RESULT of ``inspect`` on a catalog name (``DESCRIBE DETAIL``/``HISTORY``): the same
    keys as :func:`inspect_result` where SQL gives them (the values of the ``inspect --json``
    document, ``app/render/catalog_inspect.py``)."""
    latest = report.history[0] if report.history else None
    version = latest.version if latest else None
    return {"table": report.table, "status": "inspected", "version": version,
            "latest_version": version, **protocol_fields(report.protocol),
            "boundary_version": report.detail.boundary_version,
            "droppable_features": [f.name for f in report.features if f.removable]}


def cleanup_result(table: str, result: CleanupResult, *, dry_run: bool) -> JsonObject:
    """The RESULT of ``cleanup``: ``planned`` (dry run), ``skipped`` (the Checkpoint Protection
    rules forbid it: not an error) or ``cleaned``; counts, not paths (a log may hold millions)."""
    plan = result.plan
    status = "planned" if dry_run else "cleaned" if plan.allowed else "skipped"
    return {"table": table, "status": status, "dry_run": dry_run, "decision": plan.decision,
            "allowed": plan.allowed, "cutoff_checkpoint": plan.cutoff_checkpoint,
            "boundary_version": plan.boundary_version,
            "deletions_planned": (plan.num_deletions if plan.allowed else 0) + len(plan.delete_temps),
            "deleted_count": len(result.deleted)}


def vacuum_result(result: VacuumResult) -> JsonObject:
    """The RESULT of ``vacuum``: ``planned`` (dry run), ``vacuumed``, or ``failed`` when a file
    could not be deleted (exit 1; the document lists them); counts, not paths."""
    status = "planned" if result.dry_run else "vacuumed" if result.ok else "failed"
    return {"table": result.table, "status": status, "version": result.version,
            "dry_run": result.dry_run, "retention_ms": result.retention_ms,
            "files_to_delete_count": len(result.files_to_delete), "bytes_to_delete": result.bytes_to_delete,
            "deleted_count": len(result.deleted), "failed_count": len(result.failed)}


def error_result(table: str | None, feature: str | None, exc: BaseException) -> JsonObject:
    """The RESULT of a table whose task failed: the error's class, message and parameters; a
    :class:`DeltaDowngradeError` that says when to retry (``retry_after``) is ``waiting``."""
    if isinstance(exc, DeltaDowngradeError):
        result = {"table": table, "feature": feature, "status": "error", **exc.to_dict()}
        retry_after = getattr(exc, "retry_after", None)
        # A wait is "waiting" even when the runtime's wait (delta-sql) does not say until when.
        if retry_after is not None or isinstance(exc, RetentionWaitError):
            result["status"] = "waiting"
            result["truncate_after"] = retry_after
        return result
    return {"table": table, "feature": feature, "status": "error", "error_class": "DELTA_DOWNGRADE_INTERNAL_ERROR",
            "message": f"{type(exc).__name__}: {exc}"}


def format_result(result: Mapping[str, object]) -> str:
    return RESULT_PREFIX + json.dumps(result, sort_keys=True, default=str, separators=(",", ":"))


def emit_result(result: Mapping[str, object], stream: TextIO | None = None, *,
                secrets: Mapping[str, str] | None = None) -> None:
    """Print one RESULT line; the values of ``secrets`` (the storage options) are masked in it
    (an error's message may quote a store's answer)."""
    from delta_downgrade.app.storage_options import redact_output

    out = stream or sys.stdout
    # Always masked, options or not (a token in a table URI's query string, a secret-named
    # environment variable), value by value after one JSON round trip, so that what
    # ``default=str`` would turn into text is masked too.
    result = redact_output(json.loads(json.dumps(result, default=str)), secrets)
    out.write(format_result(result) + "\n")
    out.flush()


def parse_result_lines(text: str) -> list[dict[str, Any]]:
    """Every RESULT line of a task's stdout (tests and the local job runner read them)."""
    return [json.loads(line[len(RESULT_PREFIX):]) for line in text.splitlines()
            if line.startswith(RESULT_PREFIX)]
