"""The corpus of tables delta-spark writes (tools/src/delta_downgrade_tools/delta_spark_corpus.py)
for the tests.

`corpus_tables()` returns ``{name: Path}`` of the built corpus, building it first when needed:
once per `corpus_key` (the generator's source and the delta-spark jar's version) under
``.test-records/delta-spark-corpus/<key>/``, by the generator in a child process (its own Spark
session with Delta's jars: the test session may be a Connect one). Two xdist workers asking at
once wait on one file lock; the build goes to a temporary directory renamed into place, so a
build that dies leaves nothing a later run takes for a corpus. Builds of other keys are removed.

The cached tables are read-only for the tests: `corpus_table(name)` (a fixture, like
``golden_table``) gives a writable copy in ``tmp_path``. `CORPUS_CASES` lists (table, feature)
for every feature each table's protocol lists, from the generator's declarations (collection
builds nothing).

A run that will use the corpus starts building it at collection (`start_background_build`, called
by tests/conftest.py), and the tests that use it run after the other integration tests: the build
then overlaps the suite instead of holding up the worker that waits for it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from delta_downgrade_tools import delta_spark_corpus as generator
from tests import delta_jars

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = REPO_ROOT / ".test-records" / "delta-spark-corpus"
#: A build that takes longer than this has hung. It took 8 min on this project's 2-core machine
#: shared with a load average of ~13, and did not finish in 15 min at ~30.
BUILD_TIMEOUT_S = 2400

#: (table, feature) for every feature of every corpus table's protocol.
CORPUS_CASES: list[tuple[str, str]] = [(t.name, f) for t in generator.TABLES for f in sorted(t.features)]
CORPUS_NAMES: list[str] = [t.name for t in generator.TABLES]


def _jar_list() -> list[str]:
    """Delta's jars as tests/delta_jars.py set them in the environment (empty without them)."""
    return [j for j in os.environ.get(delta_jars.ENV, "").split(",") if j]


def _jars() -> list[str]:
    jars = _jar_list()
    if not jars:
        pytest.fail(delta_jars.missing_reason or f"{delta_jars.ENV} is not set: run `make jars`", pytrace=False)
    return jars


def corpus_key() -> str:
    return generator.corpus_key(_jars())


def _tables(built: Path) -> dict[str, Path]:
    manifest = json.loads((built / generator.MANIFEST).read_text(encoding="utf-8"))
    return {name: built / name for name in manifest["tables"]}


def _build(target: Path) -> None:
    partial = target.with_name(f"{target.name}.building-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    env = dict(os.environ)
    # The generator and the package of this checkout, whatever the venv installed.
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT / "tools" / "src"),
                                         *filter(None, [env.get("PYTHONPATH")])])
    # The child is a classic Spark session of its own, never a Connect client.
    env.pop("SPARK_REMOTE", None)
    env.pop("DELTA_DOWNGRADE_TEST_SPARK", None)
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "delta_downgrade_tools.delta_spark_corpus", str(partial)],
                              env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        shutil.rmtree(partial, ignore_errors=True)
        pytest.fail(f"building the delta-spark corpus took more than {BUILD_TIMEOUT_S} s", pytrace=False)
    if proc.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        pytest.fail(f"building the delta-spark corpus failed (exit {proc.returncode}):\n"
                    f"{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}", pytrace=False)
    # Read-only from here on: a test writes to a copy (corpus_table).
    for dirpath, _, files in os.walk(partial):
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o444)
    os.rename(partial, target)
    (CORPUS_DIR / "last-build.txt").write_text(
        f"{target.name}: {time.monotonic() - started:.1f} s\n{proc.stdout}", encoding="utf-8")


def corpus_tables() -> dict[str, Path]:
    """``{name: path}`` of every corpus table (read-only), built first if this key has none."""
    key = corpus_key()
    built = CORPUS_DIR / key
    if (built / generator.MANIFEST).is_file():
        return _tables(built)
    CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    with open(CORPUS_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits for this build
        try:
            if not (built / generator.MANIFEST).is_file():
                _build(built)
                for old in CORPUS_DIR.iterdir():
                    if old.is_dir() and old.name != key:
                        shutil.rmtree(old, ignore_errors=True)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return _tables(built)


def start_background_build() -> subprocess.Popen[bytes] | None:
    """Start :func:`corpus_tables` in a child process of its own (a new session, so that
    :func:`stop_background_build` can stop its JVM too) when this key has no corpus yet and
    Delta's jars are there; None otherwise. The child takes the build lock like any worker: a
    test that needs the corpus before the child is done waits on the lock, and if the child
    fails, the test's own call builds again and reports the failure (the child's output is in
    ``.test-records/delta-spark-corpus/background-build.log``)."""
    jars = _jar_list()
    if not jars or (CORPUS_DIR / generator.corpus_key(jars) / generator.MANIFEST).is_file():
        return None
    CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    with open(CORPUS_DIR / "background-build.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-c", "from tests.delta_spark_corpus import corpus_tables; "
                                 "corpus_tables()"], cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def stop_background_build(proc: subprocess.Popen[bytes] | None) -> None:
    """Stop a build :func:`start_background_build` started if it still runs (the session ended
    first): its partial directory is left for the next successful build to remove."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def uses_corpus(item: pytest.Item) -> bool:
    return "delta_spark_corpus" in getattr(item, "fixturenames", ())


def copy_table(source: Path, dest: Path) -> str:
    """A writable copy of a corpus table."""
    shutil.copytree(source, dest, copy_function=shutil.copyfile)
    return str(dest)


@pytest.fixture(scope="session")
def delta_spark_corpus() -> dict[str, Path]:
    """The corpus, built once per key (read-only: use `corpus_table` to write)."""
    return corpus_tables()


@pytest.fixture
def corpus_table(delta_spark_corpus, tmp_path: Path):
    """Factory: ``corpus_table("dv_delete")`` -> str path of a fresh writable copy."""
    copies: dict[str, int] = {}

    def copy(name: str) -> str:
        if name not in delta_spark_corpus:
            pytest.fail(f"no corpus table {name!r} (tools/src/delta_downgrade_tools/delta_spark_corpus.py)")
        n = copies[name] = copies.get(name, 0) + 1
        return copy_table(delta_spark_corpus[name], tmp_path / "corpus" / (name if n == 1 else f"{name}-{n}"))

    return copy
