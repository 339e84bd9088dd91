"""Refusals of storage the CLI cannot serve, and of retentions it cannot represent, as a user meets
them: the command in its own process, exit 2, quickly, before a JVM starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from tests.process_support import assert_bad_input, run_cli_process, tree_hashes


def _cli(*args: str, timeout: float = 120, **kwargs) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = run_cli_process(*args, timeout=timeout, **kwargs)
    return proc, time.monotonic() - started


@pytest.fixture
def table(golden_table) -> str:
    return golden_table("classic_checkpoint")


@pytest.mark.parametrize("retention", ["99999999999999999999 days", "1" + "0" * 400 + " hours",
                                       "interval 9999999999 weeks"])
def test_cleanup_overflowing_retention_is_bad_input(table, retention):
    before = tree_hashes(table)
    proc, _ = _cli("cleanup", table, f"--retention={retention}")
    assert_bad_input(proc, "DELTA_DOWNGRADE_BAD_DURATION")
    assert tree_hashes(table) == before


@pytest.mark.parametrize("extra", [[], ["--override-retention-check"], ["--dry-run"]])
def test_vacuum_overflowing_retention_hours_is_bad_input(table, extra):
    before = tree_hashes(table)
    proc, _ = _cli("vacuum", table, "--retention-hours=1e308", *extra)
    assert_bad_input(proc, "DELTA_DOWNGRADE_BAD_DURATION")
    assert tree_hashes(table) == before


@pytest.mark.parametrize("uri", ["s3://bucket/tables/t", "gs://bucket/t",
                                 "abfss://container@account.dfs.core.windows.net/t"])
@pytest.mark.parametrize("command", [["inspect"], ["cleanup"], ["vacuum", "--dry-run"]])
def test_unserved_scheme_is_refused_quickly(uri, command):
    # These schemes are served by the object-store storage now; through the Hadoop
    # FileSystem (DELTA_DOWNGRADE_STORAGE=hadoop) with no connector they are still refused
    # before Spark starts, as before.
    env = dict(os.environ, DELTA_DOWNGRADE_STORAGE="hadoop")
    proc, elapsed = _cli(command[0], uri, *command[1:], env=env)
    assert_bad_input(proc, "DELTA_DOWNGRADE_UNSUPPORTED_STORAGE")
    scheme = uri.split("://")[0]
    assert f"{scheme}://" in proc.stderr
    # Spark's start-up alone takes several seconds: refusing before it is the point.
    assert elapsed < 6, f"took {elapsed:.1f}s"


@pytest.mark.parametrize("uri", ["s3://bucket/tables/t", "gs://bucket/t",
                                 "abfss://container@account.dfs.core.windows.net/t"])
def test_object_store_without_credentials_is_bad_input_quickly(uri):
    # Without credentials (none given, none in the environment, no instance
    # credentials here) the object store answers a typed error, exit 2, in seconds.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "AZURE_", "GOOGLE_", "DELTA_DOWNGRADE_STORAGE"))}
    proc, elapsed = _cli("inspect", uri, env=env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert ("[DELTA_DOWNGRADE_STORAGE_ACCESS_DENIED]" in proc.stderr
            or "[DELTA_DOWNGRADE_STORAGE_UNREACHABLE]" in proc.stderr), output
    assert "Traceback" not in output
    assert elapsed < 10, f"took {elapsed:.1f}s"


def test_unserved_scheme_is_refused_before_a_jvm_starts(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent("""
        from delta_downgrade.errors import DeltaDowngradeError
        from delta_downgrade.log.delta_log import DeltaLog
        try:
            DeltaLog("gs://bucket/t", storage_options={"DELTA_DOWNGRADE_STORAGE": "hadoop"}).latest_version()
            print("NO ERROR")
        except DeltaDowngradeError as exc:
            print("CLASS", exc.error_class, exc.exit_code)
        from pyspark import SparkContext
        print("JVM", SparkContext._gateway is not None or SparkContext._active_spark_context is not None)
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert "CLASS DELTA_DOWNGRADE_UNSUPPORTED_STORAGE 2" in proc.stdout, proc.stdout + proc.stderr
    assert "JVM False" in proc.stdout, proc.stdout + proc.stderr
