"""The wheel's declared entry points, and the only way the local runners start a task.

A Databricks ``python_wheel_task`` names a ``package_name`` and an ``entry_point`` that must be
declared in that wheel's metadata; the Jobs service runs that callable, nothing else. The local
job runner and ``jobs/spark_submit.py`` do the same: the name is looked up in the installed
distribution's ``console_scripts`` entry points (``importlib.metadata``) and the callable is loaded
with ``EntryPoint.load()``. No path, no program and no source text taken from a job definition is
ever run.

``python -m delta_downgrade.app.tasks.wheel_entry NAME [ARG ...]`` runs entry point NAME with
``sys.argv[1:] = ARG ...`` (how the local runner starts a wheel task in a subprocess).
"""

from __future__ import annotations

import re
import sys
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution
from typing import Mapping, Sequence

from delta_downgrade.errors import BadJobDefinitionError, DeltaDowngradeError

DISTRIBUTION = "delta-downgrade"
GROUP = "console_scripts"


def normalize_package_name(name: str) -> str:
    """PEP 503 normalisation: ``delta_downgrade``, ``Delta.Downgrade`` → ``delta-downgrade``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_entry_points() -> dict[str, EntryPoint]:
    """The ``console_scripts`` entry points the installed distribution declares, by name."""
    try:
        dist = distribution(DISTRIBUTION)
    except PackageNotFoundError as exc:
        raise BadJobDefinitionError(
            f"the {DISTRIBUTION} distribution is not installed, so its entry points are unknown; "
            f"install the wheel (pip install dist/*.whl or pip install -e .)") from exc
    return {ep.name: ep for ep in dist.entry_points if ep.group == GROUP}


def resolve_entry_point(name: object, package_name: object = DISTRIBUTION,
                        declared: Mapping[str, EntryPoint] | None = None) -> EntryPoint:
    """The declared entry point ``name`` of package ``package_name``; anything else (another
    package, an undeclared name, a path, source text) is a :class:`BadJobDefinitionError`."""
    if not isinstance(package_name, str) or normalize_package_name(package_name) != DISTRIBUTION:
        raise BadJobDefinitionError(f"package_name {package_name!r}: only the {DISTRIBUTION} wheel's "
                                    f"entry points run here (package_name: delta_downgrade)")
    declared = declared_entry_points() if declared is None else declared
    if not isinstance(name, str) or name not in declared:
        raise BadJobDefinitionError(
            f"entry_point {name!r} is not declared in the {DISTRIBUTION} wheel's metadata; "
            f"use one of {', '.join(sorted(declared))}")
    return declared[name]


def run_entry_point(entry_point: EntryPoint, args: Sequence[str]) -> int:
    """Call a loaded console-script entry point the way its script would: ``sys.argv`` is the
    script name and ``args``; the return value is the exit status."""
    func = entry_point.load()
    sys.argv = [entry_point.name, *args]
    rc = func()
    return rc if isinstance(rc, int) else 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print("usage: python -m delta_downgrade.app.tasks.wheel_entry ENTRY_POINT [ARG ...]", file=sys.stderr)
        return 2
    try:
        entry_point = resolve_entry_point(argv[0])
    except DeltaDowngradeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return run_entry_point(entry_point, argv[1:])


if __name__ == "__main__":
    sys.exit(main())
