"""Local launcher: ``spark-submit jobs/spark_submit.py TASK --key=value ...``.

TASK is an entry point the delta-downgrade wheel declares (drop_feature_task, verify_task,
truncate_task): it is looked up in the installed distribution's entry-point metadata and loaded
with ``EntryPoint.load()``, as Databricks runs a ``python_wheel_task``; any other name is refused
with exit 2. The remaining arguments reach the task as ``sys.argv[1:]`` (the form Databricks
sends), and its return code becomes the exit status. Install the wheel into the driver's Python
first (``pip install dist/*.whl``); from a source checkout ``src/`` is used as a fallback, with the
entry points declared in ``pyproject.toml``. For the delta-sql engine pass the Delta jars
(``--jars``/``--packages``) and the two Delta confs.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

TASKS = ("drop_feature_task", "verify_task", "truncate_task")
REPO = Path(__file__).resolve().parents[1]


def _usage(argv: list[str]) -> int:
    print(f"usage: spark-submit {argv[0] if argv else 'spark_submit.py'} "
          f"{{{','.join(TASKS)}}} [--key=value ...]", file=sys.stderr)
    return 2


def _source_checkout_entry_points() -> dict:
    """``[project.scripts]`` of the checkout's pyproject.toml, as EntryPoints (no metadata when the
    package is only on the path, not installed)."""
    import tomllib
    from importlib.metadata import EntryPoint

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    return {name: EntryPoint(name=name, value=value, group="console_scripts") for name, value in scripts.items()}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2:
        return _usage(argv)
    task = argv[1]
    try:
        wheel_entry = importlib.import_module("delta_downgrade.app.tasks.wheel_entry")
    except ModuleNotFoundError as exc:
        src = REPO / "src"
        if not exc.name or not exc.name.startswith("delta_downgrade") or not (src / "delta_downgrade").is_dir():
            raise
        sys.path.insert(0, str(src))
        wheel_entry = importlib.import_module("delta_downgrade.app.tasks.wheel_entry")
    from delta_downgrade.errors import DeltaDowngradeError

    try:
        try:
            declared = wheel_entry.declared_entry_points()
        except DeltaDowngradeError:
            if not (REPO / "pyproject.toml").is_file():
                raise
            declared = _source_checkout_entry_points()
        entry_point = wheel_entry.resolve_entry_point(task, declared=declared)
    except DeltaDowngradeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        _usage(argv)
        return exc.exit_code
    return wheel_entry.run_entry_point(entry_point, argv[2:])


if __name__ == "__main__":
    sys.exit(main())
