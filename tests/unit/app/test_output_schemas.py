"""The output models (``delta_downgrade.app.schemas``) and their JSON Schemas (``docs/schemas/``):
the committed schemas are what the models generate, both refuse a document with a missing field
or a wrong type, the models' fixed values are the code's, and no command imports them.

The real output of every command and task is validated in
tests/integration/test_output_validates_against_schemas.py."""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest
from delta_downgrade_tools.schemas import (
    SUFFIX,
    differences,
    render_schemas,
    schema_dir,
)
from pydantic import ValidationError

import delta_downgrade
from delta_downgrade.app.render.result import drop_result, error_result, format_result
from delta_downgrade.app.schemas import SCHEMAS, results
from tests.output_schemas import UndeclaredFieldsError, validate_complete
from delta_downgrade.errors import BadInputError, RetentionWaitError
from delta_downgrade.protocol import Protocol

PACKAGE_DIR = Path(delta_downgrade.__file__).resolve().parent
SCHEMA_DIR = schema_dir(PACKAGE_DIR.parents[1])


def _schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{name}{SUFFIX}").read_text(encoding="utf-8"))


def _drop_line() -> dict:
    """A RESULT as ``drop_result`` prints it (one JSON round trip, as ``emit_result`` does)."""
    from delta_downgrade.drop.run import DropOutcome

    before = Protocol(3, 7, frozenset({"vacuumProtocolCheck"}),
                      frozenset({"appendOnly", "invariants", "vacuumProtocolCheck"}))
    after = Protocol(1, 7, None, frozenset({"appendOnly", "checkpointProtection", "invariants"}))
    outcome = DropOutcome("/t", "vacuumProtocolCheck", "planned", before, after, 5,
                          ["_delta_log/00000000000000000005.checkpoint.parquet"], [], [],
                          "2026-11-28T07:40:00Z", plan=["commit v5: DROP FEATURE (2 action(s))"])
    line = format_result({"command": "drop-feature", **drop_result(outcome), "exit_code": 0})
    return json.loads(line.removeprefix("RESULT "))


# --- the committed schemas ------------------------------------------------------------------------

def test_committed_schemas_are_what_the_models_generate():
    assert differences(SCHEMA_DIR) == [], "run `make schemas` and commit docs/schemas/"


def test_every_schema_is_a_valid_draft_2020_12_schema_that_accepts_added_fields():
    rendered = render_schemas()
    assert len(rendered) == len(SCHEMAS)
    for name, text in rendered.items():
        schema = json.loads(text)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["additionalProperties"] is True, name  # fields are only ever added


# --- refusals: a wrong document fails the model and the schema alike ------------------------------

def test_a_real_result_validates_and_every_kind_of_damage_is_refused():
    good = _drop_line()
    validate_complete(results.DropResult, good)
    jsonschema.validate(good, _schema("result-drop"))

    missing = copy.deepcopy(good)
    del missing["boundary_version"]  # nullable, but always printed: required
    wrong_type = {**good, "needs_truncate": "true"}
    int_as_bool = {**good, "exit_code": True}
    bad_status = {**good, "status": "done"}
    null_plan = {**good, "plan": None}  # present only in a dry run, and then a list
    nested = copy.deepcopy(good)
    nested["protocol_before"]["minReaderVersion"] = "3"
    for damaged in (missing, wrong_type, int_as_bool, bad_status, null_plan, nested):
        with pytest.raises(ValidationError):
            validate_complete(results.DropResult, damaged)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(damaged, _schema("result-drop"))


def test_an_undeclared_field_is_accepted_by_consumers_and_refused_by_the_completeness_check():
    added = {**_drop_line(), "new_field": 1}
    added["protocol_before"] = {**added["protocol_before"], "nested_new": []}
    results.DropResult.model_validate_json(json.dumps(added), strict=True)  # a consumer's model
    jsonschema.validate(added, _schema("result-drop"))  # a consumer's schema
    with pytest.raises(UndeclaredFieldsError) as refused:
        validate_complete(results.DropResult, added)
    assert refused.value.paths == ["$.new_field", "$.protocol_before.nested_new"]


def test_error_and_wait_results_as_rendered_validate():
    error = {"command": "inspect", **error_result("/t", None, BadInputError("no", table="/t")), "exit_code": 2}
    validate_complete(results.ErrorResult, error)
    wait = {**error_result("/t", "checkpointProtection",
                           RetentionWaitError("wait", retry_after="2026-11-28T07:40:00Z")), "exit_code": 3}
    assert validate_complete(results.ErrorResult, wait).status == "waiting"
    internal = {**error_result(None, None, ValueError("bug")), "exit_code": 1}
    validate_complete(results.ErrorResult, internal)
    with pytest.raises(ValidationError):
        validate_complete(results.ErrorResult, {k: v for k, v in error.items() if k != "message"})


