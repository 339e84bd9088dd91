"""The repository-only subcommands of ``delta-downgrade``: ``run-job JOB.yml --param k=v … [--var
k=v …]`` (the job's task graph, locally) and ``validate-bundle`` (the bundle, offline).

They are declared in the ``delta_downgrade.commands`` entry-point group of this distribution
(tools/pyproject.toml), so the runtime CLI finds them only where the tools are installed and never
names them itself. Each entry point is a ``register(subparsers, commands)`` function.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from delta_downgrade.errors import EXIT_OK, BadSettingsError


def _pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for number, item in enumerate(items or [], start=1):
        if "=" not in item:
            # Not quoted back: a value given alone may be a secret.
            raise BadSettingsError(f"{flag} takes key=value; item {number} of {flag} has no '='")
        key, value = item.split("=", 1)
        out[key.strip()] = value
    return out


def _run(args: argparse.Namespace) -> int:
    from delta_downgrade_tools.local_runner import job_exit_code, pending_truncates, run_job

    from delta_downgrade.app.storage_options import redact_output

    secrets = getattr(args, "secrets", None) or {}
    run = run_job(args.job_file, params=_pairs(args.param, "--param"), variables=_pairs(args.var, "--var"),
                  job_key=args.job, target=args.target, run_dir=args.run_dir, runner=args.runner,
                  say=lambda m: print(redact_output(m, secrets), file=sys.stderr, flush=True))
    print(f"job {run.job_key} run {run.run_id}: " + ", ".join(
        f"{key}={t.status.lower()}" + (f" ({t.attempts} attempts)" if t.attempts > 1 else "")
        for key, t in run.tasks.items()), file=sys.stderr)
    for result in pending_truncates(run):
        # The downgrade is not finished until checkpointProtection is dropped: say when it can be.
        print(f"truncate: waiting: {result['table']} needs_truncate=true, truncate_after="
              f"{result.get('truncate_after')}; the daily truncate_history job "
              f"(resources/truncate_history.job.yml) finishes it, or rerun truncate-history after that time",
              file=sys.stderr)
    print(f"task values: {run.run_dir / 'task_values'}", file=sys.stderr)
    return job_exit_code(run)


def _validate(args: argparse.Namespace) -> int:
    from delta_downgrade_tools.bundle_check import installed_entry_points, validate_bundle, wheel_entry_points

    entry_points = wheel_entry_points(args.wheel) if args.wheel else installed_entry_points()
    problems = validate_bundle(args.root, entry_points)
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    print(f"bundle at {args.root}: {'valid' if not problems else f'{len(problems)} problem(s)'}")
    return EXIT_OK if not problems else 2


Commands = dict[str, Callable[[argparse.Namespace], int]]


def register_run_job(sub: argparse._SubParsersAction, commands: Commands) -> None:
    p = sub.add_parser("run-job", help="run a bundle job's task graph on this machine")
    p.add_argument("job_file", help="resources/<name>.job.yml")
    p.add_argument("--param", action="append", help="job parameter key=value (repeatable)")
    p.add_argument("--var", action="append", help="bundle variable key=value (repeatable)")
    p.add_argument("--job", default=None, help="job key when the file defines several")
    p.add_argument("--target", default=None, help="bundle target whose variables apply (default target)")
    p.add_argument("--run-dir", default=None, help="where task values and logs go (.runs/<job>-<id>)")
    p.add_argument("--runner", choices=["console", "spark-submit"], default="console",
                   help="run wheel tasks through their console scripts or spark-submit")
    commands["run-job"] = _run


def register_validate_bundle(sub: argparse._SubParsersAction, commands: Commands) -> None:
    v = sub.add_parser("validate-bundle", help="validate databricks.yml and resources/ offline")
    v.add_argument("root", nargs="?", default=".", help="bundle root (where databricks.yml is)")
    v.add_argument("--wheel", default=None, help="check entry points against this built wheel")
    commands["validate-bundle"] = _validate
