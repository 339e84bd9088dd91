"""No output of any command or task holds a secret given through the storage options, the
environment or a table URI, on success and on every refusal path.

Secrets are planted every way a user gives them: ``--storage-option KEY=VALUE`` (and the tasks'
``--storage_option KEY=VALUE`` two-word form, ``--storage_options=JSON``, the environment's
``DELTA_DOWNGRADE_STORAGE_OPTIONS``), a key-less value (an Azure account key ends in ``==``), a
misspelt flag and a stray ``KEY=SECRET`` word that argparse refuses, the stores' own environment
variables, and a token in a table URI's query string given with no option at all. Every stream is
searched: stdout, stderr, the RESULT lines, the task values and ``run-job``'s output.

The commands and tasks run in this process against a table on moto's S3 (moto accepts any secret
key, so the runs succeed with the planted ones); ``run-job`` runs its tasks as processes, which is
what it is for (two of them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Callable, Sequence

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.app.render.result import parse_result_lines
from delta_downgrade.app.tasks.entrypoints import drop_feature_task, truncate_task, verify_task
from tests.object_stores import s3_endpoint, s3_server  # noqa: F401

VPC = "vacuumProtocolCheck"
REPO = Path(__file__).resolve().parents[2]


def _planted(what: str) -> str:
    return f"Planted{what}{uuid.uuid4().hex[:12]}"


OPTION_SECRET = _planted("Option")          # AWS_SECRET_ACCESS_KEY as an option
TOKEN_SECRET = _planted("Token")            # AWS_SESSION_TOKEN as an option
KEYLESS_SECRET = _planted("KeylessAzure+/x") + "=="  # a value given without its key
MISSPELT_SECRET = _planted("Misspelt")      # after --storage-options (argparse refuses the flag)
STRAY_SECRET = _planted("Stray")            # AZURE_STORAGE_ACCOUNT_KEY=... as a stray word
ENV_SECRET = _planted("Environment")        # AZURE_STORAGE_SAS_TOKEN in the environment
ENV_JSON_SECRET = _planted("EnvJson")       # DELTA_DOWNGRADE_STORAGE_OPTIONS' value
URI_SECRET = _planted("UriQuery")           # ?token=... in the table URI
ALL = (OPTION_SECRET, TOKEN_SECRET, KEYLESS_SECRET, KEYLESS_SECRET.rstrip("="), MISSPELT_SECRET,
       STRAY_SECRET, ENV_SECRET, ENV_JSON_SECRET, URI_SECRET)


class Streams:
    """Everything the runs printed or handed on, by run, to search for the planted secrets."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.codes: dict[str, int] = {}

    def add(self, name: str, code: int, *texts: str) -> None:
        self.codes[name] = code
        self.texts[name] = "\n".join(texts)

    def assert_clean(self) -> None:
        leaks = {name: [s for s in ALL if s in text] for name, text in self.texts.items()}
        assert not {k: v for k, v in leaks.items() if v}, leaks
        assert not [n for n, t in self.texts.items() if "Traceback" in t], self.texts