def test_progress_lines_of_a_task_validate(tmp_path, monkeypatch):
    """The ``PROGRESS {json}`` lines a task prints while a rewrite counts its batches."""
    import contextlib
    import io

    from delta_downgrade.app.console_logging import TASK_STEP_FORMAT, console_logging
    from delta_downgrade.app.progress import JSON, MODE_ENV, PROGRESS_PREFIX
    from delta_downgrade.app.schemas.documents import ProgressEvent
    from delta_downgrade.log.delta_log import DeltaLog
    from delta_downgrade.drop.run import DropRun
    from tests.drop_support import build

    monkeypatch.delenv(MODE_ENV, raising=False)
    path = str(tmp_path / "t")
    build(path, Protocol(3, 7, frozenset({"vacuumProtocolCheck"}), frozenset({"vacuumProtocolCheck"})))
    run = DropRun(DeltaLog(path), "vacuumProtocolCheck", announce=True)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), console_logging(TASK_STEP_FORMAT, progress=JSON):
        for done in range(3):
            run.progress(f"purged {done}/2 files", step="purge deletion vectors", done=done, total=2,
                         done_bytes=done * 100, total_bytes=200)
        run.progress("counted without bytes", step="rewrite", done=1, total=4)
    events = [line.removeprefix(PROGRESS_PREFIX) for line in err.getvalue().splitlines()
              if line.startswith(PROGRESS_PREFIX)]
    assert len(events) == 4
    for event in events:
        validate_complete(ProgressEvent, event)
        jsonschema.validate(json.loads(event), _schema("progress"))
    assert validate_complete(ProgressEvent, events[2]).finished is True


# --- the README's field tables are the models' ----------------------------------------------------

def _readme_fields(heading: str) -> list[str]:
    """The field names of the first column of the README table under ``heading``."""
    text = (PACKAGE_DIR.parents[1] / "README.md").read_text(encoding="utf-8")
    section = text[text.index(heading):]
    rows = [line for line in section.split("\n\n", 2)[1].splitlines() if line.startswith("| `")]
    return [name.removesuffix("[]") for row in rows for name in re.findall(r"`([^`]+)`", row.split(" | ")[0])]


def _model_fields(model: type) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def test_the_readme_inspect_table_names_every_field_of_the_inspect_document():
    from delta_downgrade.app.schemas.documents import InspectOutput

    assert set(_readme_fields("### `inspect --json` fields")) == _model_fields(InspectOutput)


def test_the_readme_compat_table_names_fields_of_the_compat_document():
    from delta_downgrade.app.schemas.compat import (
        ClientCompat,
        CompatTableDocument,
        Summary,
        Unblock,
        UnblockStep,
    )

    documented = set(_readme_fields("### `compat --json` document"))
    described = (_model_fields(CompatTableDocument) | _model_fields(ClientCompat) | _model_fields(Unblock)
                 | {"steps"} | _model_fields(UnblockStep) | _model_fields(Summary))
    assert documented - described == set()
    assert _model_fields(CompatTableDocument) - documented == set()


# --- the models' fixed values are the code's ------------------------------------------------------

def test_cleanup_decisions_are_the_operations():
    from delta_downgrade.operations import cleanup

    decisions = {cleanup.NO_CHECKPOINT, cleanup.NOTHING_TO_DELETE, cleanup.UNPROTECTED, cleanup.ALL_AT_ONCE,
                 cleanup.SUPPORTED_RANGE, cleanup.SKIPPED_UNSUPPORTED, cleanup.SKIPPED_PARTIAL}
    assert set(results.CLEANUP_DECISIONS) == decisions


def test_verdicts_and_drop_statuses_are_the_code_values():
    from typing import get_args

    from delta_downgrade.app.schemas.base import VerdictValue
    from delta_downgrade.compat.verdict import Verdict
    from delta_downgrade.drop import run as drop_run

    assert set(get_args(VerdictValue)) == {v.value for v in Verdict}
    statuses = set(get_args(results.DropResult.model_fields["status"].annotation))
    assert statuses == {drop_run.STATUS_DROPPED, drop_run.STATUS_ALREADY_ABSENT, drop_run.STATUS_PLANNED}


# --- printing never needs the models --------------------------------------------------------------

def test_no_module_outside_the_schemas_package_imports_it():
    """The renderers build plain dictionaries: a command never loads pydantic to print (every
    import counts, a lazy one too)."""
    importers = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if "schemas" in path.relative_to(PACKAGE_DIR).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.startswith("delta_downgrade.app.schemas") for n in names):
                importers.append(str(path.relative_to(PACKAGE_DIR)))
    assert importers == []
