"""``python -m delta_downgrade_tools.lowest_requirements pyproject.toml``: the package's runtime
dependencies pinned at their lower bounds, one ``name==version`` a line, for ``make test-lowest-deps``
to install and run the unit tier on; with ``--check``, whether those are the versions this
interpreter imports (the pins laid over the test venv must win).

A lower bound is a promise: pip keeps what a Databricks runtime (or any environment) already has
when it satisfies the bound, so the package must work with it. Every unconditional dependency must
have one (``>=``); an upper bound (``<``) may sit beside it. Exit 0, or 1 naming a dependency
without a lower bound (or, with ``--check``, an installed version that is not its pin).
"""

from __future__ import annotations

import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version


def lowest_pins(pyproject: Path) -> list[str]:
    """``name==X`` for each ``[project] dependencies`` entry whose marker holds here, ``X`` its
    ``>=`` bound. ValueError for a dependency that has none."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    pins: list[str] = []
    for text in project["dependencies"]:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        bounds = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if len(bounds) != 1:
            raise ValueError(f"{text!r}: a runtime dependency needs one lower bound (>=)")
        pins.append(f"{requirement.name}=={bounds[0]}")
    return pins


def not_installed(pins: list[str]) -> list[str]:
    """The pins whose distribution this interpreter finds at another version, or not at all."""
    wrong: list[str] = []
    for pin in pins:
        name, pinned = pin.split("==")
        try:
            found = version(name)
        except PackageNotFoundError:
            found = "none"
        if found == "none" or Version(found) != Version(pinned):
            wrong.append(f"{name} {found} (pinned {pinned})")
    return wrong


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    try:
        pins = lowest_pins(Path(paths[0] if paths else "pyproject.toml"))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not check:
        print("\n".join(pins))
        return 0
    wrong = not_installed(pins)
    if wrong:
        print(f"error: not the lowest versions: {', '.join(wrong)}", file=sys.stderr)
        return 1
    print("lowest:", *pins)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
