"""The programs ``run_all.py`` times, each run as a whole fresh process (``python -c PROGRAM ...``
or our CLI). Each prints one JSON line last: the in-process timings the rows need next to the
whole-process wall time, and what the harness verifies. A program that reports ``call_s`` (wall
time around the call) reports ``call_cpu_s`` too: the process's CPU time over the same span (every
thread), the measure that other jobs on the machine do not move.

The delta-rs programs end with ``os._exit(0)``: delta-rs was seen to abort at interpreter
teardown, which would fail a run that did its work.
"""

from __future__ import annotations

# delta-rs: open the latest version (reads the log), then write one checkpoint.
DELTA_RS_OPEN_CHECKPOINT = r"""
import json, os, sys, time
from deltalake import DeltaTable
path = sys.argv[1]
t, c = time.perf_counter(), time.process_time()
dt = DeltaTable(path)
open_s, open_cpu_s = time.perf_counter() - t, time.process_time() - c
t, c = time.perf_counter(), time.process_time()
dt.create_checkpoint()
checkpoint_s, checkpoint_cpu_s = time.perf_counter() - t, time.process_time() - c
sys.stdout.write(json.dumps({"open_s": open_s, "call_s": checkpoint_s, "call_cpu_s": checkpoint_cpu_s,
                             "open_call_s": open_s + checkpoint_s, "open_call_cpu_s": open_cpu_s + checkpoint_cpu_s,
                             "version": dt.version()}) + "\n")
sys.stdout.flush()
os._exit(0)
"""

# delta-rs: open the latest version, and its protocol.
DELTA_RS_OPEN = r"""
import json, os, sys, time
from deltalake import DeltaTable
path = sys.argv[1]
t, c = time.perf_counter(), time.process_time()
protocol = DeltaTable(path).protocol()
call_s, call_cpu_s = time.perf_counter() - t, time.process_time() - c
sys.stdout.write(json.dumps({"call_s": call_s, "call_cpu_s": call_cpu_s, "reader_features": protocol.reader_features or [],
                             "writer_features": protocol.writer_features or []}) + "\n")
sys.stdout.flush()
os._exit(0)
"""

# delta-rs: open the latest version, then its history (``history(limit)``: the commitInfo of
# each commit - it reads every commit file, as our protocol history does). Every commit but
# version 0: delta-rs refuses the bench tables' first commitInfo (``readVersion: -1``, which it
# reads as an unsigned number), so the limit stops one commit short of the whole log.
DELTA_RS_HISTORY = r"""
import json, os, sys, time
from deltalake import DeltaTable
path = sys.argv[1]
t = time.perf_counter()
dt = DeltaTable(path)
open_s = time.perf_counter() - t
t, c = time.perf_counter(), time.process_time()
history = dt.history(dt.version())
call_s, call_cpu_s = time.perf_counter() - t, time.process_time() - c
sys.stdout.write(json.dumps({"open_s": open_s, "call_s": call_s, "call_cpu_s": call_cpu_s, "commits": len(history),
                             "version": dt.version()}) + "\n")
sys.stdout.flush()
os._exit(0)
"""

# Ours: the latest protocol through DeltaLog (what a drop or verify needs first).
OURS_PROTOCOL = r"""
import json, sys, time
from delta_downgrade.log.delta_log import DeltaLog
t, c = time.perf_counter(), time.process_time()
protocol = DeltaLog(sys.argv[1]).snapshot().protocol
call_s, call_cpu_s = time.perf_counter() - t, time.process_time() - c
print(json.dumps({"call_s": call_s, "call_cpu_s": call_cpu_s, "reader_features": sorted(protocol.reader_features or []),
                  "writer_features": sorted(protocol.writer_features or [])}))
"""

# Ours: one checkpoint of the latest version through the Arrow path. The open (a DeltaLog and its
# latest state replayed, as delta-rs's ``DeltaTable(path)`` loads its files) is timed apart from the
# checkpoint, as delta-rs's is; ``open_call_s`` is both.
OURS_CHECKPOINT = r"""
import json, sys, time
try:
    from delta_downgrade.log.checkpoint.on_driver import checkpoint_table
except ImportError:  # a tree from before log/ was split into folders (run_all.py --src)
    from delta_downgrade.log.checkpoints import checkpoint_table
from delta_downgrade.log.delta_log import DeltaLog
t, c = time.perf_counter(), time.process_time()
log = DeltaLog(sys.argv[1])
snapshot = log.snapshot(check_read=False)
if hasattr(snapshot, "arrow_state"):  # a tree from before the Arrow state: the call replays
    snapshot.arrow_state()
open_s, open_cpu_s = time.perf_counter() - t, time.process_time() - c
t, c = time.perf_counter(), time.process_time()
result = checkpoint_table(log)
call_s, call_cpu_s = time.perf_counter() - t, time.process_time() - c
print(json.dumps({"open_s": open_s, "call_s": call_s, "call_cpu_s": call_cpu_s, "open_call_s": open_s + call_s,
                  "open_call_cpu_s": open_cpu_s + call_cpu_s, "version": result.version,
                  "num_add_files": result.num_add_files, "paths": list(result.paths)}))
"""

