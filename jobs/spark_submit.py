"""Local launcher: ``spark-submit jobs/spark_submit.py TASK --key=value ...``.

TASK is one of drop_feature_task, verify_task, truncate_task; the remaining arguments reach
``delta_downgrade.jobs.entrypoints.<TASK>`` as ``sys.argv[1:]`` (the form Databricks sends), and
its return code becomes the exit status. Install the wheel into the driver's Python first
(``pip install dist/*.whl``); from a source checkout ``src/`` is used as a fallback. For the
delta-sql engine pass the Delta jars (``--jars``/``--packages``) and the two Delta confs.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

TASKS = ("drop_feature_task", "verify_task", "truncate_task")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2 or argv[1] not in TASKS:
        print(f"usage: spark-submit {argv[0] if argv else 'spark_submit.py'} "
              f"{{{','.join(TASKS)}}} [--key=value ...]", file=sys.stderr)
        return 2
    task = argv[1]
    try:
        module = importlib.import_module("delta_downgrade.jobs.entrypoints")
    except ModuleNotFoundError as exc:
        src = Path(__file__).resolve().parents[1] / "src"
        if not exc.name or not exc.name.startswith("delta_downgrade") or not (src / "delta_downgrade").is_dir():
            raise
        sys.path.insert(0, str(src))
        module = importlib.import_module("delta_downgrade.jobs.entrypoints")
    sys.argv = [task, *argv[2:]]
    rc = getattr(module, task)()
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
