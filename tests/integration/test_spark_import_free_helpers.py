"""Asking for the active session without pyspark imported imports nothing, observed in a fresh interpreter."""

from __future__ import annotations

import sys

import pytest

from delta_downgrade import spark as sparkmod


def _connect_like_session(extensions: str):
    """A session stand-in of the Connect client's class module that fails the test if anything
    reaches for a JVM."""

    class Conf:
        def get(self, key, default=None):
            return extensions if key == "spark.sql.extensions" else default

    class Session:
        conf = Conf()

        @property
        def _jvm(self):
            raise AssertionError("has_delta_sql touched _jvm on a Connect session")

    Session.__module__ = "pyspark.sql.connect.session"
    return Session()


def test_active_session_without_pyspark_imported_imports_nothing():
    import subprocess

    script = ("import sys\nfrom delta_downgrade.spark import active_session\n"
              "print(active_session(), 'pyspark' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "None False"
