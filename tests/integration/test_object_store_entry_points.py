"""The entry points on a bucket table (moto's S3, Azurite): a storage option whose value is a
recognisable secret never shows in stdout, stderr, the RESULT lines or the task values, whether
the run succeeds or fails; and the errors a user meets first (unknown scheme, missing bucket, bad
credentials) are one line with the Delta error class, exit 2, no traceback, within 10 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.object_stores import azure_endpoint, azurite_server, s3_endpoint, s3_server  # noqa: F401

# As the golden_root fixture finds them: $DELTA_DOWNGRADE_GOLDEN, else ../shared/golden beside the repository.
GOLDEN = Path(os.environ.get("DELTA_DOWNGRADE_GOLDEN")
              or Path(__file__).resolve().parents[3] / "shared" / "golden")
SECRET = "SeCrEt-Do-Not-Print-7f3a91c2e4b8"
TIME_LIMIT_S = 10.0


def _golden(name: str) -> Path:
    path = GOLDEN / name
    if not path.is_dir():
        pytest.skip(f"golden table {name} is not available ({GOLDEN})")
    return path


def _python(*argv: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **(env or {})})
    return done, time.monotonic() - start


def _cli(*argv: str) -> tuple[subprocess.CompletedProcess, float]:
    return _python("-m", "delta_downgrade.app.cli", *argv)


def _task(name: str, *argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return _python("-m", "delta_downgrade.app.tasks.wheel_entry", name, *argv, env=env)[0]


def _option_args(options: dict[str, str]) -> list[str]:
    return [arg for key, value in options.items() for arg in ("--storage-option", f"{key}={value}")]


def _no_secret(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text


@pytest.fixture
def secret_options(s3_endpoint):  # noqa: F811
    # moto does not check signatures: any secret key is accepted, so the run succeeds with ours.
    return dict(s3_endpoint.storage_options, AWS_SECRET_ACCESS_KEY=SECRET)


def test_cli_never_prints_a_secret_option_on_success_or_failure(s3_endpoint, secret_options):  # noqa: F811
    uri = s3_endpoint.upload(_golden("vacuum_protocol_check"), "t")
    options = _option_args(secret_options)
    runs = [_cli("inspect", uri, "--json", *options)[0],
            _cli("drop-feature", uri, "vacuumProtocolCheck", "--verbose", *options)[0],
            _cli("vacuum", uri, "--dry-run", *options)[0],
            _cli("cleanup", uri, "--dry-run", *options)[0]]
    assert [r.returncode for r in runs] == [0, 0, 0, 0], [r.stderr[-2000:] for r in runs]
    result = json.loads(runs[1].stdout.splitlines()[-1].removeprefix("RESULT "))
    assert result["status"] == "dropped" and result["min_reader_version"] == 1
    failures = [_cli("inspect", s3_endpoint.location("missing"), *options)[0],
                _cli("drop-feature", f"s3://no-such-bucket-{os.getpid()}/t", "v2Checkpoint", *options)[0],
                # the endpoint refuses the connection: the client's error message quotes its request
                _cli("inspect", uri, *_option_args(dict(secret_options, AWS_ENDPOINT_URL="http://127.0.0.1:9")))[0]]
    assert [r.returncode for r in failures] == [2, 2, 2], [r.stderr[-2000:] for r in failures]
    for run in runs + failures:
        _no_secret(run.stdout, run.stderr)
        assert "Traceback" not in run.stderr


def test_tasks_never_print_or_hand_on_a_secret_option(tmp_path, s3_endpoint, secret_options):  # noqa: F811
    uri = s3_endpoint.upload(_golden("vacuum_protocol_check"), "t")
    run_dir = tmp_path / "run"

    def task(name: str, key: str, *argv: str, **env: str) -> subprocess.CompletedProcess:
        return _task(name, *argv, env={"DELTA_DOWNGRADE_TASK_KEY": key,
                                       "DELTA_DOWNGRADE_TASK_VALUES_DIR": str(run_dir), **env})

    as_json = json.dumps(secret_options)
    runs = {
        "drop": task("drop_feature_task", "drop", f"--table={uri}", "--feature=vacuumProtocolCheck",
                     f"--storage_options={as_json}"),
        "verify": task("verify_task", "verify", f"--table={uri}", "--expect_absent_feature=vacuumProtocolCheck",
                       DELTA_DOWNGRADE_STORAGE_OPTIONS=as_json),
        # inside the truncate retention: waiting, exit 0 in task mode; the RESULT and values say so
        "truncate": task("truncate_task", "truncate", f"--table={uri}",
                         *[f"--storage_option={k}={v}" for k, v in secret_options.items()]),
        # failures: a missing table, and a fleet with one bad table
        "missing": task("verify_task", "missing", f"--table={s3_endpoint.location('nope')}",
                        f"--storage_options={as_json}"),
        "fleet": task("drop_feature_task", "fleet", f"--tables={uri},s3://no-such-bucket-{os.getpid()}/t",
                      "--feature=v2Checkpoint", f"--storage_options={as_json}"),
    }
    assert {k: r.returncode for k, r in runs.items()} == {"drop": 0, "verify": 0, "truncate": 0,
                                                          "missing": 2, "fleet": 2}, \
        {k: r.stderr[-1500:] for k, r in runs.items()}
    for run in runs.values():
        _no_secret(run.stdout, run.stderr)
        assert "RESULT " in run.stdout and "Traceback" not in run.stderr
    values = sorted((run_dir / "task_values").glob("*.json"))
    assert {v.stem for v in values} == set(runs)
    for file in values:
        _no_secret(file.read_text())
    assert json.loads((run_dir / "task_values" / "drop.json").read_text())["status"] == "dropped"


# --- the first errors a user meets, end to end -----------------------------------------------------

def _one_line_error(run: subprocess.CompletedProcess, seconds: float, error_class: str) -> None:
    assert run.returncode == 2, run.stderr[-2000:]
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: [") and error_class in lines[0], run.stderr
    assert "Traceback" not in run.stderr
    assert seconds < TIME_LIMIT_S, f"{seconds:.1f} s"


def test_unknown_scheme_is_refused_in_seconds():
    run, seconds = _cli("inspect", "foo://bucket/t")
    _one_line_error(run, seconds, "DELTA_DOWNGRADE_UNSUPPORTED_STORAGE")


def test_missing_bucket_is_refused_in_seconds(s3_endpoint):  # noqa: F811
    run, seconds = _cli("inspect", f"s3://no-such-bucket-{os.getpid()}/t",
                        *_option_args(s3_endpoint.storage_options))
    _one_line_error(run, seconds, "DELTA_TABLE_NOT_FOUND")


def test_bad_credentials_are_refused_in_seconds(azure_endpoint):  # noqa: F811
    # Azurite checks the shared-key signature: a wrong account key is a 403.
    uri = azure_endpoint.upload(_golden("vacuum_protocol_check"), "t")
    wrong = dict(azure_endpoint.storage_options, AZURE_STORAGE_ACCOUNT_KEY="d3JvbmcK" * 11)
    run, seconds = _cli("inspect", uri, *_option_args(wrong))
    _one_line_error(run, seconds, "DELTA_DOWNGRADE_STORAGE_ACCESS_DENIED")
    assert wrong["AZURE_STORAGE_ACCOUNT_KEY"] not in run.stderr
