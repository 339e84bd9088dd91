"""The data rewrites of a drop on a table in an S3 bucket, with Spark reading and writing the data
through hadoop-aws (``s3a://``) while this package reads and writes the log through obstore: the
deletion-vector purge, the column-mapping removal and the type-widening drop, each on a golden
table uploaded to moto's S3 server.

Spark runs in a child process, as a user runs the tool, once per kind of session:

- ``classic``: a Python process whose session (the package's own ``get_spark``) has hadoop-aws and
  its AWS SDK bundle on the driver's class path and the ``fs.s3a.*`` settings of the endpoint, given
  the way a local user gives them (``PYSPARK_SUBMIT_ARGS``);
- ``connect``: a Spark Connect server of its own (tests/spark_connect_server.py, the same server
  the Connect pass uses) started with those jars and settings, and the CLI as its client
  (``SPARK_REMOTE``): the rewrite reads and writes ``s3a://`` on the server. The rewrite needs no
  Delta on the server (it writes Parquet through the DataFrame API; the log is this package's),
  only the file system of the table's scheme, which a server is given as a cluster is.

The rows are compared with the rows of the table before the drop (read by delta-spark from the
local copy that was uploaded): delta-spark reads the result (downloaded), and delta-rs reads it
in the bucket. Both kinds of session run here, so the test runs once, in the classic pass.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.delta_jars import hadoop_aws_jars
from tests.delta_spark_support import (
    delta_rs_rows, read_rows, remove_hadoop_checksums
)
from tests.object_stores import S3_REGION

pytestmark = pytest.mark.classic_spark("runs its own classic and Connect sessions in child processes")

#: (golden table, feature): one rewrite each.
REWRITES = [
    ("dv_basic_no_checkpoint", "deletionVectors"),
    ("cm_name_renamed_column", "columnMapping"),
    ("type_widening_preview", "typeWidening-preview"),
]

REPO_ROOT = Path(__file__).resolve().parents[2]


def s3a_conf(endpoint_url: str) -> dict[str, str]:
    """hadoop-aws on the driver's class path (a local master runs its executors in the driver's
    JVM: no copy of the 650 MB SDK bundle per session, as ``spark.jars`` would make) and the
    ``fs.s3a.*`` settings of the moto endpoint."""
    jars = hadoop_aws_jars()
    missing = [str(j) for j in jars if not j.is_file()]
    if not jars or missing:
        pytest.fail(f"hadoop-aws is missing ({missing or 'not in .jars/spark.classpath'}): run `make jars`",
                    pytrace=False)
    return {
        "spark.driver.extraClassPath": os.pathsep.join(str(j) for j in jars),
        "spark.hadoop.fs.s3a.endpoint": endpoint_url,
        "spark.hadoop.fs.s3a.endpoint.region": S3_REGION,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.access.key": "testing",
        "spark.hadoop.fs.s3a.secret.key": "testing",
        "spark.hadoop.fs.s3a.aws.credentials.provider":
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }


#: The child: every drop of ``argv`` in one process (one session), each RESULT line printed.
CHILD = """
import json, sys
from delta_downgrade.app.cli import main
codes = []
for table, feature, options in json.loads(sys.argv[1]):
    args = ["drop-feature", table, feature, "--quiet"]
    for key, value in options.items():
        args += ["--storage-option", f"{key}={value}"]
    codes.append(main(args))
print("EXIT_CODES " + json.dumps(codes))
"""


def _child_env(extra: dict[str, str]) -> dict[str, str]:
    from tests.spark_connect_server import classic_environment

    env = classic_environment()
    env.pop("DELTA_DOWNGRADE_DELTA_JARS", None)  # the native engine: no Delta needed
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update(extra)
    return env


def _run_drops(mode: str, conf: dict[str, str], drops: list[tuple[str, str, dict]]) -> list[int]:
    if mode == "classic":
        submit = " ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in conf.items()
                          if k != "spark.driver.extraClassPath")
        env = _child_env({"PYSPARK_SUBMIT_ARGS":
                          f"--driver-class-path {shlex.quote(conf['spark.driver.extraClassPath'])} "
                          f"{submit} pyspark-shell"})
        return _child(env, drops)
    from tests.spark_connect_server import ConnectServer

    server = ConnectServer(extra_conf=conf)
    try:
        server.wait_ready()
        return _child(_child_env({"SPARK_REMOTE": server.url}), drops)
    finally:
        server.stop()


def _child(env: dict[str, str], drops: list[tuple[str, str, dict]]) -> list[int]:
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(drops)], capture_output=True, check=False,
                          text=True, timeout=900, env=env, cwd=str(REPO_ROOT))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("EXIT_CODES ")]
    assert proc.returncode == 0 and lines, f"child failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    codes = json.loads(lines[-1].split(" ", 1)[1])
    assert codes == [0] * len(drops), f"exit codes {codes}:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return codes


@pytest.mark.parametrize("mode", ["classic", "connect"])
def test_rewrites_through_s3a_keep_every_row(delta_spark, golden_table, s3_endpoint, oracle, tmp_path, mode):
    from delta_downgrade.log.delta_log import DeltaLog

    spark = delta_spark
    tables, before, uploaded = {}, {}, {}
    for name, feature in REWRITES:
        local = remove_hadoop_checksums(golden_table(name))
        before[name] = read_rows(spark, local)
        assert isinstance(before[name], list) and before[name], (name, before[name])
        s3_endpoint.upload(local, name)
        uploaded[name] = set(s3_endpoint.keys(name))
        tables[name] = f"s3a://{s3_endpoint.bucket}/{name}"

    drops = [(tables[name], feature, s3_endpoint.storage_options) for name, feature in REWRITES]
    _run_drops(mode, s3a_conf(s3_endpoint.storage_options["AWS_ENDPOINT_URL"]), drops)

    for name, feature in REWRITES:
        remote = DeltaLog(tables[name], storage_options=s3_endpoint.storage_options).snapshot()
        assert feature not in remote.protocol.features, (name, remote.protocol)
        written = [k for k in set(s3_endpoint.keys(name)) - uploaded[name]
                   if k.endswith(".parquet") and not k.startswith("_delta_log/")]
        assert written, f"{name}: no data file was written in the bucket"
        result = s3_endpoint.download(name, tmp_path / f"after-{mode}" / name)
        assert read_rows(spark, str(result)) == before[name], f"{name}: delta-spark reads other rows after the drop"
        in_bucket = oracle.scan_rows(f"s3://{s3_endpoint.bucket}/{name}",
                                     storage_options=s3_endpoint.storage_options)
        assert delta_rs_rows(in_bucket.unwrap()) == before[name], f"{name}: delta-rs reads other rows after the drop"
