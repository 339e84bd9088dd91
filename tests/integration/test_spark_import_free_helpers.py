"""Asking for the active session without pyspark imported imports nothing, observed in a fresh
interpreter."""

from __future__ import annotations

import sys


def test_active_session_without_pyspark_imported_imports_nothing():
    import subprocess

    script = ("import sys\nfrom delta_downgrade.spark import active_session\n"
              "print(active_session(), 'pyspark' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "None False"
