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


NUMPY_PROBE = """
import json, sys
from delta_downgrade.app.cli import main
code = main(json.loads(sys.argv[1]))
numpy = sys.modules.get("numpy")
pyarrow_with_numpy = False
if numpy is not None and "pyarrow" in sys.modules:
    import pyarrow
    try:  # pyarrow converts a numpy scalar only when it was loaded with numpy
        pyarrow.array([numpy.int64(1)])
        pyarrow_with_numpy = True
    except (pyarrow.ArrowInvalid, pyarrow.ArrowTypeError):
        pass
print(json.dumps({"code": code, "pyarrow": "pyarrow" in sys.modules, "numpy": numpy is not None,
                  "pyarrow_with_numpy": pyarrow_with_numpy, "pyspark": "pyspark.sql" in sys.modules}))
"""


def cli_pyarrow_numpy(argv: list[str], env: dict[str, str] | None = None,
                      timeout: float = 600) -> tuple[dict, subprocess.CompletedProcess[str]]:
    """``delta-downgrade ARGV`` in a fresh interpreter (``env`` added to this one's): ``{"code",
    "pyarrow", "numpy", "pyarrow_with_numpy", "pyspark"}`` (whether the process loaded pyarrow,
    numpy and pyspark, and whether its pyarrow converts numpy values), and the process itself
    (its stdout ends with that document's line)."""
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **(env or {})}
    done = subprocess.run([sys.executable, "-c", NUMPY_PROBE, json.dumps(argv)], capture_output=True,
                          text=True, env=full_env, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done
