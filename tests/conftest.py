"""Shared fixtures. Nothing here is autouse: unit tests never start Spark or delta-rs.

- `golden_root`: the golden tables (``$DELTA_DOWNGRADE_GOLDEN`` or ``<repo>/../shared/golden``);
  tests using it skip when the directory is absent.
- `golden_table(name)`: a writable copy of one golden table in ``tmp_path`` (path as str). Tests
  must never write into the golden directory itself.
- `spark`: one real local SparkSession per test session (Java 17+), via
  `delta_downgrade.spark.get_spark`: a classic one, or with ``--spark-connect`` (or
  ``DELTA_DOWNGRADE_TEST_SPARK=connect``) a Spark Connect one, as on Databricks serverless: the
  switch starts one Connect server in a process of its own (tests/spark_connect_server.py) and
  sets ``SPARK_REMOTE=sc://localhost:<port>`` for this process and the subprocesses tests start
  (CLI and task runs), so they are Connect clients too (an ``SPARK_REMOTE`` already set is used
  as is). Tests marked ``classic_spark`` (the JVM path itself: Hadoop FileSystem storage) skip
  then, with the reason.
- `oracle`: a `DeltaRsOracle` (delta-rs in a subprocess, see tests/oracle.py).
- `oracle_018`: the same with deltalake 0.18.2 (an older client, reader version 1 only).
- `duckdb_reader`: the same child process reading through DuckDB's delta extension
  (``duckdb_rows``).
- `chromium`: a system Chromium's executable for Playwright (``$DELTA_DOWNGRADE_CHROMIUM`` or
  ``chromium`` & co. on PATH); skips when there is none or Playwright is missing.
- `s3_endpoint`, `azure_endpoint`, `gcs_endpoint` (and `object_store`, each in turn): a fresh
  bucket on a real local server (tests/object_stores.py); they skip when it cannot start.

Tests that use these fixtures get the markers ``golden`` / ``spark`` / ``oracle`` automatically,
so ``pytest -m "not spark"`` runs the fast subset.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest

# pytest keeps each test module with its asserts rewritten in __pycache__, unless bytecode writing
# is off (PYTHONDONTWRITEBYTECODE, set in many images): then every run rewrites ~4,000 asserts again,
# about 10 s of collection. This file is imported before any test module, so this turns the cache
# back on for them (and for the package's own modules imported from here on).
sys.dont_write_bytecode = False

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent

# Test helpers are imported as `tests.<module>` (tests/ is a package; the repo root is on the
# path under pytest's rootdir-based import), so that every test sees one copy of each class.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import tests.oracle  # noqa: E402
from tests import spark_use  # noqa: E402
from tests.oracle import DeltaRsOracle  # noqa: E402

# Object-store endpoints (moto S3, Azurite, fake-gcs-server): fixtures of tests/object_stores.py.
from tests.object_stores import (  # noqa: E402,F401
    azure_endpoint, azurite_server, gcs_endpoint, gcs_server, object_store, s3_endpoint, s3_server,
)

# ---- Delta's jars (make jars, jars/pom.xml): DELTA_DOWNGRADE_DELTA_JARS before any session starts,
# and the `delta_spark` fixture (tests/delta_jars.py).
import tests.delta_jars  # noqa: E402
from tests.delta_jars import delta_spark  # noqa: E402,F401
from tests.delta_spark_corpus import start_background_build, stop_background_build, uses_corpus  # noqa: E402

tests.delta_jars.use_fetched_jars()
# ---- end of Delta's jars

# `from oracle import …` (older test modules) must give the very same module object.
sys.modules.setdefault("oracle", tests.oracle)

_FIXTURE_MARKERS = {
    "golden_root": "golden",
    "golden_table": "golden",
    "spark": "spark",
    "oracle": "oracle",
    "oracle_018": "oracle",
    "duckdb_reader": "oracle",
    "delta_spark": "spark",
}



def pytest_addoption(parser):
    parser.addoption(
        "--spark-connect", action="store_true", default=False,
        help="run the Spark tests on a Spark Connect session (pyspark's bundled local server, as "
             "Databricks serverless) and set SPARK_REMOTE for the subprocesses tests start; "
             "also DELTA_DOWNGRADE_TEST_SPARK=connect")
    spark_use.add_options(parser)


def spark_connect_mode(config) -> bool:
    return bool(config.getoption("--spark-connect")) or \
        os.environ.get("DELTA_DOWNGRADE_TEST_SPARK", "").strip().lower() == "connect"


_CONNECT_SERVER = None
_CORPUS_BUILD = None  # the corpus build started at collection (_build_corpus_early)
_SPARK_SCRATCH: str | None = None  # the run's Spark local dirs, made and removed by this process


def _give_spark_a_scratch_dir_of_the_run() -> None:
    """Every JVM of the run (the sessions of tests and workers, the Connect server, the
    subprocesses' spark-submit and older clients) keeps its scratch files (``spark-*/userFiles-*``
    with a copy of each jar, ``pyspark-*``, block managers) in one directory this process removes
    at the end. Spark deletes them itself only from a shutdown hook, so every JVM a test kills on
    purpose left ~13 MB in /tmp per run; ``SPARK_LOCAL_DIRS`` wins over ``spark.local.dir``. A
    caller's own setting is kept; xdist workers inherit the controller's."""
    global _SPARK_SCRATCH
    if "SPARK_LOCAL_DIRS" in os.environ:
        return
    _SPARK_SCRATCH = tempfile.mkdtemp(prefix="delta-downgrade-tests-spark-")
    os.environ["SPARK_LOCAL_DIRS"] = _SPARK_SCRATCH


#: Free space below which the run warns (its header, and its warnings summary, which -q shows)
#: that writes may fail for want of it: the suite's tables, venvs and Spark scratch files took
#: 0.35 GB at most at once in a CI run (each passing test's directory removed as it ends), and a CI
#: run once failed halfway with ENOSPC, in errors that named no disk.
#: DELTA_DOWNGRADE_TEST_LOW_DISK_BYTES sets another bound.
_LOW_DISK_BYTES = int(os.environ.get("DELTA_DOWNGRADE_TEST_LOW_DISK_BYTES", 3 << 30))


def _disk_line() -> tuple[str, bool]:
    scratch = tempfile.gettempdir()
    free = shutil.disk_usage(scratch).free
    line = f"disk: {free / (1 << 30):.1f} GiB free in {scratch} for the tests' temporary files"
    low = free < _LOW_DISK_BYTES
    if low:
        line += f"; below {_LOW_DISK_BYTES >> 30} GiB, tests may fail with 'No space left on device'"
    return line, low


def pytest_report_header(config):
    return _disk_line()[0]


def pytest_configure(config):
    global _CONNECT_SERVER
    line, low = _disk_line()
    if low and os.environ.get("PYTEST_XDIST_WORKER") is None:
        # in the warnings summary at the end too, where a run with -q (make test) shows it
        config.issue_config_time_warning(pytest.PytestWarning(line), stacklevel=2)
    _give_spark_a_scratch_dir_of_the_run()
    # Python workers of every Spark session the tests start (the spark fixture's, the one the CLI
    # starts when a test runs it in this process, a child's) run this interpreter, not whatever
    # `python3` is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    spark_use.configure(config, connect=spark_connect_mode(config))
    if not spark_connect_mode(config) or config.option.collectonly:
        return
    os.environ["DELTA_DOWNGRADE_TEST_SPARK"] = "connect"
    # The test process holds a gRPC channel (the Connect session) while it starts CLI and task
    # subprocesses: gRPC's fork handlers then run in each forked child before its exec, and one
    # child aborted there (SIGABRT, "epoll_wait error: Bad file descriptor"). Set before grpc loads.
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    if os.environ.get("SPARK_REMOTE"):
        return  # the caller's server (sc://...) or pyspark's in-process one (local[N])
    # Before any test: get_spark, here and in every subprocess inheriting the environment, then
    # connects to this server and never starts a classic session (tests/spark_connect_server.py).
    from tests.spark_connect_server import ConnectServer

    _CONNECT_SERVER = ConnectServer()
    os.environ["SPARK_REMOTE"] = _CONNECT_SERVER.url
    _CONNECT_SERVER.wait_ready()


def pytest_unconfigure(config):
    global _CONNECT_SERVER, _CORPUS_BUILD
    stop_background_build(_CORPUS_BUILD)
    _CORPUS_BUILD = None
    if _CONNECT_SERVER is not None:
        _CONNECT_SERVER.stop()
        _CONNECT_SERVER = None
    if _SPARK_SCRATCH is not None and os.environ.get("SPARK_LOCAL_DIRS") == _SPARK_SCRATCH:
        shutil.rmtree(_SPARK_SCRATCH, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    connect = spark_connect_mode(config)
    if connect:
        # Under Connect: the tests that can differ there, those that used Spark in the classic
        # pass (tests/spark_use.py); without a record, every integration test.
        record = config.getoption("--spark-record")
        spark_free, _ = spark_use.read_spark_free(Path(record)) if record else (set(), set())
        leave_out = spark_use.connect_deselection(items, str(REPO_ROOT / "tests" / "unit") + os.sep,
                                                  spark_free)
        if leave_out:
            config.hook.pytest_deselected(items=leave_out)
            chosen = set(map(id, leave_out))
            items[:] = [i for i in items if id(i) not in chosen]
    _build_corpus_early(config, items)
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for fixture, marker in _FIXTURE_MARKERS.items():
            if fixture in names and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        classic = item.get_closest_marker("classic_spark")
        if connect and classic is not None:
            reason = classic.kwargs.get("reason") or (classic.args[0] if classic.args else "")
            item.add_marker(pytest.mark.skip(
                reason=f"classic Spark only (the JVM path itself){': ' + reason if reason else ''}"))


def _build_corpus_early(config, items) -> None:
    """When some test uses the delta-spark corpus: the tests that use it move after the other
    integration tests (a stable sort: every xdist worker computes the same order), and one
    process (the first worker, or the only one) starts building the corpus now, in the
    background, so that no worker sits on the build lock when they come (tests/delta_spark_corpus.py)."""
    global _CORPUS_BUILD
    if not any(map(uses_corpus, items)):
        return
    unit = str(REPO_ROOT / "tests" / "unit") + os.sep

    def stage(item) -> int:
        if str(item.path).startswith(unit):
            return 2
        return 1 if uses_corpus(item) else 0

    items.sort(key=stage)
    if (not config.option.collectonly and os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0"
            and _CORPUS_BUILD is None):
        _CORPUS_BUILD = start_background_build()


def _golden_dir() -> Path:
    env = os.environ.get("DELTA_DOWNGRADE_GOLDEN")
    return Path(env).expanduser() if env else REPO_ROOT.parent / "shared" / "golden"


@pytest.fixture(scope="session")
def golden_root() -> Path:
    root = _golden_dir()
    if not root.is_dir():
        pytest.skip(f"golden tables not found at {root} (set DELTA_DOWNGRADE_GOLDEN)")
    return root


def _make_writable(root: Path) -> None:
    # The golden files are read-only; copytree keeps modes, so open the copy up for writes.
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames, None]:
            p = Path(dirpath) if name is None else Path(dirpath) / name
            if p.is_symlink():
                continue
            mode = p.stat().st_mode
            p.chmod(mode | stat.S_IWUSR | stat.S_IRUSR | (stat.S_IXUSR if p.is_dir() else 0))


@pytest.fixture
def golden_table(golden_root: Path, tmp_path: Path):
    """Factory: ``golden_table("dv_basic_no_checkpoint")`` -> str path of a fresh writable copy."""
    copies: dict[str, int] = {}

    def copy(name: str) -> str:
        src = golden_root / name
        if not (src / "_delta_log").is_dir():
            pytest.fail(f"no golden table {name!r} in {golden_root}")
        n = copies[name] = copies.get(name, 0) + 1
        dest = tmp_path / "golden" / (name if n == 1 else f"{name}-{n}")
        shutil.copytree(src, dest, symlinks=True)
        _make_writable(dest)
        return str(dest)

    return copy


def _java_available() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return True
    return shutil.which("java") is not None


@pytest.fixture(scope="session")
def spark():
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed (pip install -e '.[dev]')")
    if not _java_available():
        pytest.skip("Java not found (neither $JAVA_HOME/bin/java nor java on PATH): PySpark 4 needs Java 17+")
    # Python workers must run the interpreter of the tests, not whatever `python3` is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from delta_downgrade.spark import get_spark

    from delta_downgrade.spark import connect_url, is_connect_session

    session = get_spark("delta-downgrade-tests")
    # The switch (or the caller's SPARK_REMOTE) decides the kind of session, not whatever
    # happened to start first.
    expected = "connect" if connect_url() else "classic"
    actual = "connect" if is_connect_session(session) else "classic"
    assert actual == expected, f"the spark fixture wanted a {expected} session, got a {actual} one"
    yield session
    session.stop()


@pytest.fixture(scope="session")
def oracle() -> DeltaRsOracle:
    # find_spec, not import: delta-rs stays out of the pytest process (it runs in subprocesses).
    if importlib.util.find_spec("deltalake") is None:
        pytest.skip("deltalake (delta-rs) is not installed (pip install -e '.[dev]')")
    return DeltaRsOracle()


#: Where `make venv` installs deltalake 0.18.2 (``pip install --target``), beside the venv's 1.6.6.
DELTALAKE_018_DIR = Path(os.environ.get("DELTA_DOWNGRADE_DELTALAKE_018",
                                        Path(__file__).resolve().parents[1] / ".venv" / "deltalake-0.18.2"))


@pytest.fixture(scope="session")
def oracle_018() -> DeltaRsOracle:
    """deltalake 0.18.2, an older client (reader version 1 and timestampNtz only), in a subprocess."""
    if not (DELTALAKE_018_DIR / "deltalake").is_dir():
        pytest.skip(f"deltalake 0.18.2 is not installed in {DELTALAKE_018_DIR} (make venv installs it)")
    reader = DeltaRsOracle(pythonpath=str(DELTALAKE_018_DIR), name="deltalake 0.18.2")
    assert reader.deltalake_version().unwrap() == "0.18.2"
    return reader


@pytest.fixture(scope="session")
def duckdb_reader() -> DeltaRsOracle:
    """DuckDB's delta extension (delta-kernel-rs) in a subprocess: use its ``duckdb_rows``."""
    if importlib.util.find_spec("duckdb_extension_delta") is None or importlib.util.find_spec("duckdb") is None:
        pytest.skip("duckdb-extension-delta is not installed (pip install -e '.[dev]')")
    return DeltaRsOracle(name="duckdb delta extension")


#: Executable names of a system Chromium, in the order tried (Debian's ``chromium`` package, its
#: ``chromium-headless-shell``, other distributions' names). ``$DELTA_DOWNGRADE_CHROMIUM`` wins.
CHROMIUM_NAMES = ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    env = os.environ.get("DELTA_DOWNGRADE_CHROMIUM")
    if env:
        return env if Path(env).exists() else shutil.which(env)
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    """A system Chromium's executable, driven by Playwright (``executable_path``): .ci/run
    installs Debian's ``chromium``; Playwright's own browser download is not used."""
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    found = find_chromium()
    if found is None:
        pytest.skip(f"no Chromium found (tried $DELTA_DOWNGRADE_CHROMIUM, {', '.join(CHROMIUM_NAMES)}): "
                    "apt-get install chromium")
    return found