@pytest.fixture
def planted_environment(monkeypatch):
    for key in list(os.environ):
        if key.startswith("DELTA_DOWNGRADE_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("AZURE_STORAGE_SAS_TOKEN", ENV_SECRET)


def _options(endpoint) -> dict[str, str]:  # noqa: ANN001
    return dict(endpoint.storage_options, AWS_SECRET_ACCESS_KEY=OPTION_SECRET, AWS_SESSION_TOKEN=TOKEN_SECRET)


def _cli_options(options: dict[str, str]) -> list[str]:
    return [word for key, value in options.items() for word in ("--storage-option", f"{key}={value}")]


def _run_cli(streams: Streams, capsys, name: str, argv: Sequence[str]) -> dict:
    code = main(list(argv))
    out, err = capsys.readouterr()
    streams.add(name, code, out, err)
    results = parse_result_lines(out)
    if "--json" in argv and not results:
        return json.loads(out)
    assert results, (name, out, err)
    return results[-1]


def _run_task(streams: Streams, capsys, name: str, task: Callable, argv: Sequence[str], values: Path) -> dict:
    code = task(list(argv))
    out, err = capsys.readouterr()
    files = sorted(values.rglob("*.json")) if values.exists() else []
    streams.add(name, code, out, err, *(f.read_text() for f in files))
    results = parse_result_lines(out)
    assert results, (name, out, err)
    return results[-1]


def test_no_command_prints_a_planted_secret(golden_table, s3_endpoint, planted_environment, capsys, tmp_path):  # noqa: F811
    uri = s3_endpoint.upload(golden_table("vacuum_protocol_check"), "t")
    options = _options(s3_endpoint)
    given = _cli_options(options)
    streams = Streams()
    run = lambda name, *argv: _run_cli(streams, capsys, name, argv)  # noqa: E731

    # Successes, every command that opens a table, with the secrets as options.
    assert run("inspect", "inspect", uri, *given)["status"] == "inspected"
    assert run("inspect json", "inspect", uri, "--json", *given)["status"] == "inspected"
    assert run("compat", "compat", uri, *given)["status"]
    assert run("cleanup", "cleanup", uri, "--dry-run", *given)["status"] == "planned"
    assert run("vacuum", "vacuum", uri, "--dry-run", *given)["status"] == "planned"
    assert run("drop dry run", "drop-feature", uri, VPC, "--dry-run", "--verbose", *given)["status"] == "planned"
    assert run("drop", "drop-feature", uri, VPC, "--verbose", *given)["status"] == "dropped"
    assert run("truncate-history", "truncate-history", uri, *given)["status"] == "waiting"
    assert run("drop --for", "drop-feature", uri, "--for", "duckdb", *given)["status"]

    # Refusals: argparse's, the items', a missing table, the store refusing, a URI's token.
    refusals = {
        "misspelt flag": ["inspect", uri, "--storage-options", f"AWS_SECRET_ACCESS_KEY={MISSPELT_SECRET}"],
        "misspelt flag =": ["vacuum", uri, f"--storage-options=AWS_SECRET_ACCESS_KEY={MISSPELT_SECRET}"],
        "stray word": ["drop-feature", uri, VPC, f"AZURE_STORAGE_ACCOUNT_KEY={STRAY_SECRET}", *given],
        "key-less item": ["inspect", uri, "--storage-option", KEYLESS_SECRET],
        "key-less item, json": ["cleanup", uri, "--json", "--storage-option", KEYLESS_SECRET],
        "missing table": ["inspect", s3_endpoint.location("missing"), *given],
        "missing bucket": ["drop-feature", f"s3://no-such-bucket-{os.getpid()}/t", VPC, *given],
        "refused connection": ["vacuum", uri, *_cli_options(dict(options, AWS_ENDPOINT_URL="http://127.0.0.1:9"))],
        "token in the uri": ["inspect", f"{uri}?token={URI_SECRET}"],
        "token in a local uri": ["truncate-history", f"file:///nowhere/t?sig={URI_SECRET}"],
        "compat token in the uri": ["compat", f"{uri}?X-Amz-Security-Token={URI_SECRET}", "--json"],
    }
    for name, argv in refusals.items():
        result = run(name, *argv)
        assert streams.codes[name] == 2, (name, result)

    # The three tasks: the two-word item form, a JSON object, the environment's JSON object.
    values = tmp_path / "values"
    os.environ["DELTA_DOWNGRADE_TASK_VALUES_DIR"] = str(values)
    try:
        def task(name: str, fn: Callable, *argv: str, key: str | None = None, **env: str) -> dict:
            os.environ["DELTA_DOWNGRADE_TASK_KEY"] = key or name.replace(" ", "_")
            for k, v in env.items():
                os.environ[k] = v
            try:
                return _run_task(streams, capsys, name, fn, argv, values)
            finally:
                for k in env:
                    del os.environ[k]

        items = [word for k, v in options.items() for word in ("--storage_option", f"{k}={v}")]
        as_json = json.dumps(options)
        env_json = json.dumps(dict(options, AWS_SESSION_TOKEN=ENV_JSON_SECRET))
        assert task("verify", verify_task, f"--table={uri}", f"--expect_absent_feature={VPC}", *items)["status"] \
            == "verified"
        assert task("truncate", truncate_task, f"--table={uri}", f"--storage_options={as_json}")["status"] == "waiting"
        assert task("drop again", drop_feature_task, f"--table={uri}", f"--feature={VPC}",
                    DELTA_DOWNGRADE_STORAGE_OPTIONS=env_json)["status"] == "already_absent"
        task_refusals = {
            "task key-less item": (verify_task, [f"--table={uri}", "--storage_option", KEYLESS_SECRET]),
            "task bad json": (drop_feature_task, [f"--table={uri}", f"--feature={VPC}",
                                                  f"--storage_options={{'AWS_SECRET_ACCESS_KEY': '{OPTION_SECRET}'"]),
            "task missing table": (truncate_task, [f"--table={s3_endpoint.location('missing')}", *items]),
            "task token in the uri": (verify_task, [f"--table={uri}?token={URI_SECRET}"]),
            "task fleet": (drop_feature_task, [f"--tables={uri},s3://no-such-bucket-{os.getpid()}/t",
                                               "--feature=v2Checkpoint", f"--storage_options={as_json}"]),
        }
        for name, (fn, argv) in task_refusals.items():
            task(name, fn, *argv)
            assert streams.codes[name] == 2, (name, streams.texts[name][-2000:])
    finally:
        for key in ("DELTA_DOWNGRADE_TASK_VALUES_DIR", "DELTA_DOWNGRADE_TASK_KEY"):
            os.environ.pop(key, None)

    # run-job: a job whose task gets the two-word item form, run as the runner runs it.
    job = tmp_path / "job.yml"
    job.write_text(json.dumps({"resources": {"jobs": {"secrets": {"name": "secrets", "tasks": [{
        "task_key": "verify", "timeout_seconds": 300,
        "python_wheel_task": {"package_name": "delta_downgrade", "entry_point": "verify_task",
                              "parameters": [f"--table={uri}", f"--expect_absent_feature={VPC}", *items]}}]}}}}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
           "DELTA_DOWNGRADE_STORAGE_OPTIONS": env_json}
    for name, extra in (("run-job", []), ("run-job stray param", ["--param", f"AWS_SECRET_ACCESS_KEY={STRAY_SECRET}"])):
        proc = subprocess.run([sys.executable, "-m", "delta_downgrade.app.cli", "run-job", str(job),
                               "--param", f"table={uri}", *extra, "--run-dir", str(values / name.replace(" ", "_"))],
                              capture_output=True, text=True, env=env, timeout=600, cwd=REPO)
        files = sorted((values / name.replace(" ", "_")).rglob("*.json"))
        streams.add(name, proc.returncode, proc.stdout, proc.stderr, *(f.read_text() for f in files))
    streams.assert_clean()
    assert streams.codes["run-job"] == 0, streams.texts["run-job"][-3000:]
    assert "verify" in streams.texts["run-job"] and "AWS_SESSION_TOKEN=***" in streams.texts["run-job"]
    assert streams.codes["run-job stray param"] in (0, 2)
