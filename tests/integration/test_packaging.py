"""The wheel as users get it: it installs into a fresh venv without pyspark, its console scripts
start, and the Spark-only work explains that Spark is needed; spark-submit runs a task through
jobs/spark_submit.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.object_stores import s3_endpoint, s3_server  # noqa: F401 - fixtures

from tests.built_wheel import built_wheel  # noqa: F401 - fixture

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(built_wheel) -> Path:
    return built_wheel


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory, wheel) -> Path:
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    proc = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return venv


# Repository-only modules (tools/): a job installs the wheel, and the wheel carries only what a
# task runs.
TOOLS_MODULES = ("builders", "dv_builder", "demo", "local_runner", "bundle_check", "cli_run_job")


def test_wheel_has_no_builders_demo_or_job_runner(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n == "delta_downgrade/app/tasks/entrypoints.py" for n in names), names
    stems = {Path(n).stem for n in names if n.endswith(".py")}
    assert not stems & set(TOOLS_MODULES), sorted(stems & set(TOOLS_MODULES))
    assert not any(n.startswith("delta_downgrade_tools") for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "delta_downgrade.commands" not in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_installed_wheel_cli_has_no_repository_commands(fresh_venv):
    proc = subprocess.run([str(fresh_venv / "bin" / "delta-downgrade"), "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "drop-feature" in proc.stdout
    assert "run-job" not in proc.stdout and "validate-bundle" not in proc.stdout


@pytest.mark.slow
def test_wheel_does_not_pull_pyspark(fresh_venv):
    proc = subprocess.run([str(fresh_venv / "bin" / "python"), "-c", "import pyspark"], capture_output=True, text=True)
    assert proc.returncode != 0
    requires = subprocess.run([str(fresh_venv / "bin" / "pip"), "show", "delta-downgrade"],
                              capture_output=True, text=True).stdout
    assert "pyspark" not in requires.lower()


@pytest.mark.slow
@pytest.mark.parametrize("script", ["drop_feature_task", "verify_task", "truncate_task"])
def test_console_scripts_start(fresh_venv, script):
    proc = subprocess.run([str(fresh_venv / "bin" / script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2  # no --table: bad input, one clear line
    assert "--table" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_log_only_work_runs_without_spark(fresh_venv, golden_table):
    path = golden_table("vacuum_protocol_check")
    proc = subprocess.run([str(fresh_venv / "bin" / "drop_feature_task"), f"--table={path}",
                           "--feature=vacuumProtocolCheck"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1].removeprefix("RESULT "))
    assert result["status"] == "dropped"
    proc = subprocess.run([str(fresh_venv / "bin" / "verify_task"), f"--table={path}",
                           "--expect_absent_feature=vacuumProtocolCheck"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_spark_work_explains_that_spark_is_needed(fresh_venv, golden_table):
    path = golden_table("dv_basic_no_checkpoint")
    before = sorted(os.listdir(os.path.join(path, "_delta_log")))
    proc = subprocess.run([str(fresh_venv / "bin" / "drop_feature_task"), f"--table={path}",
                           "--feature=deletionVectors"], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "Spark" in proc.stderr and "Traceback" not in proc.stderr
    # Disabling the property is fine to have happened only if the purge could run: nothing else.
    after = sorted(os.listdir(os.path.join(path, "_delta_log")))
    assert after == before


@pytest.mark.spark
def test_spark_submit_runs_verify_task(golden_table):
    submit = shutil.which("spark-submit") or str(Path(sys.prefix) / "bin" / "spark-submit")
    if not os.path.exists(submit):
        pytest.skip("spark-submit is not installed (install delta-downgrade[local])")
    path = golden_table("classic_checkpoint")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    # Under the Spark Connect switch (SPARK_REMOTE) the driver connects to that server instead.
    master = [] if os.environ.get("SPARK_REMOTE") else ["--master", "local[1]"]
    proc = subprocess.run([submit, *master, str(REPO / "jobs" / "spark_submit.py"), "verify_task",
                           f"--table={path}", "--expect_min_reader_version=1", "--unknown_pushed_down=x"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert results and results[0]["status"] == "verified"


# --- log-only work on a bucket table, from the wheel alone ----------------------------------------


def _backdate_log(endpoint, name: str, days: int) -> None:
    """Every log object of table ``name`` ``days`` old (moto's Last-Modified): the truncate
    retention, counted from the log's file times, has passed."""
    import time

    old_ms = int((time.time() - days * 86400) * 1000)
    for key in endpoint.keys(name):
        if key.startswith("_delta_log/"):
            endpoint.extras["backdate"](f"{name}/{key}", old_ms)


@pytest.mark.slow
def test_log_only_work_on_a_bucket_table_runs_from_the_wheel_without_spark(fresh_venv, s3_endpoint):  # noqa: F811
    """inspect, a drop that rewrites no data, verify, cleanup, vacuum and truncate-history on an S3
    table from the installed wheel (no pyspark importable, no JVM); a drop that needs a rewrite
    refuses with exit 2 saying it needs Spark, and writes nothing."""
    golden = Path(os.environ.get("DELTA_DOWNGRADE_GOLDEN", REPO.parent / "shared" / "golden"))
    if not (golden / "vacuum_protocol_check").is_dir():
        pytest.skip("golden tables are not available")
    bin_dir = fresh_venv / "bin"
    assert subprocess.run([str(bin_dir / "python"), "-c", "import pyspark"], capture_output=True).returncode != 0
    options = [a for k, v in s3_endpoint.storage_options.items() for a in ("--storage-option", f"{k}={v}")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "SPARK_", "PYSPARK_"))}
    env.pop("JAVA_HOME", None)  # no JVM could start even if something tried

    def run(program: str, *argv: str, expect: int = 0) -> subprocess.CompletedProcess:
        done = subprocess.run([str(bin_dir / program), *argv], capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == expect, (program, argv[:2], done.stderr[-3000:])
        assert "Traceback" not in done.stderr
        return done

    def result(done: subprocess.CompletedProcess) -> dict:
        return json.loads([line for line in done.stdout.splitlines() if line.startswith("RESULT ")][-1][7:])

    uri = s3_endpoint.upload(golden / "vacuum_protocol_check", "vpc")
    report = json.loads(run("delta-downgrade", "inspect", uri, "--json", *options).stdout)
    assert "vacuumProtocolCheck" in json.dumps(report)
    dropped = result(run("delta-downgrade", "drop-feature", uri, "vacuumProtocolCheck", *options))
    assert dropped["status"] == "dropped" and dropped["needs_truncate"]
    verified = result(run("verify_task", f"--table={uri}", "--expect_absent_feature=vacuumProtocolCheck",
                          f"--storage_options={json.dumps(s3_endpoint.storage_options)}"))
    assert verified["status"] == "verified"
    run("delta-downgrade", "cleanup", uri, "--json", *options)
    run("delta-downgrade", "vacuum", uri, "--dry-run", "--json", *options)
    _backdate_log(s3_endpoint, "vpc", days=3)
    truncated = result(run("delta-downgrade", "truncate-history", uri, *options))
    assert truncated["status"] == "dropped", truncated
    assert (truncated["min_reader_version"], truncated["min_writer_version"]) == (1, 2), truncated

    # A drop that must rewrite data: deletion vectors that are still live.
    dv_uri = s3_endpoint.upload(golden / "dv_basic_no_checkpoint", "dv")
    keys_before = s3_endpoint.keys("dv")
    refused = run("delta-downgrade", "drop-feature", dv_uri, "deletionVectors", *options, expect=2)
    assert "Spark" in refused.stderr and "needs" in refused.stderr, refused.stderr
    assert s3_endpoint.keys("dv") == keys_before
