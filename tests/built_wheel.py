"""One wheel built from this checkout per test run (test support).

Several integration tests need the wheel users get (`python -m build --wheel`, ~10 s each). The
first worker to ask builds it under an exclusive lock into the run's shared temporary folder (the
parent of every xdist worker's base temp); the others wait for the lock and take the same file.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run_shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # Under xdist every worker's base temp is <run>/popen-gw<N>; alone it is the run's own.
    return base.parent if base.name.startswith("popen-gw") else base


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = _run_shared_dir(tmp_path_factory) / "built-wheel"
    out.mkdir(exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = sorted(out.glob("delta_downgrade-*.whl"))
        if not built:
            proc = subprocess.run(
                [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(REPO)],
                capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr[-2000:]
            built = sorted(out.glob("delta_downgrade-*.whl"))
        assert len(built) == 1, built
        return built[0]