# Ours: one checkpoint through the Spark path under the default local master (local[2]). Reports the
# Python driver's peak RSS and, after the JVM has exited and been reaped, the JVM's.
OURS_SPARK_CHECKPOINT = r"""
import json, os, resource, sys, time
from delta_downgrade.log.delta_log import DeltaLog
from delta_downgrade.log.checkpoint.on_spark import spark_checkpoint_table
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
    from delta_downgrade.log.checkpoint.on_spark import spark_checkpoint_table  # noqa: F401
except ImportError as exc:
    print(exc)
    sys.exit(1)
import pyspark  # noqa: F401
"""

# A tiny table with deletionVectors in its protocol (no deletion vector): what the warm-up drop of
# the two in-process drop programs below runs on, so that the timed drop finds a warm session.
_WARM_TABLE = r"""
def warm_table():
    import json, os, tempfile
    root = tempfile.mkdtemp(prefix="bench-warm-")
    os.makedirs(os.path.join(root, "_delta_log"))
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                       "metadata": {}}]})
    lines = [{"commitInfo": {"timestamp": 0, "operation": "CREATE TABLE"}},
             {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                           "writerFeatures": ["deletionVectors"]}},
             {"metaData": {"id": "00000000-0000-4000-8000-00000000beef", "format": {"provider": "parquet",
                           "options": {}}, "schemaString": schema, "partitionColumns": [],
                           "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": 0}}]
    with open(os.path.join(root, "_delta_log", "%020d.json" % 0), "w") as fh:
        fh.write("\n".join(json.dumps(x) for x in lines) + "\n")
    return root
"""

# delta-spark: its own fast drop (ALTER TABLE ... DROP FEATURE deletionVectors) on a local[2]
# session with Delta's jars; a warm-up drop on a tiny table first, then the timed one: call_s is
# the warm session's statement, the whole process (wall) includes the JVM's start.
DELTA_SPARK_DROP = _WARM_TABLE + r"""
import json, os, sys, time
t = time.perf_counter()
from delta_downgrade.spark import get_spark
spark = get_spark("bench-delta-spark-drop")
spark.sparkContext.setLogLevel("ERROR")
session_s = time.perf_counter() - t
spark.sql("ALTER TABLE delta.`%s` DROP FEATURE deletionVectors" % warm_table())
t = time.perf_counter()
spark.sql("ALTER TABLE delta.`%s` DROP FEATURE deletionVectors" % sys.argv[1])
call_s = time.perf_counter() - t
print(json.dumps({"call_s": call_s, "session_s": session_s}))
sys.stdout.flush()
spark.stop()
os._exit(0)
"""

# Ours: the fast drop as a call (drop_feature), after the same warm-up drop: the in-process
# counterpart of delta-spark's warm session.
OURS_DROP_CALL = _WARM_TABLE + r"""
import json, sys, time
from delta_downgrade.operations.drop_feature import drop_feature
drop_feature(warm_table(), "deletionVectors")
t, c = time.perf_counter(), time.process_time()
outcome = drop_feature(sys.argv[1], "deletionVectors")
call_s, call_cpu_s = time.perf_counter() - t, time.process_time() - c
print(json.dumps({"call_s": call_s, "call_cpu_s": call_cpu_s, "status": outcome.status}))
"""

# The interpreter's start: what every whole-process row pays before any import.
PYTHON_START = "pass"

# The start of a Python reader of a Delta log: the interpreter with pyarrow's parquet and JSON
# readers loaded, without numpy and pandas (as the CLI loads them, app/cli/lean_imports.py), and
# the parquet reader without Arrow's filesystems (as the package opens it, arrow_parquet.py). A
# checkpoint is parquet and a commit JSON; delta-rs reads both in its own native library.
PYARROW_START = r"""
import sys
sys.modules["numpy"] = sys.modules["pandas"] = None
import pyarrow.json, pyarrow._parquet
"""

# The start of a process that has loaded what one of our runs loaded (``sys.argv[1:]``, every
# module in the order ``-X importtime`` listed them) and done nothing else: what is left of the
# run above it is the run's work. numpy and pandas are kept out when the run kept them out (the
# CLI's lean imports): importtime lists an import that was refused too, but a package that loaded
# brings its submodules. Prints the seconds spent making dataclasses (Python 3.11-3.12 generate
# and compile each one's methods when its class statement runs) and how many were made.
MODULES_START = r"""
import importlib, json, sys, time
names = sys.argv[1:]
for kept_out in ("numpy", "pandas"):
    if not any(n.startswith(kept_out + ".") for n in names):
        sys.modules[kept_out] = None
        names = [n for n in names if n != kept_out]
import dataclasses
made, spent = [0], [0.0]
process_class = getattr(dataclasses, "_process_class", None)
if process_class is not None:
    def timed(cls, *args, **kwargs):
        t = time.perf_counter()
        try:
            return process_class(cls, *args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t
            made[0] += 1
    dataclasses._process_class = timed
for name in names:
    try:
        importlib.import_module(name)
    except BaseException:   # a module only its own parent may import, or one of another platform
        pass
print(json.dumps({"dataclass_s": spent[0], "dataclasses": made[0],
                  "ours": sum(1 for n in sys.modules if n.split(".")[0] == "delta_downgrade")}))
"""
