"""A Spark Connect server in a process of its own, for ``pytest --spark-connect``.

Every process of the test run (pytest itself and the CLI / task subprocesses tests start) is a
Connect client of this one server through ``SPARK_REMOTE=sc://localhost:<port>``: no JVM in the
client processes, as on Databricks serverless. pyspark's in-process ``local[N]`` server does not
serve a run with subprocesses: it binds the fixed port 15002, so a second process (or a second
test run on the machine) cannot start its own; get_spark's ``local[N]`` path has its own test
(tests/integration/test_spark_smoke.py).

The server is pyspark's own ``SparkConnectServer`` (the class behind Spark's
``start-connect-server.sh``) through pyspark's ``spark-submit``, with the confs ``get_spark`` gives
a local session, a free port, and the tests' interpreter and import path for its Python workers
(the UDFs of the rewrites import ``delta_downgrade``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"

#: What makes a child process's SparkSession a Connect client: SPARK_REMOTE (and the package's
#: DELTA_DOWNGRADE_SPARK_REMOTE), and SPARK_CONNECT_MODE_ENABLED / SPARK_LOCAL_REMOTE, which
#: pyspark sets in os.environ once this process has built a Connect session (pyspark/sql/session.py)
#: - a child inheriting them asks for Connect even through a classic builder.
CONNECT_ENV = ("SPARK_REMOTE", "DELTA_DOWNGRADE_SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")


def classic_environment(env: "dict[str, str] | None" = None) -> dict[str, str]:
    """``env`` (default: this process's) without what would make a child's Spark a Connect client."""
    return {k: v for k, v in (os.environ if env is None else env).items() if k not in CONNECT_ENV}



def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ConnectServer:
    def __init__(self, master: str = "local[2]", extra_conf: dict[str, str] | None = None) -> None:
        """``extra_conf``: more confs for this server (a test's own server: a file system's jars
        on the driver's class path and its settings)."""
        import pyspark

        from delta_downgrade.spark import local_conf

        self.port = free_port()
        self.url = f"sc://localhost:{self.port}"
        self.log_path = Path(tempfile.mkdtemp(prefix="spark-connect-")) / "server.log"
        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        # Without Delta's extension: on it, Delta resolves ``delta.`<path>` `` itself (opening the
        # path's file system), and the Connect parser tests read what Spark's own analyzer says
        # (tests/spark_parser.py). Real Delta SQL runs on the classic session (tests/delta_jars.py).
        saved = os.environ.pop("DELTA_DOWNGRADE_DELTA_JARS", None)
        try:
            conf = {**local_conf(remote=True), "spark.connect.grpc.binding.port": str(self.port),
                    **(extra_conf or {})}
        finally:
            if saved is not None:
                os.environ["DELTA_DOWNGRADE_DELTA_JARS"] = saved
        argv = [str(submit), "--class", SERVER_CLASS, "--master", master]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        argv.append("spark-internal")
        env = classic_environment()
        env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._log = open(self.log_path, "wb")
        # A process group of its own: stop() ends the JVM and its Python workers, nothing else.
        self.process = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Spark Connect server exited ({self.process.returncode}); "
                                   f"see {self.log_path}:\n{self.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Spark Connect server did not listen on {self.port} within "
                           f"{timeout:.0f} s; see {self.log_path}:\n{self.tail()}")

    def tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_bytes()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        self._log.close()
