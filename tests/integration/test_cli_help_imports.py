"""--help imports no operation, observed in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys


def test_help_imports_no_operation():
    code = ("import sys\n"
            "from delta_downgrade.app.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('MODULES ' + ','.join(sorted(m for m in sys.modules if m.startswith(('delta_downgrade', 'pyarrow')))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    modules = proc.stdout.split("MODULES ", 1)[1].strip().split(",")
    assert "delta_downgrade.app.cli.vacuum" in modules
    heavy = [m for m in modules if m.startswith(("pyarrow", "delta_downgrade.operations", "delta_downgrade.log",
                                                 "delta_downgrade.app.render", "delta_downgrade.app.engines"))]
    assert heavy == []
