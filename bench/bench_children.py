"""The programs ``run_all.py`` times, each run as a whole fresh process (``python -c PROGRAM ...``
or our CLI). Each prints one JSON line last: the in-process timings the rows need next to the
whole-process wall time, and what the harness verifies.

The delta-rs programs end with ``os._exit(0)``: delta-rs was seen to abort at interpreter
teardown, which would fail a run that did its work.
"""

from __future__ import annotations

# delta-rs: open the latest version (reads the log), then write one checkpoint.
DELTA_RS_OPEN_CHECKPOINT = r"""
import json, os, sys, time
from deltalake import DeltaTable
path = sys.argv[1]
t = time.perf_counter()
dt = DeltaTable(path)
open_s = time.perf_counter() - t
t = time.perf_counter()
dt.create_checkpoint()
checkpoint_s = time.perf_counter() - t
sys.stdout.write(json.dumps({"open_s": open_s, "call_s": checkpoint_s, "version": dt.version()}) + "\n")
sys.stdout.flush()
os._exit(0)
"""

# delta-rs: open the latest version, and its protocol.
DELTA_RS_OPEN = r"""
import json, os, sys, time
from deltalake import DeltaTable
path = sys.argv[1]
t = time.perf_counter()
protocol = DeltaTable(path).protocol()
call_s = time.perf_counter() - t
sys.stdout.write(json.dumps({"call_s": call_s, "reader_features": protocol.reader_features or [],
                             "writer_features": protocol.writer_features or []}) + "\n")
sys.stdout.flush()
os._exit(0)
"""

# Ours: the latest protocol through DeltaLog (what a drop or verify needs first).
OURS_PROTOCOL = r"""
import json, sys, time
from delta_downgrade.log.delta_log import DeltaLog
t = time.perf_counter()
protocol = DeltaLog(sys.argv[1]).snapshot().protocol
call_s = time.perf_counter() - t
print(json.dumps({"call_s": call_s, "reader_features": sorted(protocol.reader_features or []),
                  "writer_features": sorted(protocol.writer_features or [])}))
"""

# Ours: one checkpoint of the latest version through the Arrow path, from a fresh DeltaLog
# (the call reads and replays the log: there is no open to separate it from).
OURS_CHECKPOINT = r"""
import json, sys, time
from delta_downgrade.log.checkpoints import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
t = time.perf_counter()
result = checkpoint_table(DeltaLog(sys.argv[1]))
call_s = time.perf_counter() - t
print(json.dumps({"call_s": call_s, "version": result.version, "num_add_files": result.num_add_files,
                  "paths": list(result.paths)}))
"""

# Ours: one checkpoint through the Spark path under the default local master (local[2]). Reports the
# Python driver's peak RSS and, after the JVM has exited and been reaped, the JVM's.
OURS_SPARK_CHECKPOINT = r"""
import json, os, resource, sys, time
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.spark_checkpoint import spark_checkpoint_table
from delta_downgrade.spark import get_spark
spark = get_spark("bench-spark-checkpoint")
spark.sparkContext.setLogLevel("ERROR")
t = time.perf_counter()
result = spark_checkpoint_table(spark, DeltaLog(sys.argv[1]))
call_s = time.perf_counter() - t
driver_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
from pyspark import SparkContext
gateway = SparkContext._gateway
spark.stop()
jvm_kib = None
proc = getattr(gateway, "proc", None) if gateway is not None else None
if proc is not None:
    try:
        gateway.shutdown()
    except Exception:
        pass
    try:
        proc.stdin.close()   # the JVM of a PySpark gateway exits when its stdin closes
        proc.wait(timeout=120)
        jvm_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    except Exception:
        pass
print(json.dumps({"call_s": call_s, "version": result.version, "num_add_files": result.num_add_files,
                  "paths": list(result.paths), "driver_rss_mib": driver_kib / 1024,
                  "jvm_rss_mib": None if jvm_kib is None else jvm_kib / 1024}))
sys.stdout.flush()
os._exit(0)
"""

# Whether this tree has the Spark checkpoint path (run in a child: the harness imports no Spark).
HAS_SPARK_PATH = r"""
import sys
try:
    from delta_downgrade.log.spark_checkpoint import spark_checkpoint_table  # noqa: F401
except ImportError as exc:
    print(exc)
    sys.exit(1)
import pyspark  # noqa: F401
"""
