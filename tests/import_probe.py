"""What the CLI imports, observed in a fresh interpreter (test support): the process start is the
point, so each call runs ``delta_downgrade.app.cli.main(argv)`` in a new ``python -c`` and reports
its exit code, its stdout and which of the named heavy top-level modules it loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import contextlib, io, json, sys
from delta_downgrade.app.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(json.loads(sys.argv[1]))
    except SystemExit as exit:
        code = exit.code
names = {m for m in sys.modules if sys.modules[m] is not None}
loaded = {m.split(".")[0] for m in names}
wanted = set(json.loads(sys.argv[2]))
print(json.dumps({"code": code, "heavy": sorted(loaded & wanted), "modules": sorted(names & wanted),
                  "out": out.getvalue()}))
"""


def cli_imports(argv: list[str], heavy: tuple[str, ...]) -> dict:
    """``{"code", "heavy", "modules", "out"}`` of ``delta-downgrade ARGV`` in a fresh interpreter;
    ``heavy``: the top-level modules of ``heavy`` it imported (a module whose import was refused
    does not count); ``modules``: the names of ``heavy`` it imported, submodules too."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(list(heavy))],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
