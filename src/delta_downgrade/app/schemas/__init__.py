"""Pydantic models of everything the commands and tasks print for programs: the ``RESULT`` line
of every outcome (:mod:`.results`), every ``--json`` document (:mod:`.documents`,
:mod:`.compat`) and a task's ``PROGRESS {json}`` line, with their JSON Schemas generated into
``docs/schemas/`` (``make schemas``).

They describe the output; they do not make it: the renderers (``app/render/``) build plain
dictionaries and never import these models, so that no command loads pydantic to print its
result. Tests validate the real output against them (``validate_complete``, tests/output_schemas.py: strict types, no
undeclared field); a consumer validates with the models or the schemas, which accept fields
added later.
"""

from __future__ import annotations

from pydantic import BaseModel

from delta_downgrade.app.schemas import compat, documents, results

__all__ = ["SCHEMAS"]

#: Schema file name (``docs/schemas/<name>.schema.json``) -> the model it is generated from.
SCHEMAS: dict[str, type[BaseModel]] = {
    # RESULT lines
    "result-drop": results.DropResult,
    "result-drop-for-client": results.ClientDropResult,
    "result-verify": results.VerifyResult,
    "result-inspect": results.InspectResult,
    "result-inspect-catalog": results.CatalogInspectResult,
    "result-compat": results.CompatResult,
    "result-compat-fleet-summary": results.CompatFleetSummary,
    "result-compat-list-clients": results.ClientListResult,
    "result-cleanup": results.CleanupResult,
    "result-vacuum": results.VacuumResult,
    "result-error": results.ErrorResult,
    "result-task-fleet-summary": results.TaskFleetSummary,
    # --json documents (drop-feature / truncate-history --json print their RESULT's fields)
    "inspect": documents.InspectOutput,
    "inspect-catalog": documents.CatalogInspectOutput,
    "compat": compat.CompatTableOutput,
    "compat-fleet": compat.CompatFleetOutput,
    "compat-list-clients": compat.ClientListOutput,
    "cleanup": documents.CleanupOutput,
    "vacuum": documents.VacuumOutput,
    # the compat report's data file
    "compat-report": compat.CompatReportDocument,
    # a task's progress line on stderr
    "progress": documents.ProgressEvent,
}
