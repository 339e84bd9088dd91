"""Every ``# type: ignore`` in the package says why, on its line or in the comment line above it:
an ignore without a reason hides whatever the type checker finds there next."""

from __future__ import annotations

import re
from pathlib import Path

import delta_downgrade

PACKAGE_DIR = Path(delta_downgrade.__file__).resolve().parent
IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?(?P<rest>.*)$")


def ignores_without_reason(text: str) -> list[int]:
    lines = text.splitlines()
    missing = []
    for number, line in enumerate(lines, 1):
        match = IGNORE.search(line)
        if match is None:
            continue
        said_here = match.group("rest").strip().lstrip("#").strip()
        said_above = number > 1 and lines[number - 2].strip().startswith("#")
        if not said_here and not said_above:
            missing.append(number)
    return missing


def test_every_type_ignore_in_the_package_has_its_reason():
    found = {str(path.relative_to(PACKAGE_DIR)): lines
             for path in sorted(PACKAGE_DIR.rglob("*.py")) if "__pycache__" not in path.parts
             for lines in [ignores_without_reason(path.read_text(encoding="utf-8"))] if lines}
    assert found == {}, f"type: ignore without a reason (file: lines): {found}"


def test_an_ignore_without_a_reason_is_found():
    assert ignores_without_reason("x = f()  # type: ignore[arg-type]\n") == [1]
    assert ignores_without_reason("x = f()  # type: ignore[arg-type]  # f takes any buffer\n") == []
    assert ignores_without_reason("# f takes any buffer\nx = f()  # type: ignore[arg-type]\n") == []
