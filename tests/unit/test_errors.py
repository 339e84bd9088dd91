"""Errors are declared once, in ``delta_downgrade/errors.py``: each type carries its Delta error
class, SQLSTATE and exit code, and a raise site only picks the type."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import delta_downgrade
from delta_downgrade import errors
from delta_downgrade.errors import DeltaDowngradeError

PACKAGE = Path(delta_downgrade.__file__).parent
ERRORS_MODULE = PACKAGE / "errors.py"
# Exception types that are no error of the package: control flow inside one module, caught there
# and never shown to a user. They are private (leading underscore) and say so in their docstring.
EXCEPTION_BASES = {"Exception", "BaseException", "ValueError", "RuntimeError", "KeyError", "OSError",
                   "TypeError", "LookupError", "ArithmeticError"}
ERROR_ATTRIBUTES = {"error_class", "sqlstate", "exit_code"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p != ERRORS_MODULE)


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _is_error_base(name: str) -> bool:
    return name in EXCEPTION_BASES or name.endswith("Error") or name.endswith("Exception")


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', '?')}"


def test_no_error_type_is_declared_outside_errors_py() -> None:
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            if not any(_is_error_base(_base_name(b)) for b in node.bases):
                continue
            doc = ast.get_docstring(node) or ""
            private_control_flow = node.name.startswith("_") and doc.strip() != ""
            if not private_control_flow:
                found.append(f"{_where(path, node)} class {node.name}")
    assert found == [], "declare error types in errors.py:\n" + "\n".join(found)


def test_raise_sites_neither_pass_nor_patch_error_attributes() -> None:
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                found += [f"{_where(path, node)} passes {kw.arg}=" for kw in node.keywords
                          if kw.arg in ERROR_ATTRIBUTES]
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            found += [f"{_where(path, node)} sets .{t.attr}" for t in targets
                      if isinstance(t, ast.Attribute) and t.attr in ERROR_ATTRIBUTES]
    assert found == [], "pick the error type from errors.py instead:\n" + "\n".join(found)


def _error_types() -> list[type[DeltaDowngradeError]]:
    return [obj for _, obj in inspect.getmembers(errors, inspect.isclass)
            if issubclass(obj, DeltaDowngradeError) and obj is not DeltaDowngradeError]


def test_errors_py_declares_the_package_errors() -> None:
    names = {t.__name__ for t in _error_types()}
    assert {"FeatureNotPresentError", "DeletionVectorError", "DvPurgeError", "FileLayoutError",
            "VacuumRetentionTooShortError", "CheckpointProtectionWaitError"} <= names


@pytest.mark.parametrize("error_type", _error_types(), ids=lambda t: t.__name__)
def test_every_error_type_carries_its_class_sqlstate_and_exit_code(error_type: type) -> None:
    assert error_type.__module__ == errors.__name__
    assert error_type.error_class != DeltaDowngradeError.error_class
    assert error_type.error_class.replace("_", "").isalnum() and error_type.error_class.isupper()
    assert isinstance(error_type.sqlstate, str) and len(error_type.sqlstate) == 5
    assert error_type.sqlstate.isalnum() and error_type.sqlstate.isupper() or error_type.sqlstate.isdigit()
    assert error_type.exit_code in {1, 2, 3, 4}


def test_from_delta_error_class_keeps_the_runtime_class() -> None:
    err = errors.from_delta_error_class("DELTA_SOMETHING_NEW", "boom", table="t")
    assert type(err) is DeltaDowngradeError and err.error_class == "DELTA_SOMETHING_NEW"
    wait = errors.from_delta_error_class("DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST", "later")
    assert isinstance(wait, errors.RetentionWaitError) and wait.exit_code == errors.EXIT_WAIT


def test_amended_keeps_type_class_and_attributes() -> None:
    err = errors.RetentionWaitError("wait", retry_after="2030-01-01T00:00:00Z", table="t",
                                    params={"a": 1})
    again = err.amended("wait longer", table="other", feature="f", params={"b": 2})
    assert type(again) is errors.RetentionWaitError and again.retry_after == err.retry_after
    assert (again.table, again.feature, again.params) == ("t", "f", {"b": 2})
    assert str(again) == "[DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD] wait longer (table t)"
    assert str(err).endswith("] wait (table t)")
